/*-------------------------------------------------------------------------
 *
 * mptcp_subflows.c
 *	  pg_stat_mptcp_subflows: where each connection's subflows come from,
 *	  and their rows.
 *
 * Each connection's subflows come from the first source that finds them
 * all: those added to come before the dump (looked up by their ends where
 * those are known: mptcp_lookup.c); a dump of the TCP sockets where it
 * describes them (Linux 6.15, or privileges); those after the dump (the
 * reports of the processes holding the connections: mptcp_ask.c).  A
 * connection that none describes gets one row with NULL subflow columns,
 * and the query a NOTICE that says why.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_subflows.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mptcp_conns.h"
#include "mptcp_subflows.h"
#include "mptcp_tcp.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_1);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_2);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_4);

/* the columns of each version's functions */
#define NUM_SUBFLOW_COLS_V1_0 16
#define NUM_SUBFLOW_COLS_V1_1 17	/* backup */
#define NUM_SUBFLOW_COLS_V1_2 19	/* token, congestion_control */
#define NUM_SUBFLOW_COLS 25		/* 1.4: stalled ... last_ack_recv */

/* the sources but the dump, in the order added */
#define MAX_SUBFLOW_SOURCES 4
static const MptcpSubflowSource *sources[MAX_SUBFLOW_SOURCES];
static int	nsources = 0;

void
mptcp_subflows_add_source(const MptcpSubflowSource *source)
{
	if (nsources >= MAX_SUBFLOW_SOURCES)
		elog(ERROR, "too many sources of MPTCP subflows");
	sources[nsources++] = source;
}

/*
 * One row of pg_stat_mptcp_subflows.  With ends NULL, the row of a
 * connection whose subflows cannot be read: its pid and token only.
 */
static void
emit_subflow(ReturnSetInfo *rsinfo, int pid, uint32 token,
			 const MptcpSockEnds *ends, const MptcpTcpInfo *ti, size_t len,
			 bool flags_known, uint32 flags, const char *cc)
{
	int			ncols = rsinfo->setDesc->natts;
	Datum		values[NUM_SUBFLOW_COLS] = {0};
	bool		nulls[NUM_SUBFLOW_COLS];
	bool		known = (ends != NULL);
	int			i = 0;

	if (!known)
		len = 0;
	memset(nulls, true, sizeof(nulls));
	COL(true, Int32GetDatum(pid));
	COL(known, mptcpinfo_inet_datum(ends->family, ends->local));
	COL(known, Int32GetDatum(ends->local_port));
	COL(known, mptcpinfo_inet_datum(ends->family, ends->remote));
	COL(known, Int32GetDatum(ends->remote_port));
	COL(HAS_FIELD(MptcpTcpInfo, state, len), BoolGetDatum(ti->state == MPTCP_TCP_ESTABLISHED));
	COL(HAS_FIELD(MptcpTcpInfo, rtt, len), Float8GetDatum(ti->rtt / 1000.0));
	COL(HAS_FIELD(MptcpTcpInfo, rttvar, len), Float8GetDatum(ti->rttvar / 1000.0));
	COL(HAS_FIELD(MptcpTcpInfo, snd_cwnd, len), Int64GetDatum(ti->snd_cwnd));
	COL(HAS_FIELD(MptcpTcpInfo, snd_mss, len), Int64GetDatum(ti->snd_mss));
	COL(HAS_FIELD(MptcpTcpInfo, bytes_sent, len), Int64GetDatum(ti->bytes_sent));
	COL(HAS_FIELD(MptcpTcpInfo, bytes_acked, len), Int64GetDatum(ti->bytes_acked));
	COL(HAS_FIELD(MptcpTcpInfo, bytes_received, len), Int64GetDatum(ti->bytes_received));
	COL(HAS_FIELD(MptcpTcpInfo, bytes_retrans, len), Int64GetDatum(ti->bytes_retrans));
	COL(HAS_FIELD(MptcpTcpInfo, total_retrans, len), Int64GetDatum(ti->total_retrans));
	COL(HAS_FIELD(MptcpTcpInfo, delivery_rate, len), Int64GetDatum(ti->delivery_rate));
	/* version 1.1: NULL where the kernel does not show us the flags */
	if (ncols > NUM_SUBFLOW_COLS_V1_0)
		COL(known && flags_known,
			BoolGetDatum((flags & (MPTCP_SUBFLOW_FLAG_BKUP_LOC |
								   MPTCP_SUBFLOW_FLAG_BKUP_REM)) != 0));
	/* version 1.2 */
	if (ncols > NUM_SUBFLOW_COLS_V1_1)
	{
		COL(true, Int64GetDatum(token));
		COL(known && cc != NULL && cc[0] != '\0', CStringGetTextDatum(cc));
	}

	/*
	 * version 1.4: whether the subflow makes progress.  A dead path shows as
	 * data in flight and retransmission timeouts that no ACK has ended (the
	 * kernel's own "stale" mark is not exported).
	 */
	if (ncols > NUM_SUBFLOW_COLS_V1_2)
	{
		COL(HAS_FIELD(MptcpTcpInfo, unacked, len),
			BoolGetDatum(ti->unacked > 0 && ti->retransmits > 0));
		COL(HAS_FIELD(MptcpTcpInfo, retransmits, len), Int32GetDatum(ti->retransmits));
		COL(HAS_FIELD(MptcpTcpInfo, rto, len), Float8GetDatum(ti->rto / 1000.0));
		COL(HAS_FIELD(MptcpTcpInfo, unacked, len), Int64GetDatum(ti->unacked));
		COL(HAS_FIELD(MptcpTcpInfo, last_data_sent, len), mptcpinfo_ms_interval(ti->last_data_sent));
		COL(HAS_FIELD(MptcpTcpInfo, last_ack_recv, len), mptcpinfo_ms_interval(ti->last_ack_recv));
	}
	Assert(i == ncols);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* say why the dump does not describe some connections */
static void
report_not_dumped(MptcpConnSubflows *conns, int n)
{
	int			count = 0;

	for (int k = 0; k < n; k++)
		count += (conns[k].unknown == SUBFLOWS_NOT_DUMPED);
	if (count > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   count, count),
				 errdetail("Before Linux 6.15, the kernel describes the subflows of a connection only to the process holding it, or with the CAP_NET_ADMIN capability.")));
}

