/*-------------------------------------------------------------------------
 *
 * mptcp_tcp.h
 *	  The kernel's TCP sockets that are MPTCP subflows, read through socket
 *	  diagnostics (sock_diag).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_tcp.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_TCP_H
#define MPTCP_TCP_H

#include "mptcp_diag.h"

/* The part of the kernel's struct tcp_info (include/uapi/linux/tcp.h) used */
typedef struct MptcpTcpInfo
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
} MptcpTcpInfo;

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
	MptcpTcpInfo info;
	size_t		info_len;
} MptcpSubflow;

/* the kernel's MPTCP_SUBFLOW_FLAG_BKUP_REM and _BKUP_LOC */
#define MPTCP_SUBFLOW_FLAG_BKUP_REM (1 << 4)
#define MPTCP_SUBFLOW_FLAG_BKUP_LOC (1 << 5)

/*
 * TCP ports that a dump of subflows keeps: a socket with one of the local
 * ports or one of the remote ports, but none of the remote ports "excluded":
 * those of the server's plain TCP clients, which have the server's port
 * too.  The kernel filters, so a dump walks past the host's other TCP
 * connections without describing them.
 */
#define MPTCP_DUMP_MAX_PORTS 32
#define MPTCP_DUMP_MAX_EXCLUDED 2048	/* (the filter's length must fit 16
										 * bits) */
typedef struct MptcpDumpPorts
{
	int			nlocal;
	int			nremote;
	int			nexcluded;
	uint16		local[MPTCP_DUMP_MAX_PORTS];
	uint16		remote[MPTCP_DUMP_MAX_PORTS];
	uint16	   *excluded;		/* palloc'd, nexcluded of them */
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
 * The TCP states a subflow is in: all but LISTEN (10), and TIME_WAIT (6)
 * and CLOSE (7), which carry no MPTCP ULP info.
 */
#define MPTCP_TCP_STATES_SUBFLOWS \
	(((1 << 12) - 1) & ~((1 << 10) | (1 << 6) | (1 << 7)))

/*
 * The TCP socket of one answer of the kernel to a request for a TCP socket
 * (SOCK_DIAG_BY_FAMILY), or NULL if it is none or is closing.
 */
extern MptcpSubflow *mptcp_diag_subflow_answer(const struct nlmsghdr *nlh);

/*
 * The TCP sockets of "diag" (read with mptcp_diag_read_subflows()) that the kernel
 * showed us as subflows of the connection with this token, as a List of
 * MptcpSubflow *; NIL if none.
 */
extern List *mptcp_diag_token_subflows(MptcpDiag *diag, uint32 token);

#endif							/* MPTCP_TCP_H */
