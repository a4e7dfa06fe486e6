/*-------------------------------------------------------------------------
 *
 * mptcp_subflows.h
 *	  The sources of pg_stat_mptcp_subflows, each in its own file: a
 *	  connection's subflows looked up by their ends (mptcp_lookup.c), read
 *	  from a dump of the TCP sockets (mptcp_subflows.c), or reported by the
 *	  process holding the connection (mptcp_report.c).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_subflows.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_SUBFLOWS_H
#define MPTCP_SUBFLOWS_H

#include "mptcp_match.h"

/*
 * The subflows of a connection that a session keeps and looks up: the
 * in-kernel path manager makes at most 9.
 */
#define MPTCP_MAX_SUBFLOWS 16

/* why a connection's subflows are not shown */
typedef enum SubflowsUnknown
{
	SUBFLOWS_KNOWN,				/* they are: "subflows" */
	SUBFLOWS_CLOSED,			/* it closed meanwhile: no row */
	SUBFLOWS_TRUNCATED,			/* its subflows did not fit a report */
	SUBFLOWS_NOT_DUMPED,		/* the dump does not describe them */
	SUBFLOWS_NOT_LOADED,		/* its process cannot be asked */
	SUBFLOWS_NO_ANSWER,			/* its process did not answer in time */
	SUBFLOWS_FAILED,			/* its process could not read them: sys_errno */
	SUBFLOWS_UNSUPPORTED,		/* the kernel does not describe them to it */
} SubflowsUnknown;

/* one connection of pg_stat_mptcp_subflows and what is found of it */
typedef struct ConnSubflows
{
	MptcpRow   *row;
	SubflowsUnknown unknown;
	int			sys_errno;
	bool		truncated;		/* not all its subflows fitted a report */
	List	   *subflows;		/* MptcpSubflow *; one with state 0 closed
								 * since it was reported: its ends only */
} ConnSubflows;

/*
 * Look up the subflows of conns (all SUBFLOWS_NOT_DUMPED) by their ends
 * where they are known: a connection's only subflow has its ends, and the
 * session keeps the others' from its last query.  Those found become
 * SUBFLOWS_KNOWN.  Returns whether a dump of the TCP sockets would describe
 * the others.
 */
extern bool mptcp_lookup_subflows(MptcpDiag *diag, ConnSubflows *conns, int n,
								  int *nlooked_up);

/* keep the ends of the subflows found for the session's next query */
extern void mptcp_lookup_remember(ConnSubflows *conns, int n);

/*
 * Ask the processes holding the connections still SUBFLOWS_NOT_DUMPED which
 * TCP sockets are theirs, and look those up; the reason goes to "unknown"
 * where that fails.  Its DEBUG1 figures go to "stats".
 */
struct MptcpReportStats;
extern void mptcp_report_subflows(MptcpDiag *diag, ConnSubflows *conns, int n,
								  struct MptcpReportStats *stats);

/* how many subflows c has, the initial one included; -1 if not said */
static inline int
mptcp_expected_subflows(const MptcpConn *c)
{
	bool		has_initial;

	return mptcp_conn_subflows(c, &has_initial);
}

#endif							/* MPTCP_SUBFLOWS_H */
