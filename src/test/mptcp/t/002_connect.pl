
# Copyright (c) 2026, PostgreSQL Global Development Group

# listen_mptcp and libpq's mptcp option over the loopback interface:
# which connections are MPTCP, checked both by the server (its
# log_connections line, from the accepted socket) and by libpq
# (PQmptcpInUse, shown by psql's \conninfo).
#
# It opens TCP/IP listen sockets on the loopback interface with trust
# authentication, so it runs only when PG_TEST_EXTRA contains "mptcp" (as
# src/test/ssl does), and needs a Linux kernel that can create MPTCP
# sockets; skips otherwise.

use strict;
use warnings FATAL => 'all';
use File::Copy;
use FindBin;
use lib $FindBin::RealBin;
use MptcpUtils;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

MptcpUtils::require_extra();
MptcpUtils::require_kernel_mptcp();
MptcpUtils::use_tcp_nodes();

my $sockdir = PostgreSQL::Test::Utils::tempdir_short();

my $node = PostgreSQL::Test::Cluster->new('mptcp_on');
$node->init;
$node->append_conf(
	'postgresql.conf', qq(
listen_mptcp = on
log_connections = on
listen_addresses = '127.0.0.1,::1'
unix_socket_directories = '$sockdir'
));
$node->start;
my $port = $node->port;

my $plain = PostgreSQL::Test::Cluster->new('mptcp_off');
$plain->init;
$plain->append_conf('postgresql.conf', "log_connections = on\n");
$plain->start;
my $plain_port = $plain->port;

is($node->safe_psql('postgres', 'SHOW listen_mptcp'), 'on', 'listen_mptcp is on');
is($plain->safe_psql('postgres', 'SHOW listen_mptcp'), 'off', 'listen_mptcp defaults to off');

# The kernel's own view of the listen sockets.
ok(MptcpUtils::mptcp_sockets($port, 1) >= 1, 'listen socket is MPTCP');
is(MptcpUtils::mptcp_sockets($plain_port, 1), 0,
	'listen socket is not MPTCP with listen_mptcp = off');

my $mptcp_yes = qr/MPTCP Connection\s*\|\s*true/;
my $mptcp_no = qr/MPTCP Connection\s*\|\s*false/;

