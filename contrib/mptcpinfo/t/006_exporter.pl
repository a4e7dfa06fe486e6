
# Copyright (c) 2026, PostgreSQL Global Development Group

# The postgres_exporter queries file (postgres_exporter/queries.yaml) against
# a real postgres_exporter: over a two-path lab, an MPTCP client session, an
# MPTCP walsender and a plain TCP walsender; the exporter, connected as a
# role that is only a member of pg_monitor and listening on 127.0.0.1 of the
# test's private network namespace, must report each connection and each
# subflow with the right labels and the values the views show.  The alert
# queries of postgres_exporter/alerts.yml are checked as that role too.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README), and only where a postgres_exporter binary is found:
# PG_TEST_POSTGRES_EXPORTER=/path/to/postgres_exporter, else
# postgres_exporter or prometheus-postgres-exporter (Debian's name) in PATH.
# Tested with 0.17.1 (Debian 13's prometheus-postgres-exporter, which runs
# on Debian 12 too).  If promtool is found (PG_TEST_PROMTOOL, else in PATH),
# the alert rules are checked with "promtool check rules" as well.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use Digest::MD5;
use HTTP::Tiny;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# A program given by an environment variable, else the first of NAMES in PATH.
sub find_program
{
	my ($envvar, @names) = @_;
	return $ENV{$envvar} if defined $ENV{$envvar} && $ENV{$envvar} ne '';
	for my $name (@names)
	{
		for my $dir (split /:/, $ENV{PATH} // '')
		{
			# (-f: make check puts the test's directory in PATH, which has
			# a directory postgres_exporter)
			return "$dir/$name" if $dir ne '' && -f "$dir/$name" && -x _;
		}
	}
	return undef;
}

my $exporter = find_program('PG_TEST_POSTGRES_EXPORTER', 'postgres_exporter',
	'prometheus-postgres-exporter');
plan skip_all =>
  'postgres_exporter not found (set PG_TEST_POSTGRES_EXPORTER to its path)'
  unless defined $exporter && -x $exporter;

my $queries = "$FindBin::RealBin/../postgres_exporter/queries.yaml";
my $alerts = "$FindBin::RealBin/../postgres_exporter/alerts.yml";

MptcpUtils::lab_up(2, undef);

my $node = PostgreSQL::Test::Cluster->new('exporter');
$node->init(allows_streaming => 1);
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
));
$node->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$node->start;
my $port = $node->port;
$node->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE ROLE regress_exporter LOGIN IN ROLE pg_monitor;
CREATE ROLE regress_app LOGIN;
CREATE ROLE regress_repl LOGIN REPLICATION;
));

# Sessions from the client namespace that stay connected while we look:
# psql reading its commands from a pipe that stays open.
my @sessions;

sub client_session
{
	my ($conninfo) = @_;
	my %s = (in => '', out => '', err => '');
	$s{h} = IPC::Run::start(
		[
			MptcpUtils::lab_client(
				'psql', '-X', '-At', '-d',
				"host=198.18.1.1 port=$port dbname=postgres $conninfo")
		],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err});
	push @sessions, \%s;
	return \%s;
}

my $app = client_session('user=regress_app mptcp=require application_name=mp_app');
my $mp_wal = client_session(
	'user=regress_repl replication=database mptcp=require application_name=mp_walsender');
my $tcp_wal = client_session(
	'user=regress_repl replication=database mptcp=disable application_name=tcp_walsender');

# The pid of each session, and its subflows: wait until all are there.
my %pid;
my $state = '';
for my $try (1 .. 300)
{
	$state = $node->safe_psql(
		'postgres', q(
SELECT string_agg(a.application_name || ':' || a.pid || ':' || m.mptcp || ':' || coalesce(m.subflows, 0),
                  ' ' ORDER BY a.application_name)
  FROM pg_stat_activity a JOIN pg_stat_mptcp m USING (pid)
 WHERE a.application_name IN ('mp_app', 'mp_walsender', 'tcp_walsender')));
	last if $state =~ /^mp_app:\d+:true:2 mp_walsender:\d+:true:2 tcp_walsender:\d+:false:0$/;
	$_->{h}->pump_nb for @sessions;
	select(undef, undef, undef, 0.1);
}
like(
	$state,
	qr/^mp_app:\d+:true:2 mp_walsender:\d+:true:2 tcp_walsender:\d+:false:0$/,
	'two MPTCP sessions with 2 subflows each, one plain TCP walsender');
%pid = map { (split /:/)[ 0, 1 ] } split / /, $state;

