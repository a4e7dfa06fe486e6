/*-------------------------------------------------------------------------
 *
 * mptcp_tcp.c
 *	  The kernel's TCP sockets that are MPTCP subflows, read through socket
 *	  diagnostics (sock_diag).
 *
 * A TCP socket's answer gives a subflow's struct tcp_info, its congestion
 * control and, in its MPTCP ULP info, the token of the connection it
 * belongs to and its backup flags; but before Linux 6.15 the ULP info only
 * to CAP_NET_ADMIN.  A dump keeps only the subflows, so that its memory
 * follows them, not the host's TCP connections.  A dump walks the kernel's
 * whole table of connections, so mptcp_lookup.c asks for sockets by their
 * ends where it can, and reads the answers with mptcp_diag_subflow_answer().
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_tcp.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include "libpq/mptcp.h"
#include "mptcp_netlink.h"
#include "mptcp_tcp.h"
#include "utils/hsearch.h"
#include "utils/injection_point.h"

#ifdef USE_MPTCP
#include <linux/rtnetlink.h>
#include <linux/inet_diag.h>

#define ULP_INFO_NAME 1			/* INET_ULP_INFO_NAME */
#define ULP_INFO_MPTCP 3		/* INET_ULP_INFO_MPTCP */
#define SUBFLOW_ATTR_TOKEN_LOC 2	/* MPTCP_SUBFLOW_ATTR_TOKEN_LOC */
#define SUBFLOW_ATTR_FLAGS 8	/* MPTCP_SUBFLOW_ATTR_FLAGS */

/* MptcpTcpInfo is the start of the kernel's struct tcp_info, read by offset */
StaticAssertDecl(offsetof(MptcpTcpInfo, retransmits) == 2 &&
				 offsetof(MptcpTcpInfo, rto) == 8 &&
				 offsetof(MptcpTcpInfo, snd_mss) == 16 &&
				 offsetof(MptcpTcpInfo, unacked) == 24 &&
				 offsetof(MptcpTcpInfo, last_data_sent) == 44 &&
				 offsetof(MptcpTcpInfo, last_ack_recv) == 56 &&
				 offsetof(MptcpTcpInfo, rtt) == 68 &&
				 offsetof(MptcpTcpInfo, snd_cwnd) == 80 &&
				 offsetof(MptcpTcpInfo, total_retrans) == 100 &&
				 offsetof(MptcpTcpInfo, bytes_acked) == 120 &&
				 offsetof(MptcpTcpInfo, delivery_rate) == 160 &&
				 offsetof(MptcpTcpInfo, bytes_sent) == 200 &&
				 sizeof(MptcpTcpInfo) == 216,
				 "MptcpTcpInfo must have the layout of the kernel's struct tcp_info up to bytes_retrans");

typedef struct MptcpSubflowDump
{
	MptcpDiag  *res;
	/* what res had before the dump, for forget_subflows() */
	int			nsubflows;
	int			tcp_dumped;
} MptcpSubflowDump;

/*
 * The MPTCP ULP info of a TCP socket: whether it is an MPTCP subflow (or
 * subflow listener), and its connection's token (0 for a listener) and
 * subflow flags.
 */
