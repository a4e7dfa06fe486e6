
# Copyright (c) 2026, PostgreSQL Global Development Group

# Smoke test of the MPTCP test setup: inside a private network namespace
# where this unprivileged user may configure MPTCP, a node on TCP answers
# a query.
#
# Runs only with PG_TEST_EXTRA=mptcp, on Linux with unprivileged user
# namespaces (see README).

use strict;
use warnings FATAL => 'all';
use FindBin;
use lib $FindBin::RealBin;
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# This re-executes the script in a private network namespace, before any
# test output.
BEGIN { MptcpUtils::enter_private_netns(); }

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

# Inside the namespace: the path manager is ours to configure.
MptcpUtils::run_ip(qw(mptcp limits set subflows 2 add_addr_accepted 2));
like(
	MptcpUtils::run_ip(qw(mptcp limits show)),
	qr/subflows 2/,
	'namespace: MPTCP limits can be set');
check_node('netns');

done_testing();
