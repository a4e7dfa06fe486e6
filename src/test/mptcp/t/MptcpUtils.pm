
# Copyright (c) 2026, PostgreSQL Global Development Group

=pod

=head1 NAME

MptcpUtils - helpers for the Multipath TCP tests

=head1 SYNOPSIS

  use FindBin;
  use lib $FindBin::RealBin;
  use MptcpUtils;

  # skip the whole test unless PG_TEST_EXTRA contains "mptcp" (it opens
  # TCP/IP listen sockets), or unless the kernel can open MPTCP sockets
  MptcpUtils::require_extra();
  MptcpUtils::require_kernel_mptcp();

  # run this test inside a private network namespace (only with
  # PG_TEST_EXTRA=mptcp; skips otherwise).  In a BEGIN block: it must
  # re-execute the script before PostgreSQL::Test::Utils redirects the
  # test's output at INIT time.
  BEGIN { MptcpUtils::enter_private_netns(); }

=head1 DESCRIPTION

Nodes always use TCP on an explicit loopback address.  Network changes
(sysctls, path manager endpoints, traffic shaping) are only ever made inside
a network namespace owned by an unprivileged user namespace that the test
creates by re-executing itself under unshare(1); it vanishes with the test.

=cut

package MptcpUtils;

use strict;
use warnings FATAL => 'all';

use Config;
use Cwd ();
use File::Basename ();
use IO::Socket::IP;
use IPC::Run;
use Socket qw(AF_INET SOCK_STREAM);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use constant IPPROTO_MPTCP => 262;

=pod

=item use_tcp_nodes()

Make the nodes created from now on listen on TCP only, at 127.0.0.1.
(Must run at run time: PostgreSQL::Test::Cluster sets its defaults in an
INIT block.)

=cut

sub use_tcp_nodes
{
	$PostgreSQL::Test::Cluster::use_tcp = 1;
	$PostgreSQL::Test::Cluster::test_pghost = '127.0.0.1';
	$ENV{PGHOST} = '127.0.0.1';
	return;
}

=pod

=item kernel_mptcp_error()

Returns undef if this process can open an IPPROTO_MPTCP socket, else the
reason (errno text).

=cut

sub kernel_mptcp_error
{
	return "not Linux" if $Config{osname} ne 'linux';
	my $sock;
	if (socket($sock, AF_INET, SOCK_STREAM, IPPROTO_MPTCP))
	{
		close($sock);
		return undef;
	}
	return "$!";
}

sub require_kernel_mptcp
{
	my $err = kernel_mptcp_error();
	plan skip_all => "kernel cannot open MPTCP sockets: $err" if defined $err;
	return;
}

=pod

=item mptcp_info_len()

The length of the running kernel's struct mptcp_info, as getsockopt()
MPTCP_INFO gives it for an MPTCP connection over loopback: which of its
fields the kernel has, whatever its version number says (distributions
backport).  undef where the kernel has no MPTCP_INFO (before 5.16).

=cut

sub mptcp_info_len
{
	my ($listener, $client, $server);
	socket($listener, AF_INET, SOCK_STREAM, IPPROTO_MPTCP) or return undef;
	bind($listener, Socket::pack_sockaddr_in(0, Socket::INADDR_LOOPBACK))
	  or return undef;
	listen($listener, 1) or return undef;
	my ($port) = Socket::unpack_sockaddr_in(getsockname($listener));
	socket($client, AF_INET, SOCK_STREAM, IPPROTO_MPTCP) or return undef;
	connect($client, Socket::pack_sockaddr_in($port, Socket::INADDR_LOOPBACK))
	  or return undef;
	accept($server, $listener) or return undef;
	# (SOL_MPTCP 284, MPTCP_INFO 1)
	my $info = getsockopt($client, 284, 1);
	close($_) for ($client, $server, $listener);
	return defined $info ? length($info) : undef;
}

=pod

=item mptcp_option_works(LEVEL, OPTNAME)

Does the kernel accept setting this integer socket option (to 1) on an
MPTCP socket?

=cut

