
# Copyright (c) 2026, PostgreSQL Global Development Group

# Every libpq program we claim runs over MPTCP when asked to: psql,
# pg_basebackup (both of its connections), pg_receivewal, pg_dump, pgbench,
# a streaming standby (primary_conninfo), a logical replication
# subscription, postgres_fdw and dblink.  For each, the server's
# log_connections line must say "MPTCP enabled", and the data that crossed
# the connection is checked.  pg_basebackup --write-recovery-conf writes
# mptcp into primary_conninfo only when it was asked for, so that a stock
# libpq (tested where one is installed) can use what it wrote.
#
# It opens TCP/IP listen sockets on the loopback interface with trust
# authentication, so it runs only when PG_TEST_EXTRA contains "mptcp" (as
# src/test/ssl does), and needs a Linux kernel that can create MPTCP
# sockets; skips otherwise.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

MptcpUtils::require_extra();
MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 'logical');
$primary->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
log_connections = on
max_wal_senders = 10
max_replication_slots = 10
));
$primary->start;
my $port = $primary->port;
my $connstr = "host=127.0.0.1 port=$port dbname=postgres";

my $nrows = 20000;
$primary->safe_psql(
	'postgres', qq(
CREATE TABLE t_data (id int PRIMARY KEY, payload text);
INSERT INTO t_data SELECT g, md5(g::text) FROM generate_series(1, $nrows) g;
));
my $checksum_sql =
  "SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM t_data";
my $expected = $primary->safe_psql('postgres', $checksum_sql);
like($expected, qr/^$nrows:[0-9a-f]{32}$/, 'source data is in place');

# Count the server's log_connections lines for application_name $app since
# $offset that say MPTCP, and those that don't.
sub logged_connections
{
	my ($node, $offset, $app) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my @lines = $log =~ /(connection authorized: .*application_name=$app\b.*)/g;
	my $mptcp = grep { /MPTCP enabled/ } @lines;
	return ($mptcp, scalar(@lines) - $mptcp);
}

sub check_logged
{
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($node, $offset, $app, $min, $what) = @_;
	my ($mptcp, $tcp) = logged_connections($node, $offset, $app);
	cmp_ok($mptcp, '>=', $min, "$what: $min or more MPTCP connections logged");
	is($tcp, 0, "$what: no plain TCP connection logged");
	return;
}

my $tempdir = PostgreSQL::Test::Utils::tempdir;
my $offset;

# psql, through PGMPTCP
{
	local $ENV{PGMPTCP} = '1';
	$offset = -s $primary->logfile;
	is($primary->safe_psql('postgres', $checksum_sql,
			connstr => "$connstr application_name=mp_psql"),
		$expected, 'psql: data read over MPTCP');
	check_logged($primary, $offset, 'mp_psql', 1, 'psql');
}

# pg_basebackup: the base backup and the WAL stream are two connections.
$offset = -s $primary->logfile;
command_ok(
	[
		'pg_basebackup', '--pgdata' => "$tempdir/backup",
		'--wal-method' => 'stream', '--checkpoint' => 'fast',
		'--no-sync', '--dbname' => "$connstr mptcp=1 application_name=mp_basebackup"
	],
	'pg_basebackup over MPTCP');
check_logged($primary, $offset, 'mp_basebackup', 2, 'pg_basebackup');
command_ok([ 'pg_verifybackup', "$tempdir/backup" ],
	'pg_basebackup: backup verifies');

