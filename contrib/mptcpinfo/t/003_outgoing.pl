
# Copyright (c) 2026, PostgreSQL Global Development Group

# The connections that server processes open themselves, in pg_stat_mptcp
# with direction 'outgoing' and in pg_stat_mptcp_subflows: a logical
# replication subscription with mptcp=1 in its connection string (its apply
# worker, joined with pg_stat_subscription), a postgres_fdw server with
# mptcp 'require' in its options, and a dblink connection.  Each crosses
# the four-path lab and gets a subflow on every path; the subflows report
# the lab's congestion control, which pg_mptcp_settings shows too.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README): the publisher in it, the subscriber (which opens
# the connections) in the lab's client namespace.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# four unshaped paths, reno everywhere; the server signals 198.18.2-4.1
my $npaths = 4;
MptcpUtils::lab_up($npaths, undef, cc => 'reno');

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
# Both preloaded: the apply worker and the walsender report their own
# subflows.
$pub->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
shared_preload_libraries = 'mptcpinfo'
));
$pub->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
));
$pub->start;
my $port = $pub->port;
$pub->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t (id int PRIMARY KEY, payload text);
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 5000) g;
CREATE PUBLICATION pub FOR TABLE t;
));

# The subscriber runs in the client namespace, where 198.18.1.1 is the
# publisher across the lab.
my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->append_conf('postgresql.conf',
	"listen_addresses = '127.0.0.1'\nshared_preload_libraries = 'mptcpinfo'\n");
command_ok(
	[
		MptcpUtils::lab_client(
			'pg_ctl', '--pgdata' => $sub->data_dir,
			'--log' => $sub->logfile, '--wait', 'start')
	],
	'subscriber starts in the client namespace');
# so that the harness stops it at the end, even after a failure
$sub->_update_pid(1);

# psql in the client namespace, one session running all of @sql; dies on
# failure, returns the output.
sub sub_psql
{
	my (@sql) = @_;
	my ($out, $err);
	IPC::Run::run(
		[
			MptcpUtils::lab_client(
				'psql', '-XAtq', '-v' => 'ON_ERROR_STOP=1',
				'-d' => 'host=127.0.0.1 port=' . $sub->port . ' dbname=postgres',
				map { ('-c' => $_) } @sql)
		],
		'>', \$out, '2>', \$err)
	  or die "psql in the client namespace failed: $err";
	chomp $out;
	return $out;
}

# Wait (bounded) until this session's outgoing MPTCP connection has a
# subflow on every path.
my $wait_outgoing = qq{DO \$\$ BEGIN
  FOR i IN 1..150 LOOP
    EXIT WHEN (SELECT bool_and(subflows >= $npaths) FROM pg_stat_mptcp
                WHERE pid = pg_backend_pid() AND direction = 'outgoing');
    PERFORM pg_sleep(0.1);
  END LOOP;
END \$\$};

# What this session's connections look like:
# "direction|mptcp|subflows|subflow rows|their remote addresses|cc" per row.
my $own_rows = q{SELECT m.direction || '|' || m.mptcp || '|' || coalesce(m.subflows::text, '') || '|' ||
  (SELECT count(*) || '|' || coalesce(string_agg(DISTINCT host(s.remote_addr), ','), '') || '|' ||
          coalesce(string_agg(DISTINCT s.congestion_control, ','), '')
     FROM pg_stat_mptcp_subflows s WHERE s.pid = m.pid AND s.token = m.token)
  FROM pg_stat_mptcp m WHERE m.pid = pg_backend_pid() ORDER BY m.direction};
my $all_paths = join(',', map { "198.18.$_.1" } 1 .. $npaths);

sub_psql(
	'CREATE EXTENSION mptcpinfo',
	'CREATE TABLE t (id int PRIMARY KEY, payload text)');

# --- logical replication
sub_psql(
	"CREATE SUBSCRIPTION sub CONNECTION 'host=198.18.1.1 port=$port dbname=postgres mptcp=1 application_name=sub' PUBLICATION pub"
);
my $count;
for my $try (1 .. 300)
{
	$count = sub_psql('SELECT count(*) FROM t');
	last if $count eq '5000';
	select(undef, undef, undef, 0.1);
}
is($count, '5000', 'subscription: the initial copy arrived');
$pub->safe_psql('postgres',
	"INSERT INTO t SELECT g, md5(g::text) FROM generate_series(5001, 6000) g");
$pub->wait_for_catchup('sub');
is(sub_psql("SELECT count(*), sum(id) FROM t"),
	'6000|18003000', 'subscription: changes replicated through the lab');

