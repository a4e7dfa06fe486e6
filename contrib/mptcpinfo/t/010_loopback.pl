
# Copyright (c) 2026, PostgreSQL Global Development Group

# The views over a loopback MPTCP connection, for every build: no
# PG_TEST_EXTRA, since the server listens only on the loopback of a private
# network namespace, which no other user can reach.  Skipped where
# unprivileged user namespaces or MPTCP sockets are not available.
#
# A client's MPTCP connection is in pg_stat_mptcp with its client port and
# in pg_stat_mptcp_subflows with both ends; a plain TCP client has a row
# with mptcp false and no subflows; a role without pg_read_all_stats sees
# the pid only; a standby's walreceiver has an outgoing row, its walsender
# an incoming one; and without mptcpinfo preloaded, subflows that only the
# processes' reports could give are a null row and one NOTICE.  Preloaded,
# the process reports them; and a process that has begun to exit, which
# can take seconds with interrupts held (here: dropping its temporary
# tables), is not asked at all: it said so at the start of proc_exit().
#
# A connection that a backend opens (dblink) is shown as that backend's
# only with mptcpinfo preloaded: the backend records it as it opens it, and
# no process's file descriptors are searched for it.  It stays shown after
# the backend has opened and closed more connections than it can record
# at once.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes;
use IO::Socket::IP;

BEGIN { MptcpUtils::enter_private_netns(1); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# IPv6 too, where the namespace's loopback has it: the views read only the
# address families that the server's connections use
my $ipv6 = IO::Socket::IP->new(LocalHost => '::1', Listen => 1) ? 1 : 0;
my $node = PostgreSQL::Test::Cluster->new('loopback');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf',
	"listen_mptcp = on\nlisten_addresses = '127.0.0.1"
	  . ($ipv6 ? ",::1" : "") . "'\n");
$node->start;
my $port = $node->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";
$node->safe_psql('postgres',
	'CREATE EXTENSION mptcpinfo; CREATE EXTENSION dblink; CREATE ROLE regress_plain_role LOGIN'
);

# the opened (dblink) connections of the session running it, after it has
# opened and closed $_[0] others
my $dblink_rows = sub {
	my $sql = qq{DO \$\$BEGIN FOR i IN 1..$_[0] LOOP
  PERFORM dblink_connect('c', '$connstr mptcp=1');
  PERFORM dblink_disconnect('c'); END LOOP; END\$\$;
SELECT dblink_connect('c', '$connstr mptcp=1 application_name=opened');
SELECT count(*), bool_and(m.mptcp), bool_and(m.subflows = 1)
  FROM pg_stat_mptcp m
 WHERE m.pid = pg_backend_pid() AND m.direction = 'outgoing';
SELECT count(*) FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'opened' AND m.direction = 'incoming';};
	return $node->safe_psql('postgres', $sql);
};
is($dblink_rows->(0), "OK\n0||\n1",
	'not preloaded: a dblink connection is shown from its server end only');

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

SKIP:
{
	skip 'no IPv6 loopback in the namespace', 1 unless $ipv6;
	my $mp6 = $node->background_psql('postgres',
		extra_params =>
		  [ '-d' => "host=::1 port=$port dbname=postgres mptcp=1 application_name=mp6" ]);
	is( $node->safe_psql(
			'postgres', q{
SELECT a.application_name, m.mptcp, m.subflows
  FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name IN ('mp', 'mp6') ORDER BY 1}),
		"mp|t|1\nmp6|t|1",
		'pg_stat_mptcp: an IPv6 client and an IPv4 one');
	$mp6->quit;
}

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

# A standby whose walreceiver connects with mptcp=1: its connection is the
# walreceiver's outgoing row, found by the primary's address and port that
# it records; on the primary, the walsender's is incoming.
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"primary_conninfo = '$connstr mptcp=1 application_name=standby'\n");
$standby->start;
$node->safe_psql('postgres', 'CREATE TABLE replicated AS SELECT 42 AS a');
$node->wait_for_catchup('standby');
is($standby->safe_psql('postgres', 'SELECT sum(a) FROM replicated'),
	'42', 'the standby replays over its MPTCP connection');
