/*-------------------------------------------------------------------------
 *
 * mptcp_report.c
 *	  The subflows of MPTCP connections, as the processes holding them
 *	  report them.
 *
 * Linux describes an MPTCP connection's subflows without privileges only
 * to a process that holds the connection's socket: getsockopt()
 * MPTCP_FULL_INFO (Linux 6.5), or MPTCP_TCPINFO and MPTCP_SUBFLOW_ADDRS
 * (5.16).  Socket diagnostics show which TCP socket belongs to which
 * connection only to CAP_NET_ADMIN before Linux 6.15, and a packaged
 * server does not have it.
 *
 * So the querying backend asks each process whose connections it shows,
 * with PROCSIG_MPTCP_REPORT.  At its next CHECK_FOR_INTERRUPTS(), the
 * process looks at its own MPTCP sockets (the client's, a walreceiver's,
 * postgres_fdw's: whatever it has open), writes what it found in its slot
 * of shared memory and wakes the askers.  An idle backend or walsender
 * answers at once; a busy one at its next interrupt check.  The asker waits
 * a bounded time, and a process that did not answer is reported as such,
 * never as a connection without subflows.
 *
 * Nothing happens until somebody queries the subflows: no process reports
 * on its own, and a process without MPTCP sockets is never asked.  This
 * needs mptcpinfo in shared_preload_libraries, for the shared memory.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_report.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include "libpq/mptcp.h"
#include "libpq/mptcp_report.h"
#include "miscadmin.h"
#include "mptcp_report.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/procsignal.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

/* how long the asker waits for all reports, in milliseconds */
#define REPORT_TIMEOUT_MS 2000

/* a process's slot, at its ProcNumber */
typedef struct ReportSlot
{
	pg_atomic_uint64 requested; /* bumped by each asker */
	slock_t		mutex;			/* protects the rest */
	uint64		answered;		/* the "requested" value last answered */
	int			pid;			/* who answered */
	MptcpReport report;
} ReportSlot;

typedef struct ReportShared
{
	ConditionVariable cv;		/* broadcast after each answer */
	int			nslots;
	ReportSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} ReportShared;

