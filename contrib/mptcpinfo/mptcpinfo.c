/*-------------------------------------------------------------------------
 *
 * mptcpinfo.c
 *	  Multipath TCP (MPTCP) figures of the server's connections.
 *
 * Each query of a view reads the kernel once, with one netlink socket: a
 * socket diagnostics dump of the MPTCP sockets (mptcp_diag.c) gives each
 * connection's struct mptcp_info, and for the subflows a dump of the TCP
 * sockets gives each subflow's struct tcp_info.  The connections are
 * matched to the server's processes from what pg_stat_activity already
 * knows (mptcp_match.c), without asking them anything.
 *
 * Which TCP socket is a subflow of which connection, the kernel shows to
 * an unprivileged process from Linux 6.15 on: then no other process is
 * involved.  Before, it tells only the process that holds the connection,
 * so for the connections the dump could not describe, and only with
 * mptcpinfo in shared_preload_libraries, those processes are asked, at
 * most once a second each (mptcp_report.c).  pg_stat_mptcp never asks
 * anybody.
 *
 * What cannot be known is never shown as a fact: a column the kernel did
 * not fill is NULL, and a connection whose subflows cannot be read gets one
 * row with NULL subflow columns and a NOTICE that says why.
 *
 * struct mptcp_info and struct tcp_info grow with kernel versions; a field
 * is only reported when the kernel's answer is long enough to contain it,
 * else it is NULL.
 *
 * This file holds the SQL entry points of the two views and what turns the
 * kernel's answers into their rows; mptcp_config.c those of the
 * namespace's configuration.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcpinfo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/utsname.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "mptcp_diag.h"
#include "mptcp_match.h"
#include "mptcp_report.h"
#include "mptcp_startup.h"
#include "mptcpinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inet.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_MODULE_MAGIC_EXT(
					.name = "mptcpinfo",
					.version = PG_VERSION
);

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_1_2);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_1);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_2);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_4);

/* mptcpinfo.subflow_source */
typedef enum
{
	SUBFLOW_SOURCE_AUTO,		/* the dump where it describes them */
	SUBFLOW_SOURCE_PROCESSES,	/* always ask the processes */
} SubflowSource;

static const struct config_enum_entry subflow_source_options[] = {
	{"auto", SUBFLOW_SOURCE_AUTO, false},
	{"processes", SUBFLOW_SOURCE_PROCESSES, false},
	{NULL, 0, false}
};

static int	subflow_source = SUBFLOW_SOURCE_AUTO;

/*
 * Loaded at server start (shared_preload_libraries), the module says once
 * what the server's MPTCP will do (see mptcp_startup.c), and can ask the
 * server's processes about their subflows (mptcp_report.c).
 */
void
_PG_init(void)
{
	DefineCustomEnumVariable("mptcpinfo.subflow_source",
							 "Where pg_stat_mptcp_subflows learns which TCP sockets are subflows.",
							 "\"auto\" takes them from the kernel's socket dump where it shows them (Linux 6.15), and asks the server processes holding the connections otherwise; \"processes\" always asks them, as on older kernels.",
							 &subflow_source,
							 SUBFLOW_SOURCE_AUTO,
							 subflow_source_options,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("mptcpinfo");

	if (process_shared_preload_libraries_in_progress)
	{
		mptcp_startup_register();
		mptcp_report_init();
	}
}

/* the columns of each version's functions */
#define NUM_MPTCP_COLS_V1_0 23
#define NUM_MPTCP_COLS 24		/* 1.2: direction */
#define NUM_SUBFLOW_COLS_V1_0 16
#define NUM_SUBFLOW_COLS_V1_1 17	/* backup */
#define NUM_SUBFLOW_COLS_V1_2 19	/* token, congestion_control */
#define NUM_SUBFLOW_COLS 25		/* 1.4: stalled ... last_ack_recv */

Datum
mptcpinfo_inet_datum(int family, const uint8 *mapped)
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

static Datum
ms_interval(uint32 ms)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) ms * 1000;
	return IntervalPGetDatum(result);
}

