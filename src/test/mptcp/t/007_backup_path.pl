
# Copyright (c) 2026, PostgreSQL Global Development Group

# A fast primary path and a slow backup path (a second provider, LTE): the
# server's endpoint for the slow path is "signal backup".  While the fast
# path is up, the backup subflow exists but carries almost nothing of a
# COPY; when the fast path is blackholed in the middle of a transfer, a
# COPY TO and a streaming standby's catch-up complete over the backup path
# with identical data.
#
# The byte counts per path come from the lab's router (lab.sh stats), so
# they are what crossed each path, whatever the endpoints believe.
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

# path 1: fast; path 2: slow, its server endpoint "signal backup"
MptcpUtils::lab_up(2, [ '20mbit', '2mbit' ], backup => [2], cc => 'reno');
note 'lab: ' . MptcpUtils::lab_info();
like(MptcpUtils::run_ip(qw(mptcp endpoint show)),
	qr/198\.18\.2\.1 .*signal backup/, 'the slow path is a backup endpoint');

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
wal_keep_size = '1GB'
));
$primary->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$primary->start;
my $port = $primary->port;
my $remote = "host=198.18.1.1 port=$port dbname=postgres";

# About 4 MB of COPY text: 2 s on the fast path, 16 s on the slow one.
my $nrows = 20000;
$primary->safe_psql(
	'postgres', qq(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_data (id int PRIMARY KEY, payload text);
INSERT INTO t_data
  SELECT g, repeat(md5(g::text), 6) FROM generate_series(1, $nrows) g;
));
my $copy_sql = 'COPY (SELECT * FROM t_data ORDER BY id) TO STDOUT';
my $copy_expected = $primary->safe_psql('postgres',
	"SELECT md5(string_agg(id || E'\\t' || payload || E'\\n', '' ORDER BY id)) FROM t_data");
my $checksum_sql =
  "SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM t_data";
my $tempdir = PostgreSQL::Test::Utils::tempdir;

# bytes the router carried toward the client on path I since $before
sub to_client
{
	my ($before, $i) = @_;
	return MptcpUtils::lab_stats()->{$i}{to_client} - $before->{$i}{to_client};
}

### The backup subflow is there

my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"$remote mptcp=require application_name=backup_probe")
	],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "SELECT pg_sleep(30);\n";
$h->pump_nb;
my $subflows = '';
for my $try (1 .. 200)
{
	$subflows = $primary->safe_psql('postgres',
		"SELECT m.subflows FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'backup_probe'"
	);
	last if $subflows eq '2';
	$h->pump_nb;
	usleep(100_000);
}
is($subflows, '2',
	'a connection has two subflows: the fast path and the backup path');
$h->kill_kill;
$h->finish;

### Both paths up: the backup path carries (almost) nothing

my $copy_file = "$tempdir/copy.out";
my $before = MptcpUtils::lab_stats();
my $start = time;
my $ok = IPC::Run::run(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-q', '-d', "$remote mptcp=require", '-c', $copy_sql)
	],
	'>', $copy_file, '2>', \$err);
note sprintf('COPY TO, both paths up: %.2f s', time - $start);
ok($ok, 'COPY TO with both paths up succeeds');
is(MptcpUtils::file_md5($copy_file), $copy_expected, 'COPY TO with both paths up: data identical');
my $copy_bytes = -s $copy_file;
my $slow = to_client($before, 2);
my $fast = to_client($before, 1);
note "path 1 carried $fast bytes, path 2 (backup) $slow bytes, COPY $copy_bytes bytes";
cmp_ok($slow, '<', 0.05 * $copy_bytes,
	'the backup path carries under 5% of the COPY while the fast path is up');
cmp_ok($fast, '>=', $copy_bytes, 'the fast path carries the COPY');

### The fast path fails mid-transfer: COPY TO completes over the backup

# Blackhole path 1 once it has carried the first 500 kB of the COPY (so the
# connection and its backup subflow are up), then wait (bounded).
sub blackhole_after
{
	my ($h, $what, $bytes) = @_;
	my $before = MptcpUtils::lab_stats();
	my $start = time;
	my $holed;
	while ($h->pumpable && time - $start < 150)
	{
		if (!$holed && to_client($before, 1) >= $bytes)
		{
			MptcpUtils::lab_blackhole(1);
			$holed = time - $start;
		}
		usleep(50_000);
		# the client may end between pumpable() and here
		eval { $h->pump_nb; 1 } or last;
	}
	my $elapsed = time - $start;
	$h->kill_kill if $h->pumpable;
	$h->finish;
	note sprintf('%s: %.2f s, path 1 blackholed after %.2f s', $what, $elapsed,
		$holed // -1);
	return ($holed, $before);
}

$h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-q', '-d', "$remote mptcp=require", '-c', $copy_sql)
	],
	'>', $copy_file, '2>', \$err);
my $holed;
($holed, $before) = blackhole_after($h, 'COPY TO', 500_000);
ok(defined $holed, 'COPY TO: the fast path was blackholed while it ran');
is($h->result(0), 0, 'COPY TO survives losing the fast path');
is(MptcpUtils::file_md5($copy_file), $copy_expected,
	'COPY TO over the backup path: data identical');
$slow = to_client($before, 2);
note "path 2 (backup) carried $slow bytes";
cmp_ok($slow, '>', 1_000_000, 'the rest of the COPY went over the backup path');
MptcpUtils::lab_restore(1);

### A standby catches up over the backup path

my $standby = MptcpUtils::lab_standby($primary,
	"$remote mptcp=require application_name=lab_standby");

# While the standby is down, the primary writes about 3 MB of WAL.
$primary->safe_psql('postgres',
	"INSERT INTO t_data SELECT g, repeat(md5(g::text), 6) FROM generate_series($nrows + 1, $nrows + 10000) g"
);
my $expected = $primary->safe_psql('postgres', $checksum_sql);
my $target_lsn =
  $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');

$before = MptcpUtils::lab_stats();
MptcpUtils::lab_start_standby($standby);
$start = time;
my $caught_up = '';
my $standby_holed;
while (time - $start < 150)
{
	if (!$standby_holed && to_client($before, 1) >= 300_000)
	{
		MptcpUtils::lab_blackhole(1);
		$standby_holed = time - $start;
	}
	if ($standby_holed)
	{
		$caught_up = MptcpUtils::lab_psql($standby,
			"SELECT pg_last_wal_replay_lsn() >= '$target_lsn'::pg_lsn");
		last if $caught_up eq 't';
	}
	usleep(100_000);
}
note sprintf('standby catch-up: %.2f s, path 1 blackholed after %.2f s',
	time - $start, $standby_holed // -1);
ok(defined $standby_holed, 'standby: the fast path was blackholed while it streamed');
is($caught_up, 't', 'standby catches up over the backup path');
is(MptcpUtils::lab_psql($standby, $checksum_sql), $expected, 'standby: replicated data identical');
$slow = to_client($before, 2);
note "path 2 (backup) carried $slow bytes";
cmp_ok($slow, '>', 1_000_000, 'the WAL went over the backup path');

MptcpUtils::lab_restore(1);
command_ok(
	[
		MptcpUtils::lab_client(
			'pg_ctl', '--pgdata' => $standby->data_dir,
			'--mode' => 'fast', '--wait', 'stop')
	],
	'standby stops');

$primary->stop;
done_testing();
