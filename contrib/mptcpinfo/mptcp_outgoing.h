/*-------------------------------------------------------------------------
 *
 * mptcp_outgoing.h
 *	  The sources of the MPTCP connections that server processes opened.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_outgoing.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_OUTGOING_H
#define MPTCP_OUTGOING_H

#include "mptcp_diag.h"
#include "utils/backend_status.h"

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

/* add a source (at _PG_init()) */
extern void mptcp_outgoing_add_source(const MptcpOutgoingSource *source);

/*
 * The families (MPTCP_DIAG_CONNS_*) of the connections that the sources
 * may find for this backend.
 */
extern int	mptcp_outgoing_families(PgBackendStatus *beentry);

/*
 * The connections of "diag" that the backends of the snapshot (backends[1]
 * to backends[num_backends]) opened, from each source in turn: for each
 * backend index, a List of MptcpConn *, their pid set.
 */
extern List **mptcp_outgoing_claim(MptcpDiag *diag, PgBackendStatus **backends,
								   int num_backends);

/*
 * Does this backend get a row without MPTCP figures when no connection of
 * its was found?
 */
extern bool mptcp_outgoing_has_row(PgBackendStatus *beentry);

/*
 * May a server process hold c, as far as we know yet?  Not if another
 * process has it, another user owns it, or it is an orphan.
 */
extern bool mptcp_outgoing_unclaimed(const MptcpConn *c);

#endif							/* MPTCP_OUTGOING_H */
