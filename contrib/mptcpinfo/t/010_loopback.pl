
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
# an incoming one.  A connection that a backend opens (dblink) is shown
# from the server's end only: nothing tells which process holds its client
# end, and no process's file descriptors are searched for it.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
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
	'a dblink connection is shown from its server end only');

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
	"primary_conninfo = '$connstr mptcp=1 application_name=standby'\nlisten_mptcp = on\n"
);
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
# The subflows of the walreceiver's connection and of a client's: a dump
# for both filters by two ports, a local and a remote one.
my (undef, $both, $both_err) = $standby->psql(
	'postgres', q{
SELECT count(*) FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid, token)
 WHERE m.direction = 'outgoing' OR s.pid = pg_backend_pid()},
	connstr => 'host=127.0.0.1 port=' . $standby->port . ' dbname=postgres mptcp=1');
is($both, '2', 'standby: the subflows of the walreceiver and of an MPTCP client');
is($both_err, '', 'standby: the dump filtered by two ports, without a warning');
is( $node->safe_psql(
		'postgres', q{
SELECT m.direction, m.mptcp
  FROM pg_stat_replication r JOIN pg_stat_mptcp m USING (pid)}),
	'incoming|t',
	'primary: the walsender has the incoming end');

# The walreceiver on plain TCP, while another process of the server's user
# holds an MPTCP connection to the same primary (as a dblink or
# postgres_fdw connection of a standby's backend would): that connection
# goes to the primary's address and port too, but it is not the
# walreceiver's.
my $other = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=other" ]);
$standby->safe_psql('postgres',
	"ALTER SYSTEM SET primary_conninfo = '$connstr mptcp=0 application_name=standby'"
);
$standby->reload;
$node->poll_query_until(
	'postgres', q{
SELECT count(*) = 1 FROM pg_stat_replication r JOIN pg_stat_mptcp m USING (pid)
 WHERE NOT m.mptcp})
  or die 'the walreceiver did not reconnect over plain TCP';
is( $standby->safe_psql(
		'postgres', q{
SELECT m.direction, m.mptcp, m.subflows
  FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp m USING (pid)}),
	'outgoing|f|',
	'standby: a walreceiver on TCP does not take another process\'s MPTCP connection to the primary'
);
$other->quit;
$standby->stop;

$mp->quit;
$tcp->quit;

# A dump that the kernel marks interrupted (NLM_F_DUMP_INTR: the table
# changed while the kernel went through it) may miss sockets: it is read
# again from the start.  Socket diagnostics that fail: a WARNING the first
# time in a session, DEBUG1 after that.  Injection points make the first
# reading of every dump miss every socket and say it was interrupted, or
# make every dump look interrupted (read three times, then given up);
# another throws an ERROR in a scan: builds with injection points only.
SKIP:
{
	skip 'this build has no injection points', 8
	  unless $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_available_extensions WHERE name = 'injection_points'"
	  ) eq '1';
	$node->safe_psql('postgres', 'CREATE EXTENSION injection_points');
	my $mp2 = $node->background_psql('postgres',
		extra_params => [ '-d' => "$connstr mptcp=1 application_name=mp2" ]);
	my $failing = $node->background_psql('postgres');
	my $mp2_sql =
	  "SELECT m.mptcp, m.subflows FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'mp2'";
	$failing->query_safe(
		"SELECT injection_points_attach('mptcpinfo-dump-interrupted-once', 'notice')"
	);
	$failing->{stderr} = '';
	my $reread = $failing->query($mp2_sql);
	my $reread_err = $failing->{stderr};
	$failing->{stderr} = '';
	$failing->query_safe(
		"SELECT injection_points_detach('mptcpinfo-dump-interrupted-once')");
	is($reread, 't|1',
		'a dump interrupted once, with nothing in it: read again, the connection found'
	);
	is($reread_err, '', 'a dump interrupted once: no warning');
	$failing->query_safe(
		"SELECT injection_points_attach('mptcpinfo-dump-interrupted', 'notice')");
	$failing->{stderr} = '';
	my $unknown = $failing->query(
		"SELECT m.mptcp IS NULL FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'mp2'"
	);
	my $first = $failing->{stderr};
	$failing->{stderr} = '';
	$failing->query('SELECT count(*) FROM pg_stat_mptcp');
	my $second = $failing->{stderr};
	$failing->{stderr} = '';
	$failing->query_safe(
		"SELECT injection_points_detach('mptcpinfo-dump-interrupted')");
	is($unknown, 't',
		'a dump interrupted every time: nothing of it kept, MPTCP unknown');
	like(
		$first,
		qr/WARNING:  could not read MPTCP socket diagnostics/,
		'failing socket diagnostics: a WARNING');
	unlike($second, qr/WARNING/,
		'failing again in the same session: no WARNING');

	# An ERROR while the scan's netlink socket is open does not leave it
	# open: the session holds as many sockets after three such queries.
	my $pid = $failing->query_safe('SELECT pg_backend_pid()');
	my $sockets =
	  sub { scalar grep { (readlink($_) // '') =~ /^socket:/ } glob("/proc/$pid/fd/*") };
	my $before = $sockets->();
	ok($before > 0, "the session's sockets are seen in /proc ($before)");
	$failing->query_safe(
		"SELECT injection_points_attach('mptcpinfo-dump-error', 'error')");
	# (caught: the background psql stops at an ERROR)
	$failing->query(
		q{DO $$BEGIN PERFORM count(*) FROM pg_stat_mptcp;
EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'caught: %', SQLERRM; END$$})
	  for 1 .. 3;
	my $errors = $failing->{stderr};
	$failing->{stderr} = '';
	$failing->query_safe(
		"SELECT injection_points_detach('mptcpinfo-dump-error')");
	like($errors, qr/caught: error triggered for injection point/,
		'an ERROR in the middle of a scan');
	is($sockets->(), $before, 'the ERROR left no socket open');
	$failing->quit;
	$mp2->quit;
}

$node->stop;
done_testing();
