
# Copyright (c) 2026, PostgreSQL Global Development Group

# One connection over several paths: with four equal rate-limited paths
# between a client and a server namespace, an MPTCP COPY TO and a
# pg_basebackup each put a share of their bytes on every path; with one path
# blackholed in the middle, COPY TO, COPY FROM, pg_basebackup and a
# streaming standby's catch-up all complete with identical data; once the
# path is back, the connection uses it again.  Plain TCP over the same lab
# stalls on a blackholed path.
#
# Aggregation is checked with the bytes the router carried on each path,
# not with a time: a busy machine slows every transfer, and the benchmark
# measures the speed.
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
use Time::HiRes qw(time usleep);

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $npaths = 4;
my $rate_mbit = 16;
MptcpUtils::lab_up($npaths, "${rate_mbit}mbit");

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
wal_keep_size = '1GB'
# before Linux 6.15, the walsender's subflows are shown only this way
shared_preload_libraries = 'mptcpinfo'
));
$primary->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$primary->start;
my $port = $primary->port;
my $remote = "host=198.18.1.1 port=$port dbname=postgres";

# About 12 MB of COPY text: 6 s on one path, 1.5 s on four.
my $nrows = 60000;
$primary->safe_psql(
	'postgres', qq(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_data (id int PRIMARY KEY, payload text);
INSERT INTO t_data
  SELECT g, repeat(md5(g::text), 6) FROM generate_series(1, $nrows) g;
CREATE TABLE t_in (LIKE t_data);
));
my $copy_sql = 'COPY (SELECT * FROM t_data ORDER BY id) TO STDOUT';
my $checksum_sql =
  "SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM %s";
my $expected = $primary->safe_psql('postgres', sprintf($checksum_sql, 't_data'));

my $tempdir = PostgreSQL::Test::Utils::tempdir;
# The share of the bytes that each path carried toward $dir (to_client or
# to_server) since $before (a lab_stats() result), as "p1,p2,...": percents.
sub path_shares
{
	my ($before, $dir) = @_;
	my $after = MptcpUtils::lab_stats();
	my @bytes = map { $after->{$_}{$dir} - $before->{$_}{$dir} } sort keys %$after;
	my $total = 0;
	$total += $_ for @bytes;
	return join(',', map { $total ? int(100 * $_ / $total) : 0 } @bytes);
}

# Every path carried at least a tenth: equal paths get about a quarter each.
sub every_path_used
{
	my ($shares, $what) = @_;
	ok(!grep({ $_ < 10 } split /,/, $shares),
		"$what: every path carried part of it (shares $shares %)");
	return;
}

# Run a client command in the client namespace in the background.
sub start_client
{
	my ($out, @cmd) = @_;
	my $err = '';
	my $h = IPC::Run::start([ MptcpUtils::lab_client(@cmd) ],
		'>', $out, '2>', \$err);
	return ($h, \$err);
}

# Wait (bounded) for a background client, optionally blackholing path
# $path once it has run for $after seconds.  Returns elapsed seconds.
sub finish_client
{
	my ($h, $what, %opt) = @_;
	my $start = time;
	my $holed;
	while ($h->pumpable && time - $start < 240)
	{
		if (defined $opt{blackhole} && !$holed && time - $start >= $opt{after})
		{
			MptcpUtils::lab_blackhole($opt{blackhole});
			$holed = 1;
		}
		usleep(20_000);
		# the client may end between pumpable() and here
		eval { $h->pump_nb; 1 } or last;
	}
	my $elapsed = time - $start;
	$h->kill_kill if $h->pumpable;
	$h->finish;
	MptcpUtils::lab_restore($opt{blackhole}) if $holed;
	note sprintf('%s: %.2f s%s', $what, $elapsed,
		$holed ? ", path $opt{blackhole} blackholed after $opt{after} s" : '');
	return ($elapsed, $h->result(0), $holed);
}

# The expected COPY output, for the checksum of what the client received.
my $copy_expected = $primary->safe_psql('postgres',
	"SELECT md5(string_agg(id || E'\\t' || payload || E'\\n', '' ORDER BY id)) FROM t_data");

### Aggregation: COPY TO and pg_basebackup over all paths

my $copy_file = "$tempdir/copy.out";
my $stats = MptcpUtils::lab_stats();
my ($h) = start_client(
	$copy_file, 'psql', '-X', '-q', '-d', "$remote mptcp=require",
	'-c', $copy_sql);
my ($t, $rc) = finish_client($h, 'COPY TO, 4 paths');
is($rc, 0, 'COPY TO over MPTCP succeeds');
is(MptcpUtils::file_md5($copy_file), $copy_expected, 'COPY TO over MPTCP: data identical');
every_path_used(path_shares($stats, 'to_client'), 'COPY TO over 4 paths');

