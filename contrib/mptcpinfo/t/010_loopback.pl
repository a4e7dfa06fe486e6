
# Copyright (c) 2026, PostgreSQL Global Development Group

# The views over a loopback MPTCP connection, for every build: no
# PG_TEST_EXTRA, since the server listens only on the loopback of a private
# network namespace, which no other user can reach.  Skipped where
# unprivileged user namespaces or MPTCP sockets are not available.
#
# A client's MPTCP connection is in pg_stat_mptcp with its client port and
# in pg_stat_mptcp_subflows with both ends; a plain TCP client has a row
# with mptcp false and no subflows; a role without pg_read_all_stats sees
# the pid only; and without mptcpinfo preloaded, subflows that only the
# processes' reports could give are a null row and one NOTICE.

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

my $node = PostgreSQL::Test::Cluster->new('loopback');
$node->init;
$node->append_conf('postgresql.conf',
	"listen_mptcp = on\nlisten_addresses = '127.0.0.1'\n");
$node->start;
my $port = $node->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";
$node->safe_psql('postgres',
	'CREATE EXTENSION mptcpinfo; CREATE ROLE regress_plain_role LOGIN');

my $mp = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=mp" ]);
my $tcp = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr application_name=tcp" ]);

is( $node->safe_psql(
		'postgres', q{
SELECT a.application_name, m.mptcp, m.subflows, m.direction
  FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name IN ('mp', 'tcp') ORDER BY 1}),
	"mp|t|1|incoming\ntcp|f||incoming",
	'pg_stat_mptcp: the MPTCP client with one subflow, the TCP one without');

is( $node->safe_psql(
		'postgres', qq{
SELECT s.local_port = $port, s.remote_port = a.client_port, s.established
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name IN ('mp', 'tcp')}),
	't|t|t',
	'pg_stat_mptcp_subflows: one subflow, with both ends of the connection');

# a role without pg_read_all_stats: its own connection's details, the pid
# only of the others', and no subflows at all
my $own = $node->background_psql('postgres',
	extra_params =>
	  [ '-d' => "$connstr mptcp=1 user=regress_plain_role application_name=own" ]);
is( $own->query_safe(
		q{SELECT a.application_name, m.mptcp IS NOT NULL
  FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name IN ('mp', 'own') ORDER BY 1}),
	"mp|f\nown|t",
	'another role sees the details of its own connection only');
my ($ret, $out, $err) = $node->psql('postgres',
	'SELECT count(*) FROM pg_stat_mptcp_subflows',
	extra_params => [ '-U', 'regress_plain_role' ]);
like($err, qr/permission denied/,
	'pg_stat_mptcp_subflows needs pg_read_all_stats');
$own->quit;

# Not preloaded, a connection whose subflows only its process could report
# has a row with its pid and token, and the query one NOTICE.
($ret, $out, $err) = $node->psql('postgres',
	"SET mptcpinfo.subflow_source = 'processes';\n"
	  . q{SELECT s.token IS NOT NULL, s.local_port IS NULL
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'mp'});
is($out, 't|t', 'not preloaded: the connection has a row without figures');
like(
	$err,
	qr/NOTICE:  subflows of \d+ MPTCP connections? cannot be shown\nDETAIL:  Before Linux 6.15/,
	'not preloaded: one NOTICE says why');

$mp->quit;
$tcp->quit;
$node->stop;
done_testing();
