/*-------------------------------------------------------------------------
 *
 * mptcp_subflows.h
 *	  The sources of pg_stat_mptcp_subflows: a dump of the TCP sockets
 *	  (mptcp_subflows.c), and the others, each in a file of its own, added
 *	  at _PG_init(): a connection's subflows looked up by their ends
 *	  (mptcp_lookup.c), or reported by the process holding the connection
 *	  (mptcp_ask.c).
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
#include "mptcp_tcp.h"

/*
 * The subflows of a connection that a session keeps and looks up: the
 * in-kernel path manager makes at most 9.
 */
#define MPTCP_MAX_SUBFLOWS 16

/* why a connection's subflows are not shown */
typedef enum MptcpSubflowsUnknown
{
	SUBFLOWS_KNOWN,				/* they are: "subflows" */
	SUBFLOWS_CLOSED,			/* it closed meanwhile: no row */
	SUBFLOWS_NOT_DUMPED,		/* the dump does not describe them */
	SUBFLOWS_UNREPORTED,		/* nor its process: its source said why */
} MptcpSubflowsUnknown;

/* one connection of pg_stat_mptcp_subflows and what is found of it */
typedef struct MptcpConnSubflows
{
	MptcpRow   *row;
	MptcpSubflowsUnknown unknown;
	List	   *subflows;		/* MptcpSubflow *; one with state 0 closed
								 * since it was reported: its ends only */
} MptcpConnSubflows;

/* what the sources did, for the DEBUG1 line of a query */
typedef struct MptcpSubflowStats
{
	int			looked_up;		/* connections looked up by their ends */
	int			dumped;			/* ... read from a dump */
	bool		dump_describes; /* would a dump describe subflows? */
	int			asked;			/* processes sent a request */
	int			reused;			/* recent reports used as they were */
	int			joined;			/* requests of another asker waited for */
	int			gone;			/* processes that exited meanwhile */
} MptcpSubflowStats;

/*
 * A source of subflows other than the dump.  Those that come before the
 * dump are asked first, then a dump of the TCP sockets reads what is left
 * where it describes subflows (stats->dump_describes), then the sources
 * after the dump.
 */
typedef struct MptcpSubflowSource
{
	bool		before_dump;

	/*
	 * Should this query take all subflows from this source alone (a setting
	 * says so)?  May be NULL.
	 */
	bool		(*alone) (void);

	/*
	 * Describe what it can of the connections still SUBFLOWS_NOT_DUMPED:
	 * their subflows, and SUBFLOWS_KNOWN; or why not.
	 */
	void		(*describe) (MptcpDiag *diag, MptcpConnSubflows *conns, int n,
							 MptcpSubflowStats *stats);

	/* once the rows are out: what to keep for the next query; may be NULL */
	void		(*done) (MptcpConnSubflows *conns, int n);
} MptcpSubflowSource;

extern void mptcp_subflows_add_source(const MptcpSubflowSource *source);

#endif							/* MPTCP_SUBFLOWS_H */
