/*-------------------------------------------------------------------------
 *
 * mptcp_subflows.c
 *	  pg_stat_mptcp_subflows: where each connection's subflows come from,
 *	  and their rows.
 *
 * A dump of the kernel's TCP sockets walks its whole table of connections,
 * however few it holds (2 ms for 262,144 buckets, which is what 24 GiB of
 * memory gives): most of what the view would cost.  So each subflow's TCP
 * socket is asked for by its ends instead, which the kernel finds in its
 * hash table at once (mptcp_diag_lookup()).  A connection with a single
 * subflow, its initial one, has the connection's own ends.  The others'
 * come the first time from the dump where it describes them (Linux 6.15,
 * or privileges), or else from their processes' reports (mptcp_report.c);
 * the session keeps them for its next query, which looks them up directly
 * while the connection has as many subflows.  An exporter's session thus
 * reads the dump or asks a process only when a subflow came or went.
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
#include "mptcp_diag.h"
#include "mptcp_match.h"
#include "mptcp_report.h"
#include "mptcpinfo.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
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

/* why connections got a row without subflow figures, for the NOTICEs */
typedef struct Unreadable
{
	int			not_loaded;
	int			no_answer;
	int			failed;
	int			failed_errno;
	int			unsupported;
	int			truncated;		/* shown, but not all of their subflows */
} Unreadable;

/*
 * One row of pg_stat_mptcp_subflows.  With ends NULL, the row of a
 * connection whose subflows cannot be read: its pid and token only.
 */
static void
emit_subflow(ReturnSetInfo *rsinfo, int pid, uint32 token,
			 const MptcpSockEnds *ends, const TcpInfo *ti, size_t len,
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
	COL(HAS_FIELD(TcpInfo, state, len), BoolGetDatum(ti->state == MPTCP_TCP_ESTABLISHED));
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
		COL(HAS_FIELD(TcpInfo, unacked, len),
			BoolGetDatum(ti->unacked > 0 && ti->retransmits > 0));
		COL(HAS_FIELD(TcpInfo, retransmits, len), Int32GetDatum(ti->retransmits));
		COL(HAS_FIELD(TcpInfo, rto, len), Float8GetDatum(ti->rto / 1000.0));
		COL(HAS_FIELD(TcpInfo, unacked, len), Int64GetDatum(ti->unacked));
		COL(HAS_FIELD(TcpInfo, last_data_sent, len), mptcpinfo_ms_interval(ti->last_data_sent));
		COL(HAS_FIELD(TcpInfo, last_ack_recv, len), mptcpinfo_ms_interval(ti->last_ack_recv));
	}
	Assert(i == ncols);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* is this a connection whose subflows are to be shown? */
static bool
shows_subflows(MptcpRow *row)
{
	return row->visible && row->conn != NULL &&
		!(row->conn->info.flags & MPTCP_INFO_FLAG_FALLBACK);
}

/* one subflow, with what the dump says of its TCP socket */
static void
emit_dumped_subflow(ReturnSetInfo *rsinfo, int pid, uint32 token,
					MptcpSubflow *s)
{
	s->info.state = s->state;	/* (diagnostics give it apart) */
	emit_subflow(rsinfo, pid, token, &s->ends, &s->info,
				 Max(s->info_len, offsetof(TcpInfo, ca_state)),
				 s->flags_known, s->flags, s->congestion_control);
}

/*
 * A connection's subflows, as its process reported them: which TCP sockets
 * they are.  Their figures come from looking those up (figures[k] for
 * subflow k of the report); one that closed since has its ends only.
 */
