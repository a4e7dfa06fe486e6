
# Copyright (c) 2026, PostgreSQL Global Development Group

# The port filter of the subflows dump with many ports.  A dump for the
# subflows it could not look up passes the kernel a filter of their ports:
# the server's own port (incoming connections) and each port that its
# processes connected to (outgoing ones), at most 32 of each; with more, it
# reads a dump of every TCP socket.  Here four backends open dblink
# connections over MPTCP to 1, 32, 33 and 63 ports of this server's host
# (2, 33, 34 and 64 ports in the filter with the server's), which an
# nftables rule sends to the server's port; a test shim turns the lookups
# off, so that every subflow comes from the dump.  Each time, every
# connection has its subflow at both ends, with the port it connected to,
# and the dump describes no other program's sockets until the ports
# overflow the filter.
#
# In a private network namespace, on its loopback only (no PG_TEST_EXTRA,
# as 010_loopback.pl).  Skipped where unprivileged user namespaces, MPTCP
# sockets, nft and its NAT, or injection points (the test shim) are
# missing.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

BEGIN { MptcpUtils::enter_private_netns(1); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $node = PostgreSQL::Test::Cluster->new('many_ports');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'mptcpinfo'
max_connections = 90
));
$node->start;
my $port = $node->port;

plan skip_all => 'this build has no injection points (the test shim)'
  unless $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'injection_points'"
  ) eq '1'
  && $node->safe_psql('postgres', 'SHOW server_version_num') >= 180000;

# ports 20001 to 20063 of 127.0.0.1 are the server's (PG_TEST_NFT names
# nft, else it is looked for in PATH or /usr/sbin, as 007_join_filter.pl)
my $nft = MptcpUtils::find_nft();
plan skip_all => 'nft not found (set PG_TEST_NFT to its path)'
  unless defined $nft;
my $first = 20001;
my $nmax = 63;
my ($nft_out, $nft_err);
my $last = $first + $nmax - 1;
IPC::Run::run(
	[ $nft, '-f', '-' ],
	'<', \"table ip mptcpinfo_test {
  chain output {
    type nat hook output priority -100;
    ip daddr 127.0.0.1 tcp dport $first-$last redirect to :$port
  }
}\n",
	'>', \$nft_out, '2>', \$nft_err)
  or plan skip_all => "no nftables NAT in the namespace: $nft_err";

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION mptcpinfo;
CREATE EXTENSION dblink;
CREATE EXTENSION injection_points;
SELECT injection_points_attach('mptcpinfo-no-lookups', 'notice');
});

# another program's plain TCP connections on loopback: 2 sockets each
my $nnoise = 20;
my @noise = MptcpUtils::loopback_tcp_noise($nnoise);

# (a process records at most 16 connections it opened: 16 per holder)
my @holders = map { $node->background_psql('postgres') } 1 .. 4;
my $opened = 0;
for my $n (1, 32, 33, $nmax)
{
	for my $i ($opened + 1 .. $n)
	{
		my $p = $first + $i - 1;
		$holders[ int(($i - 1) / 16) ]->query_safe(
			"SELECT dblink_connect('c$i', 'host=127.0.0.1 port=$p dbname=postgres mptcp=1 application_name=fanout')"
		);
	}
	$opened = $n;

	my $nports = $n + 1;
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres', qq{SET client_min_messages = debug1;
SELECT count(*), count(DISTINCT s.remote_port), min(s.remote_port),
       max(s.remote_port), bool_and(s.established)
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid, token)
 WHERE m.direction = 'outgoing';
SELECT count(*), bool_and(s.local_port = $port)
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'fanout'});
	is( $stdout,
		"$n|$n|$first|" . ($first + $n - 1) . "|t\n$n|t",
		"$nports ports: each connection's subflow at both ends, with its port")
	  or diag $stderr;
	my ($looked_up, $dumped, $tcp, $kept) = $stderr =~
	  /(\d+) MPTCP connections looked up by their ends, (\d+) read from a dump, .*; (\d+) TCP sockets dumped, (\d+) subflows kept/;
	is( join(',', $looked_up // '', $dumped // ''),
		'0,' . 2 * $n,
		"$nports ports: none looked up, all read from a dump")
	  or diag $stderr;
	unlike($stderr, qr/WARNING/, "$nports ports: the kernel took the request");
	$tcp //= 0;
	$kept //= 0;
	if ($n <= 32)
	{
		ok($tcp < $kept + $nnoise,
			"$nports ports: the dump is filtered ($tcp TCP sockets for $kept subflows)");
	}
	else
	{
		ok($tcp >= $kept + 2 * $nnoise,
			"$nports ports: too many for a filter, a dump of all ($tcp TCP sockets for $kept subflows)"
		);
	}
}

$_->quit for @holders;
$_->close for @noise;
$node->stop;
done_testing();
