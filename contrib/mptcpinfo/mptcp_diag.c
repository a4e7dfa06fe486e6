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
 * A TCP socket's answer gives a subflow's struct tcp_info, its congestion
 * control and, in its MPTCP ULP info, the token of the connection it
 * belongs to and its backup flags; but before Linux 6.15 the ULP info only
 * to CAP_NET_ADMIN.  A dump of the TCP sockets walks the kernel's whole
 * table of connections, so mptcp_lookup.c asks for sockets by their ends
 * where it can, and reads the answers with mptcp_diag_subflow_answer().
 *
 * A scan uses one netlink socket: mptcp_diag_read() opens it, the other
 * requests of the same scan borrow it, and mptcp_diag_close() closes it,
 * or else the end of the memory context that holds the MptcpDiag.
 *
 * Before Linux 5.9 the kernel ignores the protocol of the request and
 * answers with TCP sockets: their struct tcp_info is far longer than any
 * struct mptcp_info, which is how we tell, and then we say that we cannot
 * know rather than take TCP sockets for MPTCP ones.
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

#include "libpq/mptcp.h"
#include "mptcp_diag.h"
#include "mptcp_netlink.h"
#include "utils/hsearch.h"

#ifdef USE_MPTCP
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

#ifndef INET_DIAG_REQ_PROTOCOL
#define INET_DIAG_REQ_PROTOCOL 3	/* Linux 5.7 */
#endif
#define ULP_INFO_NAME 1			/* INET_ULP_INFO_NAME */
#define ULP_INFO_MPTCP 3		/* INET_ULP_INFO_MPTCP */
#define SUBFLOW_ATTR_TOKEN_LOC 2	/* MPTCP_SUBFLOW_ATTR_TOKEN_LOC */
#define SUBFLOW_ATTR_FLAGS 8	/* MPTCP_SUBFLOW_ATTR_FLAGS */

#define TCP_STATE_LISTEN 10
#define TCP_STATES_BUT_LISTEN (((1 << 12) - 1) & ~(1 << TCP_STATE_LISTEN))

/* one answer per socket; a namespace may hold millions, but not more */
#define DIAG_MAX_SOCKETS 16000000

typedef struct DiagDump
{
	MptcpDiag  *res;
	int			protocol;
	bool		not_mptcp;		/* TCP sockets answered an MPTCP request */
	bool		subflows_only;	/* keep no TCP socket but MPTCP subflows */
	/* what res had before the dump, for forget_dump() */
	int			nconns;
	int			nlisteners;
	int			nsubflows;
	int			tcp_dumped;
} DiagDump;

/* a dump's request: for MPTCP the protocol, for TCP maybe a port filter */
typedef struct DumpRequest
{
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
	struct rtattr attr;
	union
	{
		uint32		proto;
		struct inet_diag_bc_op bytecode[2 * 2 * MPTCP_DUMP_MAX_PORTS];
	}			value;
} DumpRequest;

/*
 * struct tcp_info is at least this long in every kernel that has MPTCP
 * (bytes_retrans, Linux 4.19); struct mptcp_info was 96 bytes in 6.18.
 */
#define TCP_INFO_MIN_LEN sizeof(TcpInfo)
#endif							/* USE_MPTCP */

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
			is_mptcp = RTA_PAYLOAD(a) >= sizeof("mptcp") &&
				memcmp(RTA_DATA(a), "mptcp", sizeof("mptcp")) == 0;
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

