
# Copyright (c) 2026, PostgreSQL Global Development Group

# How pg_stat_mptcp_subflows gets its rows, with mptcpinfo preloaded.
#
# A connection with one subflow has it looked up by the connection's ends,
# on every kernel: no server process is asked.  mptcpinfo.subflow_source =
# processes makes the view ask the processes instead, as it must on older
# kernels for connections with more subflows; then the rows must be the
# same, a second query within a second reuses the reports, an asker that
# is itself signalled or asked still gets every row, a stopped process
# costs one NOTICE, a process that exits while it is asked does not make
# the asker wait for it, and an exporter's loop beside pgbench sees every
# client.  The DEBUG1 line of each query says what it did.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (only
# its loopback is used).

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $node = PostgreSQL::Test::Cluster->new('reports');
$node->init;
$node->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'mptcpinfo'
# for a standby (section 9)
wal_level = replica
max_wal_senders = 2
));
$node->start;
my $port = $node->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";
$node->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');

# Idle MPTCP clients, each with one subflow on loopback.
my $nclients = 6;
my @clients;
for my $i (1 .. $nclients)
{
	push @clients,
	  $node->background_psql('postgres',
		extra_params =>
		  [ '-d' => "$connstr mptcp=1 application_name=idle_$i" ]);
}
my %client_pid;
for my $row (
	split /\n/,
	$node->safe_psql(
		'postgres',
		"SELECT application_name, pid FROM pg_stat_activity WHERE application_name LIKE 'idle_%'"
	))
{
	my ($name, $pid) = split /\|/, $row;
	$client_pid{$name} = $pid;
}
is(scalar keys %client_pid, $nclients, 'every idle client has a backend');

# The idle clients' subflows (server end, client end) under a source, and
# the counts of its DEBUG1 line.  The querying session is plain TCP.
my $subflows_sql = q{
SELECT s.pid, s.local_port, s.remote_port, a.client_port
FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
WHERE a.application_name LIKE 'idle_%'
ORDER BY s.pid, s.remote_port};

sub query_subflows
{
	my ($source, $session) = @_;
	my $sql =
		"SET client_min_messages = debug1;\n"
	  . "SET mptcpinfo.subflow_source = '$source';\n"
	  . $subflows_sql;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
	is($ret, 0, "subflows query ($source) succeeds")
	  or diag $stderr;
	my %debug;
	if ($stderr =~
		/mptcpinfo: (\d+) MPTCP connections looked up by their ends, (\d+) read from a dump, (\d+) not described by the kernel; (\d+) server processes asked, (\d+) recent reports reused, (\d+) requests of other queries awaited, (\d+) processes gone/
	  )
	{
		%debug = (
			looked_up => $1,
			dumped => $2,
			undescribed => $3,
			asked => $4,
			reused => $5,
			joined => $6,
			gone => $7);
	}
	else
	{
		fail("subflows query ($source) logs its DEBUG1 line");
		diag $stderr;
	}
	return ($stdout, \%debug, $stderr);
}

# Every idle client's subflow is there, with the server's port and the
# client's own port as pg_stat_activity has it.
sub check_rows
{
	my ($rows, $what) = @_;
	my @lines = split /\n/, $rows;
	is(scalar @lines, $nclients, "$what: one subflow per idle client");
	my $matching = grep {
		my ($pid, $lport, $rport, $cport) = split /\|/;
		$lport == $port && $rport == $cport
	} @lines;
	is($matching, $nclients,
		"$what: server and client ports are the connection's");
	return;
}

# 1. auto: a connection with one subflow has it looked up by the
# connection's ends, on every kernel, and then no process is asked and no
# TCP socket dumped.
my ($auto_rows, $auto) = query_subflows('auto');
check_rows($auto_rows, 'auto');
is($auto->{looked_up}, $nclients,
	'auto: every idle client\'s subflow is looked up by its ends');
is($auto->{dumped} + $auto->{undescribed},
	0, 'auto: no connection needs the dump or a report');
is($auto->{asked} + $auto->{reused} + $auto->{joined},
	0, 'auto: no server process is asked');

