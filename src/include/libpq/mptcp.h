/*-------------------------------------------------------------------------
 *
 * mptcp.h
 *	  Multipath TCP (RFC 8684) support, shared by the server and libpq.
 *
 * Linux opens an MPTCP connection for a stream socket created with protocol
 * IPPROTO_MPTCP; everything else about the socket stays as for TCP.  When
 * the peer does not speak MPTCP, the connection silently falls back to
 * plain TCP on the same socket.
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 * src/include/libpq/mptcp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_MPTCP_H
#define PG_MPTCP_H

#if defined(HAVE_DECL_IPPROTO_MPTCP) && HAVE_DECL_IPPROTO_MPTCP && defined(__linux__)
#define USE_MPTCP 1
#endif

#ifdef USE_MPTCP
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/* Values of the Linux UAPI, for C libraries and headers that predate them */
#ifndef SOL_MPTCP
#define SOL_MPTCP 284
#endif
#ifndef MPTCP_INFO
#define MPTCP_INFO 1			/* Linux 5.16 */
#endif
#ifndef TCP_IS_MPTCP
#define TCP_IS_MPTCP 43			/* Linux 6.10 */
#endif
#endif							/* USE_MPTCP */

/*
 * pg_mptcp_errno_unavailable: does this socket(IPPROTO_MPTCP) errno mean
 * that the kernel cannot give us MPTCP (rather than a general failure)?
 * EINVAL: kernel before 5.6; EPROTONOSUPPORT: built without CONFIG_MPTCP;
 * ENOPROTOOPT: net.mptcp.enabled = 0; EACCES/EPERM: refused by a security
 * module or an eBPF program.
 */
#define pg_mptcp_errno_unavailable(e) \
	((e) == EINVAL || (e) == EPROTONOSUPPORT || (e) == ENOPROTOOPT || \
	 (e) == EACCES || (e) == EPERM)

/*
 * pg_mptcp_errno_option_refused: does this setsockopt() errno on an MPTCP
 * socket mean that the running kernel does not support the option there?
 * (Kernels grew support for TCP-level options on MPTCP sockets over time.)
 */
#define pg_mptcp_errno_option_refused(e) \
	((e) == EOPNOTSUPP || (e) == ENOPROTOOPT)

/*
 * pg_socket_is_mptcp: is this connected socket a Multipath TCP connection
 * right now?  *fell_back is set when it was opened with MPTCP but runs as
 * plain TCP, because the peer does not speak MPTCP or a middlebox removed
 * the MPTCP options (fell_back may be NULL).  A fallback can also happen
 * during the connection.
 */
static inline bool
pg_socket_is_mptcp(pgsocket sock, bool *fell_back)
{
#ifdef USE_MPTCP
	int			val;
	socklen_t	len = sizeof(val);
	char		info[256];
	bool		dummy;

	if (fell_back == NULL)
		fell_back = &dummy;
	*fell_back = false;
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &val, &len) < 0 ||
		val != IPPROTO_MPTCP)
		return false;

	/* Linux 6.10 and later say it directly. */
	len = sizeof(val);
	if (getsockopt(sock, SOL_TCP, TCP_IS_MPTCP, &val, &len) == 0)
	{
		*fell_back = (val == 0);
		return !*fell_back;
	}

	/*
	 * Before that, MPTCP_INFO (5.16) works only while MPTCP is in use; once
	 * the socket fell back, its options go to the plain TCP socket, where
	 * TCP_INFO works, which an older kernel refuses on an MPTCP socket.
	 */
	len = sizeof(info);
	if (getsockopt(sock, SOL_MPTCP, MPTCP_INFO, info, &len) == 0)
		return true;
	len = sizeof(info);
	*fell_back = (getsockopt(sock, SOL_TCP, TCP_INFO, info, &len) == 0);
	return !*fell_back;
#else
	if (fell_back)
		*fell_back = false;
	return false;
#endif
}

#ifndef FRONTEND
extern PGDLLIMPORT bool listen_mptcp;

extern pgsocket pq_listen_socket(int family);
extern bool pq_mptcp_option_refused(bool mptcp, const char *optname);
#endif

#endif							/* PG_MPTCP_H */