/* one socket of a dump: keep it if it is one of ours */
static void
add_socket(const struct nlmsghdr *nlh, void *arg)
{
	DiagDump   *dump = arg;
	MptcpDiag  *res = dump->res;
	const struct inet_diag_msg *msg = NLMSG_DATA(nlh);
	int			attrlen;
	struct rtattr *a;
	const void *info = NULL;
	size_t		info_len = 0;
	const char *cong = NULL;
	int			cong_len = 0;
	uint32		token = 0;
	uint32		flags = 0;
	bool		is_mptcp = false;
	bool		v6only = false;

	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		return;
	attrlen = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(struct inet_diag_msg));

	for (a = (struct rtattr *) (msg + 1); RTA_OK(a, attrlen); a = RTA_NEXT(a, attrlen))
	{
		switch (a->rta_type & NLA_TYPE_MASK)
		{
			case INET_DIAG_INFO:
				info = RTA_DATA(a);
				info_len = RTA_PAYLOAD(a);
				break;
			case INET_DIAG_CONG:
				cong = RTA_DATA(a);
				cong_len = RTA_PAYLOAD(a);
				break;
			case INET_DIAG_ULP_INFO:
				is_mptcp = parse_ulp(a, &token, &flags);
				break;
			case INET_DIAG_SKV6ONLY:
				if (RTA_PAYLOAD(a) >= 1)
					v6only = *(uint8 *) RTA_DATA(a) != 0;
				break;
		}
	}

	if (dump->protocol == IPPROTO_MPTCP && info_len >= TCP_INFO_MIN_LEN)
	{
		dump->not_mptcp = true; /* a kernel before 5.9 */
		return;
	}

	if (msg->idiag_state == TCP_STATE_LISTEN)
	{
		MptcpListener *l = palloc0(sizeof(MptcpListener));

		fill_ends(msg, &l->ends);
		l->mptcp = is_mptcp || dump->protocol == IPPROTO_MPTCP;
		l->v6only = v6only;
		res->listeners = lappend(res->listeners, l);
	}
	else if (dump->protocol == IPPROTO_MPTCP)
	{
		MptcpConn  *c = palloc0(sizeof(MptcpConn));

		fill_ends(msg, &c->ends);
		c->state = msg->idiag_state;
		c->inode = msg->idiag_inode;
		c->uid = msg->idiag_uid;
		c->info_len = Min(info_len, sizeof(MptcpInfo));
		if (info)
			memcpy(&c->info, info, c->info_len);
		res->conns = lappend(res->conns, c);
	}
	else
	{
		MptcpSubflow *s;

		/* a dump keeps only subflows, whatever else the host has */
		res->tcp_dumped++;
		if (dump->subflows_only && !(is_mptcp && token != 0))
			return;
		s = palloc0(sizeof(MptcpSubflow));
		fill_ends(msg, &s->ends);
		s->token = token;
		s->flags_known = is_mptcp;
		s->flags = flags;
		s->state = msg->idiag_state;
		if (cong != NULL)
			snprintf(s->congestion_control, sizeof(s->congestion_control),
					 "%.*s", cong_len, cong);
		s->info_len = Min(info_len, sizeof(TcpInfo));
		if (info)
			memcpy(&s->info, info, s->info_len);
		res->subflows = lappend(res->subflows, s);
	}
}

/* a dump read again, or failed: res as it was before (mptcp_netlink_dump) */
static void
forget_dump(void *arg)
{
	DiagDump   *dump = arg;
	MptcpDiag  *res = dump->res;

	res->conns = list_truncate(res->conns, dump->nconns);
	res->listeners = list_truncate(res->listeners, dump->nlisteners);
	res->subflows = list_truncate(res->subflows, dump->nsubflows);
	res->tcp_dumped = dump->tcp_dumped;
	dump->not_mptcp = false;
}

/*
 * The bytecode of an inet_diag filter that passes a socket with one of the
 * ports, as "ss 'sport = :P or dport = :Q'" sends: a condition is two ops,
 * the second holding the port; each jumps to the end (pass) when it holds,
 * else to the next one, the last one past the end (fail).  Returns its
 * length in bytes.
 */
static int
port_filter(const MptcpDumpPorts *ports, struct inet_diag_bc_op *ops)
{
	int			n = ports->nlocal + ports->nremote;
	int			len = n * 2 * sizeof(struct inet_diag_bc_op);

	for (int i = 0; i < n; i++)
	{
		struct inet_diag_bc_op *op = &ops[2 * i];
		int			left = len - i * 2 * sizeof(struct inet_diag_bc_op);

		op[0].code = i < ports->nlocal ? INET_DIAG_BC_S_EQ : INET_DIAG_BC_D_EQ;
		op[0].yes = left;
		op[0].no = 2 * sizeof(struct inet_diag_bc_op) + (i == n - 1 ? 4 : 0);
		op[1].no = i < ports->nlocal ? ports->local[i] :
			ports->remote[i - ports->nlocal];
	}
	return len;
}

