/*-------------------------------------------------------------------------
 *
 * mptcp_match.c
 *	  Which server process holds which MPTCP connection.
 *
 * The kernel's dump of the MPTCP sockets (mptcp_diag.c) does not say which
 * process holds a socket.  What the server knows already says it for
 * nearly all of them, with no system call:
 *
 * - a backend's connection from its client has the client's address and
 *	 port (pg_stat_activity's client_addr and client_port) as its remote end
 *	 and the server's port as its local one: one hash lookup per backend;
 * - a socket owned by another user cannot be held by a server process.
 *
 * What is left are connections a server process opened itself (a
 * walreceiver, a logical replication worker, postgres_fdw or dblink in a
 * backend), or MPTCP sockets of other programs run by the server's user.
 * A walreceiver records the primary's address and port in shared memory.
 * With mptcpinfo preloaded, every server process also records the inode of
 * each MPTCP socket it opens (mptcp_report.c); those are found by inode.
 * Sockets that no process recorded are other programs' as far as we know,
 * and are not shown; nor are orphans (inode 0), closing after their
 * process let them go.  No process's file descriptors are read.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_match.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <arpa/inet.h>
#include <netdb.h>

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "mptcp_report.h"
#include "mptcpinfo.h"
#include "postmaster/postmaster.h"
#include "replication/walreceiver.h"
#include "storage/proc.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/hsearch.h"

#define HAS_PGSTAT_PERMISSIONS(role) \
	(has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), role))

/* a client's end: its address (mapped) and port */
typedef struct ClientKey
{
	uint8		addr[16];
	uint16		port;
} ClientKey;

typedef struct ClientEntry
{
	ClientKey	key;
	MptcpConn  *conn;
} ClientEntry;

typedef struct Matcher
{
	HTAB	   *incoming;		/* connections at the server's port, by their
								 * remote end */
	uid_t		uid;			/* the server's */
	int			nrecorded;		/* sockets processes recorded, -1 if they do
								 * not (mptcpinfo not preloaded) */
	int		   *live_pids;		/* the processes running now, sorted */
	int			nlive_pids;
} Matcher;

/* may a server process hold c, as far as we know yet? */
static bool
open_question(Matcher *m, MptcpConn *c)
{
	/* (inode 0: an orphan, closing after its process let it go) */
	return c->pid == 0 && c->uid == m->uid && c->inode != 0;
}

/* c rather than best: an established connection over a closing one */
static bool
better_match(MptcpConn *best, MptcpConn *c)
{
	return best == NULL ||
		(best->state != MPTCP_TCP_ESTABLISHED &&
		 c->state == MPTCP_TCP_ESTABLISHED);
}

static void
matcher_init(Matcher *m, MptcpDiag *diag)
{
	long		n = list_length(diag->conns);
	HASHCTL		ctl;
	ListCell   *lc;

	ctl.keysize = sizeof(ClientKey);
	ctl.entrysize = sizeof(ClientEntry);
	ctl.hcxt = CurrentMemoryContext;
	m->incoming = hash_create("mptcpinfo incoming", Max(n, 16), &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	m->uid = geteuid();
	m->nrecorded = 0;
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->ends.local_port == PostPortNumber)
		{
			ClientKey	ck;
			ClientEntry *ce;
			bool		found;

			memset(&ck, 0, sizeof(ck));
			memcpy(ck.addr, c->ends.remote, 16);
			ck.port = c->ends.remote_port;
			ce = hash_search(m->incoming, &ck, HASH_ENTER, &found);
			/* a closing socket of an earlier client with these ends yields */
			if (better_match(found ? ce->conn : NULL, c))
				ce->conn = c;
		}
	}
}

static int
cmp_pid(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/* the pids of the processes running now, sorted (one pass, no lock) */
static void
read_live_pids(Matcher *m)
{
	m->nlive_pids = 0;
	m->live_pids = palloc(sizeof(int) * ProcGlobal->allProcCount);
	for (int i = 0; i < ProcGlobal->allProcCount; i++)
	{
		int			pid = MPTCP_PROC_PID(GetPGProcByNumber(i));

		if (pid != 0)
			m->live_pids[m->nlive_pids++] = pid;
	}
	qsort(m->live_pids, m->nlive_pids, sizeof(int), cmp_pid);
}

/* is this entry of the snapshot a process that still runs? */
static bool
live_backend(Matcher *m, PgBackendStatus *beentry)
{
	int			pid = beentry->st_procpid;

	return pid != 0 &&
		bsearch(&pid, m->live_pids, m->nlive_pids, sizeof(int),
				cmp_pid) != NULL;
}

/* the client address of a backend, in the form of MptcpSockEnds.remote */
static bool
backend_client(PgBackendStatus *beentry, uint8 *addr, uint16 *port)
{
	/* (false for a Unix-domain socket, or no client) */
	return mptcp_sockaddr_to_mapped(&beentry->st_clientaddr.addr, addr, port,
									NULL);
}

/* the MPTCP connection from a backend's client, if any */
static MptcpConn *
find_incoming(Matcher *m, PgBackendStatus *beentry)
{
	ClientKey	ck;
	ClientEntry *ce;

	memset(&ck, 0, sizeof(ck));
	if (!backend_client(beentry, ck.addr, &ck.port))
		return NULL;
	ce = hash_search(m->incoming, &ck, HASH_FIND, NULL);
	return ce ? ce->conn : NULL;
}

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
walreceiver_conn(Matcher *m, MptcpDiag *diag, PgBackendStatus *beentry)
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

		if (open_question(m, c) && c->ends.remote_port == port &&
			memcmp(c->ends.remote, addr, 16) == 0 && better_match(best, c))
			best = c;
	}
	return best;
}

