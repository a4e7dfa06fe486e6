/*-------------------------------------------------------------------------
 *
 * mptcp_ask.c
 *	  Which TCP sockets are the subflows of an MPTCP connection, as the
 *	  process holding the connection reports them: the askers' side.
 *
 * Only for the connections that neither the lookups nor the dump could
 * describe (mptcp_subflows.c), the querying backend asks the processes
 * holding them, with PROCSIG_MPTCP_REPORT, and they answer in their slots
 * (mptcp_report.c).  It also finds the connections that processes opened,
 * by the inodes they recorded there (pg_stat_mptcp).
 *
 * What one query can cause is bounded:
 * - a report younger than REPORT_REUSE_MS is used as it is, unasked, unless
 *	 its process has opened a connection since (the report lacks it);
 * - a process already asked by another backend, for as much, is not asked
 *	 again: its answer serves both;
 * - the asker waits at most REPORT_TIMEOUT_MS in all, and gives up a
 *	 process as soon as it has begun to exit: the process answers what is
 *	 pending at the start of proc_exit(), and then says that no more
 *	 answers will come (core calls the hook there);
 * - only roles that may see the subflows can ask (the view's privileges).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_ask.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/mptcp.h"
#include "libpq/mptcp_report.h"
#include "miscadmin.h"
#include "mptcp_ask.h"
#include "mptcp_lookup.h"
#include "mptcp_match.h"
#include "mptcp_outgoing.h"
#include "mptcp_report.h"
#include "mptcp_subflows.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/injection_point.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

/* how long the asker waits for all reports, in milliseconds */
#define REPORT_TIMEOUT_MS 2000

/* a report this recent is used without asking again */
#define REPORT_REUSE_MS 1000

static uint32 report_wait_event = 0;

/* the MPTCP sockets that running server processes recorded, by inode */
static HTAB *
opened_sockets(int *nrecorded)
{
	HTAB	   *by_inode = NULL;
	HASHCTL		ctl;
	MptcpSlotCopy copy;

	*nrecorded = 0;
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(MptcpOpenedSocket);
	ctl.hcxt = CurrentMemoryContext;
	for (int s = 0; s < mptcp_report_shared->nslots; s++)
	{
		MptcpReportSlot *slot = &mptcp_report_shared->slots[s];

		/* (a glance first: most processes opened nothing) */
		if (slot->written.opened_pid == 0)
			continue;
		mptcp_report_read_slot(slot, &copy, NULL);
		if (copy.opened_pid != MPTCP_PROC_PID(GetPGProcByNumber(s)))
			continue;			/* it has exited */
		for (int i = 0; i < MPTCP_REPORT_MAX_OPENED; i++)
		{
			if (copy.opened[i] == 0)
				continue;
			if (by_inode == NULL)
				by_inode = hash_create("mptcpinfo opened sockets", 64, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
			((MptcpOpenedSocket *) hash_search(by_inode, &copy.opened[i],
											   HASH_ENTER, NULL))->pid = copy.opened_pid;
			(*nrecorded)++;
		}
	}
	return by_inode;
}

/*
 * The address families (MPTCP_DIAG_CONNS_*) of the connections that server
 * processes have recorded as opened since the server started; 0 if not
 * preloaded.
 */
static int
opened_families(PgBackendStatus *beentry)
{
	return mptcp_report_shared == NULL ? 0 :
		(int) pg_atomic_read_u32(&mptcp_report_shared->opened_families);
}

/* a backend of the snapshot, by pid */
typedef struct MptcpPidEntry
{
	int			pid;
	int			index;			/* of its backend status entry */
} MptcpPidEntry;

/* an empty table of MptcpPidEntry by pid, for about n of them */
static HTAB *
pid_table(int n)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(int);
	ctl.entrysize = sizeof(MptcpPidEntry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("mptcpinfo pids", Max(n, 16), &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * Give each backend of the snapshot the connections of "diag" that it
 * recorded as it opened them.  Returns how many sockets the processes
 * recorded, -1 if they record none (mptcpinfo not preloaded).
 */
static int
claim_opened(MptcpDiag *diag, PgBackendStatus **backends, int num_backends,
			 List **outgoing)
{
	int			nrecorded;
	HTAB	   *by_inode;
	HTAB	   *by_pid;
	ListCell   *lc;

	if (mptcp_report_shared == NULL)
		return -1;
	if ((by_inode = opened_sockets(&nrecorded)) == NULL)
		return nrecorded;
	by_pid = pid_table(num_backends);
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry = backends[i];

		if (beentry->st_procpid != 0)
			((MptcpPidEntry *) hash_search(by_pid, &beentry->st_procpid,
										   HASH_ENTER, NULL))->index = i;
	}
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);
		MptcpOpenedSocket *o;
		MptcpPidEntry *p;

		/* (inode 0: an orphan, closing after its process let it go) */
		if (c->pid != 0 || c->inode == 0 ||
			(o = hash_search(by_inode, &c->inode, HASH_FIND, NULL)) == NULL ||
			(p = hash_search(by_pid, &o->pid, HASH_FIND, NULL)) == NULL)
			continue;
		c->pid = o->pid;
		outgoing[p->index] = lappend(outgoing[p->index], c);
	}
	return nrecorded;
}

