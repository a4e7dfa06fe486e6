
# Copyright (c) 2026, PostgreSQL Global Development Group

# The congestion control of MPTCP subflows, and the remedy our guide
# gives for hosts whose default is bbr: a per-route congestion control
# ("ip route change ... congctl lock reno") on the MPTCP paths.  The kernel
# applies it to every subflow over the route, the joined ones included, on
# the side that sets it; pg_stat_mptcp_subflows shows it on the server's
# side, "ss" on the client's.  mptcpinfo's startup check warns about bbr
# unless every route leading off the host locks another one in, and its
# hint is the exact command for one of the others: this test runs it as
# given.  (Without "lock", whether a subflow joining the server's side gets
# the route's or the MPTCP socket's congestion control depends on timing;
# see contrib/mptcpinfo/mptcp_route.c.  Only the locked form is tested for
# its subflows.)
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README): the server in it, the client in the lab's client
# namespace.

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

plan skip_all => 'this network namespace does not allow bbr'
  unless eval { MptcpUtils::set_sysctl('net.ipv4.tcp_congestion_control', 'bbr'); 1 };

my $npaths = 2;
MptcpUtils::lab_up($npaths, undef, cc => 'bbr');

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
shared_preload_libraries = 'mptcpinfo'
));
$node->append_conf('pg_hba.conf', "host all all 198.18.0.0/15 trust\n");
my $log = MptcpUtils::mptcpinfo_start_log($node);
my $port = $node->port;
$node->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t AS SELECT g AS id, md5(g::text) AS payload FROM generate_series(1, 20000) g;
));
my $want_md5 = $node->safe_psql('postgres',
	'SELECT md5(string_agg(id || payload, \',\' ORDER BY id)) FROM t');

# An MPTCP connection from the client namespace that sleeps for 3 s, then
# reads the table; while it sleeps, the test looks at its subflows.
# Returns the congestion controls of its subflows, the server's side (from
# pg_stat_mptcp_subflows) and the client's (from ss), each as "cc,cc,..."
# in the order of the paths, and what a query over the same connection
# read.
sub subflow_ccs
{
	my $conninfo = "host=198.18.1.1 port=$port dbname=postgres mptcp=require";
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			MptcpUtils::lab_client(
				'psql', '-X', '-At', '-d', $conninfo,
				'-c', 'SELECT pg_sleep(3)',
				'-c',
				"SELECT md5(string_agg(id || payload, ',' ORDER BY id)) FROM t"
			)
		],
		'>', \$out, '2>', \$err);

	# the subflows join within milliseconds of the connection
	my $server = '';
	foreach my $i (1 .. 100)
	{
		$server = $node->safe_psql(
			'postgres', q{
SELECT string_agg(congestion_control, ',' ORDER BY local_addr)
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid)
 WHERE m.direction = 'incoming' AND m.subflows = } . $npaths);
		last if $server ne '';
		sleep 0.1;
	}
	my ($ss, $sserr) = ('', '');
	IPC::Run::run(
		[
			MptcpUtils::lab_client(
				'ss', '-tinH', 'state', 'established',
				'dport', '=', ":$port")
		],
		'>', \$ss, '2>', \$sserr);
	my %client;
	# "ss -ti": the socket's line, then its info line, which names the
	# algorithm
	while ($ss =~ /198\.18\.(\d+)\.2:\d+\s+198\.18\.\d+\.1:\d+\s*\n([^\n]*)/g)
	{
		my ($path, $info) = ($1, $2);
		$client{$path} = $info =~ /\b(reno|cubic|bbr\d*)\b/ ? $1 : '?';
	}
	$h->finish;
	my $client = join(',', map { $client{$_} // '?' } sort keys %client);
	return ($server, $client, $out, $err);
}

# 1. bbr everywhere: the warning names the routes and gives the command
# for the first one.
my $hint_re = qr/^HINT:  Set another one on the routes of the MPTCP paths, such as "(ip route change [^"]+)", which new connections use at once, or for the whole network namespace with "sysctl -w net.ipv4.tcp_congestion_control=reno", then restart the server\.$/m;
like(
	$log,
	qr/^WARNING:  congestion control "bbr" makes MPTCP connections over several paths slower\nDETAIL:  It is the network namespace's default, and "congctl lock" overrides it on 0 of the 2 routes leading off this host\.\n$hint_re/m,
	'bbr by default: warning, with the routes that do not set another one'
) or diag $log;
my ($cmd) = $log =~ $hint_re;
is($cmd // '',
	'ip route change 198.18.1.0/24 dev sv1 proto kernel scope link src 198.18.1.1 congctl lock reno',
	'the hint is the command for the first route, as "ip route show" has it');

