
# Copyright (c) 2026, PostgreSQL Global Development Group

# Smoke test of the MPTCP test setup: a node on TCP answers a query, and,
# with PG_TEST_EXTRA=mptcp, the same works inside a private network
# namespace where this unprivileged user may configure MPTCP.
#
# Run with PG_TEST_EXTRA=mptcp on Linux with unprivileged user namespaces
# (see README); without it, only the loopback part runs.

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# With PG_TEST_EXTRA=mptcp, this re-executes the script in a private
# network namespace, before any test output.
BEGIN { MptcpUtils::enter_private_netns() if MptcpUtils::extra_enabled(); }

MptcpUtils::use_tcp_nodes();

sub check_node
{
	my ($label) = @_;
	my $node = PostgreSQL::Test::Cluster->new("smoke_$label");
	$node->init;
	$node->start;
	is( $node->safe_psql(
			'postgres',
			'SELECT count(*), sum(g) FROM generate_series(1, 1000) g',
			connstr => $node->connstr('postgres') . ' host=127.0.0.1'),
		'1000|500500',
		"$label: query over TCP returns the right rows");
	like($node->safe_psql('postgres', 'SELECT inet_server_addr()'),
		qr/^127\.0\.0\.1$/, "$label: connection is TCP to 127.0.0.1");
	$node->stop;
	return;
}

if (!MptcpUtils::extra_enabled())
{
	check_node('host');
	note 'namespace part skipped: mptcp not enabled in PG_TEST_EXTRA';
	done_testing();
	exit;
}

# Inside the namespace: the path manager is ours to configure.
MptcpUtils::run_ip(qw(mptcp limits set subflows 2 add_addr_accepted 2));
like(
	MptcpUtils::run_ip(qw(mptcp limits show)),
	qr/subflows 2/,
	'namespace: MPTCP limits can be set');
check_node('netns');

done_testing();
