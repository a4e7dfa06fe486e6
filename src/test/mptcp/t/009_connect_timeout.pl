
# Copyright (c) 2026, PostgreSQL Global Development Group

# A standby whose primary_conninfo lists the primary's address on two paths,
# the first of them dead before the standby starts, streams over the second
# once connect_timeout has expired on the first, as PQconnectdb would move
# on.  The walreceiver drives libpq's PQconnectPoll() itself, waiting on
# its latch too, so it enforces connect_timeout with
# PQconnectTimeRemaining() and PQconnectPollNext(); without them an attempt
# on a dead address lasts until the kernel gives up on its SYNs, about 127 s
# with the default net.ipv4.tcp_syn_retries = 6, which this test leaves as
# it is.  A backend's connection through dblink is checked too.
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

# Well below the time the kernel's SYN retries take, well above
# connect_timeout = 2: a wide sanity bound, not a measurement.
my $bound = 60;

MptcpUtils::lab_up(2, undef);
my $syn_retries = '';
IPC::Run::run(
	[ MptcpUtils::lab_client('cat', '/proc/sys/net/ipv4/tcp_syn_retries') ],
	'>', \$syn_retries);
chomp $syn_retries;
note "client namespace: net.ipv4.tcp_syn_retries = $syn_retries";

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
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
CREATE EXTENSION dblink;
CREATE TABLE t_rows (id int PRIMARY KEY, payload text);
INSERT INTO t_rows SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));
my $checksum_sql =
  "SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM t_rows";

# Path 1 is dead before the standby tries it.  The client keeps the
# server's link-layer address on that path (a permanent neighbour entry),
# as when a router further on has failed: its SYNs leave and are lost,
# instead of failing at once for want of an ARP answer.
my ($mac) = MptcpUtils::run_ip('-br', 'link', 'show', 'sv1') =~
  /\b([0-9a-f]{2}(?::[0-9a-f]{2}){5})\b/
  or die 'no link-layer address on sv1';
IPC::Run::run(
	[
		MptcpUtils::lab_client(
			'ip', 'neigh', 'replace', '198.18.1.1', 'lladdr', $mac,
			'dev', 'cv1', 'nud', 'permanent')
	])
  or die 'could not set the neighbour entry of path 1';
MptcpUtils::lab_blackhole(1);

my $conninfo =
  "host=198.18.1.1,198.18.2.1 port=$port dbname=postgres connect_timeout=2 mptcp=require";
my $standby = MptcpUtils::lab_standby($primary,
	"$conninfo application_name=lab_standby");
# (a query waiting for its connection is not cancelled by replay)
$standby->append_conf('postgresql.conf', 'max_standby_streaming_delay = -1');
my $start = time;
MptcpUtils::lab_start_standby($standby);

my $state = '';
while (time - $start < $bound)
{
	$state = MptcpUtils::lab_psql($standby,
		"SELECT sender_host || ' ' || status FROM pg_stat_wal_receiver");
	last if $state eq '198.18.2.1 streaming';
	usleep(200_000);
}
note sprintf("pg_stat_wal_receiver: '%s' after %.1f s", $state, time - $start);
is($state, '198.18.2.1 streaming',
	"path 1 dead: the standby streams from the second address within $bound s"
);

$primary->safe_psql('postgres',
	"INSERT INTO t_rows SELECT g, md5(g::text) FROM generate_series(1001, 2000) g");
my $expected = $primary->safe_psql('postgres', $checksum_sql);
my $lsn = $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
my $replayed = '';
$start = time;
while (time - $start < $bound)
{
	$replayed = MptcpUtils::lab_psql($standby,
		"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
	last if $replayed eq 't';
	usleep(200_000);
}
is($replayed, 't', 'the standby replays the rows written while streaming');
is(MptcpUtils::lab_psql($standby, $checksum_sql),
	$expected, 'replicated data identical');

# A backend's connection through dblink moves on the same way.
$start = time;
my $remote = MptcpUtils::lab_psql($standby,
	"SELECT n || ' ' || host FROM dblink('$conninfo', "
	  . "'SELECT count(*), host(inet_server_addr()) FROM t_rows') AS t(n bigint, host text)"
);
my $elapsed = time - $start;
note sprintf('dblink answered after %.1f s', $elapsed);
is($remote, '2000 198.18.2.1',
	'dblink on the standby reaches the primary over the second address');
cmp_ok($elapsed, '<', $bound, "dblink answered within $bound s");

command_ok(
	[
		MptcpUtils::lab_client(
			'pg_ctl', '--pgdata' => $standby->data_dir,
			'--mode' => 'fast', '--wait', 'stop')
	],
	'standby stops');
# (stopped here, not by the harness, which runs outside the lab)
$standby->_update_pid(0);
$primary->stop;
done_testing();
