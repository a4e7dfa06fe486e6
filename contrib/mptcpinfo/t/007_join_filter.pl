
# Copyright (c) 2026, PostgreSQL Global Development Group

# Who may join a connection: the nftables recipe of
# nftables/mptcp-join-filter.nft, loaded as it is shipped, its networks set
# at run time as its header says.  Over a three-path lab whose server allows
# joins from the networks of paths 1 and 2 only, the join over path 3 is
# dropped (the rule's counter, the kernel's join counters on both sides),
# the connection has two subflows, and a COPY goes on over those two paths
# with its data intact.  Then IPv6 on loopback: a join from ::1 is dropped
# while ::1 is not in the IPv6 set, and accepted once it is.
#
# Runs only with PG_TEST_EXTRA=mptcp, in a private network namespace (see
# src/test/mptcp/README; nft runs there with the namespace's CAP_NET_ADMIN,
# no root needed), and only where nft can load the recipe (nftables 1.0.6
# or later; PG_TEST_NFT names the program, else nft in PATH or /usr/sbin).

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

my $recipe = "$FindBin::RealBin/../nftables/mptcp-join-filter.nft";
my $nft = MptcpUtils::find_nft();
plan skip_all => 'nft not found (set PG_TEST_NFT to its path)'
  unless defined $nft;

sub run_nft
{
	my ($stdout, $stderr) = ('', '');
	IPC::Run::run([ $nft, @_ ], '>', \$stdout, '2>', \$stderr);
	return ($? == 0, $stdout, $stderr);
}

# Load it twice: the second load must replace the table, as a reload of
# /etc/nftables.conf that includes it does.
my ($ok, $out, $err) = run_nft('-f', $recipe);
plan skip_all => "nft cannot load the MP_JOIN recipe here: $err" unless $ok;
($ok, $out, $err) = run_nft('-f', $recipe);
ok($ok, 'the recipe loads a second time (replaces its table)') or diag $err;
($ok, $out) = run_nft('list', 'tables');
is($out, "table inet mptcp_join_filter\n", 'one table');

# The networks of this lab, as the recipe's header says to change them.
run_nft('flush', 'set', 'inet', 'mptcp_join_filter', $_)
  for 'allowed_join_v4', 'allowed_join_v6';
($ok, $out, $err) = run_nft('add', 'element', 'inet', 'mptcp_join_filter',
	'allowed_join_v4', '{ 198.18.1.0/24, 198.18.2.0/24 }');
ok($ok, 'paths 1 and 2 may join') or diag $err;

# Packets the rule for FAMILY ('ip' or 'ip6') dropped.
sub dropped
{
	my ($family) = @_;
	my (undef, $chain) = run_nft('list', 'chain', 'inet', 'mptcp_join_filter', 'input');
	return $chain =~ /\b$family saddr != \@allowed_join_v\d counter packets (\d+)/
	  ? $1 : 'no rule';
}

my $npaths = 3;
MptcpUtils::lab_up($npaths, '20mbit');
# (and let a client in this namespace accept the IPv6 address, below)
MptcpUtils::run_ip(qw(mptcp limits set subflows 8 add_addr_accepted 2));

my $node = PostgreSQL::Test::Cluster->new('join_filter');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
));
$node->append_conf(
	'pg_hba.conf', q(
host all all 198.18.0.0/15 trust
host all all ::1/128 trust
));
$node->start;
my $port = $node->port;
# the port of the server's IPv6 signal endpoint, below
my $port6 = PostgreSQL::Test::Cluster::get_free_port();
$node->safe_psql(
	'postgres', q(
CREATE EXTENSION mptcpinfo;
CREATE TABLE t_data AS
  SELECT g AS id, repeat(md5(g::text), 4) AS payload
  FROM generate_series(1, 60000) g;
));

# The kernel's counter NAME in this namespace, and in the client's.
sub counter
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(value), 0) FROM pg_stat_mptcp_counters WHERE name = 'MPTcpExt$name'"
	);
}

sub client_counter
{
	my ($name) = @_;
	my ($stdout, $stderr);
	IPC::Run::run([ MptcpUtils::lab_client('cat', '/proc/net/netstat') ],
		'>', \$stdout, '2>', \$stderr)
	  or die "could not read the client's counters: $stderr";
	my ($head, $values) = grep { /^MPTcpExt:/ } split /\n/, $stdout;
	my %c;
	@c{ split ' ', $head } = split ' ', $values;
	return $c{$name} // 0;
}

# Subflows of the session with application_name $app, by path, once
# there are $want of them (or after 10 s).  Only the server's side: with
# the client on loopback in this namespace, the view also lists the
# client's own socket of the initial subflow.
sub subflows
{
	my ($app, $want, $h) = @_;
	my $got = '';
	for my $try (1 .. 100)
	{
		$got = $node->safe_psql('postgres',
			"SELECT string_agg(host(s.remote_addr), ' ' ORDER BY s.remote_addr) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '$app' AND s.local_port IN ($port, $port6)"
		);
		my @addrs = split / /, $got;
		last if @addrs >= $want;
		$h->pump_nb if $h;
		select(undef, undef, undef, 0.1);
	}
	return $got;
}

### IPv4: a client with three paths, joins allowed from two

my $copy_file = "${PostgreSQL::Test::Utils::tmp_check}/copy.out";
my ($in, $stdout, $stderr) = ('', '', '');
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=filtered"
		)
	],
	'<', \$in, '>', \$stdout, '2>', \$stderr);