/*
 * Dump the kernel's sockets of one family and protocol in the given TCP
 * states into res.  Returns false with errno set if the kernel cannot
 * answer, EPROTONOSUPPORT if it answered an MPTCP request with TCP
 * sockets.
 */
static bool
sock_diag_dump(int fd, MptcpDiag *res, int family, int protocol,
			   uint32 states, const MptcpDumpPorts *ports)
{
	DumpRequest request;
	DiagDump	dump = {res, protocol, false, protocol == IPPROTO_TCP};
	bool		ok;

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
		request.attr.rta_type = INET_DIAG_REQ_PROTOCOL;
		request.attr.rta_len = RTA_LENGTH(sizeof(uint32));
		request.value.proto = IPPROTO_MPTCP;
		request.nlh.nlmsg_len = offsetof(DumpRequest, value) + sizeof(uint32);
	}
	else
	{
		request.req.idiag_ext |= 1 << (INET_DIAG_CONG - 1);
		if (ports != NULL)
		{
			int			len = port_filter(ports, request.value.bytecode);

			request.attr.rta_type = INET_DIAG_REQ_BYTECODE;
			request.attr.rta_len = RTA_LENGTH(len);
			request.nlh.nlmsg_len = offsetof(DumpRequest, value) + len;
		}
	}

	dump.nconns = list_length(res->conns);
	dump.nlisteners = list_length(res->listeners);
	dump.nsubflows = list_length(res->subflows);
	dump.tcp_dumped = res->tcp_dumped;
	ok = mptcp_netlink_dump(fd, &request.nlh, add_socket, forget_dump, &dump,
							DIAG_MAX_SOCKETS);
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

static void
close_socket(void *arg)
{
	mptcp_diag_close((MptcpDiag *) arg);
}
#endif

int
mptcp_diag_borrow_socket(MptcpDiag *diag)
{
	int			fd = diag->fd;

	diag->fd = -1;
	return fd;
}

void
mptcp_diag_return_socket(MptcpDiag *diag, int fd)
{
	diag->fd = fd;
}

MptcpSubflow *
mptcp_diag_subflow_answer(const struct nlmsghdr *nlh)
{
#ifdef USE_MPTCP
	MptcpDiag	answer = {0};
	DiagDump	dump = {&answer, IPPROTO_TCP, false, false};
	MptcpSubflow *s;

	add_socket(nlh, &dump);
	if (answer.subflows == NIL)
		return NULL;
	s = linitial(answer.subflows);
	list_free(answer.subflows);
	/* a socket closing, or its TIME_WAIT remains, is no subflow any more */
	if ((MPTCP_TCP_STATES_SUBFLOWS & (1 << s->state)) != 0)
		return s;
	pfree(s);
#endif
	return NULL;
}

MptcpDiag *
mptcp_diag_read(int what)
{
	MptcpDiag  *res = palloc0(sizeof(MptcpDiag));
#ifdef USE_MPTCP
	static const int families[] = {AF_INET, AF_INET6};
	int			fd;
#endif

	res->fd = -1;
#ifdef USE_MPTCP
	fd = mptcp_netlink_open(NETLINK_SOCK_DIAG);
	if (fd < 0)
	{
		ereport(WARNING,
				(errmsg("could not open a socket diagnostics socket: %m")));
		return res;
	}
	res->conns_read = (what & MPTCP_DIAG_CONNS) != 0;
	res->listeners_read = (what & MPTCP_DIAG_LISTENERS) != 0;
	for (int i = 0; i < lengthof(families); i++)
	{
		if (res->conns_read && (what & MPTCP_DIAG_CONNS_OF(families[i])) &&
			!sock_diag_dump(fd, res, families[i], IPPROTO_MPTCP, TCP_STATES_BUT_LISTEN, NULL) &&
			errno != EAFNOSUPPORT)
		{
			/* ENOENT: the kernel has no MPTCP socket diagnostics */
			if (errno != ENOENT && errno != EPROTONOSUPPORT)
				ereport(WARNING,
						(errmsg("could not read MPTCP socket diagnostics: %m")));
			res->conns_read = false;
		}
		if (res->listeners_read &&
			!sock_diag_dump(fd, res, families[i], IPPROTO_MPTCP, 1 << TCP_STATE_LISTEN, NULL) &&
			errno != EAFNOSUPPORT)
		{
			elog(DEBUG1, "could not read MPTCP socket diagnostics of listeners: %m");
			res->listeners_read = false;
		}
	}
	/* kept for the rest of the scan, and closed with its memory at the latest */
	res->fd = fd;
	res->close_socket.func = close_socket;
	res->close_socket.arg = res;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &res->close_socket);
