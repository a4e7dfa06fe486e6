/*-------------------------------------------------------------------------
 *
 * mptcp_walreceiver.c
 *	  A standby's walreceiver connection in pg_stat_mptcp.
 *
 * The kernel does not say which process holds a socket, but a walreceiver
 * records the primary's address and port in shared memory
 * (WalRcv->sender_host, sender_port), and its descriptors are the server
 * user's to read (/proc/PID/fd): its connection is the one to that address
 * and port whose socket it holds.  The address alone is not enough: a
 * dblink or postgres_fdw connection of another process, or any client of
 * the server's user, may go to the same primary.  A walreceiver connected
 * over plain TCP, or whose socket was not found, gets a row without MPTCP
 * figures, as a backend's plain TCP client connection does.
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
#include <dirent.h>
#include <netdb.h>
#include <unistd.h>

#include "miscadmin.h"
#include "mptcp_match.h"
#include "mptcp_outgoing.h"
#include "mptcp_walreceiver.h"
#include "replication/walreceiver.h"
#include "storage/fd.h"
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
 * Does process pid hold the socket with this inode?  Its descriptors are
 * links "socket:[INODE]" in /proc/PID/fd, readable by the same user.
 */
static bool
holds_socket(int pid, uint64 inode)
{
	char		dir[MAXPGPATH];
	char		link[MAXPGPATH];
	char		target[64];
	char		want[64];
	DIR		   *d;
	struct dirent *de;
	bool		held = false;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	snprintf(want, sizeof(want), "socket:[" UINT64_FORMAT "]", inode);
	/* (gone, or not ours to read: then it is not found) */
	if ((d = AllocateDir(dir)) == NULL)
		return false;
	while (!held && (de = ReadDirExtended(d, dir, DEBUG1)) != NULL)
	{
		ssize_t		len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		held = strcmp(target, want) == 0;
	}
	FreeDir(d);
	return held;
}

/*
 * The walreceiver's connection, by the primary's address and port that it
 * records in shared memory: the unclaimed connection to them whose socket
 * it holds.  When it records a host name (not resolved here: the name may
 * have several addresses), any unclaimed connection to that port whose
 * socket it holds.
 */
static MptcpConn *
walreceiver_conn(MptcpDiag *diag, PgBackendStatus *beentry)
{
	char		host[NI_MAXHOST];
	int			port;
	uint8		addr[16];
	uint8		raw[16];
	bool		by_addr = true;
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
		by_addr = false;
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (mptcp_outgoing_unclaimed(c) && c->ends.remote_port == port &&
			(!by_addr || memcmp(c->ends.remote, addr, 16) == 0) &&
			mptcp_match_better(best, c) &&
			holds_socket(beentry->st_procpid, c->inode))
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
