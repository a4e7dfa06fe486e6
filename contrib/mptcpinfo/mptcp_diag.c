/*-------------------------------------------------------------------------
 *
 * mptcp_diag.c
 *	  The kernel's MPTCP sockets, read through socket diagnostics
 *	  (sock_diag).
 *
 * This is what "ss -M" and "ss -ti" do (NETLINK_SOCK_DIAG): one dump of
 * the MPTCP sockets gives each connection's struct mptcp_info.  It needs no
 * privileges: the kernel answers for the caller's network namespace.
 *
 * A scan uses one netlink socket: mptcp_diag_read() opens it, the other
 * requests of the same scan use it, and mptcp_diag_close() closes it, or
 * else the end of the memory context that holds the MptcpDiag.
 *
 * Before Linux 5.9 the kernel ignores the protocol of the request and
 * answers with TCP sockets: each with the kernel's struct tcp_info, whose
 * length getsockopt() TCP_INFO tells, or none at all (TIME_WAIT), which is
 * how we tell; then we say that we cannot know rather than take TCP
 * sockets for MPTCP ones.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_diag.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "libpq/mptcp.h"
#include "mptcp_diag.h"
#include "mptcp_netlink.h"
#include "utils/injection_point.h"

#ifdef USE_MPTCP
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

#ifndef INET_DIAG_REQ_PROTOCOL
#define INET_DIAG_REQ_PROTOCOL 3	/* Linux 5.7 */
#endif

#define TCP_STATE_LISTEN 10
#define TCP_STATES_BUT_LISTEN (((1 << 12) - 1) & ~(1 << TCP_STATE_LISTEN))

/* one answer per socket; a namespace may hold millions, but not more */
#define DIAG_MAX_SOCKETS 16000000

typedef struct MptcpDiagDump
{
	MptcpDiag  *res;
	bool		not_mptcp;		/* TCP sockets answered an MPTCP request */
	/* what res had before the dump, for forget_dump() */
	int			nconns;
	int			nlisteners;
} MptcpDiagDump;

/* a dump's request and its one attribute: the protocol, or a filter */
typedef struct MptcpDumpRequest
{
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
	struct rtattr attr;
	char		value[FLEXIBLE_ARRAY_MEMBER];
} MptcpDumpRequest;

#endif							/* USE_MPTCP */

/* MptcpInfo is the kernel's struct mptcp_info, read by offset */
StaticAssertDecl(offsetof(MptcpInfo, flags) == 8 &&
				 offsetof(MptcpInfo, token) == 12 &&
				 offsetof(MptcpInfo, write_seq) == 16 &&
				 offsetof(MptcpInfo, rcv_nxt) == 32 &&
				 offsetof(MptcpInfo, local_addr_used) == 40 &&
				 offsetof(MptcpInfo, csum_enabled) == 42 &&
				 offsetof(MptcpInfo, retransmits) == 44 &&
				 offsetof(MptcpInfo, bytes_retrans) == 48 &&
				 offsetof(MptcpInfo, bytes_acked) == 72 &&
				 offsetof(MptcpInfo, subflows_total) == 80 &&
				 offsetof(MptcpInfo, last_data_sent) == 84 &&
				 offsetof(MptcpInfo, last_ack_recv) == 92 &&
				 sizeof(MptcpInfo) == 96,
				 "MptcpInfo must have the layout of the kernel's struct mptcp_info");

void
mptcp_addr_to_mapped(int family, const void *addr, uint8 *out)
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

bool
mptcp_sockaddr_to_mapped(const struct sockaddr_storage *ss, uint8 *addr,
						 uint16 *port, int *family)
{
	if (ss->ss_family == AF_INET)
	{
		const struct sockaddr_in *sin = (const struct sockaddr_in *) ss;

		mptcp_addr_to_mapped(AF_INET, &sin->sin_addr, addr);
		*port = ntohs(sin->sin_port);
	}
	else if (ss->ss_family == AF_INET6)
	{
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *) ss;

		mptcp_addr_to_mapped(AF_INET6, &sin6->sin6_addr, addr);
		*port = ntohs(sin6->sin6_port);
	}
	else
		return false;
	if (family)
		*family = ss->ss_family;
	return true;
}

#ifdef USE_MPTCP

static void
fill_ends(const struct inet_diag_msg *msg, MptcpSockEnds *ends)
{
	ends->family = msg->idiag_family;
	mptcp_addr_to_mapped(msg->idiag_family, msg->id.idiag_src, ends->local);
	mptcp_addr_to_mapped(msg->idiag_family, msg->id.idiag_dst, ends->remote);
	ends->local_port = ntohs(msg->id.idiag_sport);
	ends->remote_port = ntohs(msg->id.idiag_dport);
}