static void
emit_reported_subflows(MptcpRow *row, MptcpReport *rep, MptcpSubflow **figures,
					   ReturnSetInfo *rsinfo, Unreadable *u)
{
	MptcpConn  *c = row->conn;
	int			pid = row->beentry->st_procpid;
	int			n = 0;

	for (int k = 0; k < rep->nsubflows; k++)
	{
		MptcpReportedSubflow *r = &rep->subflows[k];
		MptcpSubflow *s;

		if (r->inode != c->inode)
			continue;
		s = figures[k];
		if (s != NULL)
			emit_dumped_subflow(rsinfo, pid, c->info.token, s);
		else
			emit_subflow(rsinfo, pid, c->info.token, &r->ends, NULL, 0,
						 false, 0, NULL);
		n++;
	}
	if (rep->nmissing > 0)
		u->truncated++;
	if (n > 0)
		return;

	switch (rep->status)
	{
		case MPTCP_REPORT_NOT_LOADED:
			u->not_loaded++;
			break;
		case MPTCP_REPORT_NO_ANSWER:
			u->no_answer++;
			break;
		case MPTCP_REPORT_FAILED:
			u->failed++;
			u->failed_errno = rep->sys_errno;
			break;
		case MPTCP_REPORT_GONE:
			return;				/* closed since we looked */
		case MPTCP_REPORT_OK:
			if (rep->nunsupported > 0)
				u->unsupported++;
			else if (rep->nmissing == 0)
				return;			/* closed since we looked */
			break;
	}
	emit_subflow(rsinfo, pid, c->info.token, NULL, NULL, 0, false, 0, NULL);
}

/* say why some connections have no subflow figures */
static void
report_unreadable(const Unreadable *u)
{
	if (u->not_loaded > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->not_loaded, u->not_loaded),
				 errdetail("Before Linux 6.15, the kernel shows the subflows of a connection without privileges only to the process that holds it, and mptcpinfo asks that process only when it is loaded at server start."),
				 errhint("Add \"mptcpinfo\" to \"shared_preload_libraries\" and restart the server.")));
	if (u->no_answer > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->no_answer, u->no_answer),
				 errdetail("The server processes holding them did not answer within the time allowed.")));
	if (u->failed > 0)
	{
		errno = u->failed_errno;
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->failed, u->failed),
				 errdetail("Asking the kernel about them failed: %m.")));
	}
	if (u->unsupported > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->unsupported, u->unsupported),
				 errdetail("The kernel describes the subflows of a connection to the process holding it from Linux 5.16 on.")));
	if (u->truncated > 0)
		ereport(NOTICE,
				(errmsg_plural("not all subflows of %d server process are shown",
							   "not all subflows of %d server processes are shown",
							   u->truncated, u->truncated),
				 errdetail("A process reports at most %d subflows.",
						   MPTCP_REPORT_MAX_SUBFLOWS)));
}

/*
 * The TCP sockets of the subflows that processes reported, looked up by
 * their ends: figures[offsets[r] + k] for subflow k of reports[r].
 */
static MptcpSubflow **
look_up_reported(MptcpDiag *diag, int nreports, MptcpReport **reports,
				 int *offsets)
{
	const MptcpSockEnds **ends;
	MptcpSubflow **figures;
	int			n = 0;

	for (int r = 0; r < nreports; r++)
		n += reports[r]->nsubflows;
	ends = palloc(sizeof(MptcpSockEnds *) * (n + 1));
	figures = palloc(sizeof(MptcpSubflow *) * (n + 1));
	n = 0;
	for (int r = 0; r < nreports; r++)
	{
		offsets[r] = n;
		for (int k = 0; k < reports[r]->nsubflows; k++)
			ends[n++] = &reports[r]->subflows[k].ends;
	}
	mptcp_diag_lookup(diag, n, ends, figures);
	return figures;
}

/*
 * The subflows' ends of each multipath connection this session last found,
 * by token: the next query looks them up instead of reading them again
 * from a dump or a report, as long as the connection has as many subflows.
 * An exporter's session, which queries every few seconds, thus reads the
 * dump or asks a process only when a subflow came or went.
 */
typedef struct KnownSubflows
{
	uint32		token;
	uint64		inode;			/* of the connection's socket */
	int			n;
	MptcpSockEnds *ends;		/* n of them, in the table's context */
} KnownSubflows;

/* what the last query of this session found, and the context holding it */
static HTAB *known_subflows = NULL;
static MemoryContext known_subflows_cxt = NULL;

/*
 * A table for this query's findings, in a context of its own (*cxt) under
 * the query's: kept by keep_known_subflows() without a copy, gone with the
 * query if it fails.  The ends arrays go in the same context.
 */
