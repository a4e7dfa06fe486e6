
# Copyright (c) 2026, PostgreSQL Global Development Group

# With mptcpinfo in shared_preload_libraries and listen_mptcp = on, the
# server says once at start what the path manager offers clients (one LOG
# line), and warns, with a hint giving the command, about each setting that
# keeps connections on one path or makes them slow: a signal endpoint on an
# address the server does not listen on, net.mptcp.enabled = 0, a subflow
# limit of 0, bbr.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README), on its loopback interface.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# A sane namespace first: reno, two additional subflows, one signal
# endpoint with a port of its own.
MptcpUtils::set_sysctl('net.ipv4.tcp_congestion_control', 'reno');
MptcpUtils::run_ip('mptcp', 'limits', 'set', 'subflows', 2,
	'add_addr_accepted', 0);
MptcpUtils::run_ip('mptcp', 'endpoint', 'flush');
MptcpUtils::run_ip('mptcp', 'endpoint', 'add', '127.0.0.1', 'dev', 'lo',
	'port', 40001, 'id', 1, 'signal');

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'mptcpinfo'
));

sub start_log { return MptcpUtils::mptcpinfo_start_log($node); }

# Does the log have these lines, one after the other?
sub has_lines
{
	my ($log, @lines) = @_;
	my $block = join("\n", @lines);
	return $log =~ /^\Q$block\E$/m ? 1 : 0;
}

my $log = start_log();
is( $log,
	"LOG:  MPTCP path manager offers clients signal endpoints 127.0.0.1 port 40001; limits: subflows 2, add_addr_accepted 0",
	'a sane namespace: one LOG line with the endpoints and limits, no warning'
);

# No signal endpoint: said in the LOG line, not a warning.
MptcpUtils::run_ip('mptcp', 'endpoint', 'flush');
is( start_log(),
	"LOG:  MPTCP path manager offers clients no signal endpoints; limits: subflows 2, add_addr_accepted 0\n"
	  . "DETAIL:  Clients can still open subflows from addresses of their own.",
	'no signal endpoint: said in the LOG line');

# A signal endpoint without a port on an address the server does not listen
# on, a subflow limit of 0, and bbr where the namespace allows it.
MptcpUtils::run_ip('mptcp', 'endpoint', 'add', '127.0.0.2', 'dev', 'lo',
	'id', 2, 'signal', 'backup');
MptcpUtils::run_ip('mptcp', 'limits', 'set', 'subflows', 0,
	'add_addr_accepted', 0);
my $bbr = eval {
	MptcpUtils::set_sysctl('net.ipv4.tcp_congestion_control', 'bbr');
	1;
};
$log = start_log();
ok( has_lines(
		$log,
		'LOG:  MPTCP path manager offers clients signal endpoints 127.0.0.2 (backup); limits: subflows 0, add_addr_accepted 0'
	),
	'the LOG line names the endpoint, a backup');
ok( has_lines(
		$log,
		'WARNING:  MPTCP signal endpoint 127.0.0.2 is on an address the server does not listen on',
		'DETAIL:  Clients are told to join at 127.0.0.2 port '
		  . $node->port
		  . ', where their joins are refused, so their connections stay on one path.',
		'HINT:  Add 127.0.0.2 to "listen_addresses", or replace endpoint 2 with one that has a port of its own.'
	),
	'a signal endpoint the server does not listen on: warning, hint naming the endpoint'
) or diag $log;
ok( has_lines(
		$log,
		'WARNING:  MPTCP path manager allows no additional subflows',
		'DETAIL:  The limit "subflows" is 0, so every MPTCP connection stays on one path.',
		'HINT:  Raise it with "ip mptcp limits set subflows 8".'),
	'a subflow limit of 0: warning, hint with the command') or diag $log;
SKIP:
{
	skip 'this namespace does not allow bbr', 1 unless $bbr;
	ok( has_lines(
			$log,
			'WARNING:  congestion control "bbr" makes MPTCP connections over several paths slower',
			'DETAIL:  Over paths of equal rate, MPTCP connections reach less of their summed rate with "bbr" than with "reno" or "cubic".',
			'HINT:  Use another one with "sysctl -w net.ipv4.tcp_congestion_control=reno", then restart the server.'
		),
		'bbr: warning, hint with the command') or diag $log;
}
is(scalar(() = $log =~ /^WARNING/mg), $bbr ? 3 : 2, 'one warning each, none about net.mptcp.enabled');

# The same endpoint on an address the server listens on: no warning.
$node->append_conf('postgresql.conf',
	"listen_addresses = '127.0.0.1, 127.0.0.2'\n");
MptcpUtils::set_sysctl('net.ipv4.tcp_congestion_control', 'reno');
MptcpUtils::run_ip('mptcp', 'limits', 'set', 'subflows', 2,
	'add_addr_accepted', 0);
is( start_log(),
	'LOG:  MPTCP path manager offers clients signal endpoints 127.0.0.2 (backup); limits: subflows 2, add_addr_accepted 0',
	'a signal endpoint the server listens on: no warning');

# MPTCP disabled in the namespace: the server listens with plain TCP, and
# mptcpinfo says why connections will not be multipath.
MptcpUtils::set_sysctl('net.mptcp.enabled', 0);
$log = start_log();
ok( has_lines(
		$log,
		q{WARNING:  MPTCP is disabled in the server's network namespace},
		'DETAIL:  "net.mptcp.enabled" is 0, so all connections use plain TCP.',
		'HINT:  Enable it with "sysctl -w net.mptcp.enabled=1", then restart the server.'
	),
	'net.mptcp.enabled = 0: warning, hint with the command') or diag $log;
is(scalar(() = $log =~ /^WARNING:  MPTCP/mg), 1, 'only that warning from mptcpinfo');
MptcpUtils::set_sysctl('net.mptcp.enabled', 1);

# Said once, at start.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'SELECT 1');
is(scalar(() = slurp_file($node->logfile, $offset) =~ /MPTCP path manager/g),
	0, 'nothing more is logged while the server runs');

$node->stop;
done_testing();