# 2. processes: the same rows from the processes' reports, each asked once,
# and a query right after reuses them instead of asking again.  Both in one
# session, so that the second comes within the reports' reuse window (1 s)
# even where starting psql takes longer than that (an emulated guest).
my (undef, $both_rows, $both_err) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n"
	  . "SET mptcpinfo.subflow_source = 'processes';\n"
	  . "$subflows_sql;\n\\echo __again__\n$subflows_sql;\n");
my ($proc_rows, $again_rows) = split /\n?__again__\n?/, $both_rows;
my @asked = $both_err =~
  /(\d+) server processes asked, (\d+) recent reports reused/g;
is($proc_rows, $auto_rows, 'processes: the same rows as auto');
ok( @asked == 4 && $asked[0] >= $nclients,
	"processes: the idle clients' processes are asked (@asked[0 .. 1])")
  or diag $both_err;
is($again_rows, $auto_rows, 'processes, again: the same rows');
is($asked[2], 0, 'processes, again right after: nobody asked');
ok(($asked[3] // 0) >= $nclients,
	"processes, again right after: reports reused (" . ($asked[3] // '?') . ")");

# 3. An asker that is signalled while it waits (here to log its memory
# contexts), and askers that are MPTCP clients asking each other, still get
# every row.
sub asker
{
	my ($name) = @_;
	my $s = $node->background_psql('postgres',
		extra_params => [ '-d' => "$connstr mptcp=1 application_name=$name" ]
	);
	$s->query_safe("SET mptcpinfo.subflow_source = 'processes'");
	return $s;
}
my @askers = (asker('asker_1'), asker('asker_2'));
my @asker_pids = map { $_->query_safe('SELECT pg_backend_pid()') } @askers;
my $signaller = $node->background_psql('postgres');
my $rounds = 8;
my $complete = 0;
for my $round (1 .. $rounds)
{
	# let the reports age past their reuse window
	Time::HiRes::sleep(1.1);
	# The first asker queries in the background while the second asks it,
	# and both are sent a signal meanwhile.
	$askers[0]->{stdin} .= "$subflows_sql;\n\\echo __round_done__\n";
	$askers[0]->{run}->pump_nb;
	$signaller->query_safe(
		"SELECT pg_log_backend_memory_contexts(pid) FROM unnest(ARRAY[$asker_pids[0], $asker_pids[1]]) pid"
	);
	my $second = $askers[1]->query_safe($subflows_sql);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	$askers[0]->{run}->pump
	  until $askers[0]->{stdout} =~ /__round_done__/ || time > $deadline;
	my ($first) = $askers[0]->{stdout} =~ /^(.*?)\n?__round_done__/s;
	$askers[0]->{stdout} = '';
	$complete++
	  if defined $first && $first eq $auto_rows && $second eq $auto_rows;
}
is($complete, $rounds,
	'signalled askers asking each other get every row, every round');
$signaller->quit;

# 4. A stopped process does not answer: its connection's subflows are
# missing with a NOTICE, and everything else is there.
Time::HiRes::sleep(1.1);
my $stopped = $client_pid{idle_1};
kill 'STOP', $stopped;
my ($partial, $partial_debug, $notices) = query_subflows('processes');
like(
	$notices,
	qr/NOTICE:  subflows of 1 MPTCP connection cannot be shown\nDETAIL:  The server process holding it did not answer/,
	'a stopped process: one NOTICE');
my @partial = grep { !/^$stopped\|/ } split /\n/, $auto_rows;
my @answered = grep { !/^$stopped\|/ } split /\n/, $partial;
is(join("\n", @answered), join("\n", @partial),
	'a stopped process: every other subflow is shown');

# the wait event of an asker waiting for answers
my $report_wait = 'MptcpinfoReport';

# Wait until an asker is seen waiting for answers (pg_stat_activity's rows
# "where"), from a session opened beforehand: an asker waits 2 s at most,
# and a new psql can take seconds to start under an emulated kernel.
my $watcher = $node->background_psql('postgres');

sub wait_for_asker
{
	my ($where, $what) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	Time::HiRes::sleep(0.02)
	  until $watcher->query_safe(
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = '$report_wait' AND $where"
	  ) eq 't'
	  || time > $deadline;
	diag "$what was not seen waiting" if time > $deadline;
}

# 5. A process that exits while it is asked does not leave the asker
# waiting the 2 s an answer may take.
Time::HiRes::sleep(1.1);
my $background = $node->background_psql('postgres');
$background->{stdin} .=
  "SET client_min_messages = debug1;\nSET mptcpinfo.subflow_source = 'processes';\n"
  . "SELECT count(*) FROM pg_stat_mptcp_subflows;\n\\echo __gone_done__\n";
$background->{run}->pump_nb;
# the asker is waiting for the stopped process once it has been asked
wait_for_asker('true', 'the asker');
kill 'TERM', $stopped;
kill 'CONT', $stopped;
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
$background->{run}->pump
  until $background->{stdout} =~ /__gone_done__/ || time > $deadline;
# (It answers on its way out if it writes its FATAL message to its client
# first; else it is given up.  Either way the asker does not wait for it.)
like(
	$background->{stderr},
	qr/; [1-9]\d* server processes asked, .*, (0|1) processes gone/,
	'an exiting process: the asker finishes');
unlike($background->{stderr}, qr/did not answer/,
	'an exiting process is not left to time out');
$background->quit;

# 5b. An asker that wants the connections a process opened is not served
# an answer without them.  A backend holds its client's MPTCP connection
# and a dblink MPTCP connection it opened to another server; an asker of
# version 1.4 (which shows opened connections) asks it, and is stopped
# while the answer comes.
# Then an asker of version 1.1 (which does not show them) asks it again.
# The newer answer must still have the opened connection for the first
# asker, which shows both of the backend's connections (with their figures,
# or without and a NOTICE if the answer came too late), never one alone.
# (The series without its last patch has one SQL version, whose askers all want
# the opened connections: there only the first asker runs.)
my $other = PostgreSQL::Test::Cluster->new('other');
$other->init;
$other->append_conf('postgresql.conf',
	"listen_mptcp = on\nlisten_addresses = '127.0.0.1'\n");
$other->start;
$node->safe_psql('postgres', 'CREATE EXTENSION dblink');
my $has_1_1 = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extension_versions WHERE name = 'mptcpinfo' AND version = '1.1'"
) eq '1';
if ($has_1_1)
{
	$node->safe_psql('postgres', 'CREATE DATABASE old');
	$node->safe_psql('old', "CREATE EXTENSION mptcpinfo VERSION '1.1'");
}
my $opener = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=opener" ]);
$opener->query_safe("SELECT dblink_connect('c', 'host=127.0.0.1 port="
	  . $other->port . " dbname=postgres mptcp=1')");
my $opener_pid = $opener->query_safe('SELECT pg_backend_pid()');
my $new_asker = $node->background_psql('postgres');
my $new_asker_pid = $new_asker->query_safe('SELECT pg_backend_pid()');
$new_asker->query_safe("SET mptcpinfo.subflow_source = 'processes'");
my $old_sql = "SET mptcpinfo.subflow_source = 'processes';\n"
  . "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $opener_pid;";
Time::HiRes::sleep(1.1);
kill 'STOP', $opener_pid;
$new_asker->{stdin} .=
  "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $opener_pid;\n\\echo __new_done__\n";
$new_asker->{run}->pump_nb;
wait_for_asker("pid = $new_asker_pid", 'the 1.4 asker');
kill 'STOP', $new_asker_pid;
kill 'CONT', $opener_pid;
# the opener answers the 1.4 asker, and that answer ages past its reuse
# window, so that the 1.1 asker asks again
Time::HiRes::sleep(1.1);
my $old_count = $has_1_1 ? $node->safe_psql('old', $old_sql) : undef;
kill 'CONT', $new_asker_pid;
$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
$new_asker->{run}->pump
  until $new_asker->{stdout} =~ /__new_done__/ || time > $deadline;
my ($new_count) = $new_asker->{stdout} =~ /^(\d+)/;
SKIP:
{
	skip 'no version 1.1 to ask with', 1 unless $has_1_1;
	is($old_count, 1, 'version 1.1: the client connection of the opener');
}
is($new_count, 2,
	'version 1.4, answered before and after a 1.1 asker: both connections of the opener');

# 5c. A second asker that wants as much as a request on its way waits for
# that request's answer instead of asking again, opened connections
# included, and is woken by it like the first one.  (It may ask other
# processes whose answers to the first asker have aged meanwhile, on a
# slow machine.)  The second must ask within the 2 s that the first
# one's request counts as on its way: the askers are set up beforehand.
my @joiners = map { $node->background_psql('postgres') } 1 .. 2;
my @joiner_pids = map { $_->query_safe('SELECT pg_backend_pid()') } @joiners;
$_->query("SET client_min_messages = debug1;\n"
	  . "SET mptcpinfo.subflow_source = 'processes'")
  for @joiners;
Time::HiRes::sleep(1.1);
kill 'STOP', $opener_pid;
for my $j (0 .. 1)
{
	$joiners[$j]->{stdin} .=
	  "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $opener_pid;\n\\echo __joined__\n";
	$joiners[$j]->{run}->pump_nb;
	wait_for_asker("pid = $joiner_pids[$j]", "asker $j");
}
kill 'CONT', $opener_pid;
my @joined;
for my $j (0 .. 1)
{
	$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	$joiners[$j]->{run}->pump
	  until $joiners[$j]->{stdout} =~ /__joined__/ || time > $deadline;
	my ($count) = $joiners[$j]->{stdout} =~ /^(\d+)/;
	my @d = $joiners[$j]->{stderr} =~
	  /(\d+) server processes asked, \d+ recent reports reused, (\d+) requests of other queries awaited/;
	push @joined, join(',', $count // '?', @d);
}
like(
	join(' ', @joined),
	qr/^2,[1-9]\d*,0 2,\d+,[1-9]\d*$/,
	'a second asker waits for the first one\'s request: both get both connections');
$_->quit for @joiners;
$watcher->quit;

$new_asker->quit;
$opener->quit;
$other->stop;

# 6. An exporter's loop beside an OLTP load: pgbench -S over MPTCP while
# both views are queried, in both modes; every query has every idle
# client, and pgbench loses no transaction.
$node->command_ok(
	[ 'pgbench', '-i', '-s', '1', '-q', $connstr ],
	'pgbench -i');
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[
		'pgbench', '-n', '-S', '-c', '2', '-j', '2', '-T', '8',
		"$connstr mptcp=1"
	],
	'>', \$bench_out, '2>', \$bench_err);
my $live_clients = $nclients - 1;    # idle_1 has exited
my $scrapes_ok = 0;
my $scrapes = 0;
for my $i (1 .. 12)
{
	my $source = $i % 2 ? 'auto' : 'processes';
	my $counts = $node->safe_psql(
		'postgres', qq{
SET mptcpinfo.subflow_source = '$source';
SELECT (SELECT count(*) FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
         WHERE m.mptcp AND a.application_name LIKE 'idle_%'),
       (SELECT count(*) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
         WHERE s.local_port IS NOT NULL AND a.application_name LIKE 'idle_%')});
	$scrapes++;
	$scrapes_ok++ if $counts eq "$live_clients|$live_clients";
	last unless $bench->pumpable;
	Time::HiRes::sleep(0.5);
}
my $bench_ok = $bench->finish;
is($scrapes_ok, $scrapes,
	"exporter loop under pgbench: every scrape has every idle client ($scrapes scrapes)");
ok($bench_ok, 'pgbench -S beside the exporter loop succeeds')
  or diag $bench_err;
like($bench_out, qr/number of failed transactions: 0 /,
	'pgbench -S: no failed transaction');

# 7. Sockets that no server process holds are neither shown nor searched
# for: another program's MPTCP connections (owned by the server's user, as
# the test runs as that user), and an orphan, closed by its program and
# still closing (inode 0).  The opened connections of server processes are
# found by what those recorded, with no process's file descriptors read.
my $own_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_mptcp');
my $other_program = IPC::Run::start(
	[
		$^X, '-MSocket', '-e', q{
		$| = 1;
		socket(my $l, AF_INET, SOCK_STREAM, 262) or die "socket: $!";
		setsockopt($l, SOL_SOCKET, SO_REUSEADDR, 1);
		bind($l, pack_sockaddr_in(0, inet_aton('127.0.0.1'))) or die "bind: $!";
		listen($l, 5) or die "listen: $!";
		my ($lport) = unpack_sockaddr_in(getsockname($l));
		my (@keep, $c);
		for my $close (0, 1) {
			socket($c, AF_INET, SOCK_STREAM, 262) or die "socket: $!";
			connect($c, pack_sockaddr_in($lport, inet_aton('127.0.0.1'))) or die "connect: $!";
			accept(my $a, $l) or die "accept: $!";
			push @keep, $a;
			if ($close) { close($c) } else { push @keep, $c }
		}
		print "ready
";
		sleep 60;
	}
	],
	'>', \my $program_out, '2>', \my $program_err);
$deadline = time + 30;
$other_program->pump until $program_out =~ /ready/ || time > $deadline;
like($program_out, qr/ready/, 'another program holds MPTCP connections')
  or diag $program_err;
my (undef, $rows_then, $scans) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n"
	  . "SELECT count(*) FROM pg_stat_mptcp;\n" x 2);
my @unheld = $scans =~
  /(\d+) sockets recorded by the server processes that opened them; (\d+) MPTCP connections of the server's user held by no server process/g;
is(scalar @unheld, 4, 'two queries, each with its DEBUG1 line') or diag $scans;
ok(@unheld == 4 && $unheld[1] >= 2 && $unheld[3] >= 2,
	"another program's connections are held by no server process ("
	  . join(', ', @unheld) . ')')
  or diag $scans;
is($rows_then, "$own_rows\n$own_rows",
	"another program's connections have no row in pg_stat_mptcp");
unlike($scans, qr/file descriptors/, 'no file descriptors read');
$other_program->kill_kill;

# 8. A recent report is not reused for a process that has opened a
# connection since: a backend answers a query, opens a dblink MPTCP
# connection, and a query right after shows that connection's subflow too
# (with the old report, it looked closed: no row).  On a machine slow enough
# that the second query comes after the reuse window, the report is not
# reused anyway.
my $reporter = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=reporter" ]);
my $reporter_pid = $reporter->query_safe('SELECT pg_backend_pid()');
my $querier = $node->background_psql('postgres');
$querier->query_safe("SET mptcpinfo.subflow_source = 'processes'");
# (its client connection's subflow, and the subflow of the one it opened)
my $reporter_sql = qq{
SELECT count(*) FILTER (WHERE local_port = $port),
       count(*) FILTER (WHERE remote_port = $port)
FROM pg_stat_mptcp_subflows WHERE pid = $reporter_pid};
my $before = $querier->query($reporter_sql);
$reporter->query_safe("SELECT dblink_connect('c', '$connstr mptcp=require')");
my $after = $querier->query($reporter_sql);
is($before, '1|0', 'a backend that opened nothing: its client\'s subflow');
is($after, '1|1',
	'a connection opened after the last report: its subflow is shown');
$reporter->quit;
$querier->quit;

# 9. A standby: its walreceiver, and a backend of the standby that opened
# dblink MPTCP connections to the same primary, host and port.  Each has
# its own connections, by what it recorded as it opened them, although all
# share the primary's address and port, by which a walreceiver that
# recorded nothing is found.  (Matched by address first, the walreceiver
# got whichever of them the kernel listed first, then its own by what it
# recorded besides: two rows for it, one fewer for the backend.  With 8
# opened, and the idle clients' connections to the same address, the
# walreceiver's own connection is rarely listed first.)
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"primary_conninfo = '$connstr mptcp=1 application_name=standby'\n");
$standby->start;
$node->wait_for_catchup('standby');
my $nopened = 8;
my $standby_opener = $standby->background_psql('postgres');
my $standby_opener_pid = $standby_opener->query_safe(
	join(";\n",
		(map { "SELECT dblink_connect('s$_', '$connstr mptcp=require')" }
			  1 .. $nopened),
		'SELECT pg_backend_pid()'));