/*
 * The slots of the server processes "pids" (-1 for one that has exited), in
 * one pass over the processes (a slot is its process's number), without a
 * lock: a pid is read whole, and the asker checks it again as it asks
 * (SendProcSignal(), take_answer()).
 */
static void
pid_slots(int npids, const int *pids, int *slots)
{
	HTAB	   *by_pid = pid_table(npids);

	for (int i = 0; i < npids; i++)
	{
		slots[i] = -1;
		((MptcpPidEntry *) hash_search(by_pid, &pids[i], HASH_ENTER, NULL))->index = i;
	}
	for (int s = 0; s < mptcp_report_shared->nslots; s++)
	{
		int			pid = MPTCP_PROC_PID(GetPGProcByNumber(s));
		MptcpPidEntry *p;

		if (pid != 0 &&
			(p = hash_search(by_pid, &pid, HASH_FIND, NULL)) != NULL)
			slots[p->index] = s;
	}
	hash_destroy(by_pid);
}

/* what the asker knows of one process */
typedef enum
{
	ASK_DONE,					/* the report is in, or never will be */
	ASK_SEND,					/* to be signalled */
	ASK_WAIT,					/* signalled, by us or another asker */
} MptcpAskState;

/*
 * Take a slot's answer if it is the one wanted.  A process that has begun to
 * exit, or has exited (its PGPROC is free, or another's), is given up at
 * once: it answers no more.  Returns whether the asker needs to wait no
 * more for it.
 */
static bool
take_answer(MptcpReportSlot *slot, int slotno, int pid, uint64 wanted,
			MptcpReport *report)
{
	MptcpSlotCopy copy;
	bool		exiting;

	/* (first: its last answer, if any, is in the slot by then) */
	exiting = pg_atomic_read_u32(&slot->exited_pid) == (uint32) pid;
	pg_read_barrier();
	mptcp_report_read_slot(slot, &copy, NULL);
	if (copy.pid == pid && copy.answered >= wanted)
	{
		/* (it may have answered a newer request meanwhile: as good) */
		mptcp_report_read_slot(slot, &copy, report);
		if (copy.pid == pid)
			return true;
		report->status = MPTCP_REPORT_NO_ANSWER;	/* (another's, copied) */
	}
	if (exiting || MPTCP_PROC_PID(GetPGProcByNumber(slotno)) != pid)
	{
		report->status = MPTCP_REPORT_GONE;
		return true;
	}
	return false;
}

/*
 * The reports of the processes "pids" (server processes holding MPTCP
 * connections), of their client's connection and those they opened.  Asks
 * each at most once, reuses a report younger than a second that has every
 * connection they opened, and waits a bounded time.  Returns one report per
 * pid, in the order given; a missing one says why in its status.
 */
