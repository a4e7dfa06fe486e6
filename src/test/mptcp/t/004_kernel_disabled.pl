
# Copyright (c) 2026, PostgreSQL Global Development Group

# A kernel that refuses MPTCP (here: net.mptcp.enabled = 0 in a private
# network namespace): the server still starts with listen_mptcp = on, warns
# once per address family why, and listens with plain TCP; clients connect
# over TCP with mptcp=prefer, and mptcp=require fails with a clear error.
#
# Runs only with PG_TEST_EXTRA=mptcp, in an unprivileged user and network
# namespace (see README).

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

MptcpUtils::set_sysctl('net.mptcp.enabled', 0);
ok(defined MptcpUtils::kernel_mptcp_error(),
	'MPTCP sockets are refused in the namespace');

my $node = PostgreSQL::Test::Cluster->new('disabled');
$node->init;
$node->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
listen_addresses = '127.0.0.1,127.0.0.2,::1'
log_connections = on
));
$node->start;
my $port = $node->port;

# The errno says the kernel has no MPTCP: one warning per address family,
# for its first address, whatever the number of addresses.  (The IPv6 one
# only where the host has IPv6.)
my $log = slurp_file($node->logfile);
my @warnings = $log =~ /WARNING:  (could not create MPTCP socket .*)$/mg;
my @expected = (
	'could not create MPTCP socket for address "127.0.0.1": Protocol not available'
);
push @expected,
  'could not create MPTCP socket for address "::1": Protocol not available'
  if grep { /"::1"/ } @warnings;
is_deeply(\@warnings, \@expected,
	'one warning per address family, naming its first address, saying why');
like(
	$log,
	qr/"127\.0\.0\.1": Protocol not available\n.*DETAIL:  The server listens on this and the remaining IPv4 addresses with plain TCP\.$/m,
	'warning says what the server does instead');
like($log, qr/HINT:  .*sysctl -w net\.mptcp\.enabled=1/,
	'warning says how to enable MPTCP');
is(MptcpUtils::mptcp_sockets($port, 1), 0, 'no MPTCP listen socket');

my $connstr = "host=127.0.0.1 port=$port dbname=postgres";
my $offset = -s $node->logfile;
is($node->safe_psql('postgres', 'SELECT count(*) FROM generate_series(1, 300)',
		connstr => "$connstr mptcp=prefer application_name=fallback"),
	'300', 'mptcp=prefer connects over plain TCP');
like(slurp_file($node->logfile, $offset),
	qr/connection authorized: .*application_name=fallback$/m,
	'server logs a plain TCP connection');
is($node->safe_psql('postgres', 'SELECT 1', connstr => $connstr),
	'1', 'plain client connects');
$node->connect_fails(
	"$connstr mptcp=require",
	'mptcp=require without kernel support',
	expected_stderr =>
	  qr/^psql: error: connection to server at "127\.0\.0\.1", port $port failed: MPTCP was required, but this system cannot create MPTCP sockets: Protocol not available$/
);

# Re-enabled, the same server (still on plain TCP) gives prefer plain TCP
# and require the server-side error.
MptcpUtils::set_sysctl('net.mptcp.enabled', 1);
$node->connect_fails(
	"$connstr mptcp=require",
	'mptcp=require against the plain TCP listener',
	expected_stderr =>
	  qr/^psql: error: connection to server at "127\.0\.0\.1", port $port failed: MPTCP was required, but the connection fell back to plain TCP: the server or the network path does not support MPTCP$/
);

$node->stop;
done_testing();