static bool
parse_ulp(const void *ulp, int len, uint32 *token, uint32 *flags)
{
	struct rtattr *a;
	bool		is_mptcp = false;

	for (a = (struct rtattr *) ulp; RTA_OK(a, len); a = RTA_NEXT(a, len))
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

/*
 * The subflow that an answer describes; with subflows_only, NULL if the
 * kernel does not show it as a subflow.
 */
static MptcpSubflow *
to_subflow(const MptcpDiagAnswer *a, bool subflows_only)
{
	MptcpSubflow *s;
	uint32		token = 0;
	uint32		flags = 0;
	bool		is_mptcp;

	/*
	 * (a test shim, t/009: the ULP info hidden, as kernels before 6.15 hide
	 * it from a process without privileges)
	 */
	if (IS_INJECTION_POINT_ATTACHED("mptcpinfo-kernel-before-6.15"))
		is_mptcp = false;
	else
		is_mptcp = a->ulp != NULL &&
			parse_ulp(a->ulp, a->ulp_len, &token, &flags);
	if (subflows_only && !(is_mptcp && token != 0))
		return NULL;
	s = palloc0(sizeof(MptcpSubflow));
	s->ends = a->ends;
	s->token = token;
	s->flags_known = is_mptcp;
	s->flags = flags;
	s->state = a->state;
	if (a->cong != NULL)
		snprintf(s->congestion_control, sizeof(s->congestion_control),
				 "%.*s", a->cong_len, a->cong);
	s->info_len = Min(a->info_len, sizeof(MptcpTcpInfo));
	if (a->info)
		memcpy(&s->info, a->info, s->info_len);
	return s;
}

/* one socket of a dump: keep it if it is a subflow */
static void
add_subflow(const struct nlmsghdr *nlh, void *arg)
{
	MptcpSubflowDump *dump = arg;
	MptcpDiagAnswer a;
	MptcpSubflow *s;

	if (!mptcp_diag_answer(nlh, &a))
		return;
	dump->res->tcp_dumped++;
	if ((s = to_subflow(&a, true)) != NULL)
		dump->res->subflows = lappend(dump->res->subflows, s);
}

/* a dump read again, or failed: res as it was before */
static void
forget_subflows(void *arg)
{
	MptcpSubflowDump *dump = arg;

	dump->res->subflows = list_truncate(dump->res->subflows, dump->nsubflows);
	dump->res->tcp_dumped = dump->tcp_dumped;
}

/*
 * The bytecode of an inet_diag filter that passes a socket with one of the
 * ports and none of the "excluded" remote ports, laid out as ss lays out
 * "(sport = :P or dport = :Q) and not dport = :R": a condition is two ops,
 * the second holding the port.  A port that holds steps on to a jump to
 * the excluded ports; when none did, a jump past the end (fail).  An
 * excluded port that holds steps on to a jump past the end, else on to
 * the next one, the last one to the end (pass).  The kernel refuses a
 * filter unless each target can be reached by steps of "yes" from the
 * start, hence a jump's "yes", which the kernel never takes.  Returns its
 * length in bytes.
 */
static int
port_filter(const MptcpDumpPorts *ports, struct inet_diag_bc_op *ops)
{
	const int	opsize = sizeof(struct inet_diag_bc_op);
	int			n = ports->nlocal + ports->nremote;
	int			len = (3 * n + 1 + 3 * ports->nexcluded) * opsize;
	struct inet_diag_bc_op *excluded = ops + 3 * n + 1;
	struct inet_diag_bc_op *op = ops;

	if (n == 0)
		return 0;				/* (no filter: every socket) */
	memset(ops, 0, len);
	for (int i = 0; i < n; i++, op += 3)
	{
		op[0].code = i < ports->nlocal ? INET_DIAG_BC_S_EQ : INET_DIAG_BC_D_EQ;
		op[0].yes = 2 * opsize;
		op[0].no = 3 * opsize;
		op[1].no = i < ports->nlocal ? ports->local[i] :
			ports->remote[i - ports->nlocal];
		/* (the kernel takes a jump's "no") */
		op[2].code = INET_DIAG_BC_JMP;
		op[2].yes = opsize;
		op[2].no = (excluded - &op[2]) * opsize;
	}
	op[0].code = INET_DIAG_BC_JMP;
	op[0].yes = opsize;
	op[0].no = len - (op - ops) * opsize + opsize;
	op++;
	for (int i = 0; i < ports->nexcluded; i++, op += 3)
	{
		op[0].code = INET_DIAG_BC_D_EQ;
		op[0].yes = 2 * opsize;
		op[0].no = 3 * opsize;
		op[1].no = ports->excluded[i];
		op[2].code = INET_DIAG_BC_JMP;
		op[2].yes = opsize;
		op[2].no = len - (&op[2] - ops) * opsize + opsize;
	}
	Assert((op - ops) * opsize == len);
	return len;
}
#endif							/* USE_MPTCP */

MptcpSubflow *
mptcp_diag_subflow_answer(const struct nlmsghdr *nlh)
{
#ifdef USE_MPTCP
	MptcpDiagAnswer a;

	/* a socket closing, or its TIME_WAIT remains, is no subflow any more */
	if (mptcp_diag_answer(nlh, &a) &&
		(MPTCP_TCP_STATES_SUBFLOWS & (1 << a.state)) != 0)
		return to_subflow(&a, false);
#endif
	return NULL;
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
	struct inet_diag_bc_op *filter = NULL;
	int			filter_len = 0;

	if (diag->sock == NULL)
		return;

	/*
	 * (what an earlier dump found goes: this one finds it again; the lists
	 * the caller took from it stay, with the query's memory)
	 */
	diag->subflows = NIL;
	if (diag->by_token != NULL)
		hash_destroy(diag->by_token);
	diag->by_token = NULL;
	if (ports != NULL)
	{
		filter = palloc(sizeof(struct inet_diag_bc_op) *
						(3 * (ports->nlocal + ports->nremote + ports->nexcluded) + 1));
		filter_len = port_filter(ports, filter);
	}
	for (int i = 0; i < lengthof(families); i++)
	{
		MptcpSubflowDump dump = {diag, list_length(diag->subflows), diag->tcp_dumped};

		if (!mptcp_diag_dump(diag->sock->fd, families[i],
							 MPTCP_TCP_STATES_SUBFLOWS,
							 (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1)),
							 INET_DIAG_REQ_BYTECODE, filter, filter_len,
							 add_subflow, forget_subflows, &dump) &&
			errno != EAFNOSUPPORT)
			ereport(mptcp_diag_failure_level(),
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("could not read TCP socket diagnostics: %m")));
	}
#endif
}

typedef struct MptcpTokenEntry
{
	uint32		token;
	List	   *subflows;
} MptcpTokenEntry;

List *
mptcp_diag_token_subflows(MptcpDiag *diag, uint32 token)
{
	MptcpTokenEntry *t;
	ListCell   *lc;

	/* (the first call indexes the subflows by token) */
	if (diag->by_token == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint32);
		ctl.entrysize = sizeof(MptcpTokenEntry);
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