bool
mptcp_diag_answer(const struct nlmsghdr *nlh, MptcpDiagAnswer *answer)
{
	const struct inet_diag_msg *msg = NLMSG_DATA(nlh);
	int			attrlen;
	struct rtattr *a;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return false;
	memset(answer, 0, sizeof(MptcpDiagAnswer));
	fill_ends(msg, &answer->ends);
	answer->state = msg->idiag_state;
	answer->inode = msg->idiag_inode;
	answer->uid = msg->idiag_uid;
	attrlen = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(struct inet_diag_msg));
	for (a = (struct rtattr *) (msg + 1); RTA_OK(a, attrlen); a = RTA_NEXT(a, attrlen))
	{
		switch (a->rta_type & NLA_TYPE_MASK)
		{
			case INET_DIAG_INFO:
				answer->info = RTA_DATA(a);
				answer->info_len = RTA_PAYLOAD(a);
				break;
			case INET_DIAG_CONG:
				answer->cong = RTA_DATA(a);
				answer->cong_len = RTA_PAYLOAD(a);
				break;
			case INET_DIAG_ULP_INFO:
				answer->ulp = RTA_DATA(a);
				answer->ulp_len = RTA_PAYLOAD(a);
				break;
			case INET_DIAG_SKV6ONLY:
				if (RTA_PAYLOAD(a) >= 1)
					answer->v6only = *(uint8 *) RTA_DATA(a) != 0;
				break;
		}
	}
	return true;
}

/*
 * The length of the running kernel's struct tcp_info, as a socket diagnostics
 * answer for a TCP socket has it; 0 if unknown.
 */
static size_t
kernel_tcp_info_len(void)
{
	static size_t len = 0;
	static bool asked = false;

	if (!asked)
	{
		int			fd = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
		char		info[1024];
		socklen_t	optlen = sizeof(info);

		if (fd >= 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &optlen) == 0)
			len = optlen;
		if (fd >= 0)
			close(fd);
		asked = true;
	}
	return len;
}

/* one socket of an MPTCP dump */
static void
add_conn(const struct nlmsghdr *nlh, void *arg)
{
	MptcpDiagDump *dump = arg;
	MptcpDiagAnswer a;
	MptcpConn  *c;

	if (!mptcp_diag_answer(nlh, &a))
		return;
	if (a.info == NULL || a.info_len == kernel_tcp_info_len())
	{
		dump->not_mptcp = true; /* a kernel before 5.9 */
		return;
	}
	if (a.state == TCP_STATE_LISTEN)
	{
		MptcpListener *l = palloc0(sizeof(MptcpListener));

		l->ends = a.ends;
		l->mptcp = true;
		l->v6only = a.v6only;
		dump->res->listeners = lappend(dump->res->listeners, l);
		return;
	}
	c = palloc0(sizeof(MptcpConn));
	c->ends = a.ends;
	c->state = a.state;
	c->inode = a.inode;
	c->uid = a.uid;
	c->info_len = Min(a.info_len, sizeof(MptcpInfo));
	/* (a test shim, t/009: the struct of a kernel before 6.8) */
	if (IS_INJECTION_POINT_ATTACHED("mptcpinfo-kernel-before-6.8"))
		c->info_len = Min(c->info_len, offsetof(MptcpInfo, subflows_total));
	if (a.info)
		memcpy(&c->info, a.info, c->info_len);
	dump->res->conns = lappend(dump->res->conns, c);
}

/* a dump read again, or failed: res as it was before (mptcp_netlink_dump) */
static void
forget_dump(void *arg)
{
	MptcpDiagDump *dump = arg;
	MptcpDiag  *res = dump->res;

	res->conns = list_truncate(res->conns, dump->nconns);
	res->listeners = list_truncate(res->listeners, dump->nlisteners);
	dump->not_mptcp = false;
}