is( $standby->safe_psql(
		'postgres', q{
SELECT m.direction, m.mptcp, m.subflows
  FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp m USING (pid)}),
	'outgoing|t|1',
	'standby: the walreceiver has one outgoing MPTCP connection');
is( $node->safe_psql(
		'postgres', q{
SELECT m.direction, m.mptcp
  FROM pg_stat_replication r JOIN pg_stat_mptcp m USING (pid)}),
	'incoming|t',
	'primary: the walsender has the incoming end');
$standby->stop;

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

$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'mptcpinfo'\nmax_locks_per_transaction = 512\n");
$node->restart;
my $debug_line =
  qr/(\d+) server processes asked, \d+ recent reports reused, \d+ requests of other queries awaited, (\d+) processes gone/;

# preloaded: the process reports its subflow
$mp = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=mp" ]);
($ret, $out, $err) = $node->psql('postgres',
	"SET mptcpinfo.subflow_source = 'processes';\nSET client_min_messages = debug1;\n"
	  . qq{SELECT s.local_port = $port, s.remote_port = a.client_port
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'mp'});
is($out, 't|t', 'preloaded: the process reports its subflow');
ok($err =~ $debug_line && $1 == 1 && $2 == 0,
	'preloaded: one process asked, none gone')
  or diag $err;

is($dblink_rows->(0), "OK\n1|t|t\n1",
	'preloaded: a dblink connection is the outgoing one of its backend');
is($dblink_rows->(40), "OK\n1|t|t\n1",
	'preloaded: and still after 40 others were opened and closed');

# an opened IPv6 connection (to another server), while every client of
# this one is IPv4: the views read IPv6 connections for it too
SKIP:
{
	skip 'no IPv6 loopback in the namespace', 1 unless $ipv6;
	my $other = PostgreSQL::Test::Cluster->new('other');
	$other->init;
	$other->append_conf('postgresql.conf',
		"listen_mptcp = on\nlisten_addresses = '127.0.0.1,::1'\n");
	$other->start;
	my $oport = $other->port;
	is( $node->safe_psql(
			'postgres', qq{
SELECT dblink_connect('c6', 'host=::1 port=$oport dbname=postgres mptcp=1');
SELECT count(*), bool_and(m.mptcp), bool_and(host(c.client_addr) = '127.0.0.1')
  FROM pg_stat_mptcp m, pg_stat_activity c
 WHERE m.pid = pg_backend_pid() AND m.direction = 'outgoing'
   AND c.pid = pg_backend_pid();}),
		"OK\n1|t|t",
		'preloaded: an IPv4 client\'s backend, its opened IPv6 connection');
	$other->stop;
}

# A backend that takes seconds to exit: its 8,000 temporary tables are
# dropped with interrupts held.  An asker that comes meanwhile sees that it
# will not answer, and neither asks it nor waits for it.
my $slow_pid = $mp->query_safe('SELECT pg_backend_pid()');
$mp->query_safe(
	q{DO $$BEGIN FOR i IN 1..8000 LOOP
  EXECUTE format('CREATE TEMP TABLE t%s (a int)', i); END LOOP; END$$});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($slow_pid)");
Time::HiRes::sleep(0.3);
($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE pid = $slow_pid;\n"
	  . "SET mptcpinfo.subflow_source = 'processes';\nSET client_min_messages = debug1;\n"
	  . "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $slow_pid");
SKIP:
{
	skip 'the backend had exited before the query', 2
	  unless $out =~ /^1\n/;
	ok( $err =~ $debug_line && $1 == 0 && $2 == 1,
		'an exiting backend is not asked: it said it will not answer')
	  or diag $err;
	unlike($err, qr/NOTICE/, 'an exiting backend: no NOTICE');
}
$mp->{run}->kill_kill;

$node->stop;
done_testing();
