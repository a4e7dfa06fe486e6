/*-------------------------------------------------------------------------
 *
 * mptcp_match.h
 *	  The rows of pg_stat_mptcp: which server process holds which MPTCP
 *	  connection.
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

#include "libpq/mptcp.h"
#include "mptcp_diag.h"
#include "utils/backend_status.h"

/* the pid of the process that holds a PGPROC now, 0 if none */
#define MPTCP_PROC_PID(proc) ((proc)->pid)

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
 * What mptcp_diag_read() needs to read for the rows: the families
 * (MPTCP_DIAG_CONNS_INET, _INET6) of the server processes' connections.
 */
extern int	mptcp_match_families(void);

/* c rather than best: an established connection over a closing one */
extern bool mptcp_match_better(const MptcpConn *best, const MptcpConn *c);

#endif							/* MPTCP_MATCH_H */
