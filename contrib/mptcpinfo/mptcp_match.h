/*-------------------------------------------------------------------------
 *
 * mptcp_match.h
 *	  Which server process holds which MPTCP connection.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_match.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_MATCH_H
#define MPTCP_MATCH_H

#include "mptcp_diag.h"
#include "utils/backend_status.h"

/*
 * One row of pg_stat_mptcp: a connection of a server process, or (conn
 * NULL) a backend's plain TCP client connection or a walreceiver's plain
 * TCP connection.
 */
typedef struct MptcpRow
{
	PgBackendStatus *beentry;
	bool		visible;		/* may the caller see its details? */
	bool		outgoing;		/* opened by the server process */
	MptcpConn  *conn;
} MptcpRow;

/*
 * The rows of pg_stat_mptcp for the MPTCP connections of "diag", in the
 * order of the server's processes.  With all_outgoing false (versions 1.0
 * and 1.1), the outgoing connections of walreceivers only.
 */
extern List *mptcp_match_rows(MptcpDiag *diag, bool all_outgoing);

/*
 * The report path (mptcp_report.c): give each backend of the snapshot
 * (index 1 to num_backends) the connections of "diag" that it recorded as
 * it opened them, appended to outgoing[index], their pid set; with
 * all_outgoing false, walreceivers only.  Returns how many sockets the
 * processes recorded, -1 if they record none (mptcpinfo not preloaded).
 */
extern int	mptcp_report_claim_opened(MptcpDiag *diag, int num_backends,
									  bool all_outgoing, List **outgoing);

#endif							/* MPTCP_MATCH_H */
