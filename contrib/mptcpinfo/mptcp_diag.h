/*-------------------------------------------------------------------------
 *
 * mptcp_diag.h
 *	  The kernel's MPTCP sockets, read through socket diagnostics
 *	  (sock_diag).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_diag.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_DIAG_H
#define MPTCP_DIAG_H

#include "nodes/pg_list.h"

/*
 * The kernel's struct mptcp_info (include/uapi/linux/mptcp.h), spelled out
 * here because the installed headers may predate the newer fields.  The
 * kernel only ever appends fields.
 */
typedef struct MptcpInfo
{
	uint8		subflows;		/* extra subflows, the initial one excluded */
	uint8		add_addr_signal;
	uint8		add_addr_accepted;
	uint8		subflows_max;
	uint8		add_addr_signal_max;
	uint8		add_addr_accepted_max;
	uint32		flags;
	uint32		token;
	uint64		write_seq;
	uint64		snd_una;
	uint64		rcv_nxt;
	uint8		local_addr_used;	/* Linux 5.12 */
	uint8		local_addr_max;
	uint8		csum_enabled;	/* Linux 5.14 */
	uint32		retransmits;	/* Linux 6.5 */
	uint64		bytes_retrans;
	uint64		bytes_sent;
	uint64		bytes_received;
	uint64		bytes_acked;
	uint8		subflows_total; /* Linux 6.8 */
	uint8		endp_laminar_max;	/* Linux 6.18 */
	uint8		endp_fullmesh_max;
	uint8		reserved;
	uint32		last_data_sent; /* Linux 6.10, milliseconds */
	uint32		last_data_recv;
	uint32		last_ack_recv;
} MptcpInfo;

#define MPTCP_INFO_FLAG_FALLBACK 0x1

/* the kernel's TCP_ESTABLISHED (include/net/tcp_states.h) */
#define MPTCP_TCP_ESTABLISHED 1

/* does a kernel answer of "len" bytes contain field "f" of struct "s"? */
#define HAS_FIELD(s, f, len) \
	(offsetof(s, f) + sizeof(((s *) 0)->f) <= (len))

/* A socket's endpoints, IPv4 addresses stored as IPv4-mapped IPv6 */
typedef struct MptcpSockEnds
{
	uint8		local[16];
	uint8		remote[16];
	uint16		local_port;
	uint16		remote_port;
	int			family;			/* AF_INET or AF_INET6, as reported */
} MptcpSockEnds;

/* an MPTCP connection (an IPPROTO_MPTCP socket, not listening) */
typedef struct MptcpConn
{
	MptcpSockEnds ends;
	uint64		inode;			/* of the socket (0: an orphan, closing) */
	uint32		uid;			/* of the socket's owner */
	int			pid;			/* the server process holding it, if the
								 * caller found it; else 0 */
	uint8		state;			/* MPTCP_TCP_ESTABLISHED, closing, ... */
	MptcpInfo	info;
	size_t		info_len;		/* how much of info the kernel filled */
} MptcpConn;

/* a listening TCP socket */
typedef struct MptcpListener
{
	MptcpSockEnds ends;
	bool		mptcp;			/* the subflow listener of an MPTCP socket */
	bool		v6only;
} MptcpListener;

typedef struct MptcpDiag
{
	List	   *conns;			/* MptcpConn * */
	List	   *subflows;		/* MptcpSubflow *: subflows of a dump */
	int			tcp_dumped;		/* TCP sockets the dump went through */
	List	   *listeners;		/* MptcpListener * */
	bool		conns_read;		/* the kernel answered for connections */
	bool		listeners_read; /* ... and for MPTCP listeners */
	struct HTAB *by_token;		/* subflows known to be subflows, by token */
	struct MptcpNetlink *sock;	/* the scan's netlink socket, or NULL */
} MptcpDiag;

