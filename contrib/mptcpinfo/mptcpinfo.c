/*-------------------------------------------------------------------------
 *
 * mptcpinfo.c
 *	  Multipath TCP (MPTCP) figures of the server's client connections.
 *
 * The figures come from the kernel's socket diagnostics (sock_diag, the
 * NETLINK_SOCK_DIAG interface that "ss -M" uses): one dump of the MPTCP
 * sockets gives each connection's struct mptcp_info, one dump of the TCP
 * sockets gives each subflow's struct tcp_info and, in its MPTCP ULP info,
 * the token of the connection it belongs to.  Connections are matched to
 * backends by the client's address and port, as in pg_stat_activity.
 *
 * The walreceiver of a standby is a client, not a server: its connection
 * to the upstream server is found by the inode of its socket, which
 * /proc/PID/fd names (see mptcp_proc.c).
 *
 * The path manager's endpoints (mptcp_pm.c, generic netlink), the
 * namespace's MPTCP sysctls and counters (mptcp_proc.c, procfs) explain
 * what the connections do; pg_mptcp_endpoints also asks sock_diag for the
 * server's listening sockets to tell whether joins to an endpoint can
 * succeed.
 *
 * Reading the kernel's tables this way costs the querying backend a few
 * netlink round trips and costs the other backends nothing: they are not
 * signalled, and no state is kept in shared memory.  (Asking each backend
 * to run getsockopt(MPTCP_INFO) on its own socket would interrupt every
 * backend for every query and still not be more current.)  It needs no
 * privilege: the kernel answers for the network namespace of the server.
 *
 * struct mptcp_info and struct tcp_info grow with kernel versions; a field
 * is only reported when the kernel's answer is long enough to contain it,
 * else it is NULL.
 *
 * Copyright (c) 2025, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcpinfo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <net/if.h>

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "mptcp_pm.h"
#include "mptcp_proc.h"
#include "postmaster/postmaster.h"
#include "replication/walreceiver.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/inet.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#ifdef USE_MPTCP
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#define MPTCP_IN_BUILD true
#else
/* A build without MPTCP (no IPPROTO_MPTCP) has nothing to show: no rows. */
#define MPTCP_IN_BUILD false
#endif

PG_MODULE_MAGIC_EXT(
					.name = "mptcpinfo",
					.version = PG_VERSION
);

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_1);
PG_FUNCTION_INFO_V1(pg_mptcp_get_endpoints);
PG_FUNCTION_INFO_V1(pg_mptcp_get_settings);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_counters);

#define HAS_PGSTAT_PERMISSIONS(role) \
	(has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), role))

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
typedef struct SockEnds
{
	uint8		local[16];
	uint8		remote[16];
	uint16		local_port;
	uint16		remote_port;
	int			family;			/* AF_INET or AF_INET6, as reported */
} SockEnds;

typedef struct MptcpConn
{
	SockEnds	ends;
	uint64		inode;			/* of the socket, to find a walreceiver's */
	int			walrcv_pid;		/* the walreceiver that holds it, or 0 */
	MptcpInfo	info;
	size_t		info_len;		/* how much of info the kernel filled */
} MptcpConn;

typedef struct Subflow
{
	SockEnds	ends;
	uint32		token;
	uint32		flags;			/* MPTCP_SUBFLOW_FLAG_* of the ULP info */
	uint8		state;
	TcpInfo		info;
	size_t		info_len;
} Subflow;

/* a listening TCP socket */
typedef struct MptcpListener
{
	SockEnds	ends;
	bool		mptcp;			/* the subflow listener of an MPTCP socket */
	bool		v6only;
} MptcpListener;

typedef struct DiagResult
{
	List	   *conns;			/* MptcpConn * */
	List	   *subflows;		/* Subflow * */
	List	   *listeners;		/* MptcpListener * */
} DiagResult;

/* what read_kernel() is to read */
#define READ_CONNS		0x1
#define READ_SUBFLOWS	0x2
#define READ_LISTENERS	0x4

#define NUM_MPTCP_COLS 23
#define NUM_SUBFLOW_COLS_V1_0 16
#define NUM_SUBFLOW_COLS 17
#define NUM_ENDPOINT_COLS 9
#define NUM_SETTING_COLS 3
#define NUM_COUNTER_COLS 2