static ReportShared *report_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
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
		ConditionVariableInit(&report_shared->cv);
		report_shared->nslots = report_nslots();
		for (int i = 0; i < report_shared->nslots; i++)
		{
			ReportSlot *slot = &report_shared->slots[i];

			pg_atomic_init_u64(&slot->requested, 0);
			SpinLockInit(&slot->mutex);
			slot->answered = 0;
			slot->pid = 0;
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

#ifdef USE_MPTCP

/* the Linux UAPI (include/uapi/linux/mptcp.h), for older headers */
#define SOL_MPTCP_OPT_TCPINFO 2 /* MPTCP_TCPINFO, Linux 5.16 */
#define SOL_MPTCP_OPT_SUBFLOW_ADDRS 3	/* MPTCP_SUBFLOW_ADDRS, Linux 5.16 */
#define SOL_MPTCP_OPT_FULL_INFO 4	/* MPTCP_FULL_INFO, Linux 6.5 */

/* struct mptcp_subflow_data: the header of the 5.16 arrays */
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

/* struct mptcp_subflow_info */
typedef struct SubflowInfo
{
	uint32		id;
	SubflowAddrs addrs;
} SubflowInfo;

/* struct mptcp_full_info */
typedef struct FullInfo
{
	uint32		size_tcpinfo_kernel;
	uint32		size_tcpinfo_user;
	uint32		size_sfinfo_kernel;
	uint32		size_sfinfo_user;
	uint32		num_subflows;
	uint32		size_arrays_user;
	uint64		subflow_info;	/* user pointers */
	uint64		tcp_info;
	MptcpInfo	mptcp_info;
} FullInfo;

/* what a process gathers; static, as it answers from ProcessInterrupts() */
static MptcpReport local_report;
static TcpInfo tcpinfo_buf[MPTCP_REPORT_MAX_SUBFLOWS];
static SubflowInfo sfinfo_buf[MPTCP_REPORT_MAX_SUBFLOWS];

static void
add_subflow(MptcpReport *r, uint64 inode, uint32 token,
			const SubflowAddrs *addrs, const TcpInfo *info, uint32 info_len)
{
	MptcpReportedSubflow *s;

	if (r->nsubflows >= MPTCP_REPORT_MAX_SUBFLOWS)
	{
		r->nmissing++;
		return;
	}
	s = &r->subflows[r->nsubflows++];
	memset(s, 0, sizeof(*s));
	s->inode = inode;
	s->token = token;
	(void) mptcp_sockaddr_to_mapped(&addrs->local, s->ends.local,
									&s->ends.local_port, &s->ends.family);
	(void) mptcp_sockaddr_to_mapped(&addrs->remote, s->ends.remote,
									&s->ends.remote_port, &s->ends.family);
	s->info_len = Min(info_len, sizeof(TcpInfo));
	memcpy(&s->info, info, s->info_len);
}

/*
 * Linux 6.5: one call gives the connection's token and, for each subflow,
 * its addresses and struct tcp_info, consistently.  False with errno set
 * if the kernel has no MPTCP_FULL_INFO.
 */
static bool
report_full_info(int fd, uint64 inode, MptcpReport *r)
{
	FullInfo	fi;
	socklen_t	len = sizeof(fi);
	int			room = MPTCP_REPORT_MAX_SUBFLOWS - r->nsubflows;

	memset(&fi, 0, sizeof(fi));
	fi.size_tcpinfo_user = sizeof(TcpInfo);
	fi.size_sfinfo_user = sizeof(SubflowInfo);
	fi.size_arrays_user = Max(room, 0);
	fi.subflow_info = (uint64) (uintptr_t) sfinfo_buf;
	fi.tcp_info = (uint64) (uintptr_t) tcpinfo_buf;
	if (getsockopt(fd, SOL_MPTCP, SOL_MPTCP_OPT_FULL_INFO, &fi, &len) < 0)
		return false;
	for (uint32 i = 0; i < fi.num_subflows; i++)
	{
		if (i >= fi.size_arrays_user)
		{
			r->nmissing++;
			continue;
		}
		add_subflow(r, inode, fi.mptcp_info.token, &sfinfo_buf[i].addrs,
					&tcpinfo_buf[i], Min(fi.size_tcpinfo_user, fi.size_tcpinfo_kernel));
	}
	return true;
}

/*
 * Linux 5.16 to 6.4: two calls, the subflows' addresses and their struct
 * tcp_info, in the same order.  A subflow that comes or goes between the
 * two calls changes the count, and then we report nothing rather than pair
 * the wrong ones.
 */
static bool
report_two_calls(int fd, uint64 inode, MptcpReport *r)
{
	static union
	{
		SubflowData hdr;
		char		buf[sizeof(SubflowData) + MPTCP_REPORT_MAX_SUBFLOWS * sizeof(SubflowAddrs)];
	}			addrs;
	static union
	{
		SubflowData hdr;
		char		buf[sizeof(SubflowData) + MPTCP_REPORT_MAX_SUBFLOWS * sizeof(TcpInfo)];
	}			infos;
	MptcpInfo	mi;
	socklen_t	len;
	uint32		n;
	uint32		info_len;

	memset(&mi, 0, sizeof(mi));
	len = sizeof(mi);
	if (getsockopt(fd, SOL_MPTCP, MPTCP_INFO, &mi, &len) < 0)
		return false;

	memset(&addrs.hdr, 0, sizeof(addrs.hdr));
	addrs.hdr.size_subflow_data = sizeof(SubflowData);
	addrs.hdr.size_user = sizeof(SubflowAddrs);
	len = sizeof(addrs);
	if (getsockopt(fd, SOL_MPTCP, SOL_MPTCP_OPT_SUBFLOW_ADDRS, &addrs, &len) < 0)
		return false;

	memset(&infos.hdr, 0, sizeof(infos.hdr));
	infos.hdr.size_subflow_data = sizeof(SubflowData);
	infos.hdr.size_user = sizeof(TcpInfo);
	len = sizeof(infos);
	if (getsockopt(fd, SOL_MPTCP, SOL_MPTCP_OPT_TCPINFO, &infos, &len) < 0)
		return false;

	if (addrs.hdr.num_subflows != infos.hdr.num_subflows)
	{
		errno = EAGAIN;
		return false;
	}
	n = Min(addrs.hdr.num_subflows, MPTCP_REPORT_MAX_SUBFLOWS);
	info_len = Min(infos.hdr.size_user, infos.hdr.size_kernel);
	for (uint32 i = 0; i < n; i++)
	{
		const SubflowAddrs *a = (const SubflowAddrs *)
			(addrs.buf + sizeof(SubflowData) + i * sizeof(SubflowAddrs));
		const TcpInfo *t = (const TcpInfo *)
			(infos.buf + sizeof(SubflowData) + i * sizeof(TcpInfo));

		add_subflow(r, inode, mi.token, a, t, info_len);
	}
	r->nmissing += addrs.hdr.num_subflows - n;
	return true;
}

/* does this getsockopt() errno mean "no such option here"? */
#define OPTION_UNKNOWN(e) ((e) == EOPNOTSUPP || (e) == ENOPROTOOPT || (e) == EINVAL)

/* describe one MPTCP socket of this process into r */
static void
report_socket(int fd, uint64 inode, MptcpReport *r)
{
	if (report_full_info(fd, inode, r))
		return;
	if (OPTION_UNKNOWN(errno) && report_two_calls(fd, inode, r))
		return;
	if (OPTION_UNKNOWN(errno))
		r->nunsupported++;		/* the asker tells which of the two it is */
	else
	{
		r->status = MPTCP_REPORT_FAILED;
		r->sys_errno = errno;
	}
}

/*
 * Gather this process's MPTCP sockets: every open file descriptor that is
 * an IPPROTO_MPTCP socket.  Runs in ProcessInterrupts(): it must not
 * throw, so it uses no palloc and no ereport.
 */
static void
gather_own_sockets(MptcpReport *r)
{
	DIR		   *dir;
	struct dirent *de;

	memset(r, 0, offsetof(MptcpReport, subflows));
	r->status = MPTCP_REPORT_OK;
	dir = opendir("/proc/self/fd");
	if (dir == NULL)
	{
		r->status = MPTCP_REPORT_FAILED;
		r->sys_errno = errno;
		return;
	}
	while ((de = readdir(dir)) != NULL)
	{
		char	   *end;
		long		fd = strtol(de->d_name, &end, 10);
		struct stat st;
		int			protocol;
		socklen_t	len = sizeof(protocol);

		if (*end != '\0' || end == de->d_name || fd == dirfd(dir))
			continue;
		if (fstat((int) fd, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		if (getsockopt((int) fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0 ||
			protocol != IPPROTO_MPTCP)
			continue;
		report_socket((int) fd, (uint64) st.st_ino, r);
	}
	closedir(dir);
}
#endif							/* USE_MPTCP */

/* mptcp_report_hook: answer the askers */
static void
answer_report_request(void)
{
	ReportSlot *slot;
	uint64		requested;

	if (report_shared == NULL || MyProcNumber < 0 ||
		MyProcNumber >= report_shared->nslots)
		return;
	slot = &report_shared->slots[MyProcNumber];
	requested = pg_atomic_read_u64(&slot->requested);

#ifdef USE_MPTCP
	gather_own_sockets(&local_report);
#endif

	SpinLockAcquire(&slot->mutex);
#ifdef USE_MPTCP
	memcpy(&slot->report, &local_report,
		   offsetof(MptcpReport, subflows) +
		   local_report.nsubflows * sizeof(MptcpReportedSubflow));
#endif
	slot->pid = MyProcPid;
	slot->answered = requested;
	SpinLockRelease(&slot->mutex);

	ConditionVariableBroadcast(&report_shared->cv);
}

void
mptcp_report_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = report_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = report_shmem_startup;
	mptcp_report_hook = answer_report_request;
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

MptcpReport **
mptcp_report_collect(int npids, const int *pids)
{
	MptcpReport **reports = palloc0(sizeof(MptcpReport *) * npids);
	int		   *slots = palloc(sizeof(int) * npids);
	uint64	   *wanted = palloc0(sizeof(uint64) * npids);
	TimestampTz deadline;
	int			pending = 0;

	for (int i = 0; i < npids; i++)
	{
		reports[i] = palloc0(sizeof(MptcpReport));
		reports[i]->status = report_shared == NULL ?
			MPTCP_REPORT_NOT_LOADED : MPTCP_REPORT_NO_ANSWER;
		slots[i] = -1;
	}
	if (report_shared == NULL || npids == 0)
		return reports;

	if (report_wait_event == 0)
		report_wait_event = WaitEventExtensionNew("MptcpinfoReport");

	/* ask them all first, then wait once */
	for (int i = 0; i < npids; i++)
	{
#ifdef USE_MPTCP
		/* our own sockets need no asking */
		if (pids[i] == MyProcPid)
		{
			gather_own_sockets(reports[i]);
			continue;
		}
#endif
		slots[i] = pid_slot(pids[i]);
		if (slots[i] < 0)
			continue;			/* gone */
		wanted[i] = pg_atomic_add_fetch_u64(&report_shared->slots[slots[i]].requested, 1);
		if (SendProcSignal(pids[i], PROCSIG_MPTCP_REPORT, slots[i]) < 0)
			slots[i] = -1;		/* gone meanwhile */
		else
			pending++;
	}

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   REPORT_TIMEOUT_MS);
	ConditionVariablePrepareToSleep(&report_shared->cv);
	for (;;)
	{
		long		remaining;

		for (int i = 0; i < npids; i++)
		{
			ReportSlot *slot;

			if (slots[i] < 0)
				continue;
			slot = &report_shared->slots[slots[i]];
			SpinLockAcquire(&slot->mutex);
			if (slot->answered >= wanted[i] && slot->pid == pids[i])
			{
				memcpy(reports[i], &slot->report,
					   offsetof(MptcpReport, subflows) +
					   Min(slot->report.nsubflows, MPTCP_REPORT_MAX_SUBFLOWS) *
					   sizeof(MptcpReportedSubflow));
				slots[i] = -1;
				pending--;
			}
			SpinLockRelease(&slot->mutex);
		}
		if (pending == 0)
			break;
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
													deadline);
		if (remaining <= 0)
			break;
		(void) ConditionVariableTimedSleep(&report_shared->cv, remaining,
										   report_wait_event);
	}
	ConditionVariableCancelSleep();

	pfree(slots);
	pfree(wanted);
	return reports;
}
