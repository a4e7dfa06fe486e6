/*-------------------------------------------------------------------------
 *
 * mptcp_match.h
 *	  The rows of pg_stat_mptcp: which server process holds which MPTCP
 *	  connection, and where the connections that processes opened are
 *	  found (one source each, added at _PG_init()).
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

/*
 * A source of the connections that server processes opened themselves
 * (the kernel's dumps do not say who holds a socket).
 */
typedef struct MptcpOutgoingSource
{
	/* does it know its sockets by inode?  Those are asked first. */
	bool		by_inode;

	/*
	 * The families (MPTCP_DIAG_CONNS_*) of the connections it may find for
	 * this backend of the snapshot.
	 */
	int			(*families) (PgBackendStatus *beentry);

	/*
	 * Give the backends of the snapshot (backends[1] to
	 * backends[num_backends]) the unclaimed connections of "diag" that they
	 * opened: appended to outgoing[index], their pid set.  Returns how many
	 * sockets the processes recorded, -1 if it records none.
	 */
	int			(*claim) (MptcpDiag *diag, PgBackendStatus **backends,
						  int num_backends, List **outgoing);

	/*
	 * Does this backend get a row without MPTCP figures when no connection of
	 * its was found (a walreceiver on plain TCP)?  May be NULL.
	 */
	bool		(*has_row) (PgBackendStatus *beentry);
} MptcpOutgoingSource;

extern void mptcp_match_add_source(const MptcpOutgoingSource *source);

/*
 * May a server process hold c, as far as we know yet?  Not if another
 * process has it, another user owns it, or it is an orphan.
 */
extern bool mptcp_match_unclaimed(const MptcpConn *c);

/* c rather than best: an established connection over a closing one */
extern bool mptcp_match_better(const MptcpConn *best, const MptcpConn *c);

#endif							/* MPTCP_MATCH_H */