/* a walreceiver's sockets: it has its connection and a few others */
#define MAX_WALRCV_SOCKETS 64

/* the kernel's MPTCP_SUBFLOW_FLAG_BKUP_REM and _BKUP_LOC */
#define SUBFLOW_FLAG_BKUP_REM (1 << 4)
#define SUBFLOW_FLAG_BKUP_LOC (1 << 5)

static void
addr_to_mapped(int family, const void *addr, uint8 *out)
{
	if (family == AF_INET)
	{
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, addr, 4);
	}
	else
		memcpy(out, addr, 16);
}

/* the client address of a backend, in the form of SockEnds.remote */
static bool
backend_client(PgBackendStatus *beentry, uint8 *addr, uint16 *port)
{
	const struct sockaddr_storage *ss = &beentry->st_clientaddr.addr;

	if (ss->ss_family == AF_INET)
	{
		const struct sockaddr_in *sin = (const struct sockaddr_in *) ss;

		addr_to_mapped(AF_INET, &sin->sin_addr, addr);
		*port = ntohs(sin->sin_port);
		return true;
	}
	if (ss->ss_family == AF_INET6)
	{
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) ss;

		addr_to_mapped(AF_INET6, &sin6->sin6_addr, addr);
		*port = ntohs(sin6->sin6_port);
		return true;
	}
	return false;				/* Unix-domain socket, or no client */
}

static Datum
inet_datum(int family, const uint8 *mapped)
{
	inet	   *res = palloc0(sizeof(inet));
	static const uint8 v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (family == AF_INET || memcmp(mapped, v4prefix, 12) == 0)
	{
		ip_family(res) = PGSQL_AF_INET;
		ip_bits(res) = 32;
		memcpy(ip_addr(res), mapped + 12, 4);
	}
	else
	{
		ip_family(res) = PGSQL_AF_INET6;
		ip_bits(res) = 128;
		memcpy(ip_addr(res), mapped, 16);
	}
	SET_INET_VARSIZE(res);
	return InetPGetDatum(res);
}

static Datum
uint64_numeric(uint64 v)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), UINT64_FORMAT, v);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

#ifdef USE_MPTCP

#ifndef INET_DIAG_REQ_PROTOCOL
#define INET_DIAG_REQ_PROTOCOL 3	/* Linux 5.7 */
#endif
#define ULP_INFO_NAME 1			/* INET_ULP_INFO_NAME */
#define ULP_INFO_MPTCP 3		/* INET_ULP_INFO_MPTCP */
#define SUBFLOW_ATTR_TOKEN_LOC 2	/* MPTCP_SUBFLOW_ATTR_TOKEN_LOC */
#define SUBFLOW_ATTR_FLAGS 8	/* MPTCP_SUBFLOW_ATTR_FLAGS */
#ifndef INET_DIAG_SKV6ONLY
#define INET_DIAG_SKV6ONLY 11
#endif

#define TCP_STATE_LISTEN 10
#define TCP_STATES_BUT_LISTEN (((1 << 12) - 1) & ~(1 << TCP_STATE_LISTEN))
#define TCP_STATES_LISTEN (1 << TCP_STATE_LISTEN)

static void
fill_ends(const struct inet_diag_msg *msg, SockEnds *ends)
{
	ends->family = msg->idiag_family;
	addr_to_mapped(msg->idiag_family, msg->id.idiag_src, ends->local);
	addr_to_mapped(msg->idiag_family, msg->id.idiag_dst, ends->remote);
	ends->local_port = ntohs(msg->id.idiag_sport);
	ends->remote_port = ntohs(msg->id.idiag_dport);
}

/*
 * The MPTCP ULP info of a TCP socket: whether it is an MPTCP subflow (or
 * subflow listener), and its connection's token (0 for a listener) and
 * subflow flags.
 */
