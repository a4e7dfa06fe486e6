/*-------------------------------------------------------------------------
 *
 * mptcp_report.c
 *	  Which TCP sockets are the subflows of an MPTCP connection, as the
 *	  process holding the connection reports them.
 *
 * Socket diagnostics give every TCP socket's figures to anybody, but say
 * which ones are the subflows of which MPTCP connection only to
 * CAP_NET_ADMIN before Linux 6.15, and a packaged server does not have it.
 * Without privileges, only a process holding a connection's socket can ask
 * the kernel (getsockopt() MPTCP_SUBFLOW_ADDRS, Linux 5.16).
 *
 * So, only for the connections that the dump could not describe, the
 * querying backend asks the processes holding them, with
 * PROCSIG_MPTCP_REPORT.  At its next CHECK_FOR_INTERRUPTS(), or while it
 * waits for its client, such a process lists the subflows of its client's
 * connection and of the connections it opened itself, writes them in its
 * slot of shared memory and wakes the askers (a condition variable,
 * broadcast).  The figures come from the asker's lookups of those sockets.
 *
 * Which connections a process opened, nothing else tells: the dumps do not
 * say who holds a socket.  So each process records its own in its slot as
 * it opens them (mptcp_opened_hook, called where server processes open
 * libpq connections), and pg_stat_mptcp finds them there, on any kernel.
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
 * A slot is written by its process alone, with a change count around the
 * write (as PgBackendStatus is), and read by copying it without a lock.
 * It takes about 1 kB, one per process slot (MaxBackends plus the
 * auxiliary processes), and needs mptcpinfo in shared_preload_libraries.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_report.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include "libpq/libpq-be.h"
#include "libpq/mptcp.h"
#include "libpq/mptcp_report.h"
#include "miscadmin.h"
#include "mptcp_report.h"
#include "mptcp_subflows.h"
#include "mptcpinfo.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/procsignal.h"
#include "storage/shmem.h"
#include "utils/backend_status.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

/* how long the asker waits for all reports, in milliseconds */
#define REPORT_TIMEOUT_MS 2000

/* a report this recent is used without asking again */
#define REPORT_REUSE_MS 1000

/* what a slot's process writes, but the report itself: askers copy it */
typedef struct SlotCopy
{
	int			pid;			/* who answered */
	uint64		answered;		/* the "requested" value last answered */
	TimestampTz answered_at;
	uint32		answered_nopened;	/* "nopened" then */
	int			opened_pid;		/* who recorded "opened" */
	uint32		nopened;		/* sockets recorded in "opened" so far */
	uint64		opened[MPTCP_REPORT_MAX_OPENED];	/* inodes, 0 if free */
} SlotCopy;

/* a process's slot, at its ProcNumber */
typedef struct ReportSlot
{
	/* written by askers */
	pg_atomic_uint64 requested; /* bumped by each request */
	pg_atomic_uint64 requested_at;	/* TimestampTz of the last one */

	/* the pid of the slot's process once it has answered for the last time */
	pg_atomic_uint32 exited_pid;

	/* written by the slot's process; odd while it writes */
	pg_atomic_uint32 changecount;
	SlotCopy	written;
	MptcpReport report;
} ReportSlot;

typedef struct ReportShared
{
	int			nslots;
	ConditionVariable answered; /* broadcast after each answer */
	pg_atomic_uint32 opened_families;	/* MPTCP_DIAG_CONNS_* of every socket
										 * ever recorded as opened */
	ReportSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} ReportShared;

static ReportShared *report_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static mptcp_report_hook_type prev_report_hook = NULL;
static uint32 report_wait_event = 0;

static int
report_nslots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

static Size
report_shmem_size(void)
{
	return add_size(offsetof(ReportShared, slots),
					mul_size(report_nslots(), sizeof(ReportSlot)));
}

static void
report_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(report_shmem_size());
}

