
# Copyright (c) 2026, PostgreSQL Global Development Group

# The report path over a loopback MPTCP connection, for every build, as
# 010_loopback.pl (no PG_TEST_EXTRA: the server listens only on the
# loopback of a private network namespace).
#
# Without mptcpinfo preloaded, subflows that only the processes' reports
# could give are a null row and one NOTICE that says what to do.
# Preloaded, the process reports them; and a process that has begun to
# exit, which can take seconds with interrupts held (here: dropping its
# temporary tables), is not asked at all: it said so at the start of
# proc_exit().
#
# A connection that a backend opens (dblink) is shown as that backend's
# only with mptcpinfo preloaded: the backend records it as it opens it, and
# no process's file descriptors are searched for it.  It stays shown after
# the backend has opened and closed more connections than it can record
# at once.  A standby's walreceiver that names its primary by host name has
# its MPTCP connection found by the socket it holds.

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

my $ipv6 = IO::Socket::IP->new(LocalHost => '::1', Listen => 1) ? 1 : 0;
my $node = PostgreSQL::Test::Cluster->new('loopback_reports');
$node->init;
$node->append_conf('postgresql.conf',
	"listen_mptcp = on\nlisten_addresses = '127.0.0.1'\n");
$node->start;
my $port = $node->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";
$node->safe_psql('postgres',
	'CREATE EXTENSION mptcpinfo; CREATE EXTENSION dblink');

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
# Not preloaded, a connection whose subflows only its process could report
# (forced with subflow_source = processes, as for a connection with several
# subflows before Linux 6.15) has a row with its pid and token, never zero
# rows, and the query one NOTICE that says why and what to do.
my $mp = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=mp" ]);
my ($ret, $out, $err) = $node->psql('postgres',
	"SET mptcpinfo.subflow_source = 'processes';\n"
	  . q{SELECT count(*), bool_and(s.token IS NOT NULL), bool_and(s.local_port IS NULL)
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'mp'});
is($out, '1|t|t', 'not preloaded: the connection has one row without figures');
like(
	$err,
	qr/NOTICE:  subflows of \d+ MPTCP connections? cannot be shown\nDETAIL:  Before Linux 6.15.*\nHINT:  Add "mptcpinfo" to "shared_preload_libraries"/,
	'not preloaded: one NOTICE says why and what to do');
$mp->quit;

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

# (immediate: the backend may still be dropping its tables, which took over
# a minute in an emulated guest on the build with assertions)
$node->stop('immediate');

# A standby whose primary_conninfo names the primary by host name, as most
# do (hostaddr: no resolver needed): the walreceiver records the name, not
# an address, and its connection is found by the socket it holds, not
# shown as plain TCP.
my $primary = PostgreSQL::Test::Cluster->new('named_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf',
	"listen_mptcp = on\nlisten_addresses = '127.0.0.1'\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');
$primary->backup('named');
my $named = PostgreSQL::Test::Cluster->new('named_standby');
$named->init_from_backup($primary, 'named', has_streaming => 1);
$named->append_conf('postgresql.conf',
	"primary_conninfo = 'host=pg-primary.invalid hostaddr=127.0.0.1 port="
	  . $primary->port
	  . " dbname=postgres mptcp=1 application_name=named'\n");
$named->start;
$primary->safe_psql('postgres', 'CREATE TABLE named AS SELECT 7 AS a');
$primary->wait_for_catchup('named');
is($named->safe_psql('postgres', 'SELECT sum(a) FROM named'),
	'7', 'a standby connected by host name replays');
is( $named->safe_psql(
		'postgres', q{
SELECT w.sender_host, m.direction, m.mptcp, m.subflows
  FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp m USING (pid)}),
	'pg-primary.invalid|outgoing|t|1',
	'standby: a walreceiver connected by host name has its MPTCP connection'
);
$named->stop;
$primary->stop;
done_testing();