$stats = MptcpUtils::lab_stats();
($h) = start_client(
	\my $bb_out, 'pg_basebackup', '--pgdata' => "$tempdir/bb1",
	'--checkpoint' => 'fast', '--no-sync', '--wal-method' => 'fetch',
	'--dbname' => "$remote mptcp=require");
($t, $rc) = finish_client($h, 'pg_basebackup, 4 paths');
is($rc, 0, 'pg_basebackup over MPTCP succeeds');
command_ok([ 'pg_verifybackup', "$tempdir/bb1" ], 'pg_basebackup over MPTCP: backup verifies');
every_path_used(path_shares($stats, 'to_client'), 'pg_basebackup over 4 paths');

### Failover: one path blackholed mid-transfer

# COPY TO, losing path 1: the path of the initial subflow.
($h) = start_client(
	$copy_file, 'psql', '-X', '-q', '-d', "$remote mptcp=require",
	'-c', $copy_sql);
my $holed;
($t, $rc, $holed) = finish_client($h, 'COPY TO', blackhole => 1, after => 0.5);
ok($holed, 'COPY TO: path 1 was blackholed while it ran');
is($rc, 0, 'COPY TO survives losing a path');
is(MptcpUtils::file_md5($copy_file), $copy_expected, 'COPY TO after losing a path: data identical');

# COPY FROM, losing path 2.
($h) = start_client(
	\my $cf_out, 'psql', '-X', '-q', '-d', "$remote mptcp=require",
	'-c', "\\copy t_in FROM '$copy_file'");
($t, $rc, $holed) = finish_client($h, 'COPY FROM', blackhole => 2, after => 0.5);
ok($holed, 'COPY FROM: path 2 was blackholed while it ran');
is($rc, 0, 'COPY FROM survives losing a path');
is($primary->safe_psql('postgres', sprintf($checksum_sql, 't_in')),
	$expected, 'COPY FROM after losing a path: data identical');

# pg_basebackup, losing path 3.
($h) = start_client(
	\$bb_out, 'pg_basebackup', '--pgdata' => "$tempdir/bb2",
	'--checkpoint' => 'fast', '--no-sync', '--wal-method' => 'stream',
	'--dbname' => "$remote mptcp=require");
($t, $rc, $holed) = finish_client($h, 'pg_basebackup', blackhole => 3, after => 0.5);
ok($holed, 'pg_basebackup: path 3 was blackholed while it ran');
is($rc, 0, 'pg_basebackup survives losing a path');
command_ok([ 'pg_verifybackup', "$tempdir/bb2" ],
	'pg_basebackup after losing a path: backup verifies');

# A streaming standby in the client namespace, catching up over MPTCP.
my $standby = MptcpUtils::lab_standby($primary,
	"$remote mptcp=require application_name=lab_standby");

# While the standby is down, the primary writes about 16 MB of WAL.
$primary->safe_psql('postgres',
	"INSERT INTO t_data SELECT g, repeat(md5(g::text), 6) FROM generate_series($nrows + 1, 2 * $nrows) g"
);
$expected = $primary->safe_psql('postgres', sprintf($checksum_sql, 't_data'));
my $target_lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');