# A route that sets reno without "lock" does not count: the server's
# joined subflows may still get bbr.
MptcpUtils::run_ip('route', 'change', '198.18.1.0/24', 'dev', 'sv1',
	'proto', 'kernel', 'scope', 'link', 'src', '198.18.1.1', 'congctl', 'reno');
like(
	MptcpUtils::mptcpinfo_start_log($node),
	qr/^DETAIL:  It is the network namespace's default, and "congctl lock" overrides it on 0 of the 2 routes leading off this host\./m,
	'a route with congctl reno but no lock: still counted');
MptcpUtils::run_ip('route', 'change', '198.18.1.0/24', 'dev', 'sv1',
	'proto', 'kernel', 'scope', 'link', 'src', '198.18.1.1');

my ($server, $client, $out, $err) = subflow_ccs();
is($server, 'bbr,bbr', 'server side: both subflows bbr');
is($client, 'bbr,bbr', 'client side: both subflows bbr');
like($out, qr/^\Q$want_md5\E$/m, 'the query over them read the table');

# 2. The hint's command, as given, for each route: the warning counts down
# and goes; the server's subflows are reno, the client's still bbr.
MptcpUtils::run_ip(split ' ', $cmd =~ s/^ip //r);
$log = MptcpUtils::mptcpinfo_start_log($node);
like($log,
	qr/^DETAIL:  It is the network namespace's default, and "congctl lock" overrides it on 1 of the 2 routes leading off this host\./m,
	'one route set: the warning says one is left') or diag $log;
($cmd) = $log =~ $hint_re;
is($cmd // '',
	'ip route change 198.18.2.0/24 dev sv2 proto kernel scope link src 198.18.2.1 congctl lock reno',
	'the hint now gives the other route');
MptcpUtils::run_ip(split ' ', $cmd =~ s/^ip //r);
$log = MptcpUtils::mptcpinfo_start_log($node);
unlike($log, qr/congestion control/, 'every route sets reno: no warning')
  or diag $log;
($server, $client, $out) = subflow_ccs();
is($server, 'reno,reno',
	'server side: both subflows reno, the joined one too, the namespace default still bbr');
is($client, 'bbr,bbr', 'client side: its own routes, still bbr');
like($out, qr/^\Q$want_md5\E$/m, 'the query read the table');

# 3. The lab sets the route's congestion control on both sides: reno
# everywhere, with bbr as every namespace's default.
MptcpUtils::lab_down();
MptcpUtils::lab_up($npaths, undef, cc => 'bbr', route_cc => 'reno');
($server, $client, $out) = subflow_ccs();
is($server, 'reno,reno', 'routes on both sides: server subflows reno');
is($client, 'reno,reno', 'routes on both sides: client subflows reno');
like($out, qr/^\Q$want_md5\E$/m, 'the query read the table');

# 4. The other way round: reno by default, a route that sets bbr.
MptcpUtils::lab_down();
MptcpUtils::lab_up($npaths, undef, cc => 'reno', route_cc => 'bbr',
	route_cc_sides => 'server');
$log = MptcpUtils::mptcpinfo_start_log($node);
like(
	$log,
	qr/^WARNING:  congestion control "bbr" makes MPTCP connections over several paths slower\nDETAIL:  It is set by 2 of the 2 routes leading off this host\.\nHINT:  Set another one on those routes, such as "ip route change 198\.18\.1\.0\/24 dev sv1 proto kernel scope link src 198\.18\.1\.1 congctl lock reno"; new connections use it\.$/m,
	'a route that sets bbr: warning, with the command') or diag $log;
($server, $client, $out) = subflow_ccs();
is($server, 'bbr,bbr', 'server subflows follow their routes: bbr');
is($client, 'reno,reno', 'client subflows: its default, reno');

$node->stop;
done_testing();
