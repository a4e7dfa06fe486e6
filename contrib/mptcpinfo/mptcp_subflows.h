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

#include "mptcpinfo.h"

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
	SUBFLOWS_NOT_DUMPED,		/* the dump does not describe them */
	SUBFLOWS_UNREPORTED,		/* nor its process: mptcp_report.c said why */
} SubflowsUnknown;

/* one connection of pg_stat_mptcp_subflows and what is found of it */
typedef struct ConnSubflows
{
	MptcpRow   *row;
	SubflowsUnknown unknown;
	List	   *subflows;		/* MptcpSubflow *; one with state 0 closed
								 * since it was reported: its ends only */
} ConnSubflows;

/* what asking the processes did, for the DEBUG1 line of a query */
typedef struct MptcpReportStats
{
	int			asked;			/* processes sent a request */
	int			reused;			/* recent reports used as they were */
	int			joined;			/* requests of another asker waited for */
	int			gone;			/* processes that exited meanwhile */
} MptcpReportStats;

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
 * TCP sockets are theirs, and look those up; where that fails, the
 * connection is SUBFLOWS_UNREPORTED and a NOTICE says why.
 */
extern void mptcp_report_subflows(MptcpDiag *diag, ConnSubflows *conns, int n,
								  MptcpReportStats *stats);

/* how many subflows c has, the initial one included; -1 if not said */
static inline int
mptcp_expected_subflows(const MptcpConn *c)
{
	bool		has_initial;

	return mptcp_conn_subflows(c, &has_initial);
}

#endif							/* MPTCP_SUBFLOWS_H */
