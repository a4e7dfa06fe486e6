/*-------------------------------------------------------------------------
 *
 * mptcp_walreceiver.c
 *	  A standby's walreceiver connection in pg_stat_mptcp.
 *
 * The kernel does not say which process holds a socket, but a walreceiver
 * records the primary's address and port in shared memory
 * (WalRcv->sender_host, sender_port): its connection is the one of the
 * server's user to that address and port, an established one before one
 * that is closing.  A walreceiver connected over plain TCP, or whose
 * socket was not found, gets a row without MPTCP figures, as a backend's
 * plain TCP client connection does.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_walreceiver.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <netdb.h>

#include "miscadmin.h"
#include "mptcp_match.h"
#include "mptcp_outgoing.h"
#include "mptcp_walreceiver.h"
#include "replication/walreceiver.h"
#include "storage/spin.h"

/*
 * Is this backend a walreceiver connected over TCP/IP?  Its shared state
 * names the host it is connected to, a directory for a Unix-domain socket.
 */
static bool
walreceiver_on_tcp(PgBackendStatus *beentry)
{
	bool		tcp = false;

	if (beentry->st_backendType != B_WAL_RECEIVER || WalRcv == NULL)
		return false;
	SpinLockAcquire(&WalRcv->mutex);
	if (WalRcv->pid == beentry->st_procpid &&
		WalRcv->sender_host[0] != '\0' &&
		!is_absolute_path(WalRcv->sender_host) &&
		WalRcv->sender_host[0] != '@')
		tcp = true;
	SpinLockRelease(&WalRcv->mutex);
	return tcp;
}

/*
 * The walreceiver's connection, by the primary's address and port that it
 * records in shared memory: the unclaimed connection to them, an
 * established one first.  (A host name is not resolved here: then only the
 * socket it recorded, if any, is found.)
 */
static MptcpConn *
walreceiver_conn(MptcpDiag *diag, PgBackendStatus *beentry)
{
	char		host[NI_MAXHOST];
	int			port;
	uint8		addr[16];
	uint8		raw[16];
	MptcpConn  *best = NULL;
	ListCell   *lc;

	if (!walreceiver_on_tcp(beentry))
		return NULL;
	SpinLockAcquire(&WalRcv->mutex);
	strlcpy(host, (char *) WalRcv->sender_host, sizeof(host));
	port = WalRcv->sender_port;
	SpinLockRelease(&WalRcv->mutex);
	if (inet_pton(AF_INET, host, raw) == 1)
		mptcp_addr_to_mapped(AF_INET, raw, addr);
	else if (inet_pton(AF_INET6, host, raw) == 1)
		mptcp_addr_to_mapped(AF_INET6, raw, addr);
	else
		return NULL;
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (mptcp_outgoing_unclaimed(c) && c->ends.remote_port == port &&
			memcmp(c->ends.remote, addr, 16) == 0 &&
			mptcp_match_better(best, c))
			best = c;
	}
	return best;
}

static int
walreceiver_claim(MptcpDiag *diag, PgBackendStatus **backends,
				  int num_backends, List **outgoing)
{
	for (int i = 1; i <= num_backends; i++)
	{
		MptcpConn  *c;

		/* (its one connection, if a source by inode found it) */
		if (outgoing[i] != NIL)
			continue;
		c = walreceiver_conn(diag, backends[i]);
		if (c != NULL)
		{
			c->pid = backends[i]->st_procpid;
			outgoing[i] = lappend(outgoing[i], c);
		}
	}
	return -1;					/* (it records no socket) */
}

/* a walreceiver's primary may have either family */
static int
walreceiver_families(PgBackendStatus *beentry)
{
	return beentry->st_backendType == B_WAL_RECEIVER ? MPTCP_DIAG_CONNS : 0;
}

static const MptcpOutgoingSource walreceiver_source = {
	.by_inode = false,
	.families = walreceiver_families,
	.claim = walreceiver_claim,
	.has_row = walreceiver_on_tcp,
};

void
mptcp_walreceiver_init(void)
{
	mptcp_outgoing_add_source(&walreceiver_source);
}
