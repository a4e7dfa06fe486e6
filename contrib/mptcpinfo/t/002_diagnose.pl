
# Copyright (c) 2026, PostgreSQL Global Development Group

# The views that explain why a connection is (not) multipath, in the
# four-path lab: pg_mptcp_endpoints with its flags and accepts_joins, for a
# narrow listen_addresses (which really leaves a connection on one subflow)
# and for '*'; pg_mptcp_settings; pg_stat_mptcp_counters counting the joins;
# the backup flag of the subflow on a backup path; and a standby whose
# walreceiver connects with mptcp=1, seen from the standby.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README); the standby runs in the lab's client namespace.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib "$FindBin::RealBin/../../../src/test/mptcp/t";
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Socket;

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $npaths = 4;
MptcpUtils::lab_up($npaths, undef);

# Run a command in the lab's client namespace; returns its output.
sub in_client
{
	my ($stdout, $stderr);
	IPC::Run::run([ MptcpUtils::lab_client(@_) ],
		'>', \$stdout, '2>', \$stderr)
	  or die "in the client namespace, @_ failed: $stderr";
	chomp $stdout;
	return $stdout;
}

# The path manager, set here whatever lab.sh does: the server signals
# 198.18.i.1 for i >= 2, path 4 as a backup; the client accepts them all.
MptcpUtils::run_ip('mptcp', 'limits', 'set', 'subflows', 8,
	'add_addr_accepted', 0);
MptcpUtils::run_ip('mptcp', 'endpoint', 'flush');
for my $i (2 .. $npaths)
{
	MptcpUtils::run_ip('mptcp', 'endpoint', 'add', "198.18.$i.1",
		'dev', "sv$i", 'id', $i, 'signal',
		($i == $npaths ? 'backup' : ()));
}
in_client('ip', 'mptcp', 'limits', 'set', 'subflows', $npaths - 1,
	'add_addr_accepted', $npaths - 1);

# First narrow: the server listens on 198.18.1.1 (and loopback, for the
# test's own sessions) but not on the addresses it signals.
my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(allows_streaming => 1);
$node->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
listen_addresses = '127.0.0.1, 198.18.1.1'
shared_preload_libraries = 'mptcpinfo'
));
$node->append_conf(
	'pg_hba.conf', qq(
host all all 198.18.0.0/15 trust
host replication all 198.18.0.0/15 trust
));
$node->start;
my $port = $node->port;
$node->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');

sub query { return $node->safe_psql('postgres', $_[0]); }

# Subflow flags (backup) reach a server without CAP_NET_ADMIN from Linux
# 6.15 on; before, pg_stat_mptcp_subflows.backup is NULL, never a guess.
# Whether the kernel shows them to this server is asked of the kernel, not
# of its version, which backports contradict: an MPTCP connection over
# loopback, and whether "ss -i" shows its subflow's MPTCP ULP info
# (tcp-ulp-mptcp) with the server's privileges.  (The lab's servers hold
# CAP_NET_ADMIN in the test's namespace and see them anyway; check-kernels'
# servers hold no capability.)
sub flags_shown
{
	my ($pid) = @_;
	my ($l, $c, $s, $out, $err);
	open my $fh, '<', "/proc/$pid/status" or die "no process $pid: $!";
	my ($cap) = join('', <$fh>) =~ /^CapEff:\s*([0-9a-f]+)$/m;
	close $fh;
	# (CAP_NET_ADMIN is bit 12)
	my $net_admin = (hex(substr($cap, -8)) >> 12) & 1;
	socket($l, AF_INET, SOCK_STREAM, 262) or die "no MPTCP socket: $!";
	bind($l, pack_sockaddr_in(0, INADDR_LOOPBACK)) or die "bind: $!";
	listen($l, 1) or die "listen: $!";
	my ($lport) = unpack_sockaddr_in(getsockname($l));
	socket($c, AF_INET, SOCK_STREAM, 262) or die "no MPTCP socket: $!";
	connect($c, pack_sockaddr_in($lport, INADDR_LOOPBACK)) or die "connect: $!";
	accept($s, $l) or die "accept: $!";
	IPC::Run::run(
		[
			($net_admin ? () : ('setpriv', '--inh-caps=-all', '--ambient-caps=-all', '--')),
			'ss', '-Htni', 'sport', '=', ":$lport"
		],
		'>', \$out, '2>', \$err) or die "ss failed: $err";
	close($_) for ($c, $s, $l);
	return $out =~ /tcp-ulp-mptcp/ ? 1 : 0;
}
my $flags_known = flags_shown($node->{_pid});
note "the kernel shows this server the subflows' flags: "
  . ($flags_known ? 'yes' : 'no');
# A pattern that matches the flag, or NULL where it may be unknown.
sub flag { return $flags_known ? $_[0] : "(?:$_[0]|)"; }