/*
 * The connections that server processes opened: those the processes
 * recorded as they opened them, then a walreceiver's by what it records in
 * WalRcv.  With all_outgoing false (versions 1.0 and 1.1), the walreceivers'
 * only.  Returns, for each backend index, the list of connections it opened.
 */
static List **
find_outgoing(Matcher *m, MptcpDiag *diag, int num_backends,
			  bool all_outgoing)
{
	List	  **outgoing = palloc0(sizeof(List *) * (num_backends + 1));

	/*
	 * By inode first: a socket's inode says whose it is, while the primary's
	 * address and port are also those of any dblink or postgres_fdw
	 * connection that a standby's backend opens to the same server.  Matched
	 * first, the walreceiver could take such a connection, and then have its
	 * own by inode besides, and the backend none.
	 */
	m->nrecorded = mptcp_report_claim_opened(diag, num_backends, all_outgoing,
											 outgoing);
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		MptcpConn  *c;

		/* (its one connection, if it recorded it) */
		if (outgoing[i] != NIL)
			continue;
		c = walreceiver_conn(m, diag, beentry);
		if (c != NULL)
		{
			c->pid = beentry->st_procpid;
			outgoing[i] = lappend(outgoing[i], c);
		}
	}
	return outgoing;
}

static MptcpRow *
new_row(PgBackendStatus *beentry, bool visible, bool outgoing, MptcpConn *c)
{
	MptcpRow   *row = palloc(sizeof(MptcpRow));

	row->beentry = beentry;
	row->visible = visible;
	row->outgoing = outgoing;
	row->conn = c;
	return row;
}

int
mptcp_match_families(void)
{
	int			num_backends = pgstat_fetch_stat_numbackends();
	int			what = mptcp_report_opened_families();

	/* (an MPTCP dump per family, each a walk of all MPTCP connections) */
	for (int i = 1; i <= num_backends && what != MPTCP_DIAG_CONNS; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;

		what |= MPTCP_DIAG_CONNS_OF(beentry->st_clientaddr.addr.ss_family);
		/* (a walreceiver's primary may have either family) */
		if (beentry->st_backendType == B_WAL_RECEIVER)
			what = MPTCP_DIAG_CONNS;
	}
	return what;
}

/*
 * The rows, in the order of the server's processes: for each backend with
 * a TCP client connection, that connection; for each server process, the
 * MPTCP connections it opened; for a walreceiver connected over plain TCP,
 * a row without MPTCP figures.  A process whose details the caller may not
 * see gets one row, with its pid only, however many connections it has.
 */
List *
mptcp_match_rows(MptcpDiag *diag, bool all_outgoing)
{
	Matcher		m;
	int			num_backends;
	MptcpConn **incoming;
	List	  **outgoing;
	List	   *rows = NIL;
	ListCell   *lc;
	int			unclaimed = 0;

	/*
	 * The backend status is the transaction's snapshot, as pg_stat_activity
	 * reads it, so that the two join within a transaction.  The kernel's
	 * answer is fresh: a backend of the snapshot that has exited since is
	 * skipped (live_backend()), lest its entry be matched with a new
	 * connection that reuses its client address.
	 */
	num_backends = pgstat_fetch_stat_numbackends();
	read_live_pids(&m);
	matcher_init(&m, diag);

	/* first the incoming connections, claimed by their client's end */
	incoming = palloc0(sizeof(MptcpConn *) * (num_backends + 1));
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		MptcpConn  *c;

		if (live_backend(&m, beentry) &&
			(c = find_incoming(&m, beentry)) != NULL && c->pid == 0)
		{
			c->pid = beentry->st_procpid;
			incoming[i] = c;
		}
	}
	outgoing = find_outgoing(&m, diag, num_backends, all_outgoing);
	foreach(lc, diag->conns)
		unclaimed += open_question(&m, lfirst(lc));
	elog(DEBUG1, "mptcpinfo: %d sockets recorded by the server processes that opened them; %d MPTCP connections of the server's user held by no server process",
		 m.nrecorded, unclaimed);

	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		bool		visible;
		bool		walreceiver;
		int			nrows = list_length(rows);
		uint8		addr[16];
		uint16		port;

		CHECK_FOR_INTERRUPTS();

		if (!live_backend(&m, beentry))
			continue;
		visible = HAS_PGSTAT_PERMISSIONS(beentry->st_userid);
		walreceiver = walreceiver_on_tcp(beentry);
		if (backend_client(beentry, addr, &port))
			rows = lappend(rows, new_row(beentry, visible, false, incoming[i]));
		foreach(lc, outgoing[i])
			rows = lappend(rows, new_row(beentry, visible, true, lfirst(lc)));
		/* a walreceiver on plain TCP, or one whose socket was missed */
		if (walreceiver && outgoing[i] == NIL)
			rows = lappend(rows, new_row(beentry, visible, true, NULL));
		/* one row with nothing but the pid for a process the caller can't see */
		if (!visible && list_length(rows) > nrows + 1)
			rows = list_truncate(rows, nrows + 1);
	}
	return rows;
}