/*
 * Is the running kernel this release or later?  Needed where the length of
 * struct mptcp_info cannot tell: the kernel pads it to 8 bytes, and a field
 * added later may sit in an older kernel's padding, which reads as 0.
 * Three do: csum_enabled (5.14) sits in the padding of 5.12's struct, of
 * the same length; retransmits (6.5) in that of 5.14's, so it is taken
 * with bytes_acked, the last field that came with it; last_data_sent
 * (6.10) in that of 6.8's, so it is taken with last_ack_recv.
 */
static bool
kernel_at_least(int major, int minor)
{
	static int	k_major = -1,
				k_minor = -1;

	if (k_major < 0)
	{
		struct utsname u;

		if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &k_major, &k_minor) != 2)
			k_major = k_minor = 0;
	}
	return k_major > major || (k_major == major && k_minor >= minor);
}

static void
emit_conn(MptcpRow *row, bool conns_known, ReturnSetInfo *rsinfo)
{
	Datum		values[NUM_MPTCP_COLS] = {0};
	bool		nulls[NUM_MPTCP_COLS];
	bool		with_direction = rsinfo->setDesc->natts > NUM_MPTCP_COLS_V1_0;
	MptcpConn  *c = row->conn;
	MptcpInfo  *mi;
	size_t		len;
	int			i = 0;

	memset(nulls, true, sizeof(nulls));
	COL(true, Int32GetDatum(row->beentry->st_procpid));
	if (!row->visible)
		goto done;
	if (with_direction)
		COL(true, CStringGetTextDatum(row->outgoing ? "outgoing" : "incoming"));

	/* plain TCP, or a connection that fell back to TCP; NULL if unknown */
	COL(c != NULL || conns_known, BoolGetDatum(c != NULL &&
											   !(c->info.flags & MPTCP_INFO_FLAG_FALLBACK)));
	if (c == NULL || c->info_len == 0)
		goto done;

	mi = &c->info;
	len = c->info_len;

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
	COL(HAS_FIELD(MptcpInfo, csum_enabled, len) &&
		(HAS_FIELD(MptcpInfo, bytes_acked, len) || kernel_at_least(5, 14)),
		BoolGetDatum(mi->csum_enabled != 0));
	COL(true, Int64GetDatum(mi->token));
	COL(true, uint64_numeric(mi->write_seq));
	COL(true, uint64_numeric(mi->snd_una));
	COL(true, uint64_numeric(mi->rcv_nxt));
	COL(HAS_FIELD(MptcpInfo, bytes_sent, len), Int64GetDatum(mi->bytes_sent));
	COL(HAS_FIELD(MptcpInfo, bytes_received, len), Int64GetDatum(mi->bytes_received));
	COL(HAS_FIELD(MptcpInfo, bytes_acked, len), Int64GetDatum(mi->bytes_acked));
	COL(HAS_FIELD(MptcpInfo, bytes_retrans, len), Int64GetDatum(mi->bytes_retrans));
	/* (see kernel_at_least() for why these look at later fields) */
	COL(HAS_FIELD(MptcpInfo, bytes_acked, len), Int64GetDatum(mi->retransmits));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_data_sent));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_data_recv));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_ack_recv));
	Assert(i == rsinfo->setDesc->natts);

done:
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* does the running kernel have MPTCP at all? */
static bool
kernel_has_mptcp(void)
{
	return access("/proc/sys/net/mptcp/enabled", F_OK) == 0;
}

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
	COL(HAS_FIELD(TcpInfo, state, len), BoolGetDatum(ti->state == 1));	/* TCP_ESTABLISHED */
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
		COL(HAS_FIELD(TcpInfo, last_data_sent, len), ms_interval(ti->last_data_sent));
		COL(HAS_FIELD(TcpInfo, last_ack_recv, len), ms_interval(ti->last_ack_recv));
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

/* pg_stat_mptcp: each version's shape, from the same rows */
static Datum
stat_mptcp(FunctionCallInfo fcinfo, int ncols, bool all_outgoing)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MptcpDiag  *diag;
	bool		conns_known;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	diag = mptcp_diag_read(MPTCP_DIAG_CONNS);
	conns_known = diag->conns_read || !kernel_has_mptcp();
	foreach(lc, mptcp_match_rows(diag, all_outgoing))
		emit_conn(lfirst(lc), conns_known, rsinfo);
	return (Datum) 0;
}