bool
mptcp_diag_dump(int fd, int family, uint32 states, int ext, int attr_type,
				const void *attr, int attr_len,
				void (*cb) (const struct nlmsghdr *nlh, void *arg),
				void (*forget) (void *arg), void *arg)
{
	MptcpDumpRequest *request = palloc0(offsetof(MptcpDumpRequest, value) + attr_len);
	bool		ok;

	/* (t/010 throws an ERROR here, as a failing allocation would) */
	INJECTION_POINT("mptcpinfo-dump-error", NULL);

	request->nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct inet_diag_req_v2));
	request->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	request->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	request->req.sdiag_family = family;
	request->req.sdiag_protocol = IPPROTO_TCP;
	request->req.idiag_states = states;
	request->req.idiag_ext = ext;
	if (attr_len > 0)
	{
		request->attr.rta_type = attr_type;
		request->attr.rta_len = RTA_LENGTH(attr_len);
		memcpy(request->value, attr, attr_len);
		request->nlh.nlmsg_len = offsetof(MptcpDumpRequest, value) + attr_len;
	}
	ok = mptcp_netlink_dump(fd, &request->nlh, cb, forget, arg,
							DIAG_MAX_SOCKETS);
	pfree(request);
	return ok;
}

/*
 * Dump the MPTCP sockets of one family in the given TCP states into res.
 * Returns false with errno set if the kernel cannot answer,
 * EPROTONOSUPPORT if it answered with TCP sockets.
 */
static bool
dump_mptcp(int fd, MptcpDiag *res, int family, uint32 states)
{
	/* (the protocol number does not fit in sdiag_protocol) */
	uint32		protocol = IPPROTO_MPTCP;
	MptcpDiagDump dump = {res, false, list_length(res->conns),
	list_length(res->listeners)};
	bool		ok;

	ok = mptcp_diag_dump(fd, family, states, 1 << (INET_DIAG_INFO - 1),
						 INET_DIAG_REQ_PROTOCOL, &protocol, sizeof(protocol),
						 add_conn, forget_dump, &dump);
	if (ok && dump.not_mptcp)
	{
		/* drop what was taken before the first TCP socket showed */
		list_free_deep(res->conns);
		list_free_deep(res->listeners);
		res->conns = res->listeners = NIL;
		ok = false;
		errno = EPROTONOSUPPORT;
	}
	return ok;
}

#endif

int
mptcp_diag_failure_level(void)
{
	static bool warned = false;

	if (warned)
		return DEBUG1;
	warned = true;
	return WARNING;
}

MptcpDiag *
mptcp_diag_read(int what)
{
	MptcpDiag  *res = palloc0(sizeof(MptcpDiag));
#ifdef USE_MPTCP
	static const int families[] = {AF_INET, AF_INET6};
	int			fd;

	/*
	 * (kept for the rest of the scan, and closed with its memory at the
	 * latest)
	 */
	res->sock = mptcp_netlink_open(NETLINK_SOCK_DIAG);
	if (res->sock == NULL)
	{
		ereport(mptcp_diag_failure_level(),
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not open a socket diagnostics socket: %m")));
		return res;
	}
	fd = res->sock->fd;
	res->conns_read = (what & MPTCP_DIAG_CONNS) != 0;
	res->listeners_read = (what & MPTCP_DIAG_LISTENERS) != 0;
	for (int i = 0; i < lengthof(families); i++)
	{
		if (res->conns_read && (what & MPTCP_DIAG_CONNS_OF(families[i])) &&
			!dump_mptcp(fd, res, families[i], TCP_STATES_BUT_LISTEN) &&
			errno != EAFNOSUPPORT)
		{
			/* ENOENT: the kernel has no MPTCP socket diagnostics */
			if (errno != ENOENT && errno != EPROTONOSUPPORT)
				ereport(mptcp_diag_failure_level(),
						(errcode(ERRCODE_SYSTEM_ERROR),
						 errmsg("could not read MPTCP socket diagnostics: %m")));
			res->conns_read = false;
		}
		if (res->listeners_read &&
			!dump_mptcp(fd, res, families[i], 1 << TCP_STATE_LISTEN) &&
			errno != EAFNOSUPPORT)
		{
			elog(DEBUG1, "could not read MPTCP socket diagnostics of listeners: %m");
			res->listeners_read = false;
		}
	}
#endif
	return res;
}

void
mptcp_diag_close(MptcpDiag *diag)
{
#ifdef USE_MPTCP
	if (diag->sock != NULL)
		mptcp_netlink_close(diag->sock);
	diag->sock = NULL;
#endif
}

int
mptcp_conn_subflows(const MptcpConn *c)
{
	if (HAS_FIELD(MptcpInfo, subflows_total, c->info_len))
		return c->info.subflows_total;
	if (HAS_FIELD(MptcpInfo, subflows, c->info_len))
		return c->info.subflows + 1;
	return -1;
}