# Data over the MPTCP session (640 kB in one value), and its checksum.
my $data_sql = "SELECT string_agg(md5(g::text), '' ORDER BY g) FROM generate_series(1, 20000) g";
$app->{in} .= "$data_sql;\n";
for my $try (1 .. 300)
{
	$app->{h}->pump_nb;
	last if $app->{out} =~ /\n/;
	select(undef, undef, undef, 0.1);
}
chomp(my $got = $app->{out});
is( Digest::MD5::md5_hex($got),
	$node->safe_psql('postgres', "SELECT md5(($data_sql))"),
	'the MPTCP session got its data (' . length($got) . ' bytes)');

# The exporter, on 127.0.0.1 only, connected as the pg_monitor member.
my $eport = PostgreSQL::Test::Cluster::get_free_port();
my $elog = "${PostgreSQL::Test::Utils::tmp_check}/postgres_exporter.log";
my $exporter_h;
{
	local $ENV{DATA_SOURCE_NAME} =
	  "postgresql://regress_exporter\@127.0.0.1:$port/postgres?sslmode=disable";
	$exporter_h = IPC::Run::start(
		[
			$exporter, "--web.listen-address=127.0.0.1:$eport",
			"--extend.query-path=$queries", '--disable-default-metrics',
			'--disable-settings-metrics'
		],
		'<', '/dev/null', '>&', $elog);
}

# Scrape /metrics (no proxy: the exporter is local) until the queries
# have run; return the samples as { 'name{labels}' => value }.
my $http = HTTP::Tiny->new(proxy => undef, http_proxy => undef, timeout => 10);

sub scrape
{
	my $body = '';
	for my $try (1 .. 100)
	{
		my $r = $http->get("http://127.0.0.1:$eport/metrics");
		$body = $r->{content} if $r->{success};
		last if $body =~ /^pg_mptcp_subflow_sockets\{/m;
		select(undef, undef, undef, 0.2);
	}
	my %samples;
	for (split /\n/, $body)
	{
		next if /^#/ || !/^(.+) (\S+)$/;
		$samples{$1} = $2;
	}
	return \%samples;
}

# The samples of metric NAME as "label=value,...:value" strings (labels
# sorted, the exporter's own "server" label left out), sorted; only
# those whose labels match all of %want.
sub samples
{
	my ($s, $name, %want) = @_;
	my @out;
	for my $key (keys %$s)
	{
		next unless $key =~ /^\Q$name\E\{(.*)\}$/;
		my %l = $1 =~ /(\w+)="((?:[^"\\]|\\.)*)"/g;
		delete $l{server};
		next if grep { ($l{$_} // '') ne $want{$_} } keys %want;
		push @out,
		  join(',', map { "$_=$l{$_}" } sort keys %l) . ':' . $s->{$key};
	}
	return join("\n", sort @out);
}

my $s = scrape();
ok(keys %$s, 'the exporter answers on 127.0.0.1');
like(
	samples($s, 'pg_exporter_user_queries_load_error'),
	qr/^filename=\Q$queries\E,hashsum=\w+:0$/,
	'the queries file loads without error');

# Per subflow: two of each MPTCP session, on the lab's two paths, both on
# the server's port (the signal endpoint has no port of its own).
for my $name ('mp_app', 'mp_walsender')
{
	is( samples($s, 'pg_mptcp_subflow_sockets', pid => $pid{$name}),
		join("\n",
			map { "application_name=$name,backup=false,direction=incoming,local_addr=198.18.$_.1,pid=$pid{$name},remote_addr=198.18.$_.2,server_port=$port:1" } 1, 2),
		"$name: one subflow series per path, labels as in the views");
	is( samples($s, 'pg_mptcp_subflow_established', pid => $pid{$name}),
		"application_name=$name,backup=false,direction=incoming,local_addr=198.18.1.1,pid=$pid{$name},remote_addr=198.18.1.2,server_port=$port:1\n"
		  . "application_name=$name,backup=false,direction=incoming,local_addr=198.18.2.1,pid=$pid{$name},remote_addr=198.18.2.2,server_port=$port:1",
		"$name: both subflows established");
}
is(samples($s, 'pg_mptcp_subflow_sockets', pid => $pid{tcp_walsender}),
	'', 'the plain TCP walsender has no subflow series');