/*
 * The ports of the subflows of the connections still to describe: a
 * connection's joins arrive at the port its client connected to, and
 * those of one a server process opened go to the port it connected to.
 * (Other ports, the ADD_ADDR of a port-based endpoint, are found by the
 * full dump, when the kernel counts more subflows than were found.)  The
 * server's plain TCP clients are on its port too: their ports are
 * excluded, so that the kernel does not describe them.  (A subflow whose
 * port is one of theirs, from another address, is then found by the full
 * dump.)  False if there are too many ports for a filter.
 */
static bool
subflow_ports(MptcpConnSubflows *conns, int n, List *rows, MptcpDumpPorts *ports)
{
	ListCell   *lc;

	memset(ports, 0, sizeof(MptcpDumpPorts));
	for (int k = 0; k < n; k++)
	{
		const MptcpRow *row = conns[k].row;

		if (conns[k].unknown != SUBFLOWS_KNOWN &&
			!mptcp_dump_ports_add(ports, !row->outgoing,
								  row->outgoing ? row->conn->ends.remote_port :
								  row->conn->ends.local_port))
			return false;
	}
	ports->excluded = palloc(sizeof(uint16) * MPTCP_DUMP_MAX_EXCLUDED);
	foreach(lc, rows)
	{
		const MptcpRow *row = lfirst(lc);
		uint8		addr[16];
		uint16		port;

		if (row->conn == NULL && !row->outgoing &&
			ports->nexcluded < MPTCP_DUMP_MAX_EXCLUDED &&
			mptcp_sockaddr_to_mapped(&row->beentry->st_clientaddr.addr,
									 addr, &port, NULL))
			ports->excluded[ports->nexcluded++] = port;
	}
	return true;
}

/*
 * The subflows of the connections still to describe, from a dump of the
 * TCP sockets with their ports; then, for those of which it found fewer
 * subflows than the kernel counts (or where it does not count), from a
 * dump of all.  On a busy host the first walks past every other TCP
 * socket without describing it (a tenth of the cost), and is mostly
 * enough.
 */
static void
dump_subflows(MptcpDiag *diag, MptcpConnSubflows *conns, int n, List *rows,
			  MptcpSubflowStats *stats)
{
	MptcpDumpPorts ports;
	bool		filtered = subflow_ports(conns, n, rows, &ports);

	for (int pass = 0; pass < 2; pass++)
	{
		bool		incomplete = false;

		mptcp_diag_read_subflows(diag, filtered ? &ports : NULL);
		for (int k = 0; k < n; k++)
		{
			const MptcpConn *c = conns[k].row->conn;
			List	   *subflows;
			int			expected = mptcp_conn_subflows(c);

			if (conns[k].unknown == SUBFLOWS_KNOWN)
				continue;
			subflows = mptcp_diag_token_subflows(diag, c->info.token);
			if (filtered && (expected < 0 || list_length(subflows) < expected))
				incomplete = true;
			else if (subflows != NIL)
			{
				conns[k].subflows = subflows;
				conns[k].unknown = SUBFLOWS_KNOWN;
				stats->dumped++;
			}
		}
		if (!filtered || !incomplete)
			break;
		filtered = false;
	}
}

