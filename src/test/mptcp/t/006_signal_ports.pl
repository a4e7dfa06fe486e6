
# Copyright (c) 2026, PostgreSQL Global Development Group

# Hosts with a single address: the server announces extra ports of its own
# address (signal endpoints with a port, Linux 5.12), and the client opens
# one subflow to each, all over the same link.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# README).

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

my $npaths = 3;
MptcpUtils::lab_up($npaths, undef, 'ports');
like(MptcpUtils::run_ip(qw(mptcp endpoint show)),
	qr/198\.18\.1\.1 port 40002 .*signal/, 'port endpoints are configured');

my $node = PostgreSQL::Test::Cluster->new('ports');
$node->init(allows_streaming => 1);
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
));
$node->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$node->start;
my $port = $node->port;
$node->safe_psql('postgres',
	'CREATE EXTENSION mptcpinfo; CREATE TABLE t AS SELECT g, md5(g::text) AS m FROM generate_series(1, 20000) g'
);

# A session from the client namespace that stays connected while we look.
my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=ports_client"
		)
	],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "SELECT count(*), md5(string_agg(m, '' ORDER BY g)) FROM t;\nSELECT pg_sleep(60);\n";
$h->pump_nb;

my $subflows = '';
for my $try (1 .. 200)
{
	$subflows = $node->safe_psql('postgres',
		"SELECT string_agg(s.local_port::text, ',' ORDER BY s.local_port) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'ports_client'"
	);
	last if ($subflows =~ tr/,//) + 1 >= $npaths && $subflows ne '';
	$h->pump_nb;
	select(undef, undef, undef, 0.1);
}
is($subflows, join(',', sort { $a <=> $b } (40002 .. 40000 + $npaths, $port)),
	"one subflow on the server port and one on each signalled port");
is( $node->safe_psql(
		'postgres',
		"SELECT m.subflows FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'ports_client'"
	),
	$npaths,
	'pg_stat_mptcp counts them');
for my $try (1 .. 100)
{
	$h->pump_nb;
	last if $out =~ /\n/;
	select(undef, undef, undef, 0.1);
}
like($out, qr/^20000\|[0-9a-f]{32}$/m, 'the client got its rows');
$h->kill_kill;
$h->finish;

$node->stop;
done_testing();