# Per connection.
my %token = map {
	$_ => $node->safe_psql('postgres',
		"SELECT coalesce(token::text, '') FROM pg_stat_mptcp WHERE pid = $pid{$_}")
} keys %pid;
is( samples($s, 'pg_mptcp_connection_subflows', pid => $pid{mp_app}),
	"application_name=mp_app,backend_type=client backend,client_addr=198.18.1.2,direction=incoming,pid=$pid{mp_app},token=$token{mp_app},usename=regress_app:2",
	'mp_app: labels (client_addr is the first subflow\'s) and 2 subflows');
is(samples($s, 'pg_mptcp_connection_mptcp', application_name => 'mp_walsender'),
	"application_name=mp_walsender,backend_type=walsender,client_addr=198.18.1.2,direction=incoming,pid=$pid{mp_walsender},token=$token{mp_walsender},usename=regress_repl:1",
	'the MPTCP walsender is there, mptcp 1, seen by the pg_monitor role');
is(samples($s, 'pg_mptcp_connection_mptcp', application_name => 'tcp_walsender'),
	"application_name=tcp_walsender,backend_type=walsender,client_addr=198.18.1.2,direction=incoming,pid=$pid{tcp_walsender},token=,usename=regress_repl:0",
	'the plain TCP walsender is there too, mptcp 0 (not null)');

# The counters are the view's, exactly: the sessions are idle now.
my ($sent, $received) = split /\|/,
  $node->safe_psql('postgres',
	"SELECT bytes_sent, bytes_received FROM pg_stat_mptcp WHERE pid = $pid{mp_app}");
cmp_ok($sent, ">", 640000, "mp_app sent its data ($sent bytes)");
is(samples($s, 'pg_mptcp_connection_sent_bytes_total', pid => $pid{mp_app}) =~ s/.*://r,
	$sent, 'sent_bytes_total is bytes_sent');
is(samples($s, 'pg_mptcp_connection_received_bytes_total', pid => $pid{mp_app}) =~ s/.*://r,
	$received, 'received_bytes_total is bytes_received');
my $subflow_sent = $node->safe_psql('postgres',
	"SELECT string_agg(host(local_addr) || '=' || bytes_sent, ' ' ORDER BY local_addr) FROM pg_stat_mptcp_subflows WHERE pid = $pid{mp_app}"
);
is( join(' ',
		map { /local_addr=([\d.]+).*:(\d+)$/ ? "$1=$2" : $_ }
		  split /\n/,
		samples($s, 'pg_mptcp_subflow_sent_bytes_total', pid => $pid{mp_app})),
	$subflow_sent,
	"per-subflow sent_bytes_total is the subflows' bytes_sent ($subflow_sent)");

# The bounded-cardinality counts: this test's sessions, and the exporter's
# own connection (plain TCP over loopback).
is( samples($s, 'pg_mptcp_connections', backend_type => 'walsender'),
	"backend_type=walsender,direction=incoming,mptcp=false:1\n"
	  . "backend_type=walsender,direction=incoming,mptcp=true:1",
	'connections by backend type: one MPTCP and one TCP walsender');
is( samples($s, 'pg_mptcp_subflows', backend_type => 'walsender'),
	"backend_type=walsender,direction=incoming,mptcp=false:0\n"
	  . "backend_type=walsender,direction=incoming,mptcp=true:2",
	'subflows by backend type');
is( samples(
		$s, 'pg_mptcp_connections',
		backend_type => 'client backend',
		mptcp => 'true'),
	'backend_type=client backend,direction=incoming,mptcp=true:1',
	'one MPTCP client backend');

# The alert rules' queries as the pg_monitor role: every walsender has
# mptcp not null, so only the plain TCP one is a problem.
is( $node->safe_psql(
		'postgres', q(
SELECT a.application_name, m.mptcp, m.subflows
  FROM pg_stat_activity a LEFT JOIN pg_stat_mptcp m USING (pid)
 WHERE a.backend_type = 'walsender'
   AND (m.mptcp IS NOT TRUE OR m.subflows < 2)),
		connstr => "host=127.0.0.1 port=$port dbname=postgres user=regress_exporter"),
	'tcp_walsender|f|',
	'pg_monitor: the walsender check flags only the plain TCP walsender');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FILTER (WHERE m.mptcp IS NULL) FROM pg_stat_activity a JOIN pg_stat_mptcp m USING (pid) WHERE a.backend_type = 'walsender'",
		connstr => "host=127.0.0.1 port=$port dbname=postgres user=regress_exporter"),
	'0',
	'pg_monitor: mptcp is not null for any walsender');