static MptcpReport **
mptcp_report_collect(int npids, const int *pids, MptcpSubflowStats *stats)
{
	MptcpReport **reports = palloc0(sizeof(MptcpReport *) * npids);
	int		   *slots = palloc(sizeof(int) * npids);
	uint64	   *wanted = palloc0(sizeof(uint64) * npids);
	MptcpAskState *state = palloc(sizeof(MptcpAskState) * npids);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz deadline;

	for (int i = 0; i < npids; i++)
	{
		reports[i] = palloc0(sizeof(MptcpReport));
		reports[i]->status = mptcp_report_shared == NULL ?
			MPTCP_REPORT_NOT_LOADED : MPTCP_REPORT_NO_ANSWER;
		state[i] = ASK_DONE;
	}
	if (mptcp_report_shared != NULL && npids > 0)
		pid_slots(npids, pids, slots);
	if (mptcp_report_shared == NULL || npids == 0)
		return reports;

	if (report_wait_event == 0)
		report_wait_event = WaitEventExtensionNew("MptcpinfoReport");

	/* first what needs no asking, and who is to be asked */
	for (int i = 0; i < npids; i++)
	{
		MptcpReportSlot *slot;
		MptcpSlotCopy copy;
		TimestampTz requested_at;

#ifdef USE_MPTCP
		/* our own sockets need no asking */
		if (pids[i] == MyProcPid)
		{
			mptcp_report_gather_own(reports[i]);
			continue;
		}
#endif
		slot = slots[i] < 0 ? NULL : &mptcp_report_shared->slots[slots[i]];
		if (slot == NULL ||
			pg_atomic_read_u32(&slot->exited_pid) == (uint32) pids[i])
		{
			reports[i]->status = MPTCP_REPORT_GONE;
			stats->gone++;
			continue;
		}
		mptcp_report_read_slot(slot, &copy, reports[i]);

		/*
		 * A recent report serves, but not if the process has opened a
		 * connection since: the report would not have that connection, which
		 * would then look closed.  (The caller found it recorded in the slot,
		 * so "nopened" counts it by now.)
		 */
		if (copy.pid == pids[i] &&
			copy.answered_at > now - REPORT_REUSE_MS * INT64CONST(1000) &&
			copy.answered_nopened == copy.nopened)
		{
			stats->reused++;
			continue;
		}
		memset(reports[i], 0, offsetof(MptcpReport, subflows));
		reports[i]->status = MPTCP_REPORT_NO_ANSWER;
		wanted[i] = pg_atomic_read_u64(&slot->requested);
		pg_read_barrier();
		requested_at = pg_atomic_read_u64(&slot->requested_at);

		/*
		 * (only a request for this process: one for the slot's previous
		 * process, which exited before it was signalled, is never answered)
		 */
		if (wanted[i] > copy.answered &&
			pg_atomic_read_u32(&slot->requested_pid) == (uint32) pids[i] &&
			requested_at > now - REPORT_TIMEOUT_MS * INT64CONST(1000))
		{
			/* another asker's request is on its way: wait for its answer */
			state[i] = ASK_WAIT;
			stats->joined++;
			continue;
		}
		state[i] = ASK_SEND;
	}

	/* (t/008 holds an asker here, between reading "requested" and moving it) */
	INJECTION_POINT("mptcpinfo-ask-before-request", NULL);

	/* then ask them all */
	for (int i = 0; i < npids; i++)
	{
		MptcpReportSlot *slot;
		uint64		seen;
		bool		made;

		if (state[i] != ASK_SEND)
			continue;
		slot = &mptcp_report_shared->slots[slots[i]];
		pg_atomic_write_u64(&slot->requested_at, (uint64) now);
		pg_atomic_write_u32(&slot->requested_pid, (uint32) pids[i]);

		/*
		 * The asker that moves "requested" on from the value it saw makes the
		 * request.  If another one has moved it since, wait for that
		 * request's answer, but signal the process too: the other asker may
		 * have asked for the slot's previous process, which exited, and then
		 * nobody else tells this one (a process finds a second signal's
		 * request answered already).  (A full barrier: the writes above are
		 * seen before the request.)
		 */
		seen = wanted[i];
		made = pg_atomic_compare_exchange_u64(&slot->requested, &seen, seen + 1);
		wanted[i] = made ? seen + 1 : seen;
		if (SendProcSignal(pids[i], PROCSIG_MPTCP_REPORT, slots[i]) < 0)
		{
			reports[i]->status = MPTCP_REPORT_GONE;
			state[i] = ASK_DONE;
			stats->gone++;
			continue;
		}
		state[i] = ASK_WAIT;
		if (made)
			stats->asked++;
		else
			stats->joined++;
	}

	/*
	 * And wait for each in turn, on its slot's condition variable: an answer
	 * wakes only those who wait for it, and an asker looks at a slot only
	 * when its process has answered, not at every slot at each answer of any.
	 * Once the time is up, what has come is taken without waiting.
	 */
	deadline = TimestampTzPlusMilliseconds(now, REPORT_TIMEOUT_MS);
	for (int i = 0; i < npids; i++)
	{
		MptcpReportSlot *slot;

		if (state[i] != ASK_WAIT)
			continue;
		slot = &mptcp_report_shared->slots[slots[i]];
		for (;;)
		{
			long		remaining;

			if (take_answer(slot, slots[i], pids[i], wanted[i], reports[i]))
			{
				state[i] = ASK_DONE;
				if (reports[i]->status == MPTCP_REPORT_GONE)
					stats->gone++;
				break;
			}
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
														deadline);
			if (remaining <= 0)
				break;
			/* (woken by its answer, or as it begins to exit) */
			(void) ConditionVariableTimedSleep(&slot->answered, remaining,
											   report_wait_event);
		}
	}
	ConditionVariableCancelSleep();

	pfree(slots);
	pfree(wanted);
	pfree(state);
	return reports;
}