$standby_opener_pid =~ s/.*\n//s;
is( $standby->safe_psql(
		'postgres', qq{
SELECT (SELECT count(*) || '|' || bool_and(m.mptcp) || '|' || min(m.direction)
          FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp m USING (pid)),
       (SELECT count(*) || '|' || bool_and(m.mptcp)
          FROM pg_stat_mptcp m
         WHERE m.pid = $standby_opener_pid AND m.direction = 'outgoing')}),
	"1|true|outgoing|$nopened|true",
	'standby: the walreceiver has its one connection, the backend each it opened to the same primary'
);
# (the walreceiver's one subflow is the walsender's client end)
is( $standby->safe_psql(
		'postgres', q{
SELECT string_agg(s.local_port::text, ',')
  FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp_subflows s USING (pid)}),
	$node->safe_psql(
		'postgres', q{
SELECT a.client_port FROM pg_stat_replication r JOIN pg_stat_activity a USING (pid)
 WHERE r.application_name = 'standby'}),
	"standby: the walreceiver's subflow is the walsender's client end");
$standby_opener->quit;
$standby->stop;

# 10. A process with more subflows than a report holds: a backend with
# its client's connection and 16 dblink MPTCP connections it opened (17
# subflows, a report holds 16).  The NOTICE counts that one process, not
# each of its 17 connections.
my $nmany = 16;
my $many = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=many" ]);
my $many_pid = $many->query_safe(
	join(";\n",
		(map { "SELECT dblink_connect('m$_', '$connstr mptcp=require')" }
			  1 .. $nmany),
		'SELECT pg_backend_pid()'));