#endif
	return res;
}

void
mptcp_diag_close(MptcpDiag *diag)
{
	if (diag->fd >= 0)
		close(diag->fd);
	diag->fd = -1;
}

bool
mptcp_dump_ports_add(MptcpDumpPorts *ports, bool local, uint16 port)
{
	uint16	   *list = local ? ports->local : ports->remote;
	int		   *n = local ? &ports->nlocal : &ports->nremote;

	for (int i = 0; i < *n; i++)
	{
		if (list[i] == port)
			return true;
	}
	if (*n == MPTCP_DUMP_MAX_PORTS)
		return false;
	list[(*n)++] = port;
	return true;
}

void
mptcp_diag_read_subflows(MptcpDiag *diag, const MptcpDumpPorts *ports)
{
#ifdef USE_MPTCP
	static const int families[] = {AF_INET, AF_INET6};
	int			fd;

	if ((fd = mptcp_diag_borrow_socket(diag)) < 0)
		return;

	/*
	 * (what an earlier dump found goes: this one finds it again; the lists
	 * the caller took from it stay, with the query's memory)
	 */
	diag->subflows = NIL;
	if (diag->by_token != NULL)
		hash_destroy(diag->by_token);
	diag->by_token = NULL;
	for (int i = 0; i < lengthof(families); i++)
	{
		if (!sock_diag_dump(fd, diag, families[i], IPPROTO_TCP,
							MPTCP_TCP_STATES_SUBFLOWS, ports) &&
			errno != EAFNOSUPPORT)
			ereport(WARNING,
					(errmsg("could not read TCP socket diagnostics: %m")));
	}
	mptcp_diag_return_socket(diag, fd);
#endif
}

typedef struct TokenEntry
{
	uint32		token;
	List	   *subflows;
} TokenEntry;

List *
mptcp_diag_token_subflows(MptcpDiag *diag, uint32 token)
{
	TokenEntry *t;
	ListCell   *lc;

	/* (the first call indexes the subflows by token) */
	if (diag->by_token == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint32);
		ctl.entrysize = sizeof(TokenEntry);
		ctl.hcxt = CurrentMemoryContext;
		diag->by_token = hash_create("mptcpinfo subflows",
									 Max(list_length(diag->subflows), 16), &ctl,
									 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		foreach(lc, diag->subflows)
		{
			MptcpSubflow *s = lfirst(lc);
			bool		found;

			if (s->token == 0)
				continue;
			t = hash_search(diag->by_token, &s->token, HASH_ENTER, &found);
			if (!found)
				t->subflows = NIL;
			t->subflows = lappend(t->subflows, s);
		}
	}
	t = hash_search(diag->by_token, &token, HASH_FIND, NULL);
	return t ? t->subflows : NIL;
}

int
mptcp_conn_subflows(const MptcpConn *c, bool *has_initial)
{
	*has_initial = true;
	if (HAS_FIELD(MptcpInfo, subflows_total, c->info_len))
	{
		*has_initial = c->info.subflows_total > c->info.subflows;
		return c->info.subflows_total;
	}
	if (HAS_FIELD(MptcpInfo, subflows, c->info_len))
		return c->info.subflows + 1;
	return -1;
}
