/*-------------------------------------------------------------------------
 *
 * mptcp.c
 *	  Multipath TCP (MPTCP) listen sockets for the server.
 *
 * With listen_mptcp = on, the postmaster creates its TCP listen sockets with
 * protocol IPPROTO_MPTCP.  Such a listener also accepts plain TCP clients,
 * so turning it on changes nothing for them.  MPTCP is an optimization: if
 * the kernel cannot give it to us, we warn and listen with plain TCP,
 * and a socket option the kernel refuses on MPTCP sockets never fails a
 * connection.
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  src/backend/libpq/mptcp.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "lib/stringinfo.h"
#include "libpq/mptcp.h"
#include "utils/guc.h"

/* GUC variable */
bool		listen_mptcp = false;

#ifdef USE_MPTCP

/*
 * Postmaster state: the kernel has no MPTCP for IPv4 or IPv6 (found on the
 * first attempt, so that we warn once per family); options checked.
 */
static bool mptcp_unavailable_inet = false;
static bool mptcp_unavailable_inet6 = false;
static bool mptcp_options_checked = false;

/*
 * Report, once, the TCP options that the server sets on each client
 * connection (pq_init(); StreamConnection() before 17) with the server's
 * settings and that the running kernel
 * refuses on MPTCP sockets (support grew from Linux 5.17 on;
 * TCP_USER_TIMEOUT is still refused in 6.18).  An option whose setting is
 * 0 (the system default) is never set, so it is not named.  Connections
 * are accepted without the refused ones; saying so at startup avoids one
 * log line per connection.
 */
