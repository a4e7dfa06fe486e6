
# Copyright (c) 2026, PostgreSQL Global Development Group

# pg_stat_mptcp_subflows looks up the subflows a session knows by their
# ends, unless a dump of the TCP sockets filtered by their ports costs less:
# when they are more than one in 16 of the namespace's TCP sockets.
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

my $node = PostgreSQL::Test::Cluster->new('lookup_or_dump');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
));
$node->append_conf('pg_hba.conf', "host all all 198.18.0.0/15 trust\n");
$node->start;
my $port = $node->port;
$node->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');

my $nclients = 40;
my $sleep_sql = PostgreSQL::Test::Utils::tempdir . '/sleep.sql';
PostgreSQL::Test::Utils::append_to_file($sleep_sql, "\\sleep 60 s\n");
my $pgbench = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'pgbench', '-n', '-c', $nclients, '-j', '4', '-T', '60',
			'-f', $sleep_sql,
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=many"
		)
	],
	'>', \my $pgbench_out, '2>', \my $pgbench_err);
my $many_sql =
  "SELECT count(*) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'many' AND s.local_port IS NOT NULL";
my $many = 0;
for my $try (1 .. 300)
{
	$many = $node->safe_psql('postgres', $many_sql);
	last if $many >= $npaths * $nclients;
	select(undef, undef, undef, 0.1);
}
is($many, $npaths * $nclients, "$nclients clients with a subflow on each path");

# a session's two queries: the first reads a dump, the second has the ends
my $second_query = sub {
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"$many_sql;\nSET client_min_messages = debug1;\n$many_sql");
	my ($looked_up, $dumped) =
	  $stderr =~ /mptcpinfo: (\d+) MPTCP connections looked up by their ends, (\d+) read from a dump/;
	return ($stdout, $looked_up // 'none', $dumped // 'none');
};
my ($rows, $looked_up, $from_dump) = $second_query->();
# (the querying session's own connection counts too, if it is MPTCP)
is( "$rows " . ($looked_up eq '0' && $from_dump >= $nclients ? 'dump' : "$looked_up looked up, $from_dump from a dump"),
	$npaths * $nclients . "\n" . $npaths * $nclients . " dump",
	'few other TCP sockets: the known subflows come from the filtered dump');

# another program's 700 plain TCP connections (1,400 sockets: more than 16
# times the 80 lookups), held by a process with a higher limit of files
my $holder_out = '';
my $holder = IPC::Run::start(
	[
		'bash', '-c',
		'ulimit -n 4096 && exec perl -MIO::Socket::IP -e \''
		  . 'my $l = IO::Socket::IP->new(LocalHost => "127.0.0.1", LocalPort => 0, Listen => 1024) or die $@; my @s;'
		  . ' for (1 .. 700) { push @s, IO::Socket::IP->new(PeerHost => "127.0.0.1", PeerPort => $l->sockport) or die $@;'
		  . ' push @s, scalar($l->accept) or die $!; } $| = 1; print "ready\n"; sleep 120;\''
	],
	'>', \$holder_out);
for my $try (1 .. 300)
{
	$holder->pump_nb;
	last if $holder_out =~ /ready/;
	select(undef, undef, undef, 0.1);
}
like($holder_out, qr/ready/, 'another program holds 700 TCP connections');
($rows, $looked_up, $from_dump) = $second_query->();
is( "$rows " . ($from_dump eq '0' && $looked_up >= $nclients ? 'lookups' : "$looked_up looked up, $from_dump from a dump"),
	$npaths * $nclients . "\n" . $npaths * $nclients . " lookups",
	'many other TCP sockets: the known subflows are looked up by their ends');

$holder->kill_kill;
$holder->finish;
$pgbench->kill_kill;
$pgbench->finish;
$node->stop;
done_testing();
