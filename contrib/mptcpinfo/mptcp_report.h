/*-------------------------------------------------------------------------
 *
 * mptcp_report.h
 *	  Which TCP sockets are the subflows of an MPTCP connection, as the
 *	  process holding the connection reports them: the slots in shared
 *	  memory where each process answers, read by mptcp_ask.c.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_report.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_REPORT_H_CONTRIB
#define MPTCP_REPORT_H_CONTRIB

#include "datatype/timestamp.h"
#include "mptcp_diag.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"

/*
 * Room for subflows in one process's report: a connection has at most 9
 * with the in-kernel path manager (8 additional ones); a backend with
 * postgres_fdw connections has more connections, rarely more subflows.
 */
#define MPTCP_REPORT_MAX_SUBFLOWS 16

/* a subflow: the ends of a TCP socket, and its connection's socket */
typedef struct MptcpReportedSubflow
{
	uint64		inode;			/* of the connection's socket */
	MptcpSockEnds ends;
} MptcpReportedSubflow;

/* why a process's report is missing or incomplete */
typedef enum MptcpReportStatus
{
	MPTCP_REPORT_OK,
	MPTCP_REPORT_NOT_LOADED,	/* mptcpinfo not in shared_preload_libraries */
	MPTCP_REPORT_NO_ANSWER,		/* the process did not answer in time */
	MPTCP_REPORT_GONE,			/* the process exited */
	MPTCP_REPORT_FAILED,		/* getsockopt() failed: sys_errno */
} MptcpReportStatus;

typedef struct MptcpReport
{
	MptcpReportStatus status;
	int			sys_errno;
	int			nsubflows;
	int			nmissing;		/* subflows that did not fit */
	int			nunsupported;	/* sockets the kernel would not describe:
								 * fallen back to TCP, or Linux before 5.16 */
	MptcpReportedSubflow subflows[MPTCP_REPORT_MAX_SUBFLOWS];
} MptcpReport;

/*
 * How many MPTCP connections that a process opened (postgres_fdw, dblink
 * can keep several) it records for pg_stat_mptcp to find
 */
#define MPTCP_REPORT_MAX_OPENED 16

/* a socket that a server process opened and still holds, by inode */
typedef struct MptcpOpenedSocket
{
	uint64		inode;
	int			pid;
} MptcpOpenedSocket;

/* what a slot's process writes, but the report itself: askers copy it */
typedef struct MptcpSlotCopy
{
	int			pid;			/* who answered */
	uint64		answered;		/* the "requested" value last answered */
	TimestampTz answered_at;
	uint32		answered_nopened;	/* "nopened" then */
	int			opened_pid;		/* who recorded "opened" */
	uint32		nopened;		/* sockets recorded in "opened" so far */
	uint64		opened[MPTCP_REPORT_MAX_OPENED];	/* inodes, 0 if free */
} MptcpSlotCopy;

/* a process's slot, at its ProcNumber */
typedef struct MptcpReportSlot
{
	/* written by askers */
	pg_atomic_uint64 requested; /* bumped by each request */
	pg_atomic_uint64 requested_at;	/* TimestampTz of the last one */
	pg_atomic_uint32 requested_pid; /* the process it was for */

	/* the pid of the slot's process once it has answered for the last time */
	pg_atomic_uint32 exited_pid;

	/* broadcast by the slot's process after each answer */
	ConditionVariable answered;

	/* written by the slot's process; odd while it writes */
	pg_atomic_uint32 changecount;
	MptcpSlotCopy written;
	MptcpReport report;
} MptcpReportSlot;

typedef struct MptcpReportShared
{
	int			nslots;
	pg_atomic_uint32 opened_families;	/* MPTCP_DIAG_CONNS_* of every socket
										 * ever recorded as opened */
	MptcpReportSlot slots[FLEXIBLE_ARRAY_MEMBER];
} MptcpReportShared;

/* the slots, if mptcpinfo is preloaded; else NULL */
extern PGDLLIMPORT MptcpReportShared *mptcp_report_shared;

/*
 * Copy a slot without a lock: retry while its process writes.  The report
 * too if "report" is not NULL.
 */
extern void mptcp_report_read_slot(MptcpReportSlot *slot, MptcpSlotCopy *copy,
								   MptcpReport *report);

#ifdef USE_MPTCP
/*
 * Gather this process's MPTCP sockets: its client's connection, known
 * without looking, and those it opened and recorded.
 */
extern void mptcp_report_gather_own(MptcpReport *r);
#endif

/* at shared_preload_libraries time: room for the reports, and the hooks */
extern void mptcp_report_init(void);

#endif							/* MPTCP_REPORT_H_CONTRIB */