sub counter
{
	my $v = query(
		"SELECT value FROM pg_stat_mptcp_counters WHERE name = '$_[0]'");
	return $v eq '' ? undef : $v;
}

# A client in the client namespace connects with mptcp=1, waits (bounded)
# until the server has announced its addresses and the joins had time to
# come in, and reports its subflows as the server sees them:
# "subflows|addr:backup,addr:backup,...".
sub probe
{
	my ($want) = @_;
	return in_client(
		'psql', '-XAtq',
		'-d' =>
		  "host=198.18.1.1 port=$port dbname=postgres mptcp=1 application_name=probe",
		'-c' => qq{DO \$\$ BEGIN
  FOR i IN 1..100 LOOP
    EXIT WHEN (SELECT add_addr_signal >= @{[ $npaths - 1 ]} AND subflows >= $want
                 FROM pg_stat_mptcp WHERE pid = pg_backend_pid());
    PERFORM pg_sleep(0.1);
  END LOOP;
  PERFORM pg_sleep(1);
END \$\$},
		'-c' => q{SELECT m.subflows || '|' ||
  (SELECT string_agg(host(s.local_addr) || ':' || coalesce(s.backup::text, ''), ',' ORDER BY s.local_addr)
     FROM pg_stat_mptcp_subflows s WHERE s.pid = m.pid)
  FROM pg_stat_mptcp m WHERE m.pid = pg_backend_pid()});
}

my $endpoints_sql =
  'SELECT id, address, port, interface, signal, subflow, backup, fullmesh, accepts_joins FROM pg_mptcp_endpoints ORDER BY id';
is( query($endpoints_sql),
	"2|198.18.2.1||sv2|t|f|f|f|f\n"
	  . "3|198.18.3.1||sv3|t|f|f|f|f\n"
	  . "4|198.18.4.1||sv4|t|f|t|f|f",
	'endpoints and their flags; narrow listen_addresses: no joins accepted');

# A signal endpoint with a port: the kernel itself listens there.  A
# subflow endpoint: accepts_joins does not apply.
MptcpUtils::run_ip('mptcp', 'endpoint', 'add', '198.18.1.1', 'dev', 'sv1',
	'port', 40010, 'id', 10, 'signal');
is(query('SELECT port, signal, accepts_joins FROM pg_mptcp_endpoints WHERE id = 10'),
	'40010|t|t', 'a signal endpoint with a port accepts joins');
MptcpUtils::run_ip('mptcp', 'endpoint', 'delete', 'id', 10);
MptcpUtils::run_ip('mptcp', 'endpoint', 'add', '198.18.1.1', 'dev', 'sv1',
	'id', 11, 'subflow', 'fullmesh');
is( query(
		'SELECT signal, subflow, backup, fullmesh, accepts_joins IS NULL FROM pg_mptcp_endpoints WHERE id = 11'
	),
	'f|t|f|t|t',
	'a subflow fullmesh endpoint: its flags, accepts_joins null');
MptcpUtils::run_ip('mptcp', 'endpoint', 'delete', 'id', 11);

# The settings are the namespace's sysctls, as the files say, and its limits.
my @expected;
opendir(my $dh, '/proc/sys/net/mptcp') or die "no /proc/sys/net/mptcp: $!";
for my $f (sort grep { !/^\./ } readdir $dh)
{
	open(my $fh, '<', "/proc/sys/net/mptcp/$f") or next;
	my $v = <$fh> // '';
	close $fh;
	$v =~ s/[\n ]+$//;
	push @expected, "net.mptcp.$f|$v";
}
closedir $dh;
open(my $cc_fh, '<', '/proc/sys/net/ipv4/tcp_congestion_control')
  or die "no tcp_congestion_control: $!";
my $cc = <$cc_fh>;
close $cc_fh;
chomp $cc;
unshift @expected, "net.ipv4.tcp_congestion_control|$cc";
push @expected, 'limits.subflows|8', 'limits.add_addr_accepted|0';
is( query(
		q{SELECT name || '|' || coalesce(setting, '?') FROM pg_mptcp_settings ORDER BY name LIKE 'limits.%', name LIKE 'limits.add%', name COLLATE "C"}
	),
	join("\n", @expected),
	'settings: the sysctls of the namespace, its congestion control and the path manager limits'
);
is( query(
		"SELECT count(*) FROM pg_mptcp_settings WHERE name IN ('net.mptcp.enabled', 'net.mptcp.add_addr_timeout') AND description IS NOT NULL"
	),
	'2',
	'settings have descriptions');

my $syn_rx = counter('MPTcpExtMPCapableSYNRX');
my $join_rx = counter('MPTcpExtMPJoinSynRx');
ok(defined $syn_rx && defined $join_rx,
	'counters: MPCapableSYNRX and MPJoinSynRx are there');
