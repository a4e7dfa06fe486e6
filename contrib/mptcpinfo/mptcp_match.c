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
 * The former come from the sources of mptcp_outgoing.c.  Sockets that no
 * source finds are other programs' as far as we know, and are not shown;
 * nor are orphans (inode 0), closing after their process let them go.  Of
 * the processes' file descriptors, a walreceiver's alone are read.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_match.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "mptcp_match.h"
#include "mptcp_outgoing.h"
#include "postmaster/postmaster.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/hsearch.h"

#define HAS_PGSTAT_PERMISSIONS(role) \
	(has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), role))

/* a client's end: its address (mapped) and port */
typedef struct MptcpClientKey
{
	uint8		addr[16];
	uint16		port;
} MptcpClientKey;

typedef struct MptcpClientEntry
{
	MptcpClientKey key;
	MptcpConn  *conn;
} MptcpClientEntry;

typedef struct MptcpMatcher
{
	HTAB	   *incoming;		/* connections at the server's port, by their
								 * remote end */
	int		   *live_pids;		/* the processes running now, sorted */
	int			nlive_pids;
} MptcpMatcher;

bool
mptcp_match_better(const MptcpConn *best, const MptcpConn *c)
{
	return best == NULL ||
		(best->state != MPTCP_TCP_ESTABLISHED &&
		 c->state == MPTCP_TCP_ESTABLISHED);
}

static void
matcher_init(MptcpMatcher *m, MptcpDiag *diag)
{
	long		n = list_length(diag->conns);
	HASHCTL		ctl;
	ListCell   *lc;

	ctl.keysize = sizeof(MptcpClientKey);
	ctl.entrysize = sizeof(MptcpClientEntry);
	ctl.hcxt = CurrentMemoryContext;
	m->incoming = hash_create("mptcpinfo incoming", Max(n, 16), &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->ends.local_port == PostPortNumber)
		{
			MptcpClientKey ck;
			MptcpClientEntry *ce;
			bool		found;

			memset(&ck, 0, sizeof(ck));
			memcpy(ck.addr, c->ends.remote, 16);
			ck.port = c->ends.remote_port;
			ce = hash_search(m->incoming, &ck, HASH_ENTER, &found);
			/* a closing socket of an earlier client with these ends yields */
			if (mptcp_match_better(found ? ce->conn : NULL, c))
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
read_live_pids(MptcpMatcher *m)
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
live_backend(MptcpMatcher *m, PgBackendStatus *beentry)
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
find_incoming(MptcpMatcher *m, PgBackendStatus *beentry)
{
	MptcpClientKey ck;
	MptcpClientEntry *ce;

	memset(&ck, 0, sizeof(ck));
	if (!backend_client(beentry, ck.addr, &ck.port))
		return NULL;
	ce = hash_search(m->incoming, &ck, HASH_FIND, NULL);
	return ce ? ce->conn : NULL;
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
	int			what = 0;

	/* (an MPTCP dump per family, each a walk of all MPTCP connections) */
	for (int i = 1; i <= num_backends && what != MPTCP_DIAG_CONNS; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;

		what |= MPTCP_DIAG_CONNS_OF(beentry->st_clientaddr.addr.ss_family);
		what |= mptcp_outgoing_families(beentry);
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
	MptcpMatcher m;
	int			num_backends;
	PgBackendStatus **backends;
	MptcpConn **incoming;
	List	  **outgoing;
	List	   *rows = NIL;
	ListCell   *lc;

	/*
	 * The backend status is the transaction's snapshot, as pg_stat_activity
	 * reads it, so that the two join within a transaction.  The kernel's
	 * answer is fresh: a backend of the snapshot that has exited since is
	 * skipped (live_backend()), lest its entry be matched with a new
	 * connection that reuses its client address.
	 */
	num_backends = pgstat_fetch_stat_numbackends();
	backends = palloc0(sizeof(PgBackendStatus *) * (num_backends + 1));
	for (int i = 1; i <= num_backends; i++)
		backends[i] = &pgstat_get_local_beentry_by_index(i)->backendStatus;
	read_live_pids(&m);
	matcher_init(&m, diag);

	/* first the incoming connections, claimed by their client's end */
	incoming = palloc0(sizeof(MptcpConn *) * (num_backends + 1));
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry = backends[i];
		MptcpConn  *c;

		if (live_backend(&m, beentry) &&
			(c = find_incoming(&m, beentry)) != NULL && c->pid == 0)
		{
			c->pid = beentry->st_procpid;
			incoming[i] = c;
		}
	}
	outgoing = mptcp_outgoing_claim(diag, backends, num_backends);

	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry = backends[i];
		bool		visible;
		int			nrows = list_length(rows);
		uint8		addr[16];
		uint16		port;

		CHECK_FOR_INTERRUPTS();

		if (!live_backend(&m, beentry))
			continue;
		visible = HAS_PGSTAT_PERMISSIONS(beentry->st_userid);
		if (backend_client(beentry, addr, &port))
			rows = lappend(rows, new_row(beentry, visible, false, incoming[i]));
		/* (versions 1.0 and 1.1 show the walreceivers' only) */
		if (all_outgoing || beentry->st_backendType == B_WAL_RECEIVER)
		{
			foreach(lc, outgoing[i])
				rows = lappend(rows, new_row(beentry, visible, true, lfirst(lc)));
		}
		/* a walreceiver on plain TCP, or one whose socket was missed */
		if (outgoing[i] == NIL && mptcp_outgoing_has_row(beentry))
			rows = lappend(rows, new_row(beentry, visible, true, NULL));
		/* one row with nothing but the pid for a process the caller can't see */
		if (!visible && list_length(rows) > nrows + 1)
			rows = list_truncate(rows, nrows + 1);
	}
	return rows;
}
