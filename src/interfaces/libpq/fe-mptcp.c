/*-------------------------------------------------------------------------
 *
 * fe-mptcp.c
 *	  Multipath TCP (MPTCP) client connections
 *
 * With mptcp=prefer, TCP connection attempts open their socket with
 * IPPROTO_MPTCP when the local kernel allows it; a server that does not
 * speak MPTCP gives a plain TCP connection on the same socket.  With
 * mptcp=require, an attempt whose connection is not actually MPTCP fails.
 * Either way a socket option that the kernel refuses on MPTCP sockets never
 * fails a connection.
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  src/interfaces/libpq/fe-mptcp.c
 *
 *-------------------------------------------------------------------------
 */

#include "postgres_fe.h"

#include <sys/socket.h>

#include "libpq-fe.h"
#include "libpq-int.h"
#include "libpq/mptcp.h"

/*
 * Parse the "mptcp" connection option into conn->mptcp_mode.  Returns false
 * with an error message in conn if the value is invalid.
 */
bool
pqParseMptcpOption(PGconn *conn)
{
	const char *val = conn->mptcp;

	if (val == NULL || strcmp(val, "disable") == 0 || strcmp(val, "0") == 0)
		conn->mptcp_mode = MPTCP_MODE_DISABLE;
	else if (strcmp(val, "prefer") == 0 || strcmp(val, "1") == 0)
		conn->mptcp_mode = MPTCP_MODE_PREFER;
	else if (strcmp(val, "require") == 0)
		conn->mptcp_mode = MPTCP_MODE_REQUIRE;
	else
	{
		conn->status = CONNECTION_BAD;
		libpq_append_conn_error(conn, "invalid %s value: \"%s\"", "mptcp", val);
		return false;
	}

#ifndef USE_MPTCP
	if (conn->mptcp_mode == MPTCP_MODE_REQUIRE)
	{
		conn->status = CONNECTION_BAD;
		libpq_append_conn_error(conn, "%s value \"%s\" invalid when MPTCP support is not compiled in",
								"mptcp", val);
		return false;
	}
#endif

	return true;
}

/*
 * Create the socket for a connection attempt to an address of the given
 * family, with MPTCP if the "mptcp" option asks for it and the kernel
 * allows it.  If MPTCP is required but unavailable, sets *mptcp_unavailable
 * and returns PGINVALID_SOCKET with errno set; otherwise as socket(2).
 */
pgsocket
pqMptcpSocket(PGconn *conn, int family, int sock_type, bool *mptcp_unavailable)
{
	conn->mptcp_socket = false;
	*mptcp_unavailable = false;
#ifdef USE_MPTCP
	if (conn->mptcp_mode != MPTCP_MODE_DISABLE &&
		(family == AF_INET || family == AF_INET6))
	{
		pgsocket	sock = socket(family, sock_type, IPPROTO_MPTCP);

		if (sock != PGINVALID_SOCKET)
		{
			conn->mptcp_socket = true;
			return sock;
		}
		if (conn->mptcp_mode == MPTCP_MODE_REQUIRE)
		{
			*mptcp_unavailable = true;
			return PGINVALID_SOCKET;
		}
		/* prefer: plain TCP, silently */
	}
#endif
	return socket(family, sock_type, 0);
}

/*
 * After connect() succeeded: with mptcp=require, check that the connection
 * really is MPTCP.  Returns false with an error message in conn if not.
 */
bool
pqMptcpCheckRequired(PGconn *conn)
{
	if (conn->mptcp_mode != MPTCP_MODE_REQUIRE || !conn->mptcp_socket)
		return true;
	if (pg_socket_is_mptcp(conn->sock))
		return true;
	libpq_append_conn_error(conn, "MPTCP was required, but the connection fell back to plain TCP: the server or the network path does not support MPTCP");
	return false;
}

/*
 * After a failed setsockopt() on the connection's socket: is this only the
 * kernel refusing a TCP option on an MPTCP socket?  Then the caller goes on
 * without it.  (Kernels gained TCP_NODELAY, the keepalive settings and
 * others on MPTCP sockets over time.)
 */
bool
pqMptcpOptionRefused(PGconn *conn)
{
	return conn->mptcp_socket && pg_mptcp_errno_option_refused(SOCK_ERRNO);
}

/*
 * PQmptcpInUse: does the connection use Multipath TCP right now?  False for
 * Unix-domain sockets, plain TCP, and MPTCP connections that fell back to
 * plain TCP.
 */
int
PQmptcpInUse(const PGconn *conn)
{
	if (!conn || conn->sock == PGINVALID_SOCKET || !conn->mptcp_socket)
		return 0;
	return pg_socket_is_mptcp(conn->sock) ? 1 : 0;
}
