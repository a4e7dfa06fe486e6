
# Copyright (c) 2026, PostgreSQL Global Development Group

# A path that dies under a transfer shows in pg_stat_mptcp_subflows while it
# happens: over a two-path lab, a client's COPY TO runs, path 1 is
# blackholed, and the subflow on path 1 becomes "stalled" (data in flight,
# retransmission timeouts, no ACK since), while the subflow on path 2 does
# not.  The COPY completes over path 2 with every row intact.  Before the
# cut, a session that queried the subflows once looks them up the next time
# by the ends it found, without a dump or a report.  Then the dead initial
# subflow closes (its retransmissions run out) while the connection stays
# open, and the views still count and find the one subflow left: the first
# query may read a dump or ask, the next ones neither.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README).

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# Slow paths, so that the network, not the CPU, sets the pace even in an
# emulated guest: the dead path then always has data in flight.
MptcpUtils::lab_up(2, '5mbit', cc => 'reno');

my $node = PostgreSQL::Test::Cluster->new('stalled');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
# before 6.15 the subflows come from the server processes' reports
shared_preload_libraries = 'mptcpinfo'
));
$node->append_conf('pg_hba.conf', "host all all 198.18.0.0/15 trust\n");
$node->start;
my $port = $node->port;

# About 8 MB of COPY text: 7 s on both paths of 5 Mbit/s, 13 s on one.
$node->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_data AS
  SELECT g AS id, repeat(md5(g::text), 4) AS payload
  FROM generate_series(1, 60000) g;
));
# The test shims (builds with injection points, 18 and later): injection
# points by which the module reads this kernel's answers as an older
# kernel would give them, so that what differs there is tested here too.
my $shims = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'injection_points'"
) eq '1'
  && $node->safe_psql('postgres', 'SHOW server_version_num') >= 180000;
$node->safe_psql('postgres', 'CREATE EXTENSION injection_points') if $shims;
my $expected = $node->safe_psql('postgres',
	"SELECT count(*) || ':' || md5(string_agg(id || ',' || payload, E'\\n' ORDER BY id) || E'\\n') FROM t_data"
);

# The client waits for an advisory lock that this session holds before
# its COPY, so that the path is cut while the COPY runs however slow the
# queries before the cut are, and for another one after it, so that its
# connection outlives the initial subflow.
my $lock = $node->background_psql('postgres');
$lock->query_safe('SELECT pg_advisory_lock(4241), pg_advisory_lock(4242)');

my $out = PostgreSQL::Test::Utils::tempdir . '/copy.out';
my $err = '';
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-q', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=1 application_name=stall_probe",
			'-c', 'DO $$BEGIN PERFORM pg_advisory_lock(4241); END$$',
			'-c', 'COPY (SELECT id, payload FROM t_data ORDER BY id) TO STDOUT (FORMAT csv)',
			'-c', 'DO $$BEGIN PERFORM pg_advisory_lock(4242); END$$')
	],
	'>', $out, '2>', \$err);

# the client's subflows, one line each: "path stalled rto_timeouts unacked
# last_ack_recv_ms"; in list context with the DEBUG1 lines of the query
my $subflows_sql = q(
SELECT split_part(host(s.local_addr), '.', 3), s.stalled, s.rto_timeouts,
       s.unacked, (extract(epoch FROM s.last_ack_recv) * 1000)::bigint
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'stall_probe'
 ORDER BY 1);
sub subflows
{
	my (undef, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug1;\n$subflows_sql",
		on_error_die => 1);
	return wantarray ? ($out, $err) : $out;
}

# Before Linux 6.15 the kernel shows whose subflow a TCP socket is (its
# MPTCP ULP info) only to a process with CAP_NET_ADMIN, so that a dump of
# the TCP sockets walks past the subflows without describing any.  A query
# that knows none of a connection's subflows looks up its initial subflow
# first, which tells, and then asks the process rather than read such a
# dump.  Here a test shim hides the ULP info as those kernels do, while the
# first queries of the test find the client's two subflows.
$node->safe_psql('postgres',
	"SELECT injection_points_attach('mptcpinfo-kernel-before-6.15', 'notice')")
  if $shims;