# Has the standby replayed up to $lsn?  't' or 'f'.
sub standby_replayed
{
	my ($lsn) = @_;
	return MptcpUtils::lab_psql($standby,
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
}

# Wait at most $seconds for the standby to replay up to $lsn, calling
# $each->(elapsed seconds) before each look; the last answer and the time
# it took.
sub wait_standby_replayed
{
	my ($lsn, $seconds, $each) = @_;
	my $start = time;
	my $replayed = '';
	while (time - $start < $seconds)
	{
		$each->(time - $start) if $each;
		$replayed = standby_replayed($lsn);
		last if $replayed eq 't';
		usleep(200_000);
	}
	return ($replayed, time - $start);
}

MptcpUtils::lab_start_standby($standby);
my $standby_holed;
my ($caught_up, $took) = wait_standby_replayed(
	$target_lsn, 240,
	sub {
		return if $standby_holed || $_[0] < 1;
		MptcpUtils::lab_blackhole(4);
		$standby_holed = 1;
	});
note sprintf('standby catch-up: %.2f s, path 4 blackholed after 1 s', $took);
is($caught_up, 't', 'standby catches up while a path is lost');
is(MptcpUtils::lab_psql($standby, sprintf($checksum_sql, 't_data')),
	$expected, 'standby: replicated data identical');
like(
	$primary->safe_psql(
		'postgres',
		"SELECT m.mptcp FROM pg_stat_mptcp m JOIN pg_stat_replication r USING (pid) WHERE r.application_name = 'lab_standby'"
	),
	qr/^t$/,
	'the standby streams over MPTCP');

# The path comes back: the standby's connection uses it again.
MptcpUtils::lab_restore(4);
my $path4_sql =
  "SELECT coalesce(sum(s.bytes_acked), 0) FROM pg_stat_mptcp_subflows s JOIN pg_stat_replication r USING (pid) "
  . "WHERE r.application_name = 'lab_standby' AND s.local_addr = '198.18.4.1'";
my $before = $primary->safe_psql('postgres', $path4_sql);
my $after = $before;
my $start = time;
while (time - $start < 120 && $after <= $before + 1_000_000)
{
	$primary->safe_psql('postgres',
		"UPDATE t_data SET payload = upper(payload) WHERE id % 10 = 0");
	$after = $primary->safe_psql('postgres', $path4_sql);
}
cmp_ok($after, '>', $before + 1_000_000,
	"restored path 4 carries data again ($before -> $after bytes acked)");

# Every path down at once (a switch restarting), then back: the same
# connection resumes, with nothing lost, once the retransmission timers
# fire again.  5 s is far below wal_sender_timeout and TCP's own give-up.
my $walsender_sql =
  "SELECT pid FROM pg_stat_replication WHERE application_name = 'lab_standby'";
my $walsender = $primary->safe_psql('postgres', $walsender_sql);

# Blackhole every path, then write 1000 rows from id $first on the primary;
# the checksum the standby must reach, and the LSN it must replay.
sub every_path_down_writing
{
	my ($first, $payload) = @_;
	MptcpUtils::lab_blackhole($_) for 1 .. 4;
	$primary->safe_psql('postgres',
		"INSERT INTO t_data SELECT g, '$payload' FROM generate_series($first, $first + 999) g");
	return (
		$primary->safe_psql('postgres', sprintf($checksum_sql, 't_data')),
		$primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()'));
}

# Restore every path after $seconds down: the standby catches up with the
# rows ($what names the case in the test names).
sub every_path_back
{
	my ($seconds, $what) = @_;
	MptcpUtils::lab_restore($_) for 1 .. 4;
	my ($caught_up, $took) = wait_standby_replayed($target_lsn, 120);
	note sprintf('every path down for %d s: the standby caught up %.2f s after they came back',
		$seconds, $took);
	is($caught_up, 't', "$what: the standby catches up");
	is(MptcpUtils::lab_psql($standby, sprintf($checksum_sql, 't_data')),
		$expected, "$what: replicated data identical");
}

($expected, $target_lsn) =
  every_path_down_writing(2 * $nrows + 1, 'written while every path was down');
sleep 5;
is(standby_replayed($target_lsn),
	'f', 'every path down: the standby does not get the new rows');
every_path_back(5, 'every path back');
is($primary->safe_psql('postgres', $walsender_sql),
	$walsender, 'every path back: the same walsender, no reconnection');

# A longer outage than the replication timeouts (3 s here, 60 s by
# default): both ends drop the connection, and once the paths are back the
# walreceiver connects again, over MPTCP and every path again.
$primary->append_conf('postgresql.conf', "wal_sender_timeout = '3s'");
$primary->reload;
MptcpUtils::lab_psql($standby, "ALTER SYSTEM SET wal_receiver_timeout = '3s'");
MptcpUtils::lab_psql($standby, 'SELECT pg_reload_conf()');
($expected, $target_lsn) =
  every_path_down_writing(2 * $nrows + 1001, 'written during the long outage');
sleep 12;
is($primary->safe_psql('postgres', $walsender_sql),
	'', 'every path down for 12 s: the walsender timed out');
every_path_back(12, 'long outage');
my $rejoined_sql =
  "SELECT m.mptcp || ' ' || m.subflows FROM pg_stat_mptcp m JOIN pg_stat_replication r USING (pid) "
  . "WHERE r.application_name = 'lab_standby'";
my $rejoined = '';
$start = time;
while (time - $start < 60)
{
	$rejoined = $primary->safe_psql('postgres', $rejoined_sql);
	last if $rejoined eq 'true 4';
	usleep(200_000);
}
is($rejoined, 'true 4', 'long outage: the new connection is MPTCP, on 4 subflows');

command_ok(
	[
		MptcpUtils::lab_client(
			'pg_ctl', '--pgdata' => $standby->data_dir,
			'--mode' => 'fast', '--wait', 'stop')
	],
	'standby stops');

### Plain TCP for contrast: it stalls on the blackholed path.

($h) = start_client(
	"$tempdir/tcp.out", 'psql', '-X', '-q', '-d', "$remote mptcp=disable",
	'-c', $copy_sql);
usleep(500_000);
MptcpUtils::lab_blackhole(1);
sleep 1;    # let what was already in flight arrive
my $size1 = -s "$tempdir/tcp.out" // 0;
sleep 3;
my $size2 = -s "$tempdir/tcp.out" // 0;
is($size2, $size1, "plain TCP stalls while its only path is blackholed ($size1 bytes)");
MptcpUtils::lab_restore(1);
$h->kill_kill;
$h->finish;

$primary->stop;
done_testing();