$in .= "SELECT 'connected';\n";

# The client announces nothing; it joins each address the server
# announced, over the path of that address: from 198.18.2.2 (allowed)
# and 198.18.3.2 (not).
is(subflows('filtered', 2, $h), '198.18.1.2 198.18.2.2',
	'two subflows: the initial one and the join over path 2');
# give the join over path 3 time to be tried (and retried)
for my $try (1 .. 100)
{
	last if client_counter('MPJoinSynTx') >= 2 && dropped('ip') >= 1;
	$h->pump_nb;
	select(undef, undef, undef, 0.1);
}
cmp_ok(dropped('ip'), '>=', 1, 'the join from path 3 was dropped by the rule');
cmp_ok(client_counter('MPJoinSynTx'), '>=', 2, 'the client tried both joins');
is(counter('MPJoinSynRx'), 1, 'the server received only the allowed one');
is(subflows('filtered', 3), '198.18.1.2 198.18.2.2',
	'still two subflows: none from path 3');
is(dropped('ip6'), 0, 'the IPv6 rule dropped nothing');

# The connection goes on over the allowed paths: a COPY, checked.
my $stats_before = MptcpUtils::lab_stats();
my $copy = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=filtered_copy",
			'-c', 'COPY (SELECT * FROM t_data ORDER BY id) TO STDOUT')
	],
	'>', $copy_file, '2>', \$stderr);
# it too has two subflows while it runs (checked from the server)
my $copy_subflows = subflows('filtered_copy', 2);
$copy->finish;
is($?, 0, 'COPY TO over the allowed paths succeeds');
is( MptcpUtils::file_md5($copy_file),
	$node->safe_psql('postgres',
		"SELECT md5(string_agg(id || E'\\t' || payload || E'\\n', '' ORDER BY id)) FROM t_data"
	),
	'COPY TO: data identical');
my $stats = MptcpUtils::lab_stats();
my %moved = map {
	$_ => $stats->{$_}{to_client} - $stats_before->{$_}{to_client}
} 1 .. $npaths;
my $total = $moved{1} + $moved{2} + $moved{3};
note "bytes to the client by path: "
  . join(', ', map { "$_: $moved{$_}" } 1 .. $npaths)
  . "; COPY's subflows: $copy_subflows";
cmp_ok($moved{1} + $moved{2}, '>', -s $copy_file, 'the COPY crossed paths 1 and 2');
cmp_ok($moved{2}, '>', 0.1 * $total, 'path 2 carried a share of it');
cmp_ok($moved{3}, '<', 10000, 'path 3 carried nothing but refused joins');

$h->kill_kill;
$h->finish;

### IPv6 on loopback: a client in this namespace, the server signalling ::1
### on a port of its own (its other endpoints are IPv4)

# (An IPv6 ADD_ADDR with a port takes 30 bytes of TCP options, which do not
# fit beside TCP timestamps on the pure ACK that carries it: the kernel
# drops it, MPTcpExtAddAddrTxDrop, and no join is ever tried.  Without a
# port, the server would announce the address of the initial subflow,
# which the kernel leaves out.  So this part runs without timestamps.)
MptcpUtils::set_sysctl('net.ipv4.tcp_timestamps', 0);
MptcpUtils::run_ip(qw(mptcp endpoint flush));
MptcpUtils::run_ip('mptcp', 'endpoint', 'add', '::1', 'dev', 'lo', 'port',
	$port6, 'signal');

# A session from ::1 that stays while we look; its subflows' addresses.
sub v6_session
{
	my ($app) = @_;
	my $in6 = "SELECT pg_sleep(30);\n";
	my $h6 = IPC::Run::start(
		[
			'psql', '-X', '-At', '-d',
			"host=::1 port=$port dbname=postgres mptcp=require application_name=$app"
		],
		'<', \$in6, '>', \my $o6, '2>', \my $e6);
	return $h6;
}

my $h6 = v6_session('v6_refused');
is(subflows('v6_refused', 1), '::1', 'IPv6: connected');
for my $try (1 .. 100)
{
	last if dropped('ip6') >= 1;
	select(undef, undef, undef, 0.1);
}
cmp_ok(dropped('ip6'), '>=', 1, 'IPv6: the join from ::1 was dropped');
is( $node->safe_psql('postgres',
		"SELECT string_agg(s.local_port::text, ' ') FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'v6_refused' AND s.local_port IN ($port, $port6)"
	),
	$port,
	'IPv6: one subflow, on the server port');
$h6->kill_kill;
$h6->finish;

($ok, $out, $err) = run_nft('add', 'element', 'inet', 'mptcp_join_filter',
	'allowed_join_v6', '{ ::1 }');
ok($ok, '::1 may join now') or diag $err;
$h6 = v6_session('v6_allowed');
is( subflows('v6_allowed', 2),
	'::1 ::1', 'IPv6: the join from ::1 is accepted once ::1 is in the set');
is( $node->safe_psql('postgres',
		"SELECT string_agg(s.local_port::text, ' ' ORDER BY s.local_port = $port DESC) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'v6_allowed' AND s.local_port IN ($port, $port6)"
	),
	"$port $port6",
	'IPv6: its second subflow is on the signalled port');
$h6->kill_kill;
$h6->finish;

$node->stop;
done_testing();
