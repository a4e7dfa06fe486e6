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

/*
 * USE_MPTCP is defined by configure and meson on Linux, whatever the C
 * library declares.
 */
#ifdef USE_MPTCP
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

/* Values of the Linux UAPI, for C libraries and headers that predate them */
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262		/* glibc 2.32 */
#endif
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
 * that the kernel has no MPTCP for the address family, so that every later
 * attempt would fail the same way?  EINVAL: kernel before 5.6;
 * EPROTONOSUPPORT: built without CONFIG_MPTCP (or without MPTCP for IPv6);
 * ENOPROTOOPT: net.mptcp.enabled = 0.  Any other errno (EMFILE,
 * EAFNOSUPPORT, a security module's EACCES, ...) concerns one attempt only.
 */
#define pg_mptcp_errno_unavailable(e) \
	((e) == EINVAL || (e) == EPROTONOSUPPORT || (e) == ENOPROTOOPT)

/*
 * pg_mptcp_errno_option_refused: does this setsockopt() errno on an MPTCP
 * socket mean that the running kernel does not support the option there?
 * (Kernels grew support for TCP-level options on MPTCP sockets over time.)
 */
#define pg_mptcp_errno_option_refused(e) \
	((e) == EOPNOTSUPP || (e) == ENOPROTOOPT)

/* in common/mptcp.c */
extern bool pg_socket_is_mptcp(pgsocket sock);

#ifndef FRONTEND
extern PGDLLIMPORT bool listen_mptcp;

extern pgsocket pq_listen_socket(int family, const char *addrDesc);
extern bool pq_mptcp_option_refused(bool mptcp, const char *syscall,
									const char *optname);
#endif

#endif							/* PG_MPTCP_H */
