/*-------------------------------------------------------------------------
 *
 * mptcp_outgoing.c
 *	  The sources of the MPTCP connections that server processes opened.
 *
 * The kernel's dumps do not say which process holds a socket, and a
 * connection that a server process opened has no client in
 * pg_stat_activity to match it by.  Each source of such connections is an
 * MptcpOutgoingSource of a file of its own, added at _PG_init(): a
 * walreceiver's, by the primary's address (mptcp_walreceiver.c); those
 * that processes record by inode (mptcp_ask.c).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_outgoing.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "mptcp_outgoing.h"

/* the sources, those that know inodes first */
#define MAX_OUTGOING_SOURCES 4
static const MptcpOutgoingSource *sources[MAX_OUTGOING_SOURCES];
static int	nsources = 0;

void
mptcp_outgoing_add_source(const MptcpOutgoingSource *source)
{
	int			i = nsources;

	if (nsources >= MAX_OUTGOING_SOURCES)
		elog(ERROR, "too many sources of outgoing MPTCP connections");
	/* (by inode first: see mptcp_outgoing_claim()) */
	while (source->by_inode && i > 0 && !sources[i - 1]->by_inode)
	{
		sources[i] = sources[i - 1];
		i--;
	}
	sources[i] = source;
	nsources++;
}

int
mptcp_outgoing_families(PgBackendStatus *beentry)
{
	int			what = 0;

	for (int s = 0; s < nsources; s++)
		what |= sources[s]->families(beentry);
	return what;
}

bool
mptcp_outgoing_unclaimed(const MptcpConn *c)
{
	/* (inode 0: an orphan, closing after its process let it go) */
	return c->pid == 0 && c->uid == geteuid() && c->inode != 0;
}

/*
 * By inode first, as a socket's inode says whose it is, while the primary's
 * address and port are also those of any dblink or postgres_fdw connection
 * that a standby's backend opens to the same server.  Matched first by
 * address, the walreceiver could take such a connection, and then have its
 * own by inode besides, and the backend none.
 */
List	  **
mptcp_outgoing_claim(MptcpDiag *diag, PgBackendStatus **backends,
					 int num_backends)
{
	List	  **outgoing = palloc0(sizeof(List *) * (num_backends + 1));
	int			nrecorded = -1;
	int			unclaimed = 0;
	ListCell   *lc;

	for (int s = 0; s < nsources; s++)
	{
		int			n = sources[s]->claim(diag, backends, num_backends,
										  outgoing);

		if (n >= 0)
			nrecorded = Max(nrecorded, 0) + n;
	}
	foreach(lc, diag->conns)
		unclaimed += mptcp_outgoing_unclaimed(lfirst(lc));
	elog(DEBUG1, "mptcpinfo: %d sockets recorded by the server processes that opened them; %d MPTCP connections of the server's user held by no server process",
		 nrecorded, unclaimed);
	return outgoing;
}

bool
mptcp_outgoing_has_row(PgBackendStatus *beentry)
{
	for (int s = 0; s < nsources; s++)
	{
		if (sources[s]->has_row != NULL && sources[s]->has_row(beentry))
			return true;
	}
	return false;
}