# Connect with $connstr (a complete connection string) and check both sides:
# \conninfo from libpq, and the server's log_connections line, found by a
# unique application_name.
my $appnum = 0;
sub check_connection
{
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($n, $connstr, $want_mptcp, $test_name, %env) = @_;
	my $app = 'app' . ++$appnum;
	local %ENV = (%ENV, %env);

	my $log_offset = -s $n->logfile;
	my ($ret, $stdout, $stderr) = $n->psql(
		'postgres',
		"\\conninfo\nSELECT 'rows:' || count(*) FROM generate_series(1, 5000)",
		connstr => "$connstr application_name=$app",
		extra_params => [ '-P', 'format=unaligned', '-P', 'fieldsep=|' ]);
	is($ret, 0, "$test_name: connects");
	is($stderr, '', "$test_name: nothing on stderr");
	like($stdout, qr/^rows:5000$/m, "$test_name: query returns its rows");
	like($stdout, $want_mptcp ? $mptcp_yes : $mptcp_no,
		"$test_name: PQmptcpInUse says " . ($want_mptcp ? 'MPTCP' : 'not MPTCP'));

	my $log = slurp_file($n->logfile, $log_offset);
	my ($line) = $log =~ /(connection authorized: .*application_name=$app\b.*)/;
	ok(defined $line, "$test_name: connection logged");
	if ($want_mptcp)
	{
		like($line // '', qr/MPTCP enabled/, "$test_name: server sees MPTCP");
	}
	else
	{
		unlike($line // '', qr/MPTCP/, "$test_name: server sees plain TCP");
	}
	return;
}

my $v4 = "host=127.0.0.1 port=$port dbname=postgres";
check_connection($node, "$v4 mptcp=1", 1, 'mptcp=1 over IPv4');
check_connection($node, "$v4 mptcp=prefer", 1, 'mptcp=prefer over IPv4');
check_connection($node, "$v4 mptcp=require", 1, 'mptcp=require over IPv4');
check_connection($node, "$v4", 0, 'default is plain TCP');
check_connection($node, "$v4 mptcp=0", 0, 'mptcp=0 is plain TCP');
check_connection($node, "$v4 mptcp=disable", 0, 'mptcp=disable is plain TCP');
check_connection($node, "$v4", 1, 'PGMPTCP=1', PGMPTCP => '1');
check_connection($node, "$v4", 1, 'PGMPTCP=require', PGMPTCP => 'require');
check_connection($node, "$v4 mptcp=disable", 0,
	'mptcp=disable overrides PGMPTCP', PGMPTCP => '1');

# TCP keepalive and user timeout settings on an MPTCP connection, both
# libpq's and the server's.
check_connection($node,
	"$v4 mptcp=1 keepalives=1 keepalives_idle=30 keepalives_interval=5 keepalives_count=3 tcp_user_timeout=9000",
	1, 'libpq keepalive settings with MPTCP');
is( $node->safe_psql(
		'postgres',
		"SET tcp_keepalives_idle = 42; SET tcp_keepalives_interval = 7; SET tcp_keepalives_count = 3; "
		  . "SELECT current_setting('tcp_keepalives_idle') || ',' || current_setting('tcp_keepalives_interval') || ',' || current_setting('tcp_keepalives_count')",
		connstr => "$v4 mptcp=1"),
	'42,7,3',
	'server keepalive settings apply to an MPTCP connection');

# With the default settings (tcp_user_timeout and tcp_keepalives_* 0, never
# set on connections), the postmaster does not warn about options it does
# not use, whatever the kernel refuses.
unlike(
	slurp_file($node->logfile),
	qr/MPTCP connections will not use socket options/,
	'no startup warning about socket options the settings do not use');

# TCP_USER_TIMEOUT is refused on MPTCP sockets by the kernels we know.
# Connections work, and the setting reports "unknown" (-1) on MPTCP
# connections without log noise.
my $user_timeout_refused =
  !MptcpUtils::mptcp_option_works(Socket::IPPROTO_TCP, 18);   # TCP_USER_TIMEOUT
my $log_offset = -s $node->logfile;
my $user_timeout = $node->safe_psql(
	'postgres',
	"SET tcp_user_timeout = 4200; SELECT current_setting('tcp_user_timeout')",
	connstr => "$v4 mptcp=1");
if (!$user_timeout_refused)
{
	is($user_timeout, '4200', 'tcp_user_timeout applies to an MPTCP connection');
}
else
{
	is($user_timeout, '-1', 'tcp_user_timeout is reported unknown on MPTCP');
	unlike(slurp_file($node->logfile, $log_offset),
		qr/TCP_USER_TIMEOUT/, 'no log line per connection');

	# At DEBUG1, the refusal names the call that was refused: reading the
	# default (getsockopt) fails, so the server does not try to set it.
	$log_offset = -s $node->logfile;
	$node->safe_psql(
		'postgres',
		"SET log_min_messages = debug1; SET tcp_user_timeout = 4200; "
		  . "SELECT current_setting('tcp_user_timeout')",
		connstr => "$v4 mptcp=1");
	my $debug = slurp_file($node->logfile, $log_offset);
	like(
		$debug,
		qr/DEBUG:  getsockopt\(TCP_USER_TIMEOUT\) not supported on MPTCP socket: \S/,
		'DEBUG1 names getsockopt when reading the option is refused');
	unlike(
		$debug,
		qr/setsockopt\(TCP_USER_TIMEOUT\)/,
		'no setsockopt message for the refused getsockopt');
}

# Set in postgresql.conf, the options are named once at startup where the
# kernel refuses them: TCP_USER_TIMEOUT on every kernel we know,
# TCP_KEEPIDLE before 6.10 (and its stable backports).
{
	my $keepidle_refused =
	  !MptcpUtils::mptcp_option_works(Socket::IPPROTO_TCP, 4);  # TCP_KEEPIDLE
	$node->append_conf('postgresql.conf',
		"tcp_user_timeout = 9000\ntcp_keepalives_idle = 60\n");
	$log_offset = -s $node->logfile;
	$node->restart;
	my ($named) = slurp_file($node->logfile, $log_offset) =~
	  /WARNING:  MPTCP connections will not use socket options ([^\n]*)/;
	$named //= '';
	is($named =~ /TCP_USER_TIMEOUT/ ? 1 : 0,
		$user_timeout_refused ? 1 : 0,
		'set, TCP_USER_TIMEOUT is named at startup exactly where the kernel refuses it');
	is($named =~ /TCP_KEEPIDLE/ ? 1 : 0,
		$keepidle_refused ? 1 : 0,
		'set, TCP_KEEPIDLE is named at startup exactly where the kernel refuses it');
}
is( $node->safe_psql(
		'postgres',
		"SET tcp_user_timeout = 4200; SELECT current_setting('tcp_user_timeout')",
		connstr => $v4),
	'4200',
	'tcp_user_timeout still applies to plain TCP connections');

# IPv6, where the host has it.
SKIP:
{
	my $ok = eval {
		$node->safe_psql('postgres', 'SELECT 1',
			connstr => "host=::1 port=$port dbname=postgres connect_timeout=5");
	};
	skip 'no IPv6 loopback', 8 unless defined $ok && $ok eq '1';
	check_connection($node, "host=::1 port=$port dbname=postgres mptcp=require",
		1, 'mptcp=require over IPv6');
}

# Unix-domain sockets never use MPTCP, whatever the option says.
check_connection($node, "host=$sockdir port=$port dbname=postgres mptcp=require",
	0, 'Unix-domain socket ignores mptcp=require');

# A server without listen_mptcp: prefer gives plain TCP, require fails.
check_connection($plain, "host=127.0.0.1 port=$plain_port dbname=postgres mptcp=prefer",
	0, 'mptcp=prefer against listen_mptcp = off falls back to TCP');
my $fell_back =
  'MPTCP was required, but the connection fell back to plain TCP: the server or the network path does not support MPTCP';
$plain->connect_fails(
	"host=127.0.0.1 port=$plain_port dbname=postgres mptcp=require",
	'mptcp=require against listen_mptcp = off',
	expected_stderr =>
	  qr/^psql: error: connection to server at "127\.0\.0\.1", port $plain_port failed: \Q$fell_back\E$/
);
# With several hosts, each failure names its host.
$plain->connect_fails(
	"host=127.0.0.1,localhost hostaddr=127.0.0.1,127.0.0.1 port=$plain_port dbname=postgres mptcp=require",
	'mptcp=require, several hosts: each failure names its host',
	expected_stderr =>
	  qr/^psql: error: connection to server at "127\.0\.0\.1", port $plain_port failed: \Q$fell_back\E\nconnection to server at "127\.0\.0\.1", port $plain_port failed: \Q$fell_back\E$/
);

# Multiple hosts: require skips the one without MPTCP.
is( $node->safe_psql(
		'postgres',
		'SHOW port',
		connstr =>
		  "host=127.0.0.1,127.0.0.1 port=$plain_port,$port dbname=postgres mptcp=require"
	),
	$port,
	'multi-host: mptcp=require moves on to the MPTCP server');
for my $try (1 .. 3)
{
	is( $node->safe_psql(
			'postgres',
			'SHOW port',
			connstr =>
			  "host=127.0.0.1,127.0.0.1 port=$plain_port,$port dbname=postgres mptcp=require load_balance_hosts=random target_session_attrs=read-write"
		),
		$port,
		"multi-host: mptcp=require with load_balance_hosts=random and target_session_attrs ($try)"
	);
}

# Invalid values are rejected before connecting, in the usual style.
$node->connect_fails(
	"$v4 mptcp=yes", 'invalid mptcp value',
	expected_stderr => qr/invalid mptcp value: "yes"/);
{
	local $ENV{PGMPTCP} = 'sometimes';
	$node->connect_fails(
		"$v4", 'invalid PGMPTCP value',
		expected_stderr => qr/invalid mptcp value: "sometimes"/);
}

# SSL over MPTCP.
SKIP:
{
	skip 'SSL not supported by this build', 7
	  unless ($ENV{with_ssl} // '') eq 'openssl';

	my $ssldir = "$FindBin::RealBin/../../ssl/ssl";
	my $pgdata = $node->data_dir;
	for my $f ('server-cn-only.crt', 'server-cn-only.key')
	{
		copy("$ssldir/$f", "$pgdata/$f") or die "could not copy $f: $!";
		chmod(0600, "$pgdata/$f");
	}
	$node->append_conf(
		'postgresql.conf', qq(
ssl = on
ssl_cert_file = 'server-cn-only.crt'
ssl_key_file = 'server-cn-only.key'
));
	$node->reload;
	check_connection($node, "$v4 mptcp=require sslmode=require", 1,
		'sslmode=require over MPTCP');
	like(
		$node->safe_psql(
			'postgres', 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
			connstr => "$v4 mptcp=require sslmode=require"),
		qr/^t$/,
		'the MPTCP connection is encrypted');
}

$node->stop;
$plain->stop;

done_testing();