static bool
parse_ulp(struct rtattr *ulp, uint32 *token, uint32 *flags)
{
	struct rtattr *a;
	int			len = RTA_PAYLOAD(ulp);
	bool		is_mptcp = false;

	for (a = RTA_DATA(ulp); RTA_OK(a, len); a = RTA_NEXT(a, len))
	{
		if ((a->rta_type & NLA_TYPE_MASK) == ULP_INFO_NAME)
			is_mptcp = (strncmp(RTA_DATA(a), "mptcp", RTA_PAYLOAD(a)) == 0);
		else if ((a->rta_type & NLA_TYPE_MASK) == ULP_INFO_MPTCP && is_mptcp)
		{
			struct rtattr *s;
			int			slen = RTA_PAYLOAD(a);

			for (s = RTA_DATA(a); RTA_OK(s, slen); s = RTA_NEXT(s, slen))
			{
				if (RTA_PAYLOAD(s) < sizeof(uint32))
					continue;
				if ((s->rta_type & NLA_TYPE_MASK) == SUBFLOW_ATTR_TOKEN_LOC)
					*token = *(uint32 *) RTA_DATA(s);
				else if ((s->rta_type & NLA_TYPE_MASK) == SUBFLOW_ATTR_FLAGS)
					*flags = *(uint32 *) RTA_DATA(s);
			}
		}
	}
	return is_mptcp;
}

static void
add_socket(DiagResult *res, int protocol, const struct inet_diag_msg *msg,
		   int attrlen)
{
	struct rtattr *a;
	const void *info = NULL;
	size_t		info_len = 0;
	uint32		token = 0;
	uint32		flags = 0;
	bool		is_mptcp = false;
	bool		v6only = false;

	for (a = (struct rtattr *) (msg + 1); RTA_OK(a, attrlen); a = RTA_NEXT(a, attrlen))
	{
		if ((a->rta_type & NLA_TYPE_MASK) == INET_DIAG_INFO)
		{
			info = RTA_DATA(a);
			info_len = RTA_PAYLOAD(a);
		}
		else if ((a->rta_type & NLA_TYPE_MASK) == INET_DIAG_ULP_INFO)
			is_mptcp = parse_ulp(a, &token, &flags);
		else if ((a->rta_type & NLA_TYPE_MASK) == INET_DIAG_SKV6ONLY &&
				 RTA_PAYLOAD(a) >= 1)
			v6only = *(uint8 *) RTA_DATA(a) != 0;
	}

	if (msg->idiag_state == TCP_STATE_LISTEN)
	{
		MptcpListener *l = palloc0(sizeof(MptcpListener));

		fill_ends(msg, &l->ends);
		l->mptcp = is_mptcp;
		l->v6only = v6only;
		res->listeners = lappend(res->listeners, l);
	}
	else if (protocol == IPPROTO_MPTCP)
	{
		MptcpConn  *c = palloc0(sizeof(MptcpConn));

		fill_ends(msg, &c->ends);
		c->inode = msg->idiag_inode;
		c->info_len = Min(info_len, sizeof(MptcpInfo));
		if (info)
			memcpy(&c->info, info, c->info_len);
		res->conns = lappend(res->conns, c);
	}
	else if (token != 0)
	{
		Subflow    *s = palloc0(sizeof(Subflow));

		fill_ends(msg, &s->ends);
		s->token = token;
		s->flags = flags;
		s->state = msg->idiag_state;
		s->info_len = Min(info_len, sizeof(TcpInfo));
		if (info)
			memcpy(&s->info, info, s->info_len);
		res->subflows = lappend(res->subflows, s);
	}
}

/*
 * Dump the kernel's sockets of one family and protocol in the given TCP
 * states into res.  Returns false with errno set if the kernel cannot
 * answer.
 */
