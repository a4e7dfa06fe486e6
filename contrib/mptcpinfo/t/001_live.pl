
# Copyright (c) 2026, PostgreSQL Global Development Group

# pg_stat_mptcp and pg_stat_mptcp_subflows on live connections: plain TCP
# and MPTCP rows, the privileges of other roles' rows, counters that move
# during a transfer, and a pg_basebackup over a four-path lab whose
# subflows are all visible and add up.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README), and needs a Linux kernel that can create MPTCP
# sockets; skips otherwise.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();

# The connection-level byte counters of struct mptcp_info came with Linux
# 6.5: before, those columns are NULL, and the sequence numbers show the
# traffic instead.
# (asked of the kernel's struct, up to bytes_acked: not of its version)
my $has_bytes = (MptcpUtils::mptcp_info_len() // 0) >= 80;
MptcpUtils::use_tcp_nodes();

my $in_lab = $ENV{PG_MPTCP_IN_NETNS};
my $npaths = 4;
MptcpUtils::lab_up($npaths, '20mbit') if $in_lab;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init(allows_streaming => 1);
# Preloaded, mptcpinfo asks the processes holding the connections for
# their subflows: the one way an unprivileged server learns them before
# Linux 6.15.
$node->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
listen_addresses = '@{[ $in_lab ? '*' : '127.0.0.1' ]}'
shared_preload_libraries = 'mptcpinfo'
));
$node->append_conf(
	'pg_hba.conf', qq(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
)) if $in_lab;
$node->start;
my $port = $node->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";

$node->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_big AS
  SELECT g AS id, repeat(md5(g::text), 8) AS payload
  FROM generate_series(1, 100000) g;
CREATE ROLE regress_mptcp_other LOGIN;
CREATE ROLE regress_mptcp_viewer LOGIN;
));

# Query as $role (the nodes listen on TCP only).
sub query
{
	my ($sql, $role) = @_;
	return $node->safe_psql('postgres', $sql,
		connstr => $connstr . (defined $role ? " user=$role" : ''));
}

# (extra_params rather than connstr, which PostgreSQL 17's background_psql()
# lacks: psql takes the last -d it is given)
my $plain = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr application_name=plain_tcp" ]);
my $mp = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=mptcp_conn" ]);
my $other = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 user=regress_mptcp_other application_name=other_role" ]);
my $plain_pid = $plain->query_safe('SELECT pg_backend_pid()');
my $mp_pid = $mp->query_safe('SELECT pg_backend_pid()');
my $other_pid = $other->query_safe('SELECT pg_backend_pid()');

is(query("SELECT mptcp, subflows IS NULL, token IS NULL FROM pg_stat_mptcp WHERE pid = $plain_pid"),
	'f|t|t', 'plain TCP connection: a row, not MPTCP, no MPTCP figures');
is(query("SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $plain_pid"),
	'0', 'plain TCP connection: no subflows');

is( query(
		"SELECT mptcp, subflows, token > 0, coalesce(bytes_sent > 0, true) AND coalesce(bytes_received > 0, true), (bytes_sent IS NOT NULL) = @{[ $has_bytes ? 'true' : 'false' ]}, checksum IS NOT NULL FROM pg_stat_mptcp WHERE pid = $mp_pid"
	),
	't|1|t|t|t|t',
	'MPTCP connection: one subflow and its figures');
# A field a later kernel added is NULL with the others of its release, never
# a 0 read from the padding of an older kernel's struct (retransmits on
# 5.12-6.4, last_data_sent on 6.8-6.9).
is( query(
		"SELECT (retransmits IS NULL) = (bytes_acked IS NULL), (last_data_sent IS NULL) = (last_ack_recv IS NULL) FROM pg_stat_mptcp WHERE pid = $mp_pid"
	),
	't|t',
	'MPTCP connection: fields of one kernel release are NULL together');
is( query(
		"SELECT count(*), min(local_port), bool_and(established), bool_and(rtt > 0) FROM pg_stat_mptcp_subflows WHERE pid = $mp_pid"
	),
	"1|$port|t|t",
	'MPTCP connection: its subflow, on the server port');
is( query(
		"SELECT s.token = m.token, s.remote_port = a.client_port, s.bytes_acked > 0, s.congestion_control IS NOT NULL "
		  . "FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid) JOIN pg_stat_activity a USING (pid) WHERE pid = $mp_pid"
	),
	't|t|t|t',
	'MPTCP connection: the subflow is the client\'s, with its token, bytes and congestion control');

# Without mptcpinfo preloaded, a connection with one subflow shows it too,
# on every kernel: it is looked up by the connection's ends.
{
	my $bare = PostgreSQL::Test::Cluster->new('not_preloaded');
	$bare->init;
	$bare->append_conf('postgresql.conf',
		"listen_mptcp = on\nlisten_addresses = '127.0.0.1'\n");
	$bare->start;
	my $bare_connstr =
	  'host=127.0.0.1 port=' . $bare->port . ' dbname=postgres mptcp=1';
	$bare->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo',
		connstr => $bare_connstr);
	my $own =
	  'SELECT count(*), count(local_addr), bool_and(token > 0) FROM pg_stat_mptcp_subflows WHERE pid = pg_backend_pid()';
	my ($stdout, $stderr);
	$bare->psql(
		'postgres', $own,
		stdout => \$stdout,
		stderr => \$stderr,
		connstr => $bare_connstr);
	is($stdout, '1|1|t', 'not preloaded: the one subflow is shown');
	is($stderr, '', 'not preloaded: no NOTICE');
	$bare->stop;
}
is( query(
		"SELECT count(*) FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid) "
		  . "WHERE a.client_port IS NULL OR a.client_port < 0"),
	'0',
	'only backends with a TCP client connection have rows');