$many_pid =~ s/.*\n//s;
my ($many_rc, $many_rows, $many_err) = $node->psql(
	'postgres', qq{
SET mptcpinfo.subflow_source = 'processes';
SELECT count(*), count(local_port) FROM pg_stat_mptcp_subflows WHERE pid = $many_pid});
is($many_rows, '17|16',
	'a process with 17 subflows: a row per connection, the 16 subflows of its report');
like(
	$many_err,
	qr/NOTICE:  not all subflows of 1 server process are shown/,
	'the NOTICE counts the process, not its connections');
$many->quit;

# Sections 11 and 12 hold an asker at an injection point: builds with
# injection points only.  held_at(SESSION, POINT) waits until a process is
# held there, as SESSION sees it.
my $injection_points = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'injection_points'"
) eq '1';

sub held_at
{
	my ($session, $point) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	Time::HiRes::sleep(0.02)
	  until $session->query_safe(
		"SELECT count(*) FROM pg_stat_activity WHERE wait_event = '$point'")
	  eq '1'
	  || time > $deadline;
	return;
}

# 11. Two askers that read a process's "requested" at the same moment:
# only the one that moves it on signals the process, and the other waits
# for that answer (a read and a separate increment had both signal).  An
# injection point holds the first asker after its read: builds with
# injection points only.
SKIP:
{
	skip 'this build has no injection points', 3
	  unless $injection_points;
	my $point = 'mptcpinfo-ask-before-request';
	my $target = $client_pid{idle_2};
	my $count_sql =
	  "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $target";
	my $counts_re =
	  qr/(\d+) server processes asked, \d+ recent reports reused, (\d+) requests of other queries awaited/;
	$node->safe_psql('postgres', 'CREATE EXTENSION injection_points');
	my $waker = $node->background_psql('postgres');
	my $held = $node->background_psql('postgres');
	$held->query_safe("SELECT injection_points_set_local();\n"
		  . "SELECT injection_points_attach('$point', 'wait')");
	$held->query("SET client_min_messages = debug1;\n"
		  . "SET mptcpinfo.subflow_source = 'processes'");
	$held->{stderr} = '';
	# let the reports age past their reuse window
	Time::HiRes::sleep(1.1);
	$held->{stdin} .= "$count_sql;\n\\echo __held_done__\n";
	$held->{run}->pump_nb;
	held_at($waker, $point);
	my $deadline;
	my (undef, $second_count, $second_err) = $node->psql('postgres',
		"SET client_min_messages = debug1;\n"
		  . "SET mptcpinfo.subflow_source = 'processes';\n$count_sql");
	$waker->query_safe("SELECT injection_points_wakeup('$point')");
	$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	$held->{run}->pump
	  until $held->{stdout} =~ /__held_done__/ || time > $deadline;
	my ($held_count) = $held->{stdout} =~ /^(\d+)\n__held_done__/m;
	my @second = $second_err =~ $counts_re;
	my @held = $held->{stderr} =~ $counts_re;
	is(join(',', $held_count // '?', $second_count),
		'1,1', 'two askers at once: both get the subflow');
	ok($second[0] >= 1, "two askers at once: the second one asks ($second[0])");
	ok( @held == 2 && $held[0] == 0 && $held[1] >= 1,
		"two askers at once: the held one signals nobody and waits for the answers (@held)"
	);
	$held->quit;
	$waker->quit;
}

# 12. A request for a process that exited before it was signalled is not
# one for the next process in its slot: an asker of that process signals
# it, and does not wait 2 s for an answer that never comes (the slot's
# "requested" once looked pending to it).  Every connection slot of a
# second server is taken, so that the exited process's slot is the next
# one's.  Builds with injection points only.
SKIP:
{
	skip 'this build has no injection points', 2
	  unless $injection_points;
	my $point = 'mptcpinfo-ask-before-request';
	my $slots = PostgreSQL::Test::Cluster->new('slots');
	$slots->init;
	$slots->append_conf(
		'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'mptcpinfo'
max_connections = 4
superuser_reserved_connections = 0
));
	$slots->start;
	my $sconn = 'host=127.0.0.1 port=' . $slots->port . ' dbname=postgres';
	$slots->safe_psql('postgres',
		'CREATE EXTENSION mptcpinfo; CREATE EXTENSION injection_points');
	my $waker = $slots->background_psql('postgres');
	my $held = $slots->background_psql('postgres');
	my $gone = $slots->background_psql('postgres',
		extra_params => [ '-d' => "$sconn mptcp=1 application_name=gone" ]);
	my $filler = $slots->background_psql('postgres',
		extra_params => [ '-d' => "$sconn mptcp=1 application_name=filler" ]);
	my $gone_pid = $gone->query_safe('SELECT pg_backend_pid()');
	$held->query_safe("SELECT injection_points_set_local();\n"
		  . "SELECT injection_points_attach('$point', 'wait')");
	$held->query_safe("SET mptcpinfo.subflow_source = 'processes'");
	$held->{stdin} .=
	  "SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $gone_pid;\n"
	  . "\\echo __held_done__\n";
	$held->{run}->pump_nb;
	held_at($waker, $point);
	my $deadline;
	# the process asked for exits before the held asker signals it, and a
	# new one takes its slot, the only one free
	$gone->quit;
	$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	Time::HiRes::sleep(0.02)
	  until $waker->query_safe(
		"SELECT count(*) FROM pg_stat_activity WHERE pid = $gone_pid") eq '0'
	  || time > $deadline;
	my $next = $slots->background_psql('postgres',
		extra_params => [ '-d' => "$sconn mptcp=1 application_name=next" ]);
	my $next_pid = $next->query_safe('SELECT pg_backend_pid()');
	$waker->query_safe("SELECT injection_points_wakeup('$point')");
	$deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	$held->{run}->pump
	  until $held->{stdout} =~ /__held_done__/ || time > $deadline;
	$waker->{stderr} = '';
	my $next_rows = $waker->query(
		"SET client_min_messages = debug1;\n"
		  . "SET mptcpinfo.subflow_source = 'processes';\n"
		  . "SELECT count(*), count(local_port) FROM pg_stat_mptcp_subflows WHERE pid = $next_pid"
	);
	is($next_rows, '1|1',
		"the next process in an asked process's slot: its subflow is shown");
	unlike(
		$waker->{stderr},
		qr/did not answer|1 requests of other queries awaited/,
		'the next process in the slot is asked, not waited for');
	$_->quit for ($next, $filler, $held, $waker);
	$slots->stop;
}

$_->quit for @askers;
$clients[0]->{run}->kill_kill;
$_->quit for @clients[ 1 .. $#clients ];
$node->stop;
done_testing();