/* why reports did not describe some connections, for the NOTICEs */
typedef enum MptcpUnreported
{
	UNREPORTED_NOT_LOADED,
	UNREPORTED_NO_ANSWER,
	UNREPORTED_FAILED,
	UNREPORTED_UNSUPPORTED,
	UNREPORTED_REASONS,
} MptcpUnreported;

/* (n: the connections that the message counts, which "it" or "them" are) */
static int
unreported_errdetail(MptcpUnreported why, int n)
{
	switch (why)
	{
		case UNREPORTED_NOT_LOADED:
			return errdetail("Before Linux 6.15, the kernel shows the subflows of a connection without privileges only to the process that holds it, and mptcpinfo asks that process only when it is loaded at server start.");
		case UNREPORTED_NO_ANSWER:
			return errdetail_plural("The server process holding it did not answer within the time allowed.",
									"The server processes holding them did not answer within the time allowed.",
									n);
		case UNREPORTED_FAILED:
			return errdetail_plural("Asking the kernel about it failed: %m.",
									"Asking the kernel about them failed: %m.",
									n);
		default:
			return errdetail("The kernel describes the subflows of a connection to the process holding it from Linux 5.16 on.");
	}
}

/*
 * Ask the processes holding the connections still SUBFLOWS_NOT_DUMPED which
 * TCP sockets are theirs, and look those up; where that fails, the
 * connection is SUBFLOWS_UNREPORTED and a NOTICE says why.
 */