static bool
sock_diag_dump(DiagResult *res, int family, int protocol, uint32 states)
{
	struct
	{
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
		struct rtattr proto_attr;
		uint32		proto;
	}			request;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval timeout = {.tv_sec = 10};
	char	   *buf;
	int			fd;
	bool		done = false;
	bool		ok = true;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return false;
	/* the kernel answers at once; never wait forever all the same */
	(void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));

	memset(&request, 0, sizeof(request));
	request.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct inet_diag_req_v2));
	request.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	request.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	request.req.sdiag_family = family;
	request.req.sdiag_protocol = IPPROTO_TCP;
	request.req.idiag_states = states;
	request.req.idiag_ext = 1 << (INET_DIAG_INFO - 1);
	if (protocol == IPPROTO_MPTCP)
	{
		/* the protocol number does not fit in sdiag_protocol */
		request.proto_attr.rta_type = INET_DIAG_REQ_PROTOCOL;
		request.proto_attr.rta_len = RTA_LENGTH(sizeof(uint32));
		request.proto = IPPROTO_MPTCP;
		request.nlh.nlmsg_len = sizeof(request);
	}

	if (sendto(fd, &request, request.nlh.nlmsg_len, 0,
			   (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		return false;
	}

	/*
	 * add_socket() allocates: if that fails, close the socket before the
	 * ERROR leaves, or it stays open for the rest of the session.
	 */
	PG_TRY();
	{
		buf = palloc(65536);
		while (!done && ok)
		{
			ssize_t		len = recv(fd, buf, 65536, 0);
			struct nlmsghdr *nlh;

			if (len <= 0)
			{
				if (len == 0)
					errno = EPROTO;
				ok = false;
				break;
			}
			for (nlh = (struct nlmsghdr *) buf; NLMSG_OK(nlh, len);
				 nlh = NLMSG_NEXT(nlh, len))
			{
				if (nlh->nlmsg_type == NLMSG_DONE)
				{
					done = true;
					break;
				}
				if (nlh->nlmsg_type == NLMSG_ERROR)
				{
					struct nlmsgerr *err = NLMSG_DATA(nlh);

					errno = err->error ? -err->error : EPROTO;
					ok = false;
					break;
				}
				if (nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
					nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
					add_socket(res, protocol, NLMSG_DATA(nlh),
							   nlh->nlmsg_len - NLMSG_LENGTH(sizeof(struct inet_diag_msg)));
			}
		}
	}
	PG_CATCH();
	{
		close(fd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pfree(buf);
	close(fd);
	return ok;
}
#endif							/* USE_MPTCP */

/*
 * The walreceivers are clients, not servers: find the MPTCP connection each
 * one holds by the inode of its socket, as /proc/PID/fd names it.
 */
static void
mark_walreceiver_conns(DiagResult *res)
{
	int			num_backends = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= num_backends && res->conns != NIL; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		uint64		inodes[MAX_WALRCV_SOCKETS];
		int			n;
		ListCell   *lc;

		if (beentry->st_procpid == 0 ||
			beentry->st_backendType != B_WAL_RECEIVER)
			continue;
		n = mptcp_proc_socket_inodes(beentry->st_procpid, inodes,
									 lengthof(inodes));
		foreach(lc, res->conns)
		{
			MptcpConn  *c = lfirst(lc);

			for (int j = 0; j < n; j++)
			{
				if (c->inode != 0 && c->inode == inodes[j])
					c->walrcv_pid = beentry->st_procpid;
			}
		}
	}
}

/*
 * Read the kernel's MPTCP connections, MPTCP subflows and listening TCP
 * sockets, as "what" (READ_*) asks.  A kernel without MPTCP simply has
 * none.
 */
static DiagResult *
read_kernel(int what)
{
	DiagResult *res = palloc0(sizeof(DiagResult));

#ifdef USE_MPTCP
	static const int families[] = {AF_INET, AF_INET6};

	for (int i = 0; i < lengthof(families); i++)
	{
		if ((what & READ_CONNS) &&
			!sock_diag_dump(res, families[i], IPPROTO_MPTCP, TCP_STATES_BUT_LISTEN))
		{
			/* ENOENT: the kernel has no MPTCP socket diagnostics */
			if (errno != ENOENT && errno != EPROTONOSUPPORT && errno != EAFNOSUPPORT)
				ereport(WARNING,
						(errmsg("could not read MPTCP socket diagnostics: %m")));
			break;
		}
		if ((what & READ_SUBFLOWS) &&
			!sock_diag_dump(res, families[i], IPPROTO_TCP, TCP_STATES_BUT_LISTEN) &&
			errno != EAFNOSUPPORT)
			ereport(WARNING,
					(errmsg("could not read TCP socket diagnostics: %m")));
		if ((what & READ_LISTENERS) &&
			!sock_diag_dump(res, families[i], IPPROTO_TCP, TCP_STATES_LISTEN))
			elog(DEBUG1, "could not read TCP socket diagnostics: %m");
	}
#endif
	if (what & READ_CONNS)
		mark_walreceiver_conns(res);
	return res;
}

/*
 * Is this backend a walreceiver connected over TCP/IP?  Its shared state
 * names the host it is connected to, a directory for a Unix-domain socket.
 */
static bool
walreceiver_on_tcp(PgBackendStatus *beentry)
{
	bool		tcp = false;

	if (beentry->st_backendType != B_WAL_RECEIVER || WalRcv == NULL)
		return false;
	SpinLockAcquire(&WalRcv->mutex);
	if (WalRcv->pid == beentry->st_procpid &&
		WalRcv->sender_host[0] != '\0' &&
		!is_absolute_path(WalRcv->sender_host) &&
		WalRcv->sender_host[0] != '@')
		tcp = true;
	SpinLockRelease(&WalRcv->mutex);
	return tcp;
}

/*
 * The kernel's MPTCP connection of a backend's client socket, or of a
 * walreceiver's socket, if any.
 */
static MptcpConn *
find_conn(DiagResult *res, PgBackendStatus *beentry)
{
	uint8		addr[16];
	uint16		port;
	ListCell   *lc;

	if (!backend_client(beentry, addr, &port))
	{
		/* a walreceiver's own connection, see mark_walreceiver_conns() */
		foreach(lc, res->conns)
		{
			MptcpConn  *c = lfirst(lc);

			if (c->walrcv_pid != 0 && c->walrcv_pid == beentry->st_procpid)
				return c;
		}
		return NULL;
	}
	foreach(lc, res->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->ends.remote_port == port && c->ends.local_port == PostPortNumber &&
			memcmp(c->ends.remote, addr, 16) == 0)
			return c;
	}
	return NULL;
}

/*
 * Backends with a TCP client connection, and walreceivers connected over
 * TCP (or, as far as the kernel can tell, MPTCP); whether the caller may
 * look at them is passed on.
 */
typedef void (*BackendCallback) (PgBackendStatus *beentry, bool visible,
								 DiagResult *res, ReturnSetInfo *rsinfo);

static void
for_each_tcp_backend(DiagResult *res, ReturnSetInfo *rsinfo, BackendCallback cb)
{
	int			num_backends = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= num_backends; i++)
	{
		LocalPgBackendStatus *local = pgstat_get_local_beentry_by_index(i);
		PgBackendStatus *beentry = &local->backendStatus;
		uint8		addr[16];
		uint16		port;

		if (beentry->st_procpid == 0)
			continue;
		if (!backend_client(beentry, addr, &port) &&
			!walreceiver_on_tcp(beentry) &&
			find_conn(res, beentry) == NULL)
			continue;
		cb(beentry, HAS_PGSTAT_PERMISSIONS(beentry->st_userid), res, rsinfo);
	}
}

static Datum
ms_interval(uint32 ms)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) ms * 1000;
	return IntervalPGetDatum(result);
}

