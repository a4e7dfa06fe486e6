/*-------------------------------------------------------------------------
 *
 * mptcp_report.h
 *	  The subflows of MPTCP connections, as the processes holding them
 *	  report them.
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

#include "mptcp_diag.h"

/*
 * Room for subflows in one process's report: a connection has at most 9
 * with the in-kernel path manager (8 additional ones); a backend with
 * postgres_fdw connections has more connections, rarely more subflows.
 */
#define MPTCP_REPORT_MAX_SUBFLOWS 16

/* a subflow, as getsockopt() on its connection's socket describes it */
typedef struct MptcpReportedSubflow
{
	uint64		inode;			/* of the connection's socket */
	uint32		token;			/* the connection's */
	MptcpSockEnds ends;
	TcpInfo		info;
	uint32		info_len;		/* how much of info the kernel filled */
} MptcpReportedSubflow;

/* why a process's report is missing or incomplete */
typedef enum MptcpReportStatus
{
	MPTCP_REPORT_OK,
	MPTCP_REPORT_NOT_LOADED,	/* mptcpinfo not in shared_preload_libraries */
	MPTCP_REPORT_NO_ANSWER,		/* the process did not answer in time */
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

/* at shared_preload_libraries time: room for the reports, and the hook */
extern void mptcp_report_init(void);

/*
 * Ask the processes "pids" (server processes holding MPTCP connections)
 * for their reports and wait for them, a bounded time.  Returns one report
 * per pid, in the order given; a missing one says why in its status.
 */
extern MptcpReport **mptcp_report_collect(int npids, const int *pids);

#endif							/* MPTCP_REPORT_H_CONTRIB */