# both subflows are there (bounded wait); then the COPY starts, and once
# its first rows have arrived path 1 dies
my ($rows, $walked, $debug1) = ('', 0, '');
for (1 .. 100)
{
	($rows, $debug1) = subflows();
	$walked += $1 while $debug1 =~ /; (\d+) TCP sockets dumped/g;
	last if ($rows =~ tr/\n//) >= 1;
	usleep(50_000);
}
note 'the last query: ', $debug1 =~ /(\d+ MPTCP connections looked up.*)/;
like($rows, qr/^1\|f\|.*\n2\|f\|/, 'two subflows, neither stalled before the cut')
  or diag $rows;
SKIP:
{
	skip 'this build has no test shims', 1 unless $shims;
	$node->safe_psql('postgres',
		"SELECT injection_points_detach('mptcpinfo-kernel-before-6.15')");
	is($walked, 0,
		'the kernel hiding whose subflows they are: no query read a TCP dump');
}

# A session that found a connection's subflows in a dump or a report looks
# them up by their ends the next time, while the connection has as many:
# its second query neither reads the dump nor asks any process.  (Its first
# may look them up too: the queries above kept them in shared memory.)
my $count_sql = q{SELECT count(*) FROM pg_stat_mptcp_subflows s
  JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'stall_probe';};
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n$count_sql\n$count_sql");
# each query's DEBUG1 line: looked up, read from a dump, not described, asked
my $debug_re =
  qr/mptcpinfo: (\d+) MPTCP connections looked up by their ends, (\d+) read from a dump, (\d+) not described by the kernel; (\d+) server processes asked/;
my @debug = $stderr =~ /$debug_re/g;
is($stdout, "2\n2", 'a session queries the two subflows twice') or diag $stderr;
is(scalar @debug, 8, 'each query logs its DEBUG1 line') or diag $stderr;
is(join(',', @debug[5 .. 7]), '0,0,0',
	'second query: its subflows looked up, no dump, nobody asked');

# A new session's first query looks them up too: the queries above kept
# their ends in shared memory.
my (undef, undef, $fresh_err) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n$count_sql");
my @fresh = $fresh_err =~ $debug_re;
is(join(',', @fresh), '1,0,0,0',
	'a new session: looked up from what other sessions kept, no dump, nobody asked'
) or diag $fresh_err;

# A dump keeps the subflows only, not every TCP socket of the host (here
# the plain TCP sessions of this test, at both ends).
my ($dumped, $kept) = $stderr =~ /; (\d+) TCP sockets dumped, (\d+) subflows kept/;
# Where the kernel does not show whose subflows the TCP sockets are (before
# Linux 6.15, to a server without privileges), the first query does not go
# through a dump that would describe nothing: the initial subflow, looked
# up by the connection's ends, says so.
ok($debug[1] == 1 || $dumped == 0,
	"first query: no TCP dump where it describes nothing ($dumped TCP sockets dumped)"
) or diag $stderr;
SKIP:
{
	skip 'the first query asked the process instead of reading a dump', 1
	  unless $debug[1] == 1;
	ok($kept == 2 && $dumped > $kept,
		"the dump keeps the two subflows of the $dumped TCP sockets it went through")
	  or diag $stderr;
}

$lock->query_safe('SELECT pg_advisory_unlock(4241)');
my $started = time;
while (time - $started < 60 && $h->pumpable && (-s $out // 0) < 100_000)
{
	usleep(20_000);
	eval { $h->pump_nb; 1 } or last;
}
ok((-s $out // 0) >= 100_000 && (-s $out) < 4_000_000,
	'the COPY runs when the path is cut')
  or diag sprintf('%d bytes of the COPY after %.1f s', -s $out // 0, time - $started);
MptcpUtils::lab_blackhole(1);
my $cut = time;

# while the COPY goes on over path 2, the subflow on path 1 shows stalled
my ($seen, $last) = (0, '');
while (time - $cut < 30 && $h->pumpable)
{
	$last = subflows();
	if ($last =~ /^1\|t\|(\d+)\|(\d+)\|(\d+)$/m && $1 > 0 && $2 > 0)
	{
		$seen = 1;
		last;
	}
	usleep(100_000);
	eval { $h->pump_nb; 1 } or last;
}
ok($seen, 'the subflow on the dead path shows stalled, with timeouts and data in flight')
  or diag sprintf("after %.1f s (the COPY %s): %s",
	time - $cut, $h->pumpable ? 'still running' : 'over', $last);
note sprintf('stalled seen %.2f s after the cut: %s', time - $cut, $last);
like($last, qr/^2\|f\|/m, 'the subflow on the live path is not stalled');

# the COPY completes over the live path: the client then waits for the lock
my $deadline = time + 120;
my $copied = 0;
while ($h->pumpable && time < $deadline)
{
	$copied = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'stall_probe' AND wait_event_type = 'Lock'"
	);
	last if $copied;
	usleep(100_000);
	eval { $h->pump_nb; 1 } or last;
}
ok($copied, 'the COPY is over, its connection still open');

# The server's dead initial subflow closes once its retransmissions run out
# (two, now).  The connection keeps the subflow on path 2, and the views
# count it and find it: the first query may read a dump or ask, the next
# ones look it up by the ends they found.  From Linux 6.8 the kernel says
# whether the initial subflow is left, and pg_stat_mptcp counts one
# subflow; before, it does not say, the initial one is counted, and the
# count is one more than the subflows left: those are still looked up.
# (asked of the kernel's struct, which has subflows_total past bytes_acked:
# not of its version)
my $says_total = (MptcpUtils::mptcp_info_len() // 0) > 80;
# (the test shim: what the kernel answers cut where Linux 6.8 extended it)
if ($shims)
{
	$node->safe_psql('postgres',
		"SELECT injection_points_attach('mptcpinfo-kernel-before-6.8', 'notice')"
	);
	$says_total = 0;
}
MptcpUtils::set_sysctl('net.ipv4.tcp_retries2', 2);
# (the subflows that the process reports: a closed one may stay listed a
# moment, and a report is reused for a second, by the last check below too)
my $open_sql = q{SET mptcpinfo.subflow_source = 'processes';
SELECT coalesce(string_agg(split_part(host(s.local_addr), '.', 3), ','), '')
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'stall_probe'};
my $total = '';
my $open = '';
$deadline = time + 90;
while (time < $deadline)
{
	$total = $node->safe_psql('postgres',
		"SELECT m.subflows FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'stall_probe'"
	);
	$open = $node->safe_psql('postgres', $open_sql);
	last if $open eq '2' && (!$says_total || $total eq '1');
	usleep(200_000);
}
is($open, '2', 'the dead initial subflow closed: the subflow on path 2 is left');
is($total, $says_total ? '1' : '2',
	'pg_stat_mptcp counts one subflow (before Linux 6.8: the initial one too)');

my $path_sql = q{SELECT split_part(host(s.local_addr), '.', 3) FROM pg_stat_mptcp_subflows s
  JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'stall_probe';};
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET client_min_messages = debug1;\n" . ($path_sql x 4));
@debug = $stderr =~ /$debug_re/g;
is($stdout, "2\n2\n2\n2", 'four queries: the subflow on path 2, each time')
  or diag $stderr;
is(join(',', @debug[4 .. 15]), '1,0,0,0,1,0,0,0,1,0,0,0',
	'after the first query: looked up by its ends, no dump, nobody asked')
  or diag $stderr;
# the process's own report has the one subflow too (a kernel may still
# list the closed initial one)
is( $node->safe_psql('postgres',
		"SET mptcpinfo.subflow_source = 'processes';\n$path_sql"),
	'2', "the process's report: the subflow on path 2 only");
$lock->query_safe('SELECT pg_advisory_unlock(4242)');
$lock->quit;

$deadline = time + 60;
while ($h->pumpable && time < $deadline)
{
	usleep(50_000);
	eval { $h->pump_nb; 1 } or last;
}
$h->kill_kill if $h->pumpable;
$h->finish;
is($h->result(0), 0, 'the COPY completed') or diag $err;
my $got = MptcpUtils::file_md5($out);
my ($count, $md5) = split /:/, $expected;
my $lines = do { open my $fh, '<', $out or die $!; my $n = 0; $n++ while <$fh>; $n };
is("$lines:$got", "$count:$md5", 'every row arrived intact');
is($err, '', 'no error from the client');

MptcpUtils::lab_restore(1);
$node->stop;
done_testing();