static void
emit_conn(PgBackendStatus *beentry, bool visible, DiagResult *res,
		  ReturnSetInfo *rsinfo)
{
	Datum		values[NUM_MPTCP_COLS] = {0};
	bool		nulls[NUM_MPTCP_COLS];
	MptcpConn  *c;
	MptcpInfo  *mi;
	size_t		len;
	int			i = 0;

	memset(nulls, true, sizeof(nulls));
	values[i] = Int32GetDatum(beentry->st_procpid);
	nulls[i++] = false;
	if (!visible)
		goto done;

	c = find_conn(res, beentry);
	/* plain TCP, or a connection that fell back to TCP */
	values[i] = BoolGetDatum(c != NULL &&
							 !(c->info.flags & MPTCP_INFO_FLAG_FALLBACK));
	nulls[i++] = false;
	if (c == NULL || c->info_len == 0)
		goto done;

	mi = &c->info;
	len = c->info_len;
#define COL(cond, datum) \
	do { if (cond) { values[i] = (datum); nulls[i] = false; } i++; } while (0)

	/* the total number of subflows, the initial one included */
	COL(true, Int32GetDatum(HAS_FIELD(MptcpInfo, subflows_total, len) && mi->subflows_total > 0 ?
							mi->subflows_total : mi->subflows + 1));
	COL(true, Int32GetDatum(mi->add_addr_signal));
	COL(true, Int32GetDatum(mi->add_addr_accepted));
	COL(true, Int32GetDatum(mi->subflows_max));
	COL(true, Int32GetDatum(mi->add_addr_signal_max));
	COL(true, Int32GetDatum(mi->add_addr_accepted_max));
	COL(HAS_FIELD(MptcpInfo, local_addr_used, len), Int32GetDatum(mi->local_addr_used));
	COL(HAS_FIELD(MptcpInfo, local_addr_max, len), Int32GetDatum(mi->local_addr_max));
	COL(HAS_FIELD(MptcpInfo, csum_enabled, len), BoolGetDatum(mi->csum_enabled != 0));
	COL(true, Int64GetDatum(mi->token));
	COL(true, uint64_numeric(mi->write_seq));
	COL(true, uint64_numeric(mi->snd_una));
	COL(true, uint64_numeric(mi->rcv_nxt));
	COL(HAS_FIELD(MptcpInfo, bytes_sent, len), Int64GetDatum(mi->bytes_sent));
	COL(HAS_FIELD(MptcpInfo, bytes_received, len), Int64GetDatum(mi->bytes_received));
	COL(HAS_FIELD(MptcpInfo, bytes_acked, len), Int64GetDatum(mi->bytes_acked));
	COL(HAS_FIELD(MptcpInfo, bytes_retrans, len), Int64GetDatum(mi->bytes_retrans));
	COL(HAS_FIELD(MptcpInfo, retransmits, len), Int64GetDatum(mi->retransmits));
	COL(HAS_FIELD(MptcpInfo, last_data_sent, len), ms_interval(mi->last_data_sent));
	COL(HAS_FIELD(MptcpInfo, last_data_recv, len), ms_interval(mi->last_data_recv));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_ack_recv));
	Assert(i == NUM_MPTCP_COLS);

