/*-------------------------------------------------------------------------
 *
 * mptcp_report.c
 *	  Which TCP sockets are the subflows of an MPTCP connection, as the
 *	  process holding the connection reports them: the processes' side.
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
 * slot of shared memory and wakes the askers (its slot's condition
 * variable, broadcast).  The figures come from the asker's lookups of
 * those sockets.
 *
 * Which connections a process opened, nothing else tells: the dumps do not
 * say who holds a socket.  So each process records its own in its slot as
 * it opens them (mptcp_opened_hook, called where server processes open
 * libpq connections), and pg_stat_mptcp finds them there, on any kernel.
 *
 * This file has the slots and what each process does in its own; the
 * askers' side, and its bounds, is in mptcp_ask.c.  A slot is written by its process alone, with a change count around the
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
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/condition_variable.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

MptcpReportShared *mptcp_report_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static mptcp_report_hook_type prev_report_hook = NULL;

static int
report_nslots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

static Size
report_shmem_size(void)
{
	return add_size(offsetof(MptcpReportShared, slots),
					mul_size(report_nslots(), sizeof(MptcpReportSlot)));
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
	mptcp_report_shared = ShmemInitStruct("mptcpinfo reports", report_shmem_size(),
										  &found);
	if (!found)
	{
		mptcp_report_shared->nslots = report_nslots();
		pg_atomic_init_u32(&mptcp_report_shared->opened_families, 0);
		for (int i = 0; i < mptcp_report_shared->nslots; i++)
		{
			MptcpReportSlot *slot = &mptcp_report_shared->slots[i];

			memset(&slot->written, 0, sizeof(slot->written));
			pg_atomic_init_u64(&slot->requested, 0);
			pg_atomic_init_u64(&slot->requested_at, 0);
			pg_atomic_init_u32(&slot->requested_pid, 0);
			pg_atomic_init_u32(&slot->changecount, 0);
			pg_atomic_init_u32(&slot->exited_pid, 0);
			ConditionVariableInit(&slot->answered);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* the slot's process writes between these two, as pgstat_report_* do */
static void
begin_write(MptcpReportSlot *slot)
{
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
	pg_write_barrier();
}

static void
end_write(MptcpReportSlot *slot)
{
	pg_write_barrier();
	pg_atomic_fetch_add_u32(&slot->changecount, 1);
}

void
mptcp_report_read_slot(MptcpReportSlot *slot, MptcpSlotCopy *copy, MptcpReport *report)
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
static MptcpReportSlot *
my_slot(void)
{
	if (mptcp_report_shared == NULL || MyProcNumber < 0 ||
		MyProcNumber >= mptcp_report_shared->nslots)
		return NULL;
	return &mptcp_report_shared->slots[MyProcNumber];
}

#ifdef USE_MPTCP

/* the Linux UAPI (include/uapi/linux/mptcp.h), for older headers */
#define SOL_MPTCP_OPT_SUBFLOW_ADDRS 3	/* MPTCP_SUBFLOW_ADDRS, Linux 5.16 */

/* struct mptcp_subflow_data: the header of the array */
typedef struct MptcpSubflowData
{
	uint32		size_subflow_data;
	uint32		num_subflows;
	uint32		size_kernel;
	uint32		size_user;
} MptcpSubflowData;				/* (16 bytes, as the kernel's aligned(8) one) */

/* struct mptcp_subflow_addrs */
typedef struct MptcpSubflowAddrs
{
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
} MptcpSubflowAddrs;

/* what a process gathers; static, as it answers from ProcessInterrupts() */
static MptcpReport local_report;

/* does this getsockopt() errno mean "no such option here"? */
#define OPTION_UNKNOWN(e) ((e) == EOPNOTSUPP || (e) == ENOPROTOOPT || (e) == EINVAL)

/* a reported subflow whose local address is unspecified */
static bool
closed_subflow(const MptcpSockEnds *ends)
{
	static const uint8 any4_mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8 any6[16] = {0};

	return memcmp(ends->local, any4_mapped, 16) == 0 ||
		memcmp(ends->local, any6, 16) == 0;
}

/* describe one MPTCP socket of this process into r */
static void
report_socket(int fd, uint64 inode, MptcpReport *r)
{
	static union
	{
		MptcpSubflowData hdr;
		char		buf[sizeof(MptcpSubflowData) + MPTCP_REPORT_MAX_SUBFLOWS * sizeof(MptcpSubflowAddrs)];
	}			addrs;
	socklen_t	len = sizeof(addrs);
	uint32		n;
	uint32		size;

	memset(&addrs.hdr, 0, sizeof(addrs.hdr));
	addrs.hdr.size_subflow_data = sizeof(MptcpSubflowData);
	addrs.hdr.size_user = sizeof(MptcpSubflowAddrs);
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
	/* (an answer shorter than its header carries no subflow) */
	n = len < sizeof(MptcpSubflowData) ? 0 :
		Min(addrs.hdr.num_subflows,
			(len - sizeof(MptcpSubflowData)) / Max(addrs.hdr.size_user, 1));
	for (uint32 i = 0; i < addrs.hdr.num_subflows; i++)
	{
		const MptcpSubflowAddrs *a = (const MptcpSubflowAddrs *)
			(addrs.buf + sizeof(MptcpSubflowData) + i * addrs.hdr.size_user);
		MptcpReportedSubflow *s;

		if (i >= n || r->nsubflows >= MPTCP_REPORT_MAX_SUBFLOWS ||
			size < sizeof(MptcpSubflowAddrs))
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
still_open(MptcpReportSlot *slot, int i)
{
	struct stat st;

	return slot->written.opened_pid == MyProcPid &&
		slot->written.opened[i] != 0 &&
		fstat(opened_fd[i], &st) == 0 && S_ISSOCK(st.st_mode) &&
		(uint64) st.st_ino == slot->written.opened[i];
}

/* (runs in ProcessInterrupts(): it must not throw, so no palloc, no ereport) */
void
mptcp_report_gather_own(MptcpReport *r)
{
	static int	client_fd = -1;
	static uint64 client_inode = 0;
	MptcpReportSlot *slot = my_slot();

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
	MptcpReportSlot *slot = my_slot();
	uint64		inode;
	int			domain;
	socklen_t	len = sizeof(domain);
	int			i = 0;

	if (prev_opened_hook)
		prev_opened_hook(sock);
	if (slot == NULL || !fd_is_mptcp(sock, &inode))
		return;
	/* the views read this family's connections from now on (both if unsure) */
	pg_atomic_fetch_or_u32(&mptcp_report_shared->opened_families,
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
 * only a request for this process still pending (most processes are never
 * asked), then tell the askers that this process will not answer again:
 * its exit callbacks can take seconds with interrupts held.
 */
static void
answer_report_request(void)
{
	MptcpReportSlot *slot;
	uint64		requested;

	if (prev_report_hook)
		prev_report_hook();
	slot = my_slot();
	if (slot == NULL)
		return;
	requested = pg_atomic_read_u64(&slot->requested);

	/*
	 * Nothing pending (a second signal for a request answered already), or at
	 * exit nothing pending for this process: only the last words below.
	 */
	if (!(slot->written.pid == MyProcPid &&
		  slot->written.answered >= requested) &&
		(!proc_exit_inprogress ||
		 pg_atomic_read_u32(&slot->requested_pid) == (uint32) MyProcPid))
	{
#ifdef USE_MPTCP
		mptcp_report_gather_own(&local_report);
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

	ConditionVariableBroadcast(&slot->answered);
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