/* what mptcp_diag_read() is to read */
#define MPTCP_DIAG_CONNS_INET	0x1 /* the IPv4 connections */
#define MPTCP_DIAG_CONNS_INET6	0x2 /* the IPv6 connections */
#define MPTCP_DIAG_CONNS		(MPTCP_DIAG_CONNS_INET | MPTCP_DIAG_CONNS_INET6)
#define MPTCP_DIAG_LISTENERS	0x4 /* listening MPTCP sockets (Linux 5.19) */
/* the connections of an address family (AF_INET, AF_INET6; else none) */
#define MPTCP_DIAG_CONNS_OF(family) \
	((family) == AF_INET ? MPTCP_DIAG_CONNS_INET : \
	 (family) == AF_INET6 ? MPTCP_DIAG_CONNS_INET6 : 0)

/*
 * The sockets of the server's network namespace that "what" asks for.  A
 * kernel or build without MPTCP simply has none.  A kernel that cannot
 * answer gives nothing, and a WARNING (mptcp_diag_failure_level()).
 */
extern MptcpDiag *mptcp_diag_read(int what);

/*
 * Close the scan's netlink socket, which the later requests of the scan
 * use; else it is closed with the memory context that was current at
 * mptcp_diag_read().
 */
extern void mptcp_diag_close(MptcpDiag *diag);

/*
 * The level at which to report that socket diagnostics failed: WARNING the
 * first time in a session, DEBUG1 after that, so that a monitoring loop
 * does not fill the log with the same warning.
 */
extern int	mptcp_diag_failure_level(void);

/*
 * What the kernel's answer for one socket says (an inet_diag message of
 * SOCK_DIAG_BY_FAMILY); its attributes point into the message.
 */
typedef struct MptcpDiagAnswer
{
	MptcpSockEnds ends;
	uint8		state;
	uint64		inode;
	uint32		uid;
	const void *info;			/* INET_DIAG_INFO, or NULL */
	size_t		info_len;
	const char *cong;			/* INET_DIAG_CONG, not terminated, or NULL */
	int			cong_len;
	const void *ulp;			/* INET_DIAG_ULP_INFO's attributes, or NULL */
	int			ulp_len;
	bool		v6only;			/* INET_DIAG_SKV6ONLY */
} MptcpDiagAnswer;

/* false if nlh is not such an answer */
struct nlmsghdr;
extern bool mptcp_diag_answer(const struct nlmsghdr *nlh,
							  MptcpDiagAnswer *answer);

/*
 * Dump the sockets of a family in the given TCP states (1 << state each),
 * with the extensions "ext" (1 << (INET_DIAG_* - 1) each) and, if attr_len
 * is not 0, the request attribute attr_type (the protocol, a filter).  cb
 * and forget are called as mptcp_netlink_dump() says.  Returns false with
 * errno set if the kernel cannot answer.
 */
extern bool mptcp_diag_dump(int fd, int family, uint32 states, int ext,
							int attr_type, const void *attr, int attr_len,
							void (*cb) (const struct nlmsghdr *nlh, void *arg),
							void (*forget) (void *arg), void *arg);

/*
 * How many subflows connection c has, the initial one included.  From
 * Linux 6.8 the kernel says (subflows_total); before, the initial subflow
 * is taken to be there, which is wrong once it has closed.  -1 if the
 * kernel does not say.
 */
extern int	mptcp_conn_subflows(const MptcpConn *c);

/* an address of the given family as IPv6, IPv4 ones IPv4-mapped */
extern void mptcp_addr_to_mapped(int family, const void *addr, uint8 *out);

/*
 * An IPv4 or IPv6 socket address as an address as above, its port and (if
 * family is not NULL) its family; false for any other kind.
 */
struct sockaddr_storage;
extern bool mptcp_sockaddr_to_mapped(const struct sockaddr_storage *ss,
									 uint8 *addr, uint16 *port, int *family);

#endif							/* MPTCP_DIAG_H */