static HTAB *
new_known_subflows(long nconns, MemoryContext *cxt)
{
	HASHCTL		ctl;

	*cxt = AllocSetContextCreate(CurrentMemoryContext,
								 "mptcpinfo known subflows",
								 ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(KnownSubflows);
	ctl.hcxt = *cxt;
	return hash_create("mptcpinfo known subflows", Max(nconns, 16), &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* keep what this query found for the next one (and nothing older) */
static void
keep_known_subflows(HTAB *found, MemoryContext cxt)
{
	if (known_subflows_cxt != NULL)
		MemoryContextDelete(known_subflows_cxt);
	MemoryContextSetParent(cxt, TopMemoryContext);
	known_subflows = found;
	known_subflows_cxt = cxt;
}

static void
remember_subflows(HTAB *known, MemoryContext cxt, MptcpConn *c, int n,
				  MptcpSockEnds **ends)
{
	KnownSubflows *k;

	if (n == 0 || n > MPTCP_REPORT_MAX_SUBFLOWS)
		return;
	k = hash_search(known, &c->info.token, HASH_ENTER, NULL);
	k->inode = c->inode;
	k->n = n;
	k->ends = MemoryContextAlloc(cxt, sizeof(MptcpSockEnds) * n);
	for (int i = 0; i < n; i++)
		k->ends[i] = *ends[i];
}

/* how many subflows the connection has, -1 if the kernel does not say */
static int
expected_subflows(MptcpConn *c)
{
	bool		has_initial;

	return mptcp_conn_subflows(c, &has_initial);
}

/*
 * Is the connection's one subflow its initial one, whose ends are the
 * connection's own?  Not once the initial subflow has closed (on a dead
 * path, say) and another took over: that one is found like any other.
 */
static bool
only_initial_subflow(MptcpConn *c)
{
	bool		has_initial;

	return mptcp_conn_subflows(c, &has_initial) == 1 && has_initial;
}

/*
 * pg_stat_mptcp_subflows, likewise.  Each connection's subflows are looked
 * up by their ends, one request each: a connection with one subflow has
 * the connection's own ends, and this session may know the others' from
 * an earlier query.  Where that does not find as many subflows as the
 * connection has, they come from a dump of the TCP sockets if it describes
 * them (Linux 6.15, or privileges); else their processes report which TCP
 * sockets are theirs, and those are looked up.
 */
static Datum
stat_mptcp_subflows(FunctionCallInfo fcinfo, int ncols, bool all_outgoing)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Unreadable	u = {0};
	MptcpDiag  *diag;
	List	   *rows;
	ListCell   *lc;
	int			nrows;
	bool		auto_source = (mptcpinfo_subflow_source == SUBFLOW_SOURCE_AUTO);
	bool		dump_describes = auto_source;
	HTAB	   *known;
	MemoryContext known_cxt;
	const MptcpSockEnds **ends;
	MptcpSubflow **found;
	int		   *first;			/* per row: its first lookup, or -1 */
	int			nlookups = 0;
	int			nlooked_up = 0;
	int			ndumped = 0;
	int			nundescribed = 0;
	bool	   *looked_up;
	bool		need_dump = false;
	bool	   *dumped;
	int		   *pids;
	int			npids = 0;
	int			r = 0;
	MptcpReport **reports;
	MptcpReportStats stats;
	MptcpSubflow **figures;
	int		   *offsets;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;

	diag = mptcp_diag_read(MPTCP_DIAG_CONNS);
	rows = mptcp_match_rows(diag, all_outgoing);
	nrows = list_length(rows) + 1;
	known = new_known_subflows(list_length(rows), &known_cxt);

	/* what to look up: each connection's one subflow, or those known */
	first = palloc(sizeof(int) * nrows);
	looked_up = palloc0(sizeof(bool) * nrows);
	ends = palloc(sizeof(MptcpSockEnds *) * nrows * MPTCP_REPORT_MAX_SUBFLOWS);
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);
		int			k = foreach_current_index(lc);
		int			expected;
		KnownSubflows *ks;

		first[k] = -1;
		if (!shows_subflows(row) || !auto_source)
			continue;
		expected = expected_subflows(row->conn);
		ks = known_subflows == NULL ? NULL :
			hash_search(known_subflows, &row->conn->info.token, HASH_FIND, NULL);
		if (ks != NULL && ks->inode == row->conn->inode && ks->n == expected)
		{
			first[k] = nlookups;
			for (int i = 0; i < ks->n; i++)
				ends[nlookups++] = &ks->ends[i];
		}
		else if (only_initial_subflow(row->conn))
		{
			first[k] = nlookups;
			ends[nlookups++] = &row->conn->ends;
		}
		else if (expected == 0)
			first[k] = nlookups;	/* none to show, nothing to look for */
	}
	found = palloc(sizeof(MptcpSubflow *) * (nlookups + 1));
	mptcp_diag_lookup(diag, nlookups, ends, found);

	/* a connection is described if all its subflows were found */
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);
		int			k = foreach_current_index(lc);
		int			n;
		bool		all = true;

		if (first[k] < 0)
			continue;
		n = expected_subflows(row->conn);
		for (int i = first[k]; i < first[k] + n && all; i++)
		{
			MptcpSubflow *s = found[i];

			/*
			 * The ULP info, where shown, says whose subflow it is; where the
			 * kernel hides it, it hides it in a dump too.
			 */
			if (s != NULL && !s->flags_known)
				dump_describes = false;
			all = s != NULL && (!s->flags_known ||
								s->token == row->conn->info.token);
		}
		looked_up[k] = all;
		if (all)
			nlooked_up++;
	}

	/* the others: from the dump if it can describe them */
	foreach(lc, rows)
	{
		if (shows_subflows(lfirst(lc)) && !looked_up[foreach_current_index(lc)])
			need_dump = dump_describes;
	}
	if (need_dump)
		mptcp_diag_read_subflows(diag);

	/* the processes to ask: those of connections the kernel did not describe */
	pids = palloc(sizeof(int) * nrows);
	dumped = palloc0(sizeof(bool) * nrows);
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);
		int			pid = row->beentry->st_procpid;
		int			k = foreach_current_index(lc);

		if (!shows_subflows(row) || looked_up[k])
			continue;
		dumped[k] = need_dump &&
			mptcp_diag_token_subflows(diag, row->conn->info.token) != NIL;
		if (dumped[k])
		{
			ndumped++;
			continue;
		}
		nundescribed++;
		if (npids == 0 || pids[npids - 1] != pid)
			pids[npids++] = pid;
	}
	reports = mptcp_report_collect(npids, pids, &stats);
	offsets = palloc(sizeof(int) * (npids + 1));
	figures = look_up_reported(diag, npids, reports, offsets);
	mptcp_diag_close(diag);
	ereport(DEBUG1,
			(errmsg_internal("mptcpinfo: %d MPTCP connections looked up by their ends, %d read from a dump, %d not described by the kernel; %d server processes asked, %d recent reports reused, %d requests of other queries awaited, %d processes gone; %d TCP sockets dumped, %d subflows kept",
							 nlooked_up, ndumped, nundescribed,
							 stats.asked, stats.reused, stats.joined,
							 stats.gone, diag->tcp_dumped,
							 list_length(diag->subflows))));

	/* (rows of a process are adjacent: pids[] follows them) */
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);
		int			k = foreach_current_index(lc);
		int			pid = row->beentry->st_procpid;
		MptcpConn  *c = row->conn;
		MptcpSockEnds *seen[MPTCP_REPORT_MAX_SUBFLOWS];
		int			nseen = 0;

		if (!shows_subflows(row))
			continue;
		if (looked_up[k] || dumped[k])
		{
			List	   *subflows = NIL;
			ListCell   *sc;

			if (looked_up[k])
				for (int i = 0; i < expected_subflows(c); i++)
					subflows = lappend(subflows, found[first[k] + i]);
			else
				subflows = mptcp_diag_token_subflows(diag, c->info.token);
			foreach(sc, subflows)
			{
				MptcpSubflow *s = lfirst(sc);

				emit_dumped_subflow(rsinfo, pid, c->info.token, s);
				if (nseen < MPTCP_REPORT_MAX_SUBFLOWS)
					seen[nseen++] = &s->ends;
			}
			/* (a subflow in TIME_WAIT is not one: the count must match) */
			if (nseen == expected_subflows(c))
				remember_subflows(known, known_cxt, c, nseen, seen);
			continue;
		}
		while (r < npids && pids[r] != pid)
			r++;
		Assert(r < npids);
		emit_reported_subflows(row, reports[r], figures + offsets[r],
							   rsinfo, &u);
		for (int i = 0; i < reports[r]->nsubflows; i++)
			if (reports[r]->subflows[i].inode == c->inode &&
				figures[offsets[r] + i] != NULL)
				seen[nseen++] = &reports[r]->subflows[i].ends;
		if (auto_source && nseen == expected_subflows(c))
			remember_subflows(known, known_cxt, c, nseen, seen);
	}
	keep_known_subflows(known, known_cxt);
	report_unreadable(&u);
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