sub mptcp_option_works
{
	my ($level, $optname) = @_;
	my $sock;
	socket($sock, AF_INET, SOCK_STREAM, IPPROTO_MPTCP) or return 0;
	my $ok = setsockopt($sock, $level, $optname, 1);
	close($sock);
	return $ok ? 1 : 0;
}

sub extra_enabled
{
	return defined $ENV{PG_TEST_EXTRA} && $ENV{PG_TEST_EXTRA} =~ /\bmptcp\b/;
}

=pod

=item require_extra()

Skips the test unless PG_TEST_EXTRA contains "mptcp".  Every test that opens
TCP/IP listen sockets calls it (or enter_private_netns()): the nodes trust
local connections, which any local user could then use, as in src/test/ssl.

=cut

sub require_extra
{
	plan skip_all =>
	  'Potentially unsafe test mptcp not enabled in PG_TEST_EXTRA'
	  unless extra_enabled();
	return;
}

=pod

=item enter_private_netns([PRIVATE_ONLY])

Skips the test unless PG_TEST_EXTRA contains "mptcp" and unprivileged user
namespaces work here; otherwise re-executes the test script inside a new
user + network namespace (the user keeps its uid, so postgres can run, and
holds CAP_NET_ADMIN over the namespace), and brings up its loopback.
Call it from a BEGIN block, before any test output.  With PRIVATE_ONLY
true, PG_TEST_EXTRA is not needed: for a test that uses only the
namespace's own loopback, which no other user can reach.

=cut

sub enter_private_netns
{
	my ($private_only) = @_;

	if ($ENV{PG_MPTCP_IN_NETNS})
	{
		run_ip('link', 'set', 'lo', 'up');
		return;
	}

	require_extra() unless $private_only;
	plan skip_all => 'network namespace tests need Linux'
	  if $Config{osname} ne 'linux';

	my @unshare = unshare_command();
	my ($stdout, $stderr);
	IPC::Run::run([ @unshare, 'ip', 'link', 'set', 'lo', 'up' ],
		'>', \$stdout, '2>', \$stderr)
	  or plan skip_all =>
	  "cannot create an unprivileged network namespace here: $stderr";

	# Keep the include path that the test was started with (perl -I).
	$ENV{PG_MPTCP_IN_NETNS} = 1;
	exec(@unshare, $^X, (map { "-I$_" } grep { !ref } @INC), $0, @ARGV)
	  or die "could not re-execute the test under unshare: $!";
}

