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
#include "utils/palloc.h"

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

/* The part of the kernel's struct tcp_info (include/uapi/linux/tcp.h) used */
typedef struct TcpInfo
{
	uint8		state;
	uint8		ca_state;
	uint8		retransmits;
	uint8		probes;
	uint8		backoff;
	uint8		options;
	uint8		wscale;
	uint8		flags;
	uint32		rto;
	uint32		ato;
	uint32		snd_mss;
	uint32		rcv_mss;
	uint32		unacked;
	uint32		sacked;
	uint32		lost;
	uint32		retrans;
	uint32		fackets;
	uint32		last_data_sent;
	uint32		last_ack_sent;
	uint32		last_data_recv;
	uint32		last_ack_recv;
	uint32		pmtu;
	uint32		rcv_ssthresh;
	uint32		rtt;			/* microseconds */
	uint32		rttvar;
	uint32		snd_ssthresh;
	uint32		snd_cwnd;
	uint32		advmss;
	uint32		reordering;
	uint32		rcv_rtt;
	uint32		rcv_space;
	uint32		total_retrans;
	uint64		pacing_rate;
	uint64		max_pacing_rate;
	uint64		bytes_acked;	/* Linux 4.1 */
	uint64		bytes_received;
	uint32		segs_out;
	uint32		segs_in;
	uint32		notsent_bytes;
	uint32		min_rtt;
	uint32		data_segs_in;
	uint32		data_segs_out;
	uint64		delivery_rate;
	uint64		busy_time;
	uint64		rwnd_limited;
	uint64		sndbuf_limited;
	uint32		delivered;
	uint32		delivered_ce;
	uint64		bytes_sent;		/* Linux 4.19 */
	uint64		bytes_retrans;
} TcpInfo;

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

/*
 * A TCP socket: an MPTCP subflow when the kernel showed us its ULP info
 * (token not 0), else any TCP socket, which may still be a subflow.
 */
typedef struct MptcpSubflow
{
	MptcpSockEnds ends;
	uint32		token;			/* its connection's (MptcpInfo.token) */
	bool		flags_known;	/* the kernel showed us its ULP info */
	uint32		flags;			/* MPTCP_SUBFLOW_FLAG_* of the ULP info */
	uint8		state;
	char		congestion_control[16]; /* "" if not reported */
	TcpInfo		info;
	size_t		info_len;
} MptcpSubflow;

/* the kernel's MPTCP_SUBFLOW_FLAG_BKUP_REM and _BKUP_LOC */
#define MPTCP_SUBFLOW_FLAG_BKUP_REM (1 << 4)
#define MPTCP_SUBFLOW_FLAG_BKUP_LOC (1 << 5)

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
	int			fd;				/* the scan's netlink socket, or -1 */
	MemoryContextCallback close_socket; /* closes it with diag's memory */
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
 * answer gets a WARNING (for connections and subflows) and gives nothing.
 */
extern MptcpDiag *mptcp_diag_read(int what);

/*
 * Close the scan's netlink socket, which the calls below use; else it is
 * closed with the memory context that was current at mptcp_diag_read().
 */
extern void mptcp_diag_close(MptcpDiag *diag);

/*
 * TCP ports that a dump of subflows keeps: a socket with one of the local
 * ports or one of the remote ports.  The kernel filters, so a dump walks
 * past the host's other TCP connections without describing them.
 */
#define MPTCP_DUMP_MAX_PORTS 32
typedef struct MptcpDumpPorts
{
	int			nlocal;
	int			nremote;
	uint16		local[MPTCP_DUMP_MAX_PORTS];
	uint16		remote[MPTCP_DUMP_MAX_PORTS];
} MptcpDumpPorts;

/*
 * Add a port to ports (local or remote) unless it is there; false if
 * ports is full.
 */
extern bool mptcp_dump_ports_add(MptcpDumpPorts *ports, bool local, uint16 port);

/*
 * Add the MPTCP subflows of the namespace to diag, from a dump of its TCP
 * sockets, to find them by token below: only those the kernel shows as
 * subflows (its ULP info), so memory follows the subflows, not the host's
 * TCP connections.  With ports (not NULL), only the sockets with one of
 * those ports; a later call replaces what an earlier one found.  A kernel
 * that cannot answer gets a WARNING.
 */
extern void mptcp_diag_read_subflows(MptcpDiag *diag, const MptcpDumpPorts *ports);

/*
 * The scan's netlink socket (-1 if there is none), lent to one caller that
 * gives it back with mptcp_diag_return_socket() once its requests are
 * answered.  Meanwhile diag has none: behind an ERROR, the netlink loop
 * has closed it, and the end of the scan must not close it again.
 */
extern int	mptcp_diag_borrow_socket(MptcpDiag *diag);
extern void mptcp_diag_return_socket(MptcpDiag *diag, int fd);

/*
 * The TCP states a subflow is in: all but LISTEN (10), and TIME_WAIT (6)
 * and CLOSE (7), which carry no MPTCP ULP info.
 */
#define MPTCP_TCP_STATES_SUBFLOWS \
	(((1 << 12) - 1) & ~((1 << 10) | (1 << 6) | (1 << 7)))

/*
 * The TCP socket of one answer of the kernel to a request for a TCP socket
 * (SOCK_DIAG_BY_FAMILY), or NULL if it is none or is closing.
 */
struct nlmsghdr;
extern MptcpSubflow *mptcp_diag_subflow_answer(const struct nlmsghdr *nlh);

/*
 * The TCP sockets of "diag" (read with mptcp_diag_read_subflows()) that the kernel
 * showed us as subflows of the connection with this token, as a List of
 * MptcpSubflow *; NIL if none.
 */
extern List *mptcp_diag_token_subflows(MptcpDiag *diag, uint32 token);

/*
 * How many subflows connection c has, the initial one included, and
 * whether the initial one is still among them.  From Linux 6.8 the kernel
 * says (subflows_total); before, the initial subflow is taken to be there,
 * which is wrong once it has closed.  -1 if the kernel does not say.
 */
extern int	mptcp_conn_subflows(const MptcpConn *c, bool *has_initial);

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