static void
report_subflows(MptcpDiag *diag, MptcpConnSubflows *conns, int n,
				MptcpSubflowStats *stats)
{
	int		   *pids = palloc(sizeof(int) * (n + 1));
	int			npids = 0;
	int			r = 0;
	int			nends = 0;
	int		   *first;
	const MptcpSockEnds **ends;
	MptcpSubflow **found;
	MptcpReport **reports;
	int			unreported[UNREPORTED_REASONS] = {0};
	int			failed_errno = 0;
	int			ntruncated = 0;
	int			last_truncated = -1;

	/* (a process's connections are adjacent: pids[] follows them) */
	for (int k = 0; k < n; k++)
	{
		int			pid = conns[k].row->beentry->st_procpid;

		if (conns[k].unknown == SUBFLOWS_NOT_DUMPED &&
			(npids == 0 || pids[npids - 1] != pid))
			pids[npids++] = pid;
	}
	reports = mptcp_report_collect(npids, pids, stats);

	/* the TCP sockets of the subflows reported, looked up by their ends */
	first = palloc(sizeof(int) * (n + 1));
	ends = palloc(sizeof(MptcpSockEnds *) * (npids + 1) * MPTCP_REPORT_MAX_SUBFLOWS);
	for (int k = 0; k < n; k++)
	{
		MptcpReport *rep;

		first[k] = nends;
		if (conns[k].unknown != SUBFLOWS_NOT_DUMPED)
			continue;
		while (pids[r] != conns[k].row->beentry->st_procpid)
			r++;
		rep = reports[r];
		for (int i = 0; i < rep->nsubflows; i++)
			if (rep->subflows[i].inode == conns[k].row->conn->inode)
				ends[nends++] = &rep->subflows[i].ends;
		/* (counted once per process, at its first connection) */
		if (rep->nmissing > 0 && r != last_truncated)
		{
			ntruncated++;
			last_truncated = r;
		}
		conns[k].unknown = SUBFLOWS_UNREPORTED;
		if (first[k] < nends)
			conns[k].unknown = SUBFLOWS_KNOWN;
		else if (rep->status == MPTCP_REPORT_NOT_LOADED)
			unreported[UNREPORTED_NOT_LOADED]++;
		else if (rep->status == MPTCP_REPORT_NO_ANSWER)
			unreported[UNREPORTED_NO_ANSWER]++;
		else if (rep->status == MPTCP_REPORT_FAILED)
		{
			unreported[UNREPORTED_FAILED]++;
			failed_errno = rep->sys_errno;
		}
		else if (rep->status == MPTCP_REPORT_OK && rep->nunsupported > 0)
			unreported[UNREPORTED_UNSUPPORTED]++;
		else if (rep->status == MPTCP_REPORT_GONE || rep->nmissing == 0)
			conns[k].unknown = SUBFLOWS_CLOSED; /* since we looked */
	}
	first[n] = nends;
	found = palloc(sizeof(MptcpSubflow *) * (nends + 1));
	mptcp_lookup_ends(diag, nends, ends, found);
	for (int k = 0; k < n; k++)
	{
		for (int i = first[k]; i < first[k + 1]; i++)
		{
			MptcpSubflow *s = found[i];

			if (s == NULL)
			{
				/* closed since it was reported: its ends only (state 0) */
				s = palloc0(sizeof(MptcpSubflow));
				s->ends = *ends[i];
			}
			conns[k].subflows = lappend(conns[k].subflows, s);
		}
	}

	for (int i = 0; i < UNREPORTED_REASONS; i++)
	{
		if (unreported[i] == 0)
			continue;
		errno = failed_errno;
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   unreported[i], unreported[i]),
				 unreported_errdetail((MptcpUnreported) i, unreported[i]),
				 i == UNREPORTED_NOT_LOADED ?
				 errhint("Add \"mptcpinfo\" to \"shared_preload_libraries\" and restart the server.") : 0));
	}
	if (ntruncated > 0)
		ereport(NOTICE,
				(errmsg_plural("not all subflows of %d server process are shown",
							   "not all subflows of %d server processes are shown",
							   ntruncated, ntruncated),
				 errdetail("A process reports at most %d subflows.",
						   MPTCP_REPORT_MAX_SUBFLOWS)));
}

/* mptcpinfo.subflow_source */
typedef enum
{
	SUBFLOW_SOURCE_AUTO,		/* ask the kernel, then the processes */
	SUBFLOW_SOURCE_PROCESSES,	/* always ask the processes */
} MptcpSubflowSourceOption;

static const struct config_enum_entry subflow_source_options[] = {
	{"auto", SUBFLOW_SOURCE_AUTO, false},
	{"processes", SUBFLOW_SOURCE_PROCESSES, false},
	{NULL, 0, false}
};

static int	subflow_source = SUBFLOW_SOURCE_AUTO;

static bool
processes_alone(void)
{
	return subflow_source == SUBFLOW_SOURCE_PROCESSES;
}

static const MptcpSubflowSource report_source = {
	.before_dump = false,
	.alone = processes_alone,
	.describe = report_subflows,
};

static const MptcpOutgoingSource opened_source = {
	.by_inode = true,
	.families = opened_families,
	.claim = claim_opened,
};

void
mptcp_ask_init(void)
{
	DefineCustomEnumVariable("mptcpinfo.subflow_source",
							 "Where pg_stat_mptcp_subflows learns which TCP sockets are subflows.",
							 "\"auto\" asks the kernel for each subflow's socket where the connection's ends or an earlier query tell which it is, and otherwise reads the kernel's socket dump where it shows them (Linux 6.15) or asks the server processes holding the connections; \"processes\" always asks them.",
							 &subflow_source,
							 SUBFLOW_SOURCE_AUTO,
							 subflow_source_options,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("mptcpinfo");
	mptcp_subflows_add_source(&report_source);
	mptcp_outgoing_add_source(&opened_source);
	if (process_shared_preload_libraries_in_progress)
		mptcp_report_init();
}
