
# Copyright (c) 2026, PostgreSQL Global Development Group

# pg_stat_mptcp_subflows reads the subflows it cannot look up from a dump
# of the TCP sockets that the kernel filters by the connections' ports: the
# host's other TCP connections are walked past, not described, and so are
# the server's plain TCP clients, on the server's port too.  (A
# connection with a subflow on another port, a port-based endpoint, is then
# read from a dump of all: src/test/mptcp/t/006_signal_ports.pl.)
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README), and needs a Linux kernel that can create MPTCP
# sockets; skips otherwise.

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

my $npaths = 2;
MptcpUtils::lab_up($npaths, undef);

my $node = PostgreSQL::Test::Cluster->new('dump_ports');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
max_connections = 40
));
$node->append_conf('pg_hba.conf', "host all all 198.18.0.0/15 trust\n");
$node->start;
my $port = $node->port;
$node->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');

# another program's plain TCP connections on loopback: 2 sockets each
my $nnoise = 50;
my @noise = MptcpUtils::loopback_tcp_noise($nnoise);

# the server's plain TCP clients
my $nplain = 20;
my @plain = map {
	$node->background_psql('postgres',
		extra_params => [ '-d' => "host=127.0.0.1 port=$port dbname=postgres" ])
} 1 .. $nplain;

my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=dump_client"
		)
	],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "SELECT pg_sleep(60);\n";
$h->pump_nb;

# (a new session each time: nothing remembered of earlier queries, so the
# connection's subflows, more than its initial one, come from a dump)
my $subflows_sql =
  "SELECT count(*) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'dump_client'";
my $subflows = 0;
my $hidden = 0;
for my $try (1 .. 200)
{
	my (undef, $rows, $notice) = $node->psql('postgres', $subflows_sql);
	$subflows = $rows;
	# Before Linux 6.15 the dump does not say whose subflows the TCP sockets
	# are to a server without privileges (their subflows come from the server
	# processes' reports instead: 008_reports.pl).  The server says so, and
	# is asked rather than the kernel's version, which backports contradict.
	$hidden = $notice =~ /cannot be shown/;
	last if $subflows >= $npaths || $hidden;
	$h->pump_nb;
	select(undef, undef, undef, 0.1);
}
plan skip_all => 'the kernel does not show this server subflows in a dump'
  if $hidden;
is($subflows, $npaths, 'the client connection has a subflow on each path');

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n$subflows_sql");
is($stdout, $npaths, 'read from a dump, it has them all');
my ($dumped) = $stderr =~ /; (\d+) TCP sockets dumped/;
ok( defined $dumped && $dumped < $nnoise,
	"the dump described the server port's sockets only, not the other program's "
	  . 2 * $nnoise
	  . " (@{[ $dumped // 'no DEBUG line' ]})");
ok( defined $dumped && $dumped < $nplain,
	"nor the server's $nplain plain TCP clients (@{[ $dumped // 'no DEBUG line' ]})"
);

$h->kill_kill;
$h->finish;
$_->close for @noise;
$_->quit for @plain;

$node->stop;
done_testing();