/* versions 1.0 and 1.1: no direction, no outgoing connections but the walreceiver's */
Datum
pg_stat_get_mptcp(PG_FUNCTION_ARGS)
{
	return stat_mptcp(fcinfo, NUM_MPTCP_COLS_V1_0, false);
}

Datum
pg_stat_get_mptcp_1_2(PG_FUNCTION_ARGS)
{
	return stat_mptcp(fcinfo, NUM_MPTCP_COLS, true);
}

/*
 * The TCP sockets of the subflows that processes reported, looked up by
 * their ends: figures[offsets[r] + k] for subflow k of reports[r].
 */
static MptcpSubflow **
look_up_reported(int nreports, MptcpReport **reports, int *offsets)
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
	mptcp_diag_lookup(n, ends, figures);
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
	MptcpSockEnds ends[MPTCP_REPORT_MAX_SUBFLOWS];
} KnownSubflows;

static HTAB *known_subflows = NULL;

/* in cxt, or in a context of its own under TopMemoryContext if NULL */
static HTAB *
new_known_subflows(MemoryContext cxt)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(KnownSubflows);
	ctl.hcxt = cxt;
	return hash_create("mptcpinfo known subflows", 64, &ctl,
					   HASH_ELEM | HASH_BLOBS | (cxt ? HASH_CONTEXT : 0));
}

/* keep what this query found for the next one (and nothing older) */
static void
keep_known_subflows(HTAB *found)
{
	HASH_SEQ_STATUS seq;
	KnownSubflows *k;

	if (known_subflows != NULL)
		hash_destroy(known_subflows);
	known_subflows = new_known_subflows(NULL);
	hash_seq_init(&seq, found);
	while ((k = hash_seq_search(&seq)) != NULL)
		*(KnownSubflows *) hash_search(known_subflows, &k->token,
									   HASH_ENTER, NULL) = *k;
}

static void
remember_subflows(HTAB *known, MptcpConn *c, int n, MptcpSockEnds **ends)
{
	KnownSubflows *k;

	if (n == 0 || n > MPTCP_REPORT_MAX_SUBFLOWS)
		return;
	k = hash_search(known, &c->info.token, HASH_ENTER, NULL);
	k->inode = c->inode;
	k->n = n;
	for (int i = 0; i < n; i++)
		k->ends[i] = *ends[i];
}

/*
 * How many subflows the connection has, from its struct mptcp_info: its
 * extra ones and, unless its ends tell otherwise below, the initial one.
 * 0 if the kernel does not say.
 */
static int
expected_subflows(MptcpConn *c)
{
	if (!HAS_FIELD(MptcpInfo, subflows, c->info_len))
		return 0;
	return c->info.subflows + 1;
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
	bool		auto_source = (subflow_source == SUBFLOW_SOURCE_AUTO);
	bool		dump_describes = auto_source;
	HTAB	   *known;
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
	bool	   *outgoing;
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
	known = new_known_subflows(CurrentMemoryContext);

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
		else if (expected == 1)
		{
			first[k] = nlookups;
			ends[nlookups++] = &row->conn->ends;
		}
	}
	found = palloc(sizeof(MptcpSubflow *) * (nlookups + 1));
	mptcp_diag_lookup(nlookups, ends, found);

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
	outgoing = palloc0(sizeof(bool) * nrows);
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
		outgoing[npids - 1] |= row->outgoing;
	}
	reports = mptcp_report_collect(npids, pids, outgoing, &stats);
	offsets = palloc(sizeof(int) * (npids + 1));
	figures = look_up_reported(npids, reports, offsets);
	ereport(DEBUG1,
			(errmsg_internal("mptcpinfo: %d MPTCP connections looked up by their ends, %d read from a dump, %d not described by the kernel; %d server processes asked, %d recent reports reused, %d requests of other queries awaited, %d processes gone",
							 nlooked_up, ndumped, nundescribed,
							 stats.asked, stats.reused, stats.joined,
							 stats.gone)));

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
				remember_subflows(known, c, nseen, seen);
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
			remember_subflows(known, c, nseen, seen);
	}
	keep_known_subflows(known);
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
