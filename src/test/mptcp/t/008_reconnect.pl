
# Copyright (c) 2026, PostgreSQL Global Development Group

# A standby reconnects over a live path when the path its connection started
# on is dead for good.  Its primary_conninfo lists the primary's address on
# every path, so the walreceiver's next connection starts on the first
# address that answers, over MPTCP, and the standby gets every row written
# meanwhile.
#
# primary_conninfo here has no connect_timeout, so an attempt on a dead
# address lasts until the kernel gives up on its SYNs: about 2 minutes by
# default (009_connect_timeout checks the walreceiver's connect_timeout).
# The standby's host sets net.ipv4.tcp_syn_retries = 2 (7 s;
# host/host-setup sets TCP_SYNCNT 2), and, where the kernel has it, net.mptcp.blackhole_timeout = 0: an
# attempt whose MPTCP SYNs time out and whose plain retry gets through once
# path 1 is back would otherwise make every new connection of the namespace
# plain TCP for an hour, and mptcp=require would refuse them all.  With one
# address only, the walreceiver retries the dead path for as long as it is
# down: checked too, since that is what turns a lost path into an outage
# under synchronous replication.
#
# The connection is ended by terminating its walsender, which is what
# wal_sender_timeout or wal_receiver_timeout do to a stalled connection.
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

my $npaths = 3;
MptcpUtils::lab_up($npaths, '50mbit');
IPC::Run::run(
	[
		MptcpUtils::lab_client(
			'sh', '-c',
			'echo 2 >/proc/sys/net/ipv4/tcp_syn_retries && '
			  . 'if [ -e /proc/sys/net/mptcp/blackhole_timeout ]; then '
			  . 'echo 0 >/proc/sys/net/mptcp/blackhole_timeout; fi')
	])
  or die 'could not set the sysctls of the client namespace';

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
wal_keep_size = '256MB'
shared_preload_libraries = 'mptcpinfo'
));
$primary->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$primary->start;
my $port = $primary->port;
$primary->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_rows (id int PRIMARY KEY, payload text);
INSERT INTO t_rows SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));
my $checksum_sql =
  "SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM t_rows";

my $all_hosts = join(',', map { "198.18.$_.1" } 1 .. $npaths);
my $standby = MptcpUtils::lab_standby($primary,
	"host=$all_hosts port=$port dbname=postgres mptcp=require application_name=lab_standby"
);
$standby->append_conf(
	'postgresql.conf', q(
wal_retrieve_retry_interval = '1s'
));
MptcpUtils::lab_start_standby($standby);

# The walreceiver's sender host and status, as "host status" (bounded wait
# for $want when given).
sub receiver_state
{
	my ($want, $seconds) = @_;
	my $sql =
	  "SELECT coalesce(sender_host, '-') || ' ' || status FROM pg_stat_wal_receiver";
	my $state = '';
	my $start = time;
	do
	{
		$state = MptcpUtils::lab_psql($standby, $sql);
		return $state if !defined $want || $state eq $want;
		usleep(200_000);
	} while (time - $start < $seconds);
	return $state;
}

# The walsender's connection as pg_stat_mptcp sees it: "mptcp subflows".
my $walsender_sql =
  "SELECT m.mptcp || ' ' || m.subflows FROM pg_stat_mptcp m JOIN pg_stat_replication r USING (pid) "
  . "WHERE r.application_name = 'lab_standby'";

# Insert rows $from..$to; the primary's checksum and flush LSN after them.
sub write_rows
{
	my ($from, $to) = @_;
	$primary->safe_psql('postgres',
		"INSERT INTO t_rows SELECT g, md5(g::text) FROM generate_series($from, $to) g");
	return (
		$primary->safe_psql('postgres', $checksum_sql),
		$primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()'));
}

# Wait at most $seconds for the standby to replay up to $lsn: 't' or 'f'.
sub wait_replayed
{
	my ($lsn, $seconds) = @_;
	my $start = time;
	my $replayed = '';
	while (time - $start < $seconds)
	{
		$replayed = MptcpUtils::lab_psql($standby,
			"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
		last if $replayed eq 't';
		usleep(200_000);
	}
	return $replayed;
}

sub terminate_walsender
{
	$primary->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_replication WHERE application_name = 'lab_standby'"
	);
	return;
}

is(receiver_state('198.18.1.1 streaming', 60),
	'198.18.1.1 streaming', 'the standby streams from the first address');
my ($expected, $lsn) = write_rows(1001, 2000);
is(wait_replayed($lsn, 60), 't', 'the standby replays over all paths');

### Path 1, where the connection started, dies for good.
MptcpUtils::lab_blackhole(1);

# The connection keeps going on the other subflows...
($expected, $lsn) = write_rows(2001, 3000);
is(wait_replayed($lsn, 60), 't',
	'path 1 dead: the standby still replays over the other paths');

# ...and when it ends, the walreceiver's next connection starts on a live
# path: the attempt on 198.18.1.1 ends when its SYNs do, the next address
# answers.
terminate_walsender();
($expected, $lsn) = write_rows(3001, 4000);
is(receiver_state('198.18.2.1 streaming', 60),
	'198.18.2.1 streaming', 'the walreceiver reconnects over path 2');
is(wait_replayed($lsn, 60), 't', 'the standby replays after reconnecting');
is(MptcpUtils::lab_psql($standby, $checksum_sql),
	$expected, 'replicated data identical after the reconnection');

# The new connection is MPTCP, and joins the other live path (the primary
# signals 198.18.3.1): two subflows, path 1 being dead.
my $walsender = '';
my $start = time;
while (time - $start < 30)
{
	$walsender = $primary->safe_psql('postgres', $walsender_sql);
	last if $walsender eq 'true 2';
	usleep(200_000);
}
is($walsender, 'true 2',
	'the new connection is MPTCP, with a subflow on each live path');

### For contrast: a primary_conninfo with the dead path's address only.
MptcpUtils::lab_psql($standby,
	"ALTER SYSTEM SET primary_conninfo = 'host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=lab_standby'"
);
MptcpUtils::lab_psql($standby, 'SELECT pg_reload_conf()');
# the changed primary_conninfo restarts the walreceiver; end its connection
# in case it is still the old one
$start = time;
while (time - $start < 30)
{
	terminate_walsender();
	last if receiver_state() !~ /streaming/;
	usleep(200_000);
}
my $log_offset = -s $standby->logfile;
($expected, $lsn) = write_rows(4001, 5000);
sleep 8;
is(wait_replayed($lsn, 1), 'f',
	'one address only: the standby gets nothing while that path is dead');
isnt(receiver_state(), '198.18.1.1 streaming',
	'one address only: no streaming connection');
like(substr(slurp_file($standby->logfile), $log_offset),
	qr/could not connect to the primary server: connection to server at "198\.18\.1\.1"/,
	'one address only: the walreceiver retries the dead address');

# The path comes back: the standby catches up on its one address.
MptcpUtils::lab_restore(1);
is(wait_replayed($lsn, 60), 't', 'path 1 back: the standby catches up');
is(MptcpUtils::lab_psql($standby, $checksum_sql),
	$expected, 'path 1 back: replicated data identical');

command_ok(
	[
		MptcpUtils::lab_client(
			'pg_ctl', '--pgdata' => $standby->data_dir,
			'--mode' => 'fast', '--wait', 'stop')
	],
	'standby stops');
$primary->stop;
done_testing();