sub unshare_command
{
	return (
		'unshare', '-Un',
		'--map-user=' . $<,
		'--map-group=' . (split ' ', $()[0],
		'--keep-caps');
}

=pod

=item run_ip(ARGS), set_sysctl(NAME, VALUE)

Change the namespace's network configuration; only allowed inside
enter_private_netns().

=cut

sub run_ip
{
	die "run_ip outside the private network namespace"
	  unless $ENV{PG_MPTCP_IN_NETNS};
	my ($stdout, $stderr);
	IPC::Run::run([ 'ip', @_ ], '>', \$stdout, '2>', \$stderr)
	  or die "ip @_ failed: $stderr";
	return $stdout;
}

sub set_sysctl
{
	my ($name, $value) = @_;
	die "set_sysctl outside the private network namespace"
	  unless $ENV{PG_MPTCP_IN_NETNS};
	(my $path = "/proc/sys/$name") =~ s/\./\//g;
	open(my $fh, '>', $path) or die "could not open $path: $!";
	print $fh "$value\n";
	close($fh) or die "could not set $name: $!";
	return;
}

=pod

=item lab_up(NPATHS, RATES [, PORTS] [, backup => [I, ...]] [, cc => NAME]
[, route_cc => NAME [, route_cc_sides => 'server' | 'client']]),
lab_client(CMD...), lab_router(CMD...), lab_blackhole(I), lab_restore(I),
lab_stats(), lab_info(), lab_down()

A multipath lab inside the private network namespace, built by lab.sh
(see there): NPATHS paths between this namespace (the server, 198.18.1.1
and signalled 198.18.I.1) and a client namespace, each crossing a router
namespace that shapes it in both directions.  RATES is one rate for every
path (e.g. '50mbit'), a list with one per path (['20mbit', '2mbit'] or
'20mbit,2mbit'), or undef for unshaped paths.  With PORTS true, one link
and NPATHS - 1 extra signalled ports 40000+I of 198.18.1.1 instead.
"backup" lists the paths whose server endpoint is "signal backup"; "cc"
('reno' or 'bbr') is the congestion control of every namespace of the lab;
"route_cc" the one every path's route sets ("congctl"), on both sides or
on the one "route_cc_sides" names.
lab_client() and lab_router() return the command line that runs CMD in the
client or router namespace.  lab_stats() returns the bytes the router
delivered so far, as { PATH => { to_client => BYTES, to_server => BYTES } };
lab_info() one line with the paths, rates, backup paths and congestion
control, for the test's log.
The lab is removed at exit, even after a failure.

=cut

my $lab_dir;
my $lab_script = Cwd::abs_path(File::Basename::dirname(__FILE__) . "/../lab.sh");

sub lab_up
{
	my ($npaths, $rates, @rest) = @_;
	die "lab_up outside the private network namespace"
	  unless $ENV{PG_MPTCP_IN_NETNS};
	# an odd number of further arguments: the first is PORTS
	my $ports = @rest % 2 ? shift @rest : undef;
	my %opt = @rest;
	$rates = join(',', @$rates) if ref $rates;
	$lab_dir //= PostgreSQL::Test::Utils::tempdir('lab');
	my @args = ($lab_dir, $npaths, $rates // 'none');
	push @args, 'ports' if $ports || $opt{ports};
	push @args, 'backup=' . join(',', @{ $opt{backup} })
	  if $opt{backup} && @{ $opt{backup} };
	local $ENV{LAB_CC} = $opt{cc} if defined $opt{cc};
	local $ENV{LAB_ROUTE_CC} = $opt{route_cc} if defined $opt{route_cc};
	local $ENV{LAB_ROUTE_CC_SIDES} = $opt{route_cc_sides}
	  if defined $opt{route_cc_sides};
	my ($stdout, $stderr);
	IPC::Run::run([ 'bash', $lab_script, 'up', @args ],
		'>', \$stdout, '2>', \$stderr)
	  or die "lab.sh up failed: $stderr";
	return;
}

sub lab_client
{
	return ('bash', $lab_script, 'client', $lab_dir, @_);
}

sub lab_router
{
	return ('bash', $lab_script, 'router', $lab_dir, @_);
}

# A streaming standby of $primary for the lab's client namespace, replicating
# with $conninfo and listening on 127.0.0.1 there; start it with
# lab_start_standby.
sub lab_standby
{
	my ($primary, $conninfo) = @_;
	$primary->backup('standby_base');
	my $standby = PostgreSQL::Test::Cluster->new('standby');
	$standby->init_from_backup($primary, 'standby_base', has_streaming => 1);
	$standby->append_conf(
		'postgresql.conf', qq(
primary_conninfo = '$conninfo'
listen_addresses = '127.0.0.1'
));
	return $standby;
}

sub lab_start_standby
{
	my ($standby) = @_;
	command_ok(
		[
			lab_client(
				'pg_ctl', '--pgdata' => $standby->data_dir,
				'--log' => $standby->logfile, '--wait', 'start')
		],
		'standby starts in the client namespace');
	# so that the harness stops it at the end, even after a failure
	$standby->_update_pid(1);
	return;
}

# The output of psql -c $sql, run in the client namespace against $node
# (listening on 127.0.0.1 there), or '' on failure.
sub lab_psql
{
	my ($node, $sql) = @_;
	my ($out, $err);
	IPC::Run::run(
		[
			lab_client(
				'psql', '-X', '-At', '-d',
				'host=127.0.0.1 port=' . $node->port . ' dbname=postgres',
				'-c', $sql)
		],
		'>', \$out, '2>', \$err);
	chomp $out if defined $out;
	return $out // '';
}

sub file_md5
{
	my ($file) = @_;
	my ($out, $err);
	IPC::Run::run([ 'md5sum', $file ], '>', \$out, '2>', \$err) or die $err;
	return (split ' ', $out)[0];
}

sub lab_run
{
	my (@args) = @_;
	my ($stdout, $stderr);
	IPC::Run::run([ 'bash', $lab_script, @args ], '>', \$stdout, '2>', \$stderr)
	  or die "lab.sh @args failed: $stderr";
	return $stdout;
}

sub lab_blackhole { lab_run('blackhole', $lab_dir, $_[0]); return; }
sub lab_restore { lab_run('restore', $lab_dir, $_[0]); return; }

sub lab_stats
{
	my %stats;
	for my $line (split /\n/, lab_run('stats', $lab_dir))
	{
		my ($path, $dir, $bytes) = split ' ', $line;
		next unless defined $bytes && $bytes =~ /^\d+$/;
		$stats{$path}{$dir} = $bytes;
	}
	return \%stats;
}

sub lab_info
{
	my $info = lab_run('info', $lab_dir);
	chomp $info;
	return $info;
}

sub lab_down
{
	lab_run('down', $lab_dir) if defined $lab_dir;
	return;
}

END
{
	# keep the test's exit status
	local $?;
	eval { lab_down(); } if $ENV{PG_MPTCP_IN_NETNS};
}

=pod

=item mptcp_sockets(PORT, LISTEN)

Lists the kernel's MPTCP sockets on local port PORT (listening ones if
LISTEN, established ones otherwise), as reported by "ss -M".  Returns the
number of lines.

=cut

sub mptcp_sockets
{
	my ($port, $listen) = @_;
	my ($stdout, $stderr);
	IPC::Run::run(
		[
			'ss', '-HnM', ($listen ? '-l' : ()),
			'sport', '=', ":$port"
		],
		'>', \$stdout,
		'2>', \$stderr) or die "ss -M failed: $stderr";
	my @lines = grep { /\S/ } split /\n/, $stdout;
	return scalar @lines;
}

=pod

=item mptcpinfo_start_log(NODE)

Start NODE (restart it if it runs) with mptcpinfo in
shared_preload_libraries, wait for mptcpinfo's startup check, and return
what that check logged, up to its LOG line: its process's lines, the log
line prefix stripped ("LOG:  text", "WARNING:  text", ...).

=cut

sub mptcpinfo_start_log
{
	my ($node) = @_;
	# the LOG line comes last, after the warnings
	my $done_re = qr/LOG:  MPTCP path manager (offers|cannot)/;
	my $offset = -s $node->logfile // 0;
	defined $node->{_pid} ? $node->restart : $node->start;
	$node->wait_for_log($done_re, $offset);
	my $log = slurp_file($node->logfile, $offset);
	# the prefix has "[pid]" (after the backend type from PostgreSQL 19 on)
	$log =~ /^.*?\[(\d+)\] .*$done_re/m
	  or die "no process id before mptcpinfo's LOG line";
	my $pid = $1;
	return join("\n",
		map { s/^.*?\[$pid\] .*?(LOG|WARNING|DETAIL|HINT):  /$1:  /r }
		grep { /\[$pid\] / } split /\n/, $log);
}

# The nft program: PG_TEST_NFT, else the first in PATH, /usr/sbin or /sbin;
# undef when there is none
sub find_nft
{
	my $nft = $ENV{PG_TEST_NFT};
	if (!defined $nft || $nft eq '')
	{
		($nft) = grep { -x $_ }
		  map { "$_/nft" } (split(/:/, $ENV{PATH} // ''), '/usr/sbin', '/sbin');
	}
	return defined $nft && -x $nft ? $nft : undef;
}

# $n plain TCP connections on loopback that are not PostgreSQL's (both
# ends: 2 sockets each); they last as long as the returned list
sub loopback_tcp_noise
{
	my ($n) = @_;
	my $listener = IO::Socket::IP->new(
		LocalHost => '127.0.0.1',
		LocalPort => 0,
		Listen => $n) or die "could not listen: $@";
	my @noise = ($listener);
	for (1 .. $n)
	{
		push @noise,
		  IO::Socket::IP->new(
			PeerHost => '127.0.0.1',
			PeerPort => $listener->sockport)
		  or die "could not connect: $@";
		push @noise, scalar($listener->accept) or die "could not accept: $!";
	}
	return @noise;
}

1;