my $apply_sql = qq{SELECT m.direction || '|' || m.mptcp || '|' || m.subflows
  FROM pg_stat_subscription s JOIN pg_stat_mptcp m USING (pid)
 WHERE s.subname = 'sub' AND s.relid IS NULL};
my $apply = '';
for my $try (1 .. 150)
{
	$apply = sub_psql($apply_sql);
	last if $apply eq "outgoing|true|$npaths";
	select(undef, undef, undef, 0.1);
}
is($apply, "outgoing|true|$npaths",
	'pg_stat_subscription JOIN pg_stat_mptcp: the apply worker is multipath on every path');
is( sub_psql(
		q{SELECT count(*) || '|' || string_agg(host(f.remote_addr), ',' ORDER BY f.remote_addr) || '|' ||
		         string_agg(DISTINCT f.congestion_control, ',')
		    FROM pg_stat_subscription s JOIN pg_stat_mptcp_subflows f USING (pid)
		   WHERE s.subname = 'sub' AND s.relid IS NULL}),
	"$npaths|$all_paths|reno",
	"the apply worker's subflows: one per path, with the lab's congestion control");
is( $pub->safe_psql(
		'postgres',
		q{SELECT m.direction || '|' || m.mptcp || '|' || m.subflows
		    FROM pg_stat_replication r JOIN pg_stat_mptcp m USING (pid)
		   WHERE r.application_name = 'sub'}),
	"incoming|true|$npaths",
	'the publisher sees its walsender of the subscription as incoming');

# --- postgres_fdw
sub_psql(
	'CREATE EXTENSION postgres_fdw',
	"CREATE SERVER pub FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '198.18.1.1', port '$port', dbname 'postgres', mptcp 'require')",
	"CREATE SERVER pub_tcp FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '198.18.1.1', port '$port', dbname 'postgres', mptcp 'disable')",
	"CREATE SERVER pub_bad FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '198.18.1.1', port '$port', dbname 'postgres', mptcp 'bogus')",
	'CREATE USER MAPPING FOR CURRENT_USER SERVER pub',
	'CREATE USER MAPPING FOR CURRENT_USER SERVER pub_tcp',
	'CREATE USER MAPPING FOR CURRENT_USER SERVER pub_bad',
	"CREATE FOREIGN TABLE ft (id int, payload text) SERVER pub OPTIONS (table_name 't')",
	"CREATE FOREIGN TABLE ft_tcp (id int, payload text) SERVER pub_tcp OPTIONS (table_name 't')",
	"CREATE FOREIGN TABLE ft_bad (id int, payload text) SERVER pub_bad OPTIONS (table_name 't')"
);
is( sub_psql('SELECT count(*) FROM ft', $wait_outgoing, $own_rows),
	"6000\nincoming|false||0||\noutgoing|true|$npaths|$npaths|$all_paths|reno",
	"postgres_fdw with mptcp 'require': the backend's outgoing connection, multipath"
);
is( sub_psql('SELECT count(*) FROM ft_tcp', $own_rows),
	"6000\nincoming|false||0||",
	"postgres_fdw with mptcp 'disable': plain TCP, no outgoing row");
my ($out, $err);
IPC::Run::run(
	[
		MptcpUtils::lab_client(
			'psql', '-XAtq',
			'-d' => 'host=127.0.0.1 port=' . $sub->port . ' dbname=postgres',
			'-c' => 'SELECT count(*) FROM ft_bad')
	],
	'>', \$out, '2>', \$err);
like($err, qr/invalid mptcp value: "bogus"/,
	"postgres_fdw passes the mptcp option on to libpq, which checks it");

# --- dblink
sub_psql('CREATE EXTENSION dblink');
is( sub_psql(
		"SELECT dblink_connect('c', 'host=198.18.1.1 port=$port dbname=postgres mptcp=require')",
		q{SELECT n FROM dblink('c', 'SELECT count(*) FROM t') AS d(n bigint)},
		$wait_outgoing, $own_rows),
	"OK\n6000\nincoming|false||0||\noutgoing|true|$npaths|$npaths|$all_paths|reno",
	'dblink: the outgoing connection, multipath');

# the namespace's congestion control, as the subflows have it
is( sub_psql(
		q{SELECT setting FROM pg_mptcp_settings WHERE name = 'net.ipv4.tcp_congestion_control'}),
	'reno',
	'pg_mptcp_settings: the congestion control of the namespace');

sub_psql('DROP SUBSCRIPTION sub');
$sub->stop;
$pub->stop;
done_testing();
