/*-------------------------------------------------------------------------
 *
 * mptcp.c
 *	  Multipath TCP (MPTCP) support shared by the server and libpq
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 *
 * IDENTIFICATION
 *	  src/common/mptcp.c
 *
 *-------------------------------------------------------------------------
 */

#ifndef FRONTEND
#include "postgres.h"
#else
#include "postgres_fe.h"
#endif

#include "libpq/mptcp.h"

/*
 * pg_socket_is_mptcp: is this connected socket a Multipath TCP connection
 * right now?  False for a socket that was opened with MPTCP but runs as
 * plain TCP, because the peer does not speak MPTCP or a middlebox removed
 * the MPTCP options.  A fallback can also happen during the connection.
 */
bool
pg_socket_is_mptcp(pgsocket sock)
{
#ifdef USE_MPTCP
	int			val;
	socklen_t	len = sizeof(val);
	char		info[256];

	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &val, &len) < 0 ||
		val != IPPROTO_MPTCP)
		return false;

	/* Linux 6.10 and later say it directly. */
	len = sizeof(val);
	if (getsockopt(sock, SOL_TCP, TCP_IS_MPTCP, &val, &len) == 0)
		return val != 0;

	/*
	 * Before that, MPTCP_INFO (5.16) works only while MPTCP is in use; once
	 * the socket fell back, its options go to the plain TCP socket, where
	 * TCP_INFO works, which an older kernel refuses on an MPTCP socket.
	 */
	len = sizeof(info);
	if (getsockopt(sock, SOL_MPTCP, MPTCP_INFO, info, &len) == 0)
		return true;
	len = sizeof(info);
	return getsockopt(sock, SOL_TCP, TCP_INFO, info, &len) != 0;
#else
	return false;
#endif
}
