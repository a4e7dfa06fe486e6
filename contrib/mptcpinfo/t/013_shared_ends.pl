
# Copyright (c) 2026, PostgreSQL Global Development Group

# With mptcpinfo preloaded, the subflows' ends that one session found are
# kept in shared memory: a new session's first query of
# pg_stat_mptcp_subflows looks them up instead of reading a dump.  A
# connection on a link-local IPv6 address is looked up on its interface.
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

BEGIN { MptcpUtils::enter_private_netns(); }

MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

# The first session learns the subflows from a dump (Linux 6.15, or a
# server with privileges) or from the server processes' reports (before),
# and keeps them in shared memory either way: no gate on the kernel's
# version, which backports contradict.

my $npaths = 2;
MptcpUtils::lab_up($npaths, undef);

my $node = PostgreSQL::Test::Cluster->new('shared_ends');
$node->init;
$node->append_conf(
	'postgresql.conf', q(
listen_mptcp = on
listen_addresses = '*'
shared_preload_libraries = 'mptcpinfo'
));
$node->append_conf('pg_hba.conf',
	"host all all 198.18.0.0/15 trust\nhost all all fe80::/10 trust\n");
$node->start;
my $port = $node->port;
$node->safe_psql('postgres', 'CREATE EXTENSION mptcpinfo');

my ($in, $out, $err) = ('', '', '');
my $h = IPC::Run::start(
	[
		MptcpUtils::lab_client(
			'psql', '-X', '-At', '-d',
			"host=198.18.1.1 port=$port dbname=postgres mptcp=require application_name=shared_client"
		)
	],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= "SELECT pg_sleep(60);\n";
$h->pump_nb;

my $subflows_sql =
  "SELECT count(*), count(DISTINCT s.local_addr) FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'shared_client'";
my $subflows = '';
for my $try (1 .. 200)
{
	$subflows = $node->safe_psql('postgres', $subflows_sql);
	last if $subflows eq "$npaths|$npaths";
	$h->pump_nb;
	select(undef, undef, undef, 0.1);
}
is($subflows, "$npaths|$npaths",
	'the client connection has a subflow on each path');

# what a new session's first query did, from its DEBUG1 line
sub first_query
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET client_min_messages = debug1;\n$subflows_sql");
	my ($looked_up, $dumped, $tcp_dumped) = $stderr =~
	  /mptcpinfo: (\d+) MPTCP connections looked up by their ends, (\d+) read from a dump.*; (\d+) TCP sockets dumped/;
	return ($stdout, $looked_up // 'none', $dumped // 'none',
		$tcp_dumped // 'none');
}

my ($rows, $looked_up, $dumped, $tcp_dumped) = first_query();
is($rows, "$npaths|$npaths", 'a new session sees both subflows');
is( "$looked_up $dumped $tcp_dumped",
	'1 0 0',
	'a new session looks them up, as an earlier session kept them: no dump');

$h->kill_kill;
$h->finish;

# A connection on a link-local IPv6 address: the kernel binds its sockets
# to the interface, and finds them by their ends only with it.  Its
# subflow is looked up; reported by its process, it is found, not shown
# as a closed row.
SKIP:
{
	my $ll = 'fe80::2';
	eval {
		MptcpUtils::run_ip('link', 'add', 'llv0', 'type', 'veth', 'peer',
			'name', 'llv1');
		MptcpUtils::run_ip('link', 'set', $_, 'up') for ('llv0', 'llv1');
		MptcpUtils::run_ip('-6', 'addr', 'add', "$ll/64", 'dev', 'llv1',
			'nodad');
		1;
	} or skip "no link-local IPv6 address here: $@", 3;

	# The veth pair's carrier comes up asynchronously: wait for it.  A
	# connection whose MPTCP SYNs were lost meanwhile falls back to plain
	# TCP after a few seconds (its subflow count is then 0): connect again.
	for my $try (1 .. 100)
	{
		last
		  if MptcpUtils::run_ip('-o', 'link', 'show', 'llv1') =~ /LOWER_UP/
		  && MptcpUtils::run_ip('-o', 'link', 'show', 'llv0') =~ /LOWER_UP/;
		select(undef, undef, undef, 0.1);
	}
	my $llc;
	for my $attempt (1 .. 3)
	{
		$llc = $node->background_psql('postgres',
			extra_params => [ '-d' =>
				  "host=$ll%llv1 port=$port dbname=postgres mptcp=1 application_name=linklocal"
			]);
		last
		  if $node->safe_psql('postgres',
			q{SELECT bool_and(m.mptcp) FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'linklocal'}) eq 't';
		note "attempt $attempt: the link-local connection fell back to plain TCP";
		$llc->quit;
	}
	my $ll_sql = q{
SELECT count(*), bool_and(s.established)
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_activity a USING (pid)
 WHERE a.application_name = 'linklocal'};
	my (undef, $rows, $err) =
	  $node->psql('postgres', "SET client_min_messages = debug1;\n$ll_sql");
	is($rows, '1|t', 'a link-local connection: its subflow');
	like(
		$err,
		qr/MPTCP connections looked up by their ends, 0 read from a dump, 0 not described/,
		'a link-local connection: looked up by its ends');
	my (undef, $reported) = $node->psql('postgres',
		"SET mptcpinfo.subflow_source = 'processes';\n$ll_sql");
	is($reported, '1|t',
		'a link-local subflow reported by its process: found, not a closed row'
	);
	$llc->quit;
}

$node->stop;
done_testing();