# pg_basebackup --write-recovery-conf copies the connection's options into
# primary_conninfo.  It must write mptcp only when MPTCP was asked for: a
# standby made without it has to start again with a stock libpq, which
# rejects the unknown keyword (the way back to the stock server).
sub written_conninfo
{
	my ($dir) = @_;
	my $conf = slurp_file("$dir/postgresql.auto.conf");
	my ($ci) = $conf =~ /^primary_conninfo = '((?:[^'\\]|''|\\\\)*)'$/m;
	die "no primary_conninfo in $dir/postgresql.auto.conf" unless defined $ci;
	$ci =~ s/(['\\])\1/$1/g;
	return $ci;
}

my %written;
for my $case (
	[ 'default', {}, '', undef ],
	[ 'mptcp=0', {}, ' mptcp=0', undef ],
	[ 'PGMPTCP=1', { PGMPTCP => '1' }, '', '1' ],
	[ 'mptcp=require', {}, ' mptcp=require', 'require' ])
{
	my ($name, $env, $opt, $want) = @$case;
	local @ENV{ keys %$env } = values %$env;
	my $dir = "$tempdir/recovery_" . scalar(keys %written);
	command_ok(
		[
			'pg_basebackup', '--pgdata' => $dir,
			'--write-recovery-conf', '--wal-method' => 'none',
			'--checkpoint' => 'fast', '--no-sync',
			'--dbname' => "$connstr$opt"
		],
		"pg_basebackup --write-recovery-conf, $name");
	my $ci = written_conninfo($dir);
	like($ci, qr/\bport=$port\b/,
		"$name: primary_conninfo names the primary");
	my @mptcp = $ci =~ /\bmptcp=(\S*)/g;
	is_deeply(\@mptcp, defined $want ? [$want] : [],
		defined $want
		? "$name: primary_conninfo has mptcp=$want"
		: "$name: primary_conninfo has no mptcp keyword");
	$written{$name} = $ci;
}

# The way back: a libpq without the mptcp option (a stock build of this
# major version) connects with what was written.  Debian's client package
# puts one in /usr/lib/postgresql/MAJOR/bin; PG_TEST_STOCK_PSQL names
# another.  It must reject the mptcp keyword, else it is not stock.
SKIP:
{
	my ($major) = $primary->pg_version =~ /^(\d+)/;
	my $stock = $ENV{PG_TEST_STOCK_PSQL}
	  // "/usr/lib/postgresql/$major/bin/psql";
	skip "no stock psql of PostgreSQL $major at $stock "
	  . "(set PG_TEST_STOCK_PSQL to test the way back)", 2
	  unless -x $stock;
	local %ENV = %ENV;
	delete $ENV{LD_LIBRARY_PATH};
	my ($out, $err);
	IPC::Run::run(
		[
			$stock, '--no-psqlrc', '--tuples-only', '--no-align',
			'--dbname' => "$written{'PGMPTCP=1'} dbname=postgres",
			'--command' => 'SELECT 1'
		],
		'>', \$out, '2>', \$err);
	skip "$stock is not a stock libpq of PostgreSQL $major: $err", 2
	  unless $err =~ /invalid connection option "mptcp"/;
	pass("stock psql at $stock rejects mptcp=1, as asked for");
	IPC::Run::run(
		[
			$stock, '--no-psqlrc', '--tuples-only', '--no-align',
			'--dbname' => "$written{default} dbname=postgres",
			'--command' => $checksum_sql
		],
		'>', \$out, '2>', \$err);
	chomp $out;
	is($out, $expected,
		'stock psql reads the data with the primary_conninfo written by default'
	);
}

# pg_receivewal, to a fixed end position
my $start_lsn = $primary->safe_psql('postgres',
	'SELECT pg_current_wal_insert_lsn()');
$primary->safe_psql('postgres',
	'CREATE TABLE t_wal AS SELECT g FROM generate_series(1, 1000) g; '
	  . 'INSERT INTO t_wal SELECT g FROM generate_series(1, 500) g');
my $end_lsn = $primary->safe_psql('postgres',
	'SELECT pg_current_wal_flush_lsn()');
mkdir "$tempdir/wal";
$offset = -s $primary->logfile;
command_ok(
	[
		'pg_receivewal', '--directory' => "$tempdir/wal",
		'--endpos' => $end_lsn, '--no-loop', '--no-sync',
		'--dbname' => "$connstr mptcp=require application_name=mp_receivewal"
	],
	'pg_receivewal over MPTCP');
check_logged($primary, $offset, 'mp_receivewal', 1, 'pg_receivewal');
# pg_waldump does not read .partial segments: rename them.
opendir(my $dh, "$tempdir/wal") or die;
for my $f (readdir $dh)
{
	next unless $f =~ /^([0-9A-F]{24})\.partial$/;
	rename("$tempdir/wal/$f", "$tempdir/wal/$1") or die;
}
closedir $dh;
my ($stdout, $stderr);
IPC::Run::run(
	[
		'pg_waldump', '--path' => "$tempdir/wal",
		'--start' => $start_lsn, '--end' => $end_lsn,
		'--rmgr' => 'Heap'
	],
	'>', \$stdout, '2>', \$stderr);
my $inserts = () = $stdout =~ /desc: INSERT\b/g;
cmp_ok($inserts, '>=', 500,
	'pg_receivewal: received WAL holds the inserted rows');

# pg_dump
$offset = -s $primary->logfile;
command_ok(
	[
		'pg_dump', '--table' => 't_data', '--data-only',
		'--file' => "$tempdir/dump.sql",
		'--dbname' => "$connstr mptcp=1 application_name=mp_dump"
	],
	'pg_dump over MPTCP');
check_logged($primary, $offset, 'mp_dump', 1, 'pg_dump');
my $dump = slurp_file("$tempdir/dump.sql");
my ($copy) = $dump =~ /^COPY public\.t_data .*?\n(.*?)^\\\.$/ms;
my $dumped = () = ($copy // '') =~ /\n/g;
is($dumped, $nrows, 'pg_dump: all rows dumped');

# pgbench, through PGMPTCP
{
	local $ENV{PGMPTCP} = '1';
	local $ENV{PGAPPNAME} = 'mp_pgbench';
	$offset = -s $primary->logfile;
	command_ok([ 'pgbench', '--initialize', '--scale' => '1', $connstr ],
		'pgbench -i over MPTCP');
	command_ok(
		[
			'pgbench', '--no-vacuum', '--client' => '2',
			'--transactions' => '25', $connstr
		],
		'pgbench over MPTCP');
	check_logged($primary, $offset, 'mp_pgbench', 3, 'pgbench');
	is($primary->safe_psql('postgres', 'SELECT count(*) FROM pgbench_history'),
		'50', 'pgbench: all transactions recorded');
}

# A streaming standby with mptcp=1 in primary_conninfo
$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"primary_conninfo = '$connstr mptcp=1 application_name=standby'\n");
$offset = -s $primary->logfile;
$standby->start;
$primary->safe_psql('postgres',
	"INSERT INTO t_data SELECT g, md5(g::text) FROM generate_series($nrows + 1, 2 * $nrows) g"
);
$expected = $primary->safe_psql('postgres', $checksum_sql);
$primary->wait_for_catchup('standby');
is($standby->safe_psql('postgres', $checksum_sql),
	$expected, 'standby: replicated data matches');
check_logged($primary, $offset, 'standby', 1, 'streaming standby');
ok(MptcpUtils::mptcp_sockets($port, 0) >= 1,
	'standby: kernel lists an established MPTCP connection');

# A logical replication subscription
my $subscriber = PostgreSQL::Test::Cluster->new('subscriber');
$subscriber->init;
$subscriber->start;
$subscriber->safe_psql('postgres',
	'CREATE TABLE t_data (id int PRIMARY KEY, payload text)');
$primary->safe_psql('postgres', 'CREATE PUBLICATION mp_pub FOR TABLE t_data');
$offset = -s $primary->logfile;
$subscriber->safe_psql('postgres',
	"CREATE SUBSCRIPTION mp_sub CONNECTION '$connstr mptcp=1' PUBLICATION mp_pub"
);
$subscriber->wait_for_subscription_sync($primary, 'mp_sub');
$primary->safe_psql('postgres',
	'UPDATE t_data SET payload = upper(payload) WHERE id % 7 = 0');
$expected = $primary->safe_psql('postgres', $checksum_sql);
$primary->wait_for_catchup('mp_sub');
is($subscriber->safe_psql('postgres', $checksum_sql),
	$expected, 'subscription: replicated data matches');
check_logged($primary, $offset, 'mp_sub', 1, 'logical replication');

# postgres_fdw and dblink, from the subscriber node
$offset = -s $primary->logfile;
$subscriber->safe_psql(
	'postgres', qq(
CREATE EXTENSION postgres_fdw;
CREATE SERVER mp_server FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '127.0.0.1', port '$port', dbname 'postgres',
           mptcp '1', application_name 'mp_fdw');
CREATE USER MAPPING FOR CURRENT_USER SERVER mp_server;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t_data) FROM SERVER mp_server INTO remote;
));
is( $subscriber->safe_psql(
		'postgres',
		"SELECT count(*) || ':' || md5(string_agg(id || '=' || payload, ',' ORDER BY id)) FROM remote.t_data"
	),
	$expected,
	'postgres_fdw: foreign table data matches');
check_logged($primary, $offset, 'mp_fdw', 1, 'postgres_fdw');

$offset = -s $primary->logfile;
$subscriber->safe_psql('postgres', 'CREATE EXTENSION dblink');
is( $subscriber->safe_psql(
		'postgres',
		"SELECT r FROM dblink('$connstr mptcp=require application_name=mp_dblink', "
		  . "\$\$$checksum_sql\$\$) AS t(r text)"),
	$expected,
	'dblink: remote query result matches');
check_logged($primary, $offset, 'mp_dblink', 1, 'dblink');

$subscriber->stop;
$standby->stop;
$primary->stop;

done_testing();