# Privileges as for pg_stat_activity.
is( query(
		"SELECT pid = $other_pid, mptcp FROM pg_stat_mptcp WHERE pid IN ($other_pid, $mp_pid) ORDER BY pid = $other_pid DESC",
		'regress_mptcp_other'),
	"t|t\nf|",
	'a role sees its own connection, not the details of others');
my ($ret, $stdout, $stderr) = $node->psql(
	'postgres', 'SELECT count(*) FROM pg_stat_mptcp_subflows',
	connstr => "$connstr user=regress_mptcp_other");
like(
	$stderr,
	qr/ERROR:  permission denied for view pg_stat_mptcp_subflows/,
	'the subflows need pg_read_all_stats');
# Where an administrator grants the view to a role, the function still
# shows it only the subflows of its own connections.
$node->safe_psql('postgres',
	'GRANT SELECT ON pg_stat_mptcp_subflows TO regress_mptcp_other; '
	  . 'GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_subflows() TO regress_mptcp_other'
);
is(query("SELECT count(*) FROM pg_stat_mptcp_subflows WHERE pid = $mp_pid",
		'regress_mptcp_other'),
	'0', 'a role granted the view does not see the subflows of others');
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO regress_mptcp_viewer');
is(query("SELECT mptcp FROM pg_stat_mptcp WHERE pid = $other_pid",
		'regress_mptcp_viewer'),
	't', 'pg_read_all_stats sees the details of all connections');
is( query(
		"SELECT has_table_privilege('pg_monitor', 'pg_stat_mptcp', 'SELECT'), has_table_privilege('pg_monitor', 'pg_stat_mptcp_subflows', 'SELECT')"
	),
	't|t',
	'pg_monitor may read the views');

# Inside a transaction, the views read the transaction's snapshot of the
# server's processes, as pg_stat_activity does, so that the two join: a
# connection opened after the transaction's first look at pg_stat_activity
# is in neither.  One that has ended since is gone: the kernel no longer
# has its socket, and its entry is not matched with another's.
my $watcher = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr application_name=watcher" ]);
$watcher->query_safe('BEGIN');
$watcher->query_safe('SELECT count(*) FROM pg_stat_activity');
my $late = $node->background_psql('postgres',
	extra_params => [ '-d' => "$connstr mptcp=1 application_name=late_conn" ]);
my $late_pid = $late->query_safe('SELECT pg_backend_pid()');
is( $watcher->query_safe(
		"SELECT (SELECT count(*) FROM pg_stat_mptcp WHERE pid = $late_pid) || ',' || (SELECT count(*) FROM pg_stat_activity WHERE pid = $late_pid)"
	),
	'0,0',
	'a transaction keeps its snapshot: a connection opened after its first look is in neither view');
$other->quit;
$node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $other_pid")
  or die "the other role's backend did not exit";
# (its pg_stat_activity entry goes before its PGPROC: wait for the process)
my $exit_deadline = time + $PostgreSQL::Test::Utils::timeout_default;
Time::HiRes::sleep(0.05) while kill(0, $other_pid) && time < $exit_deadline;
is($watcher->query_safe("SELECT count(*) FROM pg_stat_mptcp WHERE pid = $other_pid"),
	'0', 'and no longer one that has ended');
$watcher->query_safe('COMMIT');
$watcher->quit;
$late->quit;

$plain->quit;

# Live counters: a transfer on the MPTCP session, sampled twice a second
# apart from another session.  Without the lab, loopback is too fast for
# a COPY to last: send it through a slow client instead (psql reading the
# rows one batch at a time).  The rows go to /dev/null, not to the test's
# log (20,000 lines a batch); \echo still answers on stdout.
$mp->query_until(qr/started/, q(
\o /dev/null
\echo started
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM t_big, generate_series(1, 50);
FETCH 1 FROM c;
));
# (write_seq: the data sequence number, there since 5.9; bytes_sent 6.5)
my $sample_sql = "SELECT write_seq, bytes_sent FROM pg_stat_mptcp WHERE pid = $mp_pid";
my @sent;
for my $round (1 .. 2)
{
	# move some data between the samples
	$mp->query_safe('FETCH 20000 FROM c');
	push @sent, [ split /\|/, query($sample_sql), -1 ];
	sleep 1 if $round == 1;
}
cmp_ok($sent[1][0], '>', $sent[0][0], "counters move: write_seq $sent[0][0] -> $sent[1][0]");
if ($has_bytes)
{
	cmp_ok($sent[1][1], '>', $sent[0][1], "counters move: bytes_sent $sent[0][1] -> $sent[1][1]");
}
else
{
	is($sent[1][1], '', 'counters: bytes_sent is NULL before Linux 6.5');
}
$mp->query_safe('COMMIT');
$mp->quit;