static void
report_refused_options(int family)
{
	const struct
	{
		int			level;
		int			optname;
		int			value;
		const char *name;
	}			opts[] =
	{
#ifdef TCP_NODELAY
		{IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY"},
#endif
		{SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"},
#ifdef TCP_KEEPIDLE
		{IPPROTO_TCP, TCP_KEEPIDLE, tcp_keepalives_idle, "TCP_KEEPIDLE"},
#endif
#ifdef TCP_KEEPINTVL
		{IPPROTO_TCP, TCP_KEEPINTVL, tcp_keepalives_interval, "TCP_KEEPINTVL"},
#endif
#ifdef TCP_KEEPCNT
		{IPPROTO_TCP, TCP_KEEPCNT, tcp_keepalives_count, "TCP_KEEPCNT"},
#endif
#ifdef TCP_USER_TIMEOUT
		{IPPROTO_TCP, TCP_USER_TIMEOUT, tcp_user_timeout, "TCP_USER_TIMEOUT"},
#endif
	};
	StringInfoData refused;
	bool		refused_user_timeout = false;
	bool		refused_other = false;
	pgsocket	fd;

	fd = socket(family, SOCK_STREAM, IPPROTO_MPTCP);
	if (fd == PGINVALID_SOCKET)
		return;

	initStringInfo(&refused);
	for (int i = 0; i < lengthof(opts); i++)
	{
		if (opts[i].value == 0)
			continue;			/* not set on connections */
		if (setsockopt(fd, opts[i].level, opts[i].optname,
					   &opts[i].value, sizeof(opts[i].value)) < 0 &&
			pg_mptcp_errno_option_refused(errno))
		{
			appendStringInfo(&refused, "%s%s",
							 refused.len > 0 ? ", " : "", opts[i].name);
			/* no kernel so far takes TCP_USER_TIMEOUT on an MPTCP socket */
			if (strcmp(opts[i].name, "TCP_USER_TIMEOUT") == 0)
				refused_user_timeout = true;
			else
				refused_other = true;
		}
	}
	closesocket(fd);

	if (refused.len > 0)
		ereport(WARNING,
				(errmsg("MPTCP connections will not use socket options %s",
						refused.data),
				 errdetail("The running kernel does not support these options on MPTCP sockets, so the corresponding settings have no effect on MPTCP connections.  Plain TCP connections are not affected."),
				 refused_other && refused_user_timeout ?
				 errhint("Linux 6.10 and later apply these options to MPTCP connections, except TCP_USER_TIMEOUT, which no kernel applies to them.") :
				 refused_other ?
				 errhint("Linux 6.10 and later apply these options to MPTCP connections.") :
				 errhint("No Linux kernel applies TCP_USER_TIMEOUT to MPTCP connections.")));
	pfree(refused.data);
}

/*
 * Say what failed and why; the server goes on with plain TCP.  When the
 * errno means that the kernel has no MPTCP for this address family, that
 * holds for the remaining addresses of the family too, and we say so once;
 * other failures (too many open files, a family the host does not have, a
 * security policy) concern this address only.
 */
static void
report_mptcp_unavailable(int save_errno, int family, const char *addrDesc)
{
	const char *hint;

	switch (save_errno)
	{
		case ENOPROTOOPT:
			hint = _("Enable MPTCP in the kernel with \"sysctl -w net.mptcp.enabled=1\".");
			break;
		case EPROTONOSUPPORT:
			hint = _("Use a Linux kernel built with CONFIG_MPTCP.");
			break;
		case EINVAL:
			hint = _("Use Linux 5.6 or later.");
			break;
		case EACCES:
		case EPERM:
			hint = _("Check whether a security policy, such as SELinux or an eBPF program, refuses MPTCP sockets.");
			break;
		default:
			hint = NULL;
			break;
	}

	errno = save_errno;
	ereport(WARNING,
			(errmsg("could not create MPTCP socket for address \"%s\": %m",
					addrDesc),
			 !pg_mptcp_errno_unavailable(save_errno) ?
			 errdetail("The server listens on this address with plain TCP.") :
			 family == AF_INET6 ?
			 errdetail("The server listens on this and the remaining IPv6 addresses with plain TCP.") :
			 errdetail("The server listens on this and the remaining IPv4 addresses with plain TCP."),
			 hint ? errhint("%s", hint) : 0));
}
#endif							/* USE_MPTCP */

/*
 * pq_listen_socket: create a stream socket for a listen address of the given
 * family: MPTCP for TCP addresses when listen_mptcp is on and the kernel
 * allows it, else as before.  addrDesc names the address in messages.  Sets
 * errno on failure.
 */
pgsocket
pq_listen_socket(int family, const char *addrDesc)
{
#ifdef USE_MPTCP
	bool	   *unavailable = family == AF_INET ? &mptcp_unavailable_inet :
		family == AF_INET6 ? &mptcp_unavailable_inet6 : NULL;

	if (listen_mptcp && unavailable != NULL && !*unavailable)
	{
		pgsocket	fd = socket(family, SOCK_STREAM, IPPROTO_MPTCP);
		int			save_errno;

		if (fd != PGINVALID_SOCKET)
		{
			if (!mptcp_options_checked)
			{
				mptcp_options_checked = true;
				report_refused_options(family);
			}
			return fd;
		}

		/* Whatever the reason, never refuse to listen because of MPTCP. */
		save_errno = errno;
		if (pg_mptcp_errno_unavailable(save_errno))
			*unavailable = true;
		report_mptcp_unavailable(save_errno, family, addrDesc);
	}
#endif
	return socket(family, SOCK_STREAM, 0);
}

/*
 * pq_mptcp_option_refused: after a failed setsockopt() or getsockopt() (named
 * by syscall) on a client socket, tell whether the failure is only the
 * kernel refusing that option on an MPTCP socket.  The caller then goes on
 * without the option: the postmaster already said once which options MPTCP
 * connections run without.
 */
bool
pq_mptcp_option_refused(bool mptcp, const char *syscall, const char *optname)
{
	int			save_errno = errno;
	bool		refused = mptcp && pg_mptcp_errno_option_refused(save_errno);

	if (refused)
		ereport(DEBUG1,
				(errmsg_internal("%s(%s) not supported on MPTCP socket: %m",
								 syscall, optname)));
	errno = save_errno;
	return refused;
}