done:
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
emit_subflows(PgBackendStatus *beentry, bool visible, DiagResult *res,
			  ReturnSetInfo *rsinfo)
{
	MptcpConn  *c;
	ListCell   *lc;
	int			ncols = rsinfo->setDesc->natts;

	if (!visible || (c = find_conn(res, beentry)) == NULL)
		return;

	foreach(lc, res->subflows)
	{
		Subflow    *s = lfirst(lc);
		TcpInfo    *ti = &s->info;
		size_t		len = s->info_len;
		Datum		values[NUM_SUBFLOW_COLS] = {0};
		bool		nulls[NUM_SUBFLOW_COLS];
		int			i = 0;

		if (s->token != c->info.token)
			continue;
		memset(nulls, true, sizeof(nulls));
		COL(true, Int32GetDatum(beentry->st_procpid));
		COL(true, inet_datum(s->ends.family, s->ends.local));
		COL(true, Int32GetDatum(s->ends.local_port));
		COL(true, inet_datum(s->ends.family, s->ends.remote));
		COL(true, Int32GetDatum(s->ends.remote_port));
		COL(true, BoolGetDatum(s->state == 1)); /* TCP_ESTABLISHED */
		COL(HAS_FIELD(TcpInfo, rtt, len), Float8GetDatum(ti->rtt / 1000.0));
		COL(HAS_FIELD(TcpInfo, rttvar, len), Float8GetDatum(ti->rttvar / 1000.0));
		COL(HAS_FIELD(TcpInfo, snd_cwnd, len), Int64GetDatum(ti->snd_cwnd));
		COL(HAS_FIELD(TcpInfo, snd_mss, len), Int64GetDatum(ti->snd_mss));
		COL(HAS_FIELD(TcpInfo, bytes_sent, len), Int64GetDatum(ti->bytes_sent));
		COL(HAS_FIELD(TcpInfo, bytes_acked, len), Int64GetDatum(ti->bytes_acked));
		COL(HAS_FIELD(TcpInfo, bytes_received, len), Int64GetDatum(ti->bytes_received));
		COL(HAS_FIELD(TcpInfo, bytes_retrans, len), Int64GetDatum(ti->bytes_retrans));
		COL(HAS_FIELD(TcpInfo, total_retrans, len), Int64GetDatum(ti->total_retrans));
		COL(HAS_FIELD(TcpInfo, delivery_rate, len), Int64GetDatum(ti->delivery_rate));
		/* version 1.1 */
		if (ncols > NUM_SUBFLOW_COLS_V1_0)
			COL(true, BoolGetDatum((s->flags & (SUBFLOW_FLAG_BKUP_LOC |
												SUBFLOW_FLAG_BKUP_REM)) != 0));
		Assert(i == ncols);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Can peers join at this endpoint?  With a port, the kernel listens there
 * itself.  Without one, joins come to the endpoint's address at the
 * server's own port, and only succeed if an MPTCP socket listens there: the
 * server's, bound to that address or to the wildcard address.
 */
static bool
endpoint_accepts_joins(const MptcpEndpoint *ep, DiagResult *listeners)
{
	uint8		addr[16];
	ListCell   *lc;

	if (ep->port != 0)
		return true;
	addr_to_mapped(ep->family, ep->addr, addr);
	foreach(lc, listeners->listeners)
	{
		MptcpListener *l = lfirst(lc);
		static const uint8 any6[16] = {0};
		static const uint8 any4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		if (!l->mptcp || l->ends.local_port != PostPortNumber)
			continue;
		if (memcmp(l->ends.local, addr, 16) == 0)
			return true;
		/* the wildcard address of the endpoint's family */
		if (l->ends.family == AF_INET && ep->family == AF_INET &&
			memcmp(l->ends.local, any4, 16) == 0)
			return true;
		if (l->ends.family == AF_INET6 && memcmp(l->ends.local, any6, 16) == 0 &&
			(ep->family == AF_INET6 || !l->v6only))
			return true;
	}
	return false;
}

static Datum
endpoint_addr_datum(const MptcpEndpoint *ep)
{
	uint8		addr[16];

	addr_to_mapped(ep->family, ep->addr, addr);
	return inet_datum(ep->family, addr);
}

static void
emit_endpoints(List *endpoints, DiagResult *listeners, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);
		Datum		values[NUM_ENDPOINT_COLS] = {0};
		bool		nulls[NUM_ENDPOINT_COLS];
		char		ifname[IF_NAMESIZE];
		bool		known = (ep->family == AF_INET || ep->family == AF_INET6);
		int			i = 0;

		memset(nulls, true, sizeof(nulls));
		COL(true, Int32GetDatum(ep->id));
		COL(known, endpoint_addr_datum(ep));
		COL(ep->port != 0, Int32GetDatum(ep->port));
		COL(ep->ifindex > 0 && if_indextoname(ep->ifindex, ifname) != NULL,
			CStringGetTextDatum(ifname));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_SIGNAL) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_SUBFLOW) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_BACKUP) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_FULLMESH) != 0));
		if ((ep->flags & MPTCP_ENDP_SIGNAL) && known)
			COL(true, BoolGetDatum(endpoint_accepts_joins(ep, listeners)));
		else
			COL(false, (Datum) 0);	/* does not apply */
		Assert(i == NUM_ENDPOINT_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* descriptions of the settings, after the kernel's mptcp-sysctl.rst */
static const struct
{
	const char *name;
	const char *description;
}			setting_descriptions[] =

{
	{"net.mptcp.add_addr_timeout",
	"Seconds after which an unacknowledged ADD_ADDR is sent again"},
	{"net.mptcp.allow_join_initial_addr_port",
	"Whether peers may join at the address and port of the initial subflow"},
	{"net.mptcp.available_path_managers",
	"Path managers the kernel offers"},
	{"net.mptcp.available_schedulers",
	"Packet schedulers the kernel offers"},
	{"net.mptcp.blackhole_timeout",
	"Seconds during which MPTCP is not used for new connections after a firewall blackhole was detected (0 turns the detection off)"},
	{"net.mptcp.checksum_enabled",
	"Whether new connections ask for DSS checksums"},
	{"net.mptcp.close_timeout",
	"Seconds a connection without subflows is kept before it is closed"},
	{"net.mptcp.enabled",
	"Whether MPTCP sockets can be created"},
	{"net.mptcp.path_manager",
	"Path manager of new connections"},
	{"net.mptcp.pm_type",
	"Path manager of new connections (0 in-kernel, 1 userspace), older form of path_manager"},
	{"net.mptcp.scheduler",
	"Packet scheduler of new connections"},
	{"net.mptcp.stale_loss_cnt",
	"Retransmission timeouts after which a subflow is considered stale"},
	{"net.mptcp.syn_retrans_before_tcp_fallback",
	"SYN retransmissions with MPTCP options before the connection falls back to TCP"},
};

static void
emit_setting(ReturnSetInfo *rsinfo, const char *name, const char *setting,
			 const char *description)
{
	Datum		values[NUM_SETTING_COLS] = {0};
	bool		nulls[NUM_SETTING_COLS];
	int			i = 0;

	memset(nulls, true, sizeof(nulls));
	COL(true, CStringGetTextDatum(name));
	COL(setting != NULL, CStringGetTextDatum(setting));
	COL(description != NULL, CStringGetTextDatum(description));
	Assert(i == NUM_SETTING_COLS);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
emit_settings(List *sysctls, const uint32 *limits, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, sysctls)
	{
		MptcpProcItem *item = lfirst(lc);
		const char *description = NULL;

		for (int i = 0; i < lengthof(setting_descriptions); i++)
		{
			if (strcmp(setting_descriptions[i].name, item->name) == 0)
				description = setting_descriptions[i].description;
		}
		emit_setting(rsinfo, item->name, item->value, description);
	}

	if (limits != NULL)
	{
		char		buf[16];

		snprintf(buf, sizeof(buf), "%u", limits[0]);
		emit_setting(rsinfo, "limits.subflows", buf,
					 "Most additional subflows per connection (ip mptcp limits)");
		snprintf(buf, sizeof(buf), "%u", limits[1]);
		emit_setting(rsinfo, "limits.add_addr_accepted", buf,
					 "Most addresses announced by the peer that a connection uses (ip mptcp limits)");
	}
}

static void
emit_counters(List *counters, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, counters)
	{
		MptcpProcItem *item = lfirst(lc);
		Datum		values[NUM_COUNTER_COLS] = {0};
		bool		nulls[NUM_COUNTER_COLS];
		char	   *end;
		unsigned long long v;
		int			i = 0;

		memset(nulls, true, sizeof(nulls));
		errno = 0;
		v = strtoull(item->value, &end, 10);
		COL(true, CStringGetTextDatum(item->name));
		COL(errno == 0 && *end == '\0' && v <= PG_INT64_MAX, Int64GetDatum((int64) v));
		Assert(i == NUM_COUNTER_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
pg_stat_get_mptcp(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	for_each_tcp_backend(read_kernel(READ_CONNS), rsinfo, emit_conn);
	return (Datum) 0;
}

/* version 1.0, without the backup column */
Datum
pg_stat_get_mptcp_subflows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != NUM_SUBFLOW_COLS_V1_0)
		elog(ERROR, "incorrect number of output arguments");
	for_each_tcp_backend(read_kernel(READ_CONNS | READ_SUBFLOWS), rsinfo,
						 emit_subflows);
	return (Datum) 0;
}

Datum
pg_stat_get_mptcp_subflows_1_1(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != NUM_SUBFLOW_COLS)
		elog(ERROR, "incorrect number of output arguments");
	for_each_tcp_backend(read_kernel(READ_CONNS | READ_SUBFLOWS), rsinfo,
						 emit_subflows);
	return (Datum) 0;
}

/* the path manager's endpoints, and whether joins to them can succeed */
Datum
pg_mptcp_get_endpoints(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *endpoints = NIL;
	DiagResult *listeners = NULL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (!mptcp_pm_endpoints(&endpoints))
		return (Datum) 0;
	/* the listening sockets matter for signal endpoints without a port */
	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);

		if ((ep->flags & MPTCP_ENDP_SIGNAL) && ep->port == 0)
		{
			listeners = read_kernel(READ_LISTENERS);
			break;
		}
	}
	if (listeners == NULL)
		listeners = palloc0(sizeof(DiagResult));
	emit_endpoints(endpoints, listeners, rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP sysctls and path manager limits */
Datum
pg_mptcp_get_settings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint32		limits[2];
	List	   *sysctls;

	InitMaterializedSRF(fcinfo, 0);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	sysctls = mptcp_proc_sysctls();
	if (mptcp_pm_limits(&limits[0], &limits[1]))
		emit_settings(sysctls, limits, rsinfo);
	else
		emit_settings(sysctls, NULL, rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP counters */
Datum
pg_stat_get_mptcp_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	emit_counters(mptcp_proc_counters(), rsinfo);
	return (Datum) 0;
}