static void
report_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	report_shared = ShmemInitStruct("mptcpinfo reports", report_shmem_size(),
									&found);
	if (!found)
	{
		report_shared->nslots = report_nslots();
		ConditionVariableInit(&report_shared->answered);
		pg_atomic_init_u32(&report_shared->opened_families, 0);
		for (int i = 0; i < report_shared->nslots; i++)
		{
			ReportSlot *slot = &report_shared->slots[i];

			memset(&slot->written, 0, sizeof(slot->written));
			pg_atomic_init_u64(&slot->requested, 0);
			pg_atomic_init_u64(&slot->requested_at, 0);
			pg_atomic_init_u32(&slot->changecount, 0);
			pg_atomic_init_u32(&slot->exited_pid, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* the slot's process writes between these two, as pgstat_report_* do */
static void
begin_write(ReportSlot *slot)
{
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
	pg_write_barrier();
}

static void
end_write(ReportSlot *slot)
{
	pg_write_barrier();
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
}

/*
 * Copy a slot without a lock: retry while its process writes.  The report
 * too if "report" is not NULL.
 */
static void
read_slot(ReportSlot *slot, SlotCopy *copy, MptcpReport *report)
{
	for (;;)
	{
		uint32		before = pg_atomic_read_u32(&slot->changecount);

		pg_read_barrier();
		*copy = slot->written;
		if (report != NULL)
		{
			int			n = Min(Max(slot->report.nsubflows, 0),
								MPTCP_REPORT_MAX_SUBFLOWS);

			memcpy(report, &slot->report, offsetof(MptcpReport, subflows) +
				   n * sizeof(MptcpReportedSubflow));
			report->nsubflows = n;
		}
		pg_read_barrier();
		if (before % 2 == 0 &&
			before == pg_atomic_read_u32(&slot->changecount))
			break;
		CHECK_FOR_INTERRUPTS();
	}
}

/* this process's slot, if mptcpinfo is preloaded */
static ReportSlot *
my_slot(void)
{
	if (report_shared == NULL || MyProcNumber < 0 ||
		MyProcNumber >= report_shared->nslots)
		return NULL;
	return &report_shared->slots[MyProcNumber];
}

#ifdef USE_MPTCP

/* the Linux UAPI (include/uapi/linux/mptcp.h), for older headers */
#define SOL_MPTCP_OPT_SUBFLOW_ADDRS 3	/* MPTCP_SUBFLOW_ADDRS, Linux 5.16 */

/* struct mptcp_subflow_data: the header of the array */
typedef struct SubflowData
{
	uint32		size_subflow_data;
	uint32		num_subflows;
	uint32		size_kernel;
	uint32		size_user;
} SubflowData;					/* (16 bytes, as the kernel's aligned(8) one) */

/* struct mptcp_subflow_addrs */
typedef struct SubflowAddrs
{
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
} SubflowAddrs;

/* what a process gathers; static, as it answers from ProcessInterrupts() */
static MptcpReport local_report;

/* does this getsockopt() errno mean "no such option here"? */
#define OPTION_UNKNOWN(e) ((e) == EOPNOTSUPP || (e) == ENOPROTOOPT || (e) == EINVAL)

/* a reported subflow whose local address is unspecified */
static bool
closed_subflow(const MptcpSockEnds *ends)
{
	return memcmp(ends->local, mptcp_any4_mapped, 16) == 0 ||
		memcmp(ends->local, mptcp_any6_mapped, 16) == 0;
}

/* describe one MPTCP socket of this process into r */
static void
report_socket(int fd, uint64 inode, MptcpReport *r)
{
	static union
	{
		SubflowData hdr;
		char		buf[sizeof(SubflowData) + MPTCP_REPORT_MAX_SUBFLOWS * sizeof(SubflowAddrs)];
	}			addrs;
	socklen_t	len = sizeof(addrs);
	uint32		n;
	uint32		size;

	memset(&addrs.hdr, 0, sizeof(addrs.hdr));
	addrs.hdr.size_subflow_data = sizeof(SubflowData);
	addrs.hdr.size_user = sizeof(SubflowAddrs);
	if (getsockopt(fd, SOL_MPTCP, SOL_MPTCP_OPT_SUBFLOW_ADDRS, &addrs, &len) < 0)
	{
		if (OPTION_UNKNOWN(errno))
			r->nunsupported++;	/* the asker tells fallback from old kernel */
		else
		{
			r->status = MPTCP_REPORT_FAILED;
			r->sys_errno = errno;
		}
		return;
	}
	size = Min(addrs.hdr.size_user, addrs.hdr.size_kernel);
	n = Min(addrs.hdr.num_subflows,
			(len - sizeof(SubflowData)) / Max(addrs.hdr.size_user, 1));
	for (uint32 i = 0; i < addrs.hdr.num_subflows; i++)
	{
		const SubflowAddrs *a = (const SubflowAddrs *)
			(addrs.buf + sizeof(SubflowData) + i * addrs.hdr.size_user);
		MptcpReportedSubflow *s;

		if (i >= n || r->nsubflows >= MPTCP_REPORT_MAX_SUBFLOWS ||
			size < sizeof(SubflowAddrs))
		{
			r->nmissing++;
			continue;
		}
		s = &r->subflows[r->nsubflows];
		memset(s, 0, sizeof(*s));
		s->inode = inode;
		(void) mptcp_sockaddr_to_mapped(&a->local, s->ends.local,
										&s->ends.local_port, &s->ends.family);
		(void) mptcp_sockaddr_to_mapped(&a->remote, s->ends.remote,
										&s->ends.remote_port, &s->ends.family);

		/*
		 * A closed initial subflow can stay listed (6.12 does), its local
		 * address reset: it is no subflow any more.
		 */
		if (!closed_subflow(&s->ends))
			r->nsubflows++;
	}
}

/* is fd an MPTCP socket?  Its inode too. */
static bool
fd_is_mptcp(int fd, uint64 *inode)
{
	struct stat st;
	int			protocol;
	socklen_t	len = sizeof(protocol);

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0 ||
		protocol != IPPROTO_MPTCP)
		return false;
	*inode = (uint64) st.st_ino;
	return true;
}

/* the descriptors of our slot's "opened" entries */
static int	opened_fd[MPTCP_REPORT_MAX_OPENED];

/* is entry i of our slot still the socket it was when recorded? */
static bool
still_open(ReportSlot *slot, int i)
{
	struct stat st;

	return slot->written.opened_pid == MyProcPid &&
		slot->written.opened[i] != 0 &&
		fstat(opened_fd[i], &st) == 0 && S_ISSOCK(st.st_mode) &&
		(uint64) st.st_ino == slot->written.opened[i];
}

/*
 * Gather this process's MPTCP sockets: its client's connection, known
 * without looking, and those it opened and recorded.  Runs in
 * ProcessInterrupts(): it must not throw, so no palloc and no ereport.
 */
static void
gather_own_sockets(MptcpReport *r)
{
	static int	client_fd = -1;
	static uint64 client_inode = 0;
	ReportSlot *slot = my_slot();

	memset(r, 0, offsetof(MptcpReport, subflows));
	r->status = MPTCP_REPORT_OK;

	/* (the client's socket stays the same for the life of the process) */
	if (client_fd < 0 && MyProcPort != NULL &&
		MyProcPort->sock != PGINVALID_SOCKET &&
		fd_is_mptcp(MyProcPort->sock, &client_inode))
		client_fd = MyProcPort->sock;
	if (client_fd >= 0)
		report_socket(client_fd, client_inode, r);
	for (int i = 0; slot != NULL && i < MPTCP_REPORT_MAX_OPENED; i++)
	{
		if (still_open(slot, i))
			report_socket(opened_fd[i], slot->written.opened[i], r);
	}
}

static mptcp_opened_hook_type prev_opened_hook = NULL;

/*
 * mptcp_opened_hook: record an MPTCP socket that this process opened, in an
 * entry of its slot whose socket it has closed since.
 */
static void
note_opened_socket(int sock)
{
	ReportSlot *slot = my_slot();
	uint64		inode;
	int			domain;
	socklen_t	len = sizeof(domain);
	int			i = 0;

	if (prev_opened_hook)
		prev_opened_hook(sock);
	if (slot == NULL || !fd_is_mptcp(sock, &inode))
		return;
	/* the views read this family's connections from now on (both if unsure) */
	pg_atomic_fetch_or_u32(&report_shared->opened_families,
						   getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ?
						   MPTCP_DIAG_CONNS : MPTCP_DIAG_CONNS_OF(domain));
	while (i < MPTCP_REPORT_MAX_OPENED && still_open(slot, i))
		i++;
	if (i == MPTCP_REPORT_MAX_OPENED)
	{
		ereport(LOG,
				(errmsg("mptcpinfo cannot record more than %d MPTCP connections opened by one process",
						MPTCP_REPORT_MAX_OPENED),
				 errdetail("pg_stat_mptcp does not show the connection opened last by process %d.",
						   MyProcPid)));
		return;
	}
	begin_write(slot);
	if (slot->written.opened_pid != MyProcPid)
	{
		/* (those of the slot's previous process) */
		memset(slot->written.opened, 0, sizeof(slot->written.opened));
		slot->written.opened_pid = MyProcPid;
	}
	slot->written.opened[i] = inode;
	slot->written.nopened++;
	end_write(slot);
	opened_fd[i] = sock;
}
#endif							/* USE_MPTCP */

/*
 * mptcp_report_hook: answer the askers.  At the start of proc_exit(), answer
 * only what is pending, then tell the askers that this process will not
 * answer again: its exit callbacks can take seconds with interrupts held.
 */
static void
answer_report_request(void)
{
	ReportSlot *slot;
	uint64		requested;

	if (prev_report_hook)
		prev_report_hook();
	slot = my_slot();
	if (slot == NULL)
		return;
	requested = pg_atomic_read_u64(&slot->requested);
	/* (at exit, with nothing pending, only the last words below) */
	if (!(proc_exit_inprogress &&
		  slot->written.pid == MyProcPid && slot->written.answered >= requested))
	{
#ifdef USE_MPTCP
		gather_own_sockets(&local_report);
#endif
		begin_write(slot);
#ifdef USE_MPTCP
		memcpy(&slot->report, &local_report,
			   offsetof(MptcpReport, subflows) +
			   local_report.nsubflows * sizeof(MptcpReportedSubflow));
#endif
		slot->written.pid = MyProcPid;
		slot->written.answered = requested;
		slot->written.answered_at = GetCurrentTimestamp();
		slot->written.answered_nopened = slot->written.nopened;
		end_write(slot);
	}
	/* (after the answer: an asker that sees this has the answer too) */
	if (proc_exit_inprogress)
		pg_atomic_write_u32(&slot->exited_pid, (uint32) MyProcPid);

	ConditionVariableBroadcast(&report_shared->answered);
}

void
mptcp_report_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = report_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = report_shmem_startup;
	prev_report_hook = mptcp_report_hook;
	mptcp_report_hook = answer_report_request;
#ifdef USE_MPTCP
	prev_opened_hook = mptcp_opened_hook;
	mptcp_opened_hook = note_opened_socket;
#endif
}

/* the MPTCP sockets that running server processes recorded, by inode */
static HTAB *
opened_sockets(int *nrecorded)
{
	HTAB	   *by_inode = NULL;
	HASHCTL		ctl;
	SlotCopy	copy;

	*nrecorded = 0;
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(MptcpOpenedSocket);
	ctl.hcxt = CurrentMemoryContext;
	for (int s = 0; s < report_shared->nslots; s++)
	{
		ReportSlot *slot = &report_shared->slots[s];

		/* (a glance first: most processes opened nothing) */
		if (slot->written.opened_pid == 0)
			continue;
		read_slot(slot, &copy, NULL);
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

int
mptcp_report_opened_families(void)
{
	return report_shared == NULL ? 0 :
		(int) pg_atomic_read_u32(&report_shared->opened_families);
}

/* a backend of the snapshot, by pid */
typedef struct PidEntry
{
	int			pid;
	int			index;			/* of its backend status entry */
} PidEntry;

int
mptcp_report_claim_opened(MptcpDiag *diag, int num_backends,
						  bool all_outgoing, List **outgoing)
{
	int			nrecorded;
	HTAB	   *by_inode;
	HTAB	   *by_pid;
	HASHCTL		ctl;
	ListCell   *lc;

	if (report_shared == NULL)
		return -1;
	if ((by_inode = opened_sockets(&nrecorded)) == NULL)
		return nrecorded;
	ctl.keysize = sizeof(int);
	ctl.entrysize = sizeof(PidEntry);
	ctl.hcxt = CurrentMemoryContext;
	by_pid = hash_create("mptcpinfo pids", Max(num_backends, 16), &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;

		if (beentry->st_procpid != 0 &&
			(all_outgoing || beentry->st_backendType == B_WAL_RECEIVER))
			((PidEntry *) hash_search(by_pid, &beentry->st_procpid,
									  HASH_ENTER, NULL))->index = i;
	}
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);
		MptcpOpenedSocket *o;
		PidEntry   *p;

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

/* the slot of a server process, or -1 */
static int
pid_slot(int pid)
{
	PGPROC	   *proc = BackendPidGetProc(pid);
	int			procno;

	if (proc == NULL)
		proc = AuxiliaryPidGetProc(pid);
	if (proc == NULL)
		return -1;
	procno = GetNumberFromPGProc(proc);
	return procno < report_shared->nslots ? procno : -1;
}

/* what the asker knows of one process */
typedef enum
{
	ASK_DONE,					/* the report is in, or never will be */
	ASK_SEND,					/* to be signalled */
	ASK_WAIT,					/* signalled, by us or another asker */
} AskState;

/*
 * Take a slot's answer if it is the one wanted.  A process that has begun to
 * exit, or has exited (its PGPROC is free, or another's), is given up at
 * once: it answers no more.  Returns whether the asker needs to wait no
 * more for it.
 */
static bool
take_answer(ReportSlot *slot, int slotno, int pid, uint64 wanted,
			MptcpReport *report)
{
	SlotCopy	copy;
	bool		exiting;

	/* (first: its last answer, if any, is in the slot by then) */
	exiting = pg_atomic_read_u32(&slot->exited_pid) == (uint32) pid;
	pg_read_barrier();
	read_slot(slot, &copy, NULL);
	if (copy.pid == pid && copy.answered >= wanted)
	{
		/* (it may have answered a newer request meanwhile: as good) */
		read_slot(slot, &copy, report);
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
mptcp_report_collect(int npids, const int *pids, MptcpReportStats *stats)
{
	MptcpReport **reports = palloc0(sizeof(MptcpReport *) * npids);
	int		   *slots = palloc(sizeof(int) * npids);
	uint64	   *wanted = palloc0(sizeof(uint64) * npids);
	AskState   *state = palloc(sizeof(AskState) * npids);
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz deadline;

	memset(stats, 0, sizeof(*stats));
	for (int i = 0; i < npids; i++)
	{
		reports[i] = palloc0(sizeof(MptcpReport));
		reports[i]->status = report_shared == NULL ?
			MPTCP_REPORT_NOT_LOADED : MPTCP_REPORT_NO_ANSWER;
		state[i] = ASK_DONE;
	}
	if (report_shared == NULL || npids == 0)
		return reports;

	if (report_wait_event == 0)
		report_wait_event = WaitEventExtensionNew("MptcpinfoReport");

	/* first what needs no asking, and who is to be asked */
	for (int i = 0; i < npids; i++)
	{
		ReportSlot *slot;
		SlotCopy	copy;
		TimestampTz requested_at;

#ifdef USE_MPTCP
		/* our own sockets need no asking */
		if (pids[i] == MyProcPid)
		{
			gather_own_sockets(reports[i]);
			continue;
		}
#endif
		slots[i] = pid_slot(pids[i]);
		slot = slots[i] < 0 ? NULL : &report_shared->slots[slots[i]];
		if (slot == NULL ||
			pg_atomic_read_u32(&slot->exited_pid) == (uint32) pids[i])
		{
			reports[i]->status = MPTCP_REPORT_GONE;
			stats->gone++;
			continue;
		}
		read_slot(slot, &copy, reports[i]);

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
		requested_at = pg_atomic_read_u64(&slot->requested_at);
		if (wanted[i] > copy.answered &&
			requested_at > now - REPORT_TIMEOUT_MS * INT64CONST(1000))
		{
			/* another asker's request is on its way: wait for its answer */
			state[i] = ASK_WAIT;
			stats->joined++;
			continue;
		}
		state[i] = ASK_SEND;
	}

	/* then ask them all, and wait once */
	ConditionVariablePrepareToSleep(&report_shared->answered);
	for (int i = 0; i < npids; i++)
	{
		ReportSlot *slot;
		uint64		seen;

		if (state[i] != ASK_SEND)
			continue;
		slot = &report_shared->slots[slots[i]];
		pg_atomic_write_u64(&slot->requested_at, (uint64) now);

		/*
		 * Only the asker that moves "requested" on from the value it saw
		 * sends the signal.  If another one has moved it since, that one's
		 * request is on its way: wait for its answer.  (A full barrier: the
		 * write above is seen before the request.)
		 */
		seen = wanted[i];
		if (!pg_atomic_compare_exchange_u64(&slot->requested, &seen, seen + 1))
		{
			wanted[i] = seen;
			state[i] = ASK_WAIT;
			stats->joined++;
			continue;
		}
		wanted[i] = seen + 1;
		if (SendProcSignal(pids[i], PROCSIG_MPTCP_REPORT, slots[i]) < 0)
		{
			reports[i]->status = MPTCP_REPORT_GONE;
			state[i] = ASK_DONE;
			stats->gone++;
			continue;
		}
		state[i] = ASK_WAIT;
		stats->asked++;
	}

	deadline = TimestampTzPlusMilliseconds(now, REPORT_TIMEOUT_MS);
	for (;;)
	{
		long		remaining;
		int			pending = 0;

		for (int i = 0; i < npids; i++)
		{
			if (state[i] != ASK_WAIT)
				continue;
			if (take_answer(&report_shared->slots[slots[i]], slots[i],
							pids[i], wanted[i], reports[i]))
			{
				state[i] = ASK_DONE;
				if (reports[i]->status == MPTCP_REPORT_GONE)
					stats->gone++;
			}
			else
				pending++;
		}
		if (pending == 0)
			break;
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
													deadline);
		if (remaining <= 0)
			break;

		/*
		 * Woken by every answer, ours or other askers', and by every process
		 * that begins to exit
		 */
		(void) ConditionVariableTimedSleep(&report_shared->answered,
										   remaining, report_wait_event);
	}
	ConditionVariableCancelSleep();

	pfree(slots);
	pfree(wanted);
	pfree(state);
	return reports;
}

/* why reports did not describe some connections, for the NOTICEs */
typedef enum Unreported
{
	UNREPORTED_NOT_LOADED,
	UNREPORTED_NO_ANSWER,
	UNREPORTED_FAILED,
	UNREPORTED_UNSUPPORTED,
	UNREPORTED_REASONS,
} Unreported;

/* (n: the connections that the message counts, which "it" or "them" are) */
static int
unreported_errdetail(Unreported why, int n)
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

void
mptcp_report_subflows(MptcpDiag *diag, ConnSubflows *conns, int n,
					  MptcpReportStats *stats)
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
	mptcp_diag_lookup(diag, nends, ends, found);
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
				 unreported_errdetail((Unreported) i, unreported[i]),
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