is( $node->safe_psql(
		'postgres',
		"SELECT count(*), count(mptcp) FROM pg_stat_mptcp WHERE pid IN ($pid{mp_walsender}, $pid{tcp_walsender})",
		connstr => "host=127.0.0.1 port=$port dbname=postgres user=regress_app"),
	'2|0',
	'without pg_monitor, mptcp is null for the walsenders of other roles');

# The kernel's counters of this namespace: two MPTCP connections (the plain
# TCP walsender and the test's own psql sessions are not), two joins.
my %kernel = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres',
	"SELECT regexp_replace(name, '^MPTcpExt', ''), value FROM pg_stat_mptcp_counters WHERE name IN ('MPTcpExtMPCapableSYNRX', 'MPTcpExtMPJoinSynRx', 'MPTcpExtMPJoinRejected')"
  );
is( join(' ', map { "$_=$kernel{$_}" } sort keys %kernel),
	'MPCapableSYNRX=2 MPJoinRejected=0 MPJoinSynRx=2',
	'kernel counters: two MPTCP connections, two joins');
is( join(' ',
		map { samples($s, 'pg_mptcp_kernel_events_total', counter => $_) =~ s/.*://r }
		  sort keys %kernel),
	'2 0 2',
	'pg_mptcp_kernel_events_total has them');

# node_exporter's netstat collector shows them too, with the fields value
# of our guide (its default, plus MPTcpExt_.*).
SKIP:
{
	my $node_exporter = find_program('PG_TEST_NODE_EXPORTER', 'node_exporter',
		'prometheus-node-exporter');
	skip 'node_exporter not found (set PG_TEST_NODE_EXPORTER to its path)', 2
	  unless defined $node_exporter && -x $node_exporter;
	my $fields =
	  '^(.*_(InErrors|InErrs)|Ip_Forwarding|Ip(6|Ext)_(InOctets|OutOctets)|Icmp6?_(InMsgs|OutMsgs)|TcpExt_(Listen.*|Syncookies.*|TCPSynRetrans|TCPTimeouts|TCPOFOQueue|TCPRcvQDrop)|Tcp_(ActiveOpens|InSegs|OutSegs|OutRsts|PassiveOpens|RetransSegs|CurrEstab)|Udp6?_(InDatagrams|OutDatagrams|NoPorts|RcvbufErrors|SndbufErrors)|MPTcpExt_.*)$';
	my $nport = PostgreSQL::Test::Cluster::get_free_port();
	my $nlog = "${PostgreSQL::Test::Utils::tmp_check}/node_exporter.log";
	my $nh = IPC::Run::start(
		[
			$node_exporter, "--web.listen-address=127.0.0.1:$nport",
			'--collector.disable-defaults', '--collector.netstat',
			"--collector.netstat.fields=$fields"
		],
		'<', '/dev/null', '>&', $nlog);
	my $body = '';
	for my $try (1 .. 100)
	{
		my $r = $http->get("http://127.0.0.1:$nport/metrics");
		$body = $r->{content} if $r->{success};
		last if $body =~ /^node_netstat_/m;
		select(undef, undef, undef, 0.2);
	}
	$nh->kill_kill;
	$nh->finish;
	my %n = $body =~ /^node_netstat_MPTcpExt_(\w+) (\S+)$/mg;
	is( join(' ', map { "$_=" . ($n{$_} // 'missing') } sort keys %kernel),
		'MPCapableSYNRX=2 MPJoinRejected=0 MPJoinSynRx=2',
		'node_exporter: node_netstat_MPTcpExt_* with the same values');
	my @proc = grep { /^MPTcpExt:/ } split /\n/, slurp_file('/proc/net/netstat');
	my @names = split ' ', $proc[0];
	is(scalar(keys %n), @names - 1,
		'node_exporter: every MPTcpExt field of /proc/net/netstat');
}

SKIP:
{
	my $promtool = find_program('PG_TEST_PROMTOOL', 'promtool');
	skip 'promtool not found (set PG_TEST_PROMTOOL to its path)', 1
	  unless defined $promtool && -x $promtool;
	command_like([ $promtool, 'check', 'rules', $alerts ],
		qr/SUCCESS: \d+ rules found/, 'promtool accepts the alert rules');
}

$exporter_h->kill_kill;
$exporter_h->finish;
for my $session (@sessions)
{
	$session->{h}->kill_kill;
	$session->{h}->finish;
}
unlike(slurp_file($elog), qr/pg_mptcp|queries\.yaml.*error/i,
	'the exporter logged no error about the queries');
$node->stop;
done_testing();
