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

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
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
#endif

PG_MODULE_MAGIC_EXT(
					.name = "mptcpinfo",
					.version = PG_VERSION
);

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows);

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
	MptcpInfo	info;
	size_t		info_len;		/* how much of info the kernel filled */
} MptcpConn;

typedef struct Subflow
{
	SockEnds	ends;
	uint32		token;
	uint8		state;
	TcpInfo		info;
	size_t		info_len;
} Subflow;

typedef struct DiagResult
{
	List	   *conns;			/* MptcpConn * */
	List	   *subflows;		/* Subflow * */
} DiagResult;

#define NUM_MPTCP_COLS 23
#define NUM_SUBFLOW_COLS 16

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

#define TCP_STATE_LISTEN 10
#define TCP_STATES_BUT_LISTEN (((1 << 12) - 1) & ~(1 << TCP_STATE_LISTEN))

static void
fill_ends(const struct inet_diag_msg *msg, SockEnds *ends)
{
	ends->family = msg->idiag_family;
	addr_to_mapped(msg->idiag_family, msg->id.idiag_src, ends->local);
	addr_to_mapped(msg->idiag_family, msg->id.idiag_dst, ends->remote);
	ends->local_port = ntohs(msg->id.idiag_sport);
	ends->remote_port = ntohs(msg->id.idiag_dport);
}

/* The MPTCP token in a subflow's ULP info, or 0 if it is not a subflow */
static uint32
subflow_token(struct rtattr *ulp)
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
				if ((s->rta_type & NLA_TYPE_MASK) == SUBFLOW_ATTR_TOKEN_LOC &&
					RTA_PAYLOAD(s) >= sizeof(uint32))
					return *(uint32 *) RTA_DATA(s);
			}
		}
	}
	return 0;
}

static void
add_socket(DiagResult *res, int protocol, const struct inet_diag_msg *msg,
		   int attrlen)
{
	struct rtattr *a;
	const void *info = NULL;
	size_t		info_len = 0;
	uint32		token = 0;

	for (a = (struct rtattr *) (msg + 1); RTA_OK(a, attrlen); a = RTA_NEXT(a, attrlen))
	{
		if ((a->rta_type & NLA_TYPE_MASK) == INET_DIAG_INFO)
		{
			info = RTA_DATA(a);
			info_len = RTA_PAYLOAD(a);
		}
		else if ((a->rta_type & NLA_TYPE_MASK) == INET_DIAG_ULP_INFO)
			token = subflow_token(a);
	}

	if (protocol == IPPROTO_MPTCP)
	{
		MptcpConn  *c = palloc0(sizeof(MptcpConn));

		fill_ends(msg, &c->ends);
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
		s->state = msg->idiag_state;
		s->info_len = Min(info_len, sizeof(TcpInfo));
		if (info)
			memcpy(&s->info, info, s->info_len);
		res->subflows = lappend(res->subflows, s);
	}
}

/*
 * Dump the kernel's sockets of one family and protocol into res.  Returns
 * false with errno set if the kernel cannot answer.
 */
static bool
sock_diag_dump(DiagResult *res, int family, int protocol)
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
	request.req.idiag_states = TCP_STATES_BUT_LISTEN;
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
	pfree(buf);
	close(fd);
	return ok;
}
#endif							/* USE_MPTCP */

/*
 * Read the kernel's MPTCP connections and, if wanted, all MPTCP subflows.
 * A kernel without MPTCP simply has none.
 */
static DiagResult *
read_kernel(bool want_subflows)
{
	DiagResult *res = palloc0(sizeof(DiagResult));

#ifdef USE_MPTCP
	static const int families[] = {AF_INET, AF_INET6};

	for (int i = 0; i < lengthof(families); i++)
	{
		if (!sock_diag_dump(res, families[i], IPPROTO_MPTCP))
		{
			/* ENOENT: the kernel has no MPTCP socket diagnostics */
			if (errno != ENOENT && errno != EPROTONOSUPPORT && errno != EAFNOSUPPORT)
				ereport(WARNING,
						(errmsg("could not read MPTCP socket diagnostics: %m")));
			break;
		}
		if (want_subflows && !sock_diag_dump(res, families[i], IPPROTO_TCP) &&
			errno != EAFNOSUPPORT)
			ereport(WARNING,
					(errmsg("could not read TCP socket diagnostics: %m")));
	}
#endif
	return res;
}

/* the kernel's MPTCP connection of a backend's client socket, if any */
static MptcpConn *
find_conn(DiagResult *res, PgBackendStatus *beentry)
{
	uint8		addr[16];
	uint16		port;
	ListCell   *lc;

	if (!backend_client(beentry, addr, &port))
		return NULL;
	foreach(lc, res->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->ends.remote_port == port && c->ends.local_port == PostPortNumber &&
			memcmp(c->ends.remote, addr, 16) == 0)
			return c;
	}
	return NULL;
}

/* backends with a TCP client connection that the caller may look at */
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

		if (beentry->st_procpid == 0 || !backend_client(beentry, addr, &port))
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
		Assert(i == NUM_SUBFLOW_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
pg_stat_get_mptcp(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for_each_tcp_backend(read_kernel(false), rsinfo, emit_conn);
	return (Datum) 0;
}

Datum
pg_stat_get_mptcp_subflows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for_each_tcp_backend(read_kernel(true), rsinfo, emit_subflows);
	return (Datum) 0;
}