# pg_basebackup watched from another session, through the lab's paths.
SKIP:
{
	skip 'multipath lab needs PG_TEST_EXTRA=mptcp', 6 unless $in_lab;

	my $backup_dir = PostgreSQL::Test::Utils::tempdir;
	my $h = IPC::Run::start(
		[
			MptcpUtils::lab_client(
				'pg_basebackup', '--pgdata' => "$backup_dir/b",
				'--checkpoint' => 'fast', '--no-sync',
				'--wal-method' => 'fetch',
				'--dbname' => "host=198.18.1.1 port=$port mptcp=require application_name=watched_backup")
		],
		'>', \my $bb_out, '2>', \my $bb_err);

	# find the walsender of the backup and sample it while it runs
	my $walsender = "SELECT pid FROM pg_stat_activity WHERE application_name = 'watched_backup' AND backend_type = 'walsender'";
	my ($pid, @samples, $subflow_rows, $subflow_notices, $most_subflows);
	for my $try (1 .. 600)
	{
		$pid //= query($walsender) || undef;
		if (defined $pid)
		{
			my $row = query(
				"SELECT subflows || '|' || write_seq FROM pg_stat_mptcp WHERE pid = $pid AND mptcp"
			);
			# (once all paths have joined, a sample needs only a live MPTCP
			# connection: under an emulated kernel a subflow can come and go
			# while the backup runs)
			$most_subflows = $1
			  if $row =~ /^(\d+)\|/ && $1 > ($most_subflows // 0);
			if ($row =~ /^(\d+)\|(\d+)$/ && $1 > 0 && $most_subflows >= $npaths)
			{
				push @samples, $2;
				# (the last reading taken while the backup still ran: the
				# connection's acked bytes, then its subflows', then the
				# connection's again, in that order, so that the subflows
				# are compared with readings just before and just after
				# them however slow the machine is)
				# (NULL before Linux 6.5)
				my $conn = "coalesce((SELECT bytes_acked FROM pg_stat_mptcp WHERE pid = $pid)::text, '')";
				# (and the kernel's count of the connection's subflows then)
				my $count = "(SELECT subflows FROM pg_stat_mptcp WHERE pid = $pid)";
				# (and, for a failure's diagnostics, each subflow's acked
				# bytes and the connection's sent and reinjected ones)
				my ($r, $notices);
				$node->psql('postgres',
					"SELECT $conn || '|' || (SELECT count(*) || '|' || coalesce(sum(bytes_acked)::text, '') || '|' || $conn || '|' || coalesce(string_agg(bytes_acked::text, ' '), '') FROM pg_stat_mptcp_subflows WHERE pid = $pid) || '|' || coalesce((SELECT bytes_sent || ' sent, ' || bytes_retrans || ' reinjected' FROM pg_stat_mptcp WHERE pid = $pid), '') || '|' || $count",
					connstr => $connstr,
					stdout => \$r, stderr => \$notices);
				# (kept only if the walsender outlived the reading: one that
				# exits meanwhile has no subflows left to show)
				if ($r =~ /^\d*\|\d+\|/
					&& query("SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") == 1)
				{
					$subflow_rows = $r;
					$subflow_notices = $notices;
				}
				last if @samples >= 2;
				sleep 1;
				next;
			}
		}
		last unless $h->pumpable;
		usleep(100_000);
	}
	$h->finish;
	is($h->result(0), 0, 'pg_basebackup through the lab succeeds')
	  or diag $bb_err;
	is(scalar @samples, 2, "backup seen live with $npaths subflows, then sampled twice");
	cmp_ok($samples[1] // 0, '>', $samples[0] // 0,
		'backup counters grow between samples');
	my ($before, $nrows, $sum, $after, $each, $conn_sent, $nsubflows) =
	  split /\|/, ($subflow_rows // '0|0|0|0|||-1'), -1;
	is($nrows, $nsubflows, "one subflow row per subflow the kernel counts ($nsubflows)")
	  or diag 'the reading: ' . ($subflow_rows // 'none') . '; ' . ($subflow_notices // '');
	SKIP:
	{
		skip 'the connection counts acknowledged bytes from Linux 6.5 on', 2
		  unless $has_bytes;
		# (a closed subflow's bytes are no longer in the sum)
		skip "$nsubflows of $npaths subflows at the reading", 2
		  unless $nsubflows == $npaths;
		# Compare acknowledged bytes: "sent" at the connection level counts
		# data handed to the subflows, some still in their send queues.  The
		# subflows also carry reinjections.
		cmp_ok($sum, '>=', 0.9 * $before,
			"subflows' acked bytes add up to the connection's ($before <= $sum, then $after)");
		cmp_ok($sum, '<=', 1.6 * $after + 1_000_000,
			'subflows add up to the connection, within reason')
		  or diag "subflows' acked bytes: $each; the connection: $conn_sent";
	}
}

$node->stop;
done_testing();