/*
 * pg_stat_mptcp_subflows, from the rows of pg_stat_mptcp: each
 * connection's subflows from the first source that describes them all.
 */
static Datum
stat_mptcp_subflows(FunctionCallInfo fcinfo, int ncols, bool all_outgoing)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const MptcpSubflowSource *alone = NULL;
	bool		need_dump = false;
	MptcpDiag  *diag;
	List	   *rows;
	ListCell   *lc;
	MptcpConnSubflows *conns;
	int			n = 0;
	int			nundescribed = 0;
	MptcpSubflowStats stats = {0};

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;

	diag = mptcp_diag_read(mptcp_match_families());
	rows = mptcp_match_rows(diag, all_outgoing);
	conns = palloc0(sizeof(MptcpConnSubflows) * (list_length(rows) + 1));
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);

		/* (not a connection that fell back to TCP) */
		if (row->visible && row->conn != NULL &&
			!(row->conn->info.flags & MPTCP_INFO_FLAG_FALLBACK))
		{
			conns[n].row = row;
			conns[n++].unknown = SUBFLOWS_NOT_DUMPED;
		}
	}

	for (int s = 0; s < nsources && alone == NULL; s++)
	{
		if (sources[s]->alone != NULL && sources[s]->alone())
			alone = sources[s];
	}
	stats.dump_describes = (alone == NULL);
	for (int s = 0; s < nsources && alone == NULL; s++)
	{
		if (sources[s]->before_dump)
			sources[s]->describe(diag, conns, n, &stats);
	}
	for (int k = 0; k < n; k++)
		need_dump |= stats.dump_describes && conns[k].unknown != SUBFLOWS_KNOWN;
	if (need_dump)
		dump_subflows(diag, conns, n, rows, &stats);
	nundescribed = n - stats.looked_up - stats.dumped;
	for (int s = 0; s < nsources; s++)
	{
		if (alone != NULL ? sources[s] == alone : !sources[s]->before_dump)
			sources[s]->describe(diag, conns, n, &stats);
	}
	mptcp_diag_close(diag);
	ereport(DEBUG1,
			(errmsg_internal("mptcpinfo: %d MPTCP connections looked up by their ends, %d read from a dump, %d not described by the kernel; %d server processes asked, %d recent reports reused, %d requests of other queries awaited, %d processes gone; %d TCP sockets dumped, %d subflows kept",
							 stats.looked_up, stats.dumped, nundescribed,
							 stats.asked, stats.reused, stats.joined,
							 stats.gone, diag->tcp_dumped,
							 list_length(diag->subflows))));

	for (int k = 0; k < n; k++)
	{
		int			pid = conns[k].row->beentry->st_procpid;
		uint32		token = conns[k].row->conn->info.token;

		/* (one closed since its process reported it, state 0: ends only) */
		foreach(lc, conns[k].subflows)
		{
			MptcpSubflow *s = lfirst(lc);

			s->info.state = s->state;	/* (diagnostics give it apart) */
			emit_subflow(rsinfo, pid, token, &s->ends, &s->info,
						 s->state == 0 ? 0 : Max(s->info_len, offsetof(MptcpTcpInfo, ca_state)),
						 s->flags_known, s->flags, s->congestion_control);
		}
		if (conns[k].unknown > SUBFLOWS_CLOSED)
			emit_subflow(rsinfo, pid, token, NULL, NULL, 0, false, 0, NULL);
	}
	for (int s = 0; s < nsources; s++)
	{
		if (sources[s]->done != NULL)
			sources[s]->done(conns, n);
	}
	report_not_dumped(conns, n);
	return (Datum) 0;
}

/* version 1.0, without the backup column */
Datum
pg_stat_get_mptcp_subflows(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS_V1_0, false);
}

Datum
pg_stat_get_mptcp_subflows_1_1(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS_V1_1, false);
}

Datum
pg_stat_get_mptcp_subflows_1_2(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS_V1_2, true);
}

Datum
pg_stat_get_mptcp_subflows_1_4(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS, true);
}
