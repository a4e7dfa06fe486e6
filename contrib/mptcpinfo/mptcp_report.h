/*-------------------------------------------------------------------------
 *
 * mptcp_report.h
 *	  Which TCP sockets are the subflows of an MPTCP connection, as the
 *	  process holding the connection reports them.
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

/*
 * Give each backend of the snapshot (index 1 to num_backends) the
 * connections of "diag" that it recorded as it opened them, appended to
 * outgoing[index], their pid set; with all_outgoing false, walreceivers
 * only.  Returns how many sockets the processes recorded, -1 if they record
 * none (mptcpinfo not preloaded).
 */
extern int	mptcp_report_claim_opened(MptcpDiag *diag, int num_backends,
									  bool all_outgoing, List **outgoing);

/*
 * The address families (MPTCP_DIAG_CONNS_*) of the connections that server
 * processes have recorded as opened since the server started; 0 if not
 * preloaded.
 */
extern int	mptcp_report_opened_families(void);

/* at shared_preload_libraries time: room for the reports, and the hook */
extern void mptcp_report_init(void);

#endif							/* MPTCP_REPORT_H_CONTRIB */