my $client_join_tx = sub {
	my $netstat = in_client('cat', '/proc/net/netstat');
	my ($names, $values) = grep { /^MPTcpExt:/ } split /\n/, $netstat;
	my %c;
	@c{ split ' ', $names } = split ' ', $values;
	return $c{MPJoinSynTx};
};
my $client_tx = $client_join_tx->();

# Narrow: the client tries to join the signalled addresses, and fails.
like(
	probe(1),
	qr/^1\|198\.18\.1\.1:@{[flag('false')]}$/,
	'narrow listen_addresses: one subflow despite three signalled addresses');
cmp_ok(counter('MPTcpExtMPCapableSYNRX'), '>', $syn_rx,
	'counters: the MPTCP connection counted');
is(counter('MPTcpExtMPJoinSynRx'), $join_rx,
	'counters: the server received no join');
SKIP:
{
	skip 'kernel has no MPJoinSynTx counter', 1 unless defined $client_tx;
	cmp_ok($client_join_tx->(), '>=', $client_tx + $npaths - 1,
		'the client did try to join the signalled addresses');
}

# Now listening everywhere: joins accepted.
$node->append_conf('postgresql.conf', "listen_addresses = '*'\n");
$node->restart;
is( query(
		q{SELECT string_agg(host(address) || ':' || accepts_joins, ',' ORDER BY id) FROM pg_mptcp_endpoints}
	),
	'198.18.2.1:true,198.18.3.1:true,198.18.4.1:true',
	"listen_addresses = '*': all signal endpoints accept joins");

$join_rx = counter('MPTcpExtMPJoinSynRx');
like(
	probe($npaths),
	qr/^$npaths\|198\.18\.1\.1:@{[flag('false')]},198\.18\.2\.1:@{[flag('false')]},198\.18\.3\.1:@{[flag('false')]},198\.18\.4\.1:@{[flag('true')]}$/,
	'four subflows; the one on the backup path is a backup (or NULL where the kernel does not say)');
cmp_ok(counter('MPTcpExtMPJoinSynRx'),
	'>=', $join_rx + $npaths - 1,
	'counters: the server received the joins');

# A standby in the client namespace, replicating with mptcp=1.
$node->safe_psql('postgres', 'CREATE TABLE t_rep (i int)');
my $standby = MptcpUtils::lab_standby($node,
	"host=198.18.1.1 port=$port dbname=postgres mptcp=1 application_name=standby1"
);
MptcpUtils::lab_start_standby($standby);

sub standby_query { return MptcpUtils::lab_psql($standby, $_[0]); }

$node->safe_psql('postgres',
	'INSERT INTO t_rep SELECT generate_series(1, 1000)');
$node->wait_for_catchup('standby1', 'replay', $node->lsn('insert'));
is(standby_query('SELECT count(*) FROM t_rep'),
	'1000', 'the standby replays through the lab');

my $walrcv_sql =
  'SELECT m.mptcp, m.subflows FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp m USING (pid)';
my $walrcv;
for my $try (1 .. 100)
{
	$walrcv = standby_query($walrcv_sql);
	last if $walrcv eq "t|$npaths";
	select(undef, undef, undef, 0.2);
}
is($walrcv, "t|$npaths",
	'standby: its walreceiver row in pg_stat_mptcp, multipath over all paths');
is( standby_query(
		q{SELECT count(*) || '|' || string_agg(host(s.remote_addr), ',' ORDER BY s.remote_addr)
		    FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp_subflows s USING (pid)}),
	"$npaths|198.18.1.1,198.18.2.1,198.18.3.1,198.18.4.1",
	"standby: the walreceiver's subflows, one per path");
like(
	standby_query(
		q{SELECT coalesce(string_agg(host(s.remote_addr), ',') FILTER (WHERE s.backup), '') || '|' || count(*) FILTER (WHERE s.backup IS NULL)
		    FROM pg_stat_wal_receiver w JOIN pg_stat_mptcp_subflows s USING (pid)}
	),
	$flags_known ? qr/^198\.18\.4\.1\|0$/ : qr/^(?:198\.18\.4\.1\|0|\|$npaths)$/,
	'standby: the subflow on the backup path is a backup (remote priority), or all NULL where the kernel does not say');

$standby->stop;

# MPTCP turned off in the namespace: the views still answer, without error.
MptcpUtils::set_sysctl('net.mptcp.enabled', 0);
is( query(
		q{SELECT (SELECT setting FROM pg_mptcp_settings WHERE name = 'net.mptcp.enabled')
		  || '|' || (SELECT count(*) FROM pg_mptcp_endpoints)
		  || '|' || (SELECT count(*) > 0 FROM pg_stat_mptcp_counters)
		  || '|' || (SELECT count(*) FROM pg_stat_mptcp WHERE mptcp)
		  || '|' || (SELECT count(*) FROM pg_stat_mptcp_subflows)}),
	'0|3|true|0|0',
	'net.mptcp.enabled = 0: the views answer');
MptcpUtils::set_sysctl('net.mptcp.enabled', 1);

$node->stop;
done_testing();
