/*-------------------------------------------------------------------------
 *
 * mptcp_lookup.c
 *	  Subflows of pg_stat_mptcp_subflows looked up by their ends.
 *
 * A dump of the kernel's TCP sockets fills an answer, tcp_info and all, for
 * every TCP socket of the network namespace, and walks the kernel's whole
 * table of connections besides.  So where a subflow's ends are known, its TCP
 * socket is asked for by them instead, which the kernel finds in its hash
 * table at once (mptcp_lookup_ends()).  A connection with a single subflow,
 * its initial one, has the connection's own ends.  The session keeps the
 * others' ends, however they were found, for its next query, which looks
 * them up directly while the connection has as many subflows.  An exporter's
 * session thus reads the dump or asks a process only when a subflow came or
 * went.  Preloaded, the module also keeps them in shared memory, for the
 * first query of the next session: an exporter that connects for each
 * scrape would otherwise read a dump, on a busy host the kernel's walk of
 * its whole table, every time.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_lookup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "mptcp_lookup.h"
#include "mptcp_netlink.h"
#include "mptcp_subflows.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/injection_point.h"
#include "utils/memutils.h"

#ifdef USE_MPTCP
#include <ifaddrs.h>
#include <net/if.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

/*
 * How many lookups go in one datagram: the kernel answers them all at
 * once, and the answers must fit the socket's receive buffer.
 */
#define LOOKUP_BATCH 16

typedef struct MptcpLookupRequest
{
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
} MptcpLookupRequest;

typedef struct MptcpLookups
{
	MptcpSubflow **found;
	int			first;			/* index in found of the batch's first */
} MptcpLookups;
#endif

/* the subflows' ends of a multipath connection that the session found */
typedef struct MptcpKnownSubflows
{
	uint32		token;
	uint64		inode;			/* of the connection's socket */
	int			expected;		/* mptcp_conn_subflows() then */
	int			n;
	MptcpSockEnds *ends;		/* n of them, in the table's context */
} MptcpKnownSubflows;

/* what the last query of this session found, in a context of its own */
static HTAB *known_subflows = NULL;
static MemoryContext known_subflows_cxt = NULL;

/*
 * The same, kept by every session's queries in shared memory when the
 * module is preloaded.  It is a hint: what is looked up by it is checked
 * as the session's own (the token, the count), and a connection it
 * misses is read from a dump as before.  A connection's entry is one of
 * the SHARED_PROBES from the slot its token gives; a connection new there
 * takes the one written least recently, which a connection still open
 * is not: every query that finds it writes it again.
 */
#define SHARED_PROBES 16
#define SHARED_MAX_SUBFLOWS 9	/* the in-kernel path manager's most */

typedef struct MptcpSharedKnown
{
	uint32		token;
	int			n;				/* 0: free */
	uint64		inode;
	int			expected;
	pg_atomic_uint64 written;	/* when, in MptcpSharedKnownSubflows.writes */
	MptcpSockEnds ends[SHARED_MAX_SUBFLOWS];
} MptcpSharedKnown;

/*
 * The entries, shared to read, exclusive to write; but an entry found as it
 * was is only written again ("written"), under the shared lock.
 */
typedef struct MptcpSharedKnownSubflows
{
	LWLock	   *lock;
	pg_atomic_uint64 writes;
	int			nentries;
	MptcpSharedKnown entries[FLEXIBLE_ARRAY_MEMBER];
} MptcpSharedKnownSubflows;

/* what a query keeps of a connection, before it takes the lock */
typedef struct MptcpKeptSubflows
{
	uint32		token;
	uint64		inode;
	int			expected;
	int			n;
	MptcpSockEnds ends[SHARED_MAX_SUBFLOWS];
} MptcpKeptSubflows;

static MptcpSharedKnownSubflows *shared_known = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Does the kernel show this process whose subflow a TCP socket is (its
 * MPTCP ULP info)?  Linux 6.15 shows it to anyone, earlier kernels only to
 * CAP_NET_ADMIN, so a dump of the TCP sockets describes subflows or walks
 * the whole table to keep none.  A socket that shows it is proof for the
 * rest of the session (neither the kernel nor the process's privileges
 * change); one that does not may be no subflow after all, or one the
 * kernel no longer counts, so that is asked again by the next query.
 */
static bool ulp_info_shown = false;

/* how many connections' initial subflows a query looks up to tell */
#define ULP_PROBES 4

/*
 * May the connection's initial subflow be left?  From Linux 6.8 the kernel
 * counts the subflows with it (subflows_total) and without it (subflows);
 * before, it may.
 */
static bool
may_have_initial_subflow(const MptcpConn *c)
{
	if (HAS_FIELD(MptcpInfo, subflows_total, c->info_len))
		return c->info.subflows_total > c->info.subflows;
	return mptcp_conn_subflows(c) >= 1;
}

/*
 * Is the connection's one subflow its initial one, whose ends are the
 * connection's own?  Not once the initial subflow has closed (on a dead
 * path, say) and another took over: that one is found like any other.
 */
static bool
only_initial_subflow(const MptcpConn *c)
{
	return mptcp_conn_subflows(c) == 1 && may_have_initial_subflow(c);
}

#ifdef USE_MPTCP
static void
lookup_answer(const struct nlmsghdr *nlh, int index, int error, void *arg)
{
	MptcpLookups *l = arg;

	/* (no answer: ENOENT, no such socket any more) */
	if (nlh != NULL)
		l->found[l->first + index] = mptcp_diag_subflow_answer(nlh);
}

/*
 * The interfaces of the link-local IPv6 local addresses of ends (0 for
 * others).  The kernel binds a socket on a link-local address to its
 * interface, and finds it by its ends only with that interface
 * (idiag_if); the ends that a dump or a process's report give do not
 * name it, but the local address is this host's, on that interface.
 */
static uint32 *
link_local_interfaces(int n, const MptcpSockEnds *const *ends)
{
	uint32	   *ifindex = palloc0(sizeof(uint32) * n);
	struct ifaddrs *ifap = NULL;
	bool		listed = false;

	for (int i = 0; i < n; i++)
	{
		const uint8 *a = ends[i]->local;

		if (ends[i]->family != AF_INET6 || a[0] != 0xfe || (a[1] & 0xc0) != 0x80)
			continue;
		/* (no palloc from here to freeifaddrs(): an ERROR would leak it) */
		if (!listed && getifaddrs(&ifap) != 0)
			ifap = NULL;
		listed = true;
		for (struct ifaddrs *ifa = ifap; ifa != NULL; ifa = ifa->ifa_next)
		{
			const struct sockaddr_in6 *sin6 =
				(const struct sockaddr_in6 *) ifa->ifa_addr;

			if (sin6 != NULL && sin6->sin6_family == AF_INET6 &&
				memcmp(&sin6->sin6_addr, a, 16) == 0)
			{
				ifindex[i] = if_nametoindex(ifa->ifa_name);
				break;
			}
		}
	}
	if (ifap != NULL)
		freeifaddrs(ifap);
	return ifindex;
}

/* an address of ends in a sock_diag request's form, for its family */
static void
request_addr(const MptcpSockEnds *ends, const uint8 *mapped, void *out)
{
	if (ends->family == AF_INET)
		memcpy(out, mapped + 12, 4);
	else
		memcpy(out, mapped, 16);
}
#endif

void
mptcp_lookup_ends(MptcpDiag *diag, int n, const MptcpSockEnds *const *ends,
				  MptcpSubflow **found)
{
#ifdef USE_MPTCP
	MptcpLookupRequest *reqs;
	uint32	   *ifindex;
#endif

	memset(found, 0, sizeof(MptcpSubflow *) * n);
#ifdef USE_MPTCP
	if (n == 0 || diag->sock == NULL)
		return;
	reqs = palloc(sizeof(MptcpLookupRequest) * LOOKUP_BATCH);
	ifindex = link_local_interfaces(n, ends);
	for (int first = 0; first < n; first += LOOKUP_BATCH)
	{
		int			nreqs = Min(n - first, LOOKUP_BATCH);
		MptcpLookups l = {found, first};

		StaticAssertStmt(sizeof(MptcpLookupRequest) ==
						 NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct inet_diag_req_v2))),
						 "lookup requests must be laid out as netlink aligns them");
		memset(reqs, 0, sizeof(MptcpLookupRequest) * nreqs);
		for (int i = 0; i < nreqs; i++)
		{
			const MptcpSockEnds *e = ends[first + i];
			MptcpLookupRequest *r = &reqs[i];

			r->nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct inet_diag_req_v2));
			r->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
			r->nlh.nlmsg_flags = NLM_F_REQUEST;
			r->req.sdiag_family = e->family;
			r->req.sdiag_protocol = IPPROTO_TCP;
			r->req.idiag_states = MPTCP_TCP_STATES_SUBFLOWS;
			r->req.idiag_ext = (1 << (INET_DIAG_INFO - 1)) |
				(1 << (INET_DIAG_CONG - 1));
			r->req.id.idiag_sport = htons(e->local_port);
			r->req.id.idiag_dport = htons(e->remote_port);
			request_addr(e, e->local, r->req.id.idiag_src);
			request_addr(e, e->remote, r->req.id.idiag_dst);
			r->req.id.idiag_if = ifindex[first + i];
			r->req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
			r->req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
		}
		if (!mptcp_netlink_batch(diag->sock->fd, (char *) reqs, nreqs,
								 lookup_answer, &l))
		{
			/* what was not found comes from the dump instead */
			elog(DEBUG1, "could not look up TCP sockets: %m");
			break;
		}
	}
	pfree(reqs);
	pfree(ifindex);
#endif
}

/* two entries for each server process: most hold one connection */
static int
shared_known_entries(void)
{
	return Max(2 * MaxBackends, SHARED_PROBES);
}

static Size
shared_known_size(void)
{
	return add_size(offsetof(MptcpSharedKnownSubflows, entries),
					mul_size(shared_known_entries(), sizeof(MptcpSharedKnown)));
}

static void
shared_known_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_known_size());
	RequestNamedLWLockTranche("mptcpinfo", 1);
}

static void
shared_known_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared_known = ShmemInitStruct("mptcpinfo known subflows",
								   shared_known_size(), &found);
	if (!found)
	{
		memset(shared_known, 0, shared_known_size());
		shared_known->lock =
			&(GetNamedLWLockTranche("mptcpinfo"))->lock;
		shared_known->nentries = shared_known_entries();
		pg_atomic_init_u64(&shared_known->writes, 0);
		for (int i = 0; i < shared_known->nentries; i++)
			pg_atomic_init_u64(&shared_known->entries[i].written, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* the i-th entry where the connection with this token may be */
static MptcpSharedKnown *
shared_known_probe(uint32 token, int i)
{
	return &shared_known->entries[((uint64) token + i) % shared_known->nentries];
}

/*
 * Copy into ends what a query kept in shared memory of connection c's
 * subflows while it had "expected" of them; how many (0: nothing kept).
 * The caller holds the lock.
 */
static int
shared_known_ends(const MptcpConn *c, int expected, MptcpSockEnds *ends)
{
	int			n = 0;

	if (expected <= 0)
		return 0;
	for (int i = 0; i < SHARED_PROBES; i++)
	{
		MptcpSharedKnown *e = shared_known_probe(c->info.token, i);

		if (e->n > 0 && e->token == c->info.token && e->inode == c->inode &&
			e->expected == expected)
		{
			n = e->n;
			memcpy(ends, e->ends, sizeof(MptcpSockEnds) * n);
			break;
		}
	}
	return n;
}

/* the entry of the connection with this token, or NULL */
static MptcpSharedKnown *
shared_known_entry(uint32 token)
{
	for (int i = 0; i < SHARED_PROBES; i++)
	{
		MptcpSharedKnown *p = shared_known_probe(token, i);

		if (p->n > 0 && p->token == token)
			return p;
	}
	return NULL;
}

/*
 * Keep what a query found of n connections' subflows in shared memory.
 * Those kept as they were are only marked written, under the shared lock;
 * the exclusive lock, for the others only, copies them in.
 */
static void
shared_known_keep(const MptcpKeptSubflows *kept, int n)
{
	bool	   *changed = palloc0(sizeof(bool) * (n + 1));
	int			nchanged = 0;

	LWLockAcquire(shared_known->lock, LW_SHARED);
	for (int k = 0; k < n; k++)
	{
		MptcpSharedKnown *e = shared_known_entry(kept[k].token);

		if (e != NULL && e->inode == kept[k].inode &&
			e->expected == kept[k].expected && e->n == kept[k].n &&
			memcmp(e->ends, kept[k].ends, sizeof(MptcpSockEnds) * e->n) == 0)
			pg_atomic_write_u64(&e->written,
								pg_atomic_add_fetch_u64(&shared_known->writes, 1));
		else
		{
			changed[k] = true;
			nchanged++;
		}
	}
	LWLockRelease(shared_known->lock);
	if (nchanged == 0)
		return;

	LWLockAcquire(shared_known->lock, LW_EXCLUSIVE);
	for (int k = 0; k < n; k++)
	{
		uint32		token = kept[k].token;
		MptcpSharedKnown *e;

		if (!changed[k])
			continue;
		/* its own entry, else the oldest (a free one is the oldest) */
		if ((e = shared_known_entry(token)) == NULL)
		{
			e = shared_known_probe(token, 0);
			for (int i = 1; i < SHARED_PROBES; i++)
			{
				MptcpSharedKnown *p = shared_known_probe(token, i);

				if (pg_atomic_read_u64(&p->written) <
					pg_atomic_read_u64(&e->written))
					e = p;
			}
		}
		e->token = token;
		e->inode = kept[k].inode;
		e->expected = kept[k].expected;
		e->n = kept[k].n;
		memcpy(e->ends, kept[k].ends, sizeof(MptcpSockEnds) * kept[k].n);
		pg_atomic_write_u64(&e->written,
							pg_atomic_add_fetch_u64(&shared_known->writes, 1));
	}
	LWLockRelease(shared_known->lock);
}

/* the same ends, whatever family the kernel reported them in */
static bool
same_ends(const MptcpSockEnds *a, const MptcpSockEnds *b)
{
	return a->local_port == b->local_port &&
		a->remote_port == b->remote_port &&
		memcmp(a->local, b->local, 16) == 0 &&
		memcmp(a->remote, b->remote, 16) == 0;
}

/*
 * Look up the subflows of conns (all SUBFLOWS_NOT_DUMPED) by their ends
 * where they are known: a connection's only subflow has its ends, and the
 * session keeps the others' from its last query (or shared memory, from
 * any session's).  Those found become
 * SUBFLOWS_KNOWN.  Says whether a dump of the TCP sockets would describe
 * the others.
 */
static void
lookup_subflows(MptcpDiag *diag, MptcpConnSubflows *conns, int n,
				MptcpSubflowStats *stats)
{
	const MptcpSockEnds **ends;
	MptcpSubflow **found;
	int		   *first = palloc(sizeof(int) * (n + 1));
	int		   *count = palloc(sizeof(int) * (n + 1));
	int			nlookups = 0;
	MptcpSockEnds *shared_ends = NULL;
	int			nshared = 0;
	int			nkept;
	bool		ulp_info_known = false;
	int			nprobes = 0;

	/* (a test shim, t/014: every subflow read from a dump) */
	if (IS_INJECTION_POINT_ATTACHED("mptcpinfo-no-lookups"))
		return;

	/* what to look up: each connection's one subflow, or those known */
	ends = palloc(sizeof(MptcpSockEnds *) * (n + 1) * MPTCP_MAX_SUBFLOWS);
	if (shared_known != NULL)
	{
		shared_ends = palloc(sizeof(MptcpSockEnds) * (n + 1) *
							 SHARED_MAX_SUBFLOWS);
		LWLockAcquire(shared_known->lock, LW_SHARED);
	}
	for (int k = 0; k < n; k++)
	{
		MptcpConn  *c = conns[k].row->conn;
		int			expected = mptcp_conn_subflows(c);
		MptcpKnownSubflows *ks = known_subflows == NULL ? NULL :
			hash_search(known_subflows, &c->info.token, HASH_FIND, NULL);

		first[k] = -1;
		count[k] = 0;
		if (ks != NULL && ks->inode == c->inode && ks->expected == expected)
		{
			first[k] = nlookups;
			count[k] = ks->n;
			for (int i = 0; i < ks->n; i++)
				ends[nlookups++] = &ks->ends[i];
		}
		else if (only_initial_subflow(c))
		{
			first[k] = nlookups;
			count[k] = 1;
			ends[nlookups++] = &c->ends;
		}
		else if (shared_ends != NULL &&
				 (nkept = shared_known_ends(c, expected,
											&shared_ends[nshared])) > 0)
		{
			first[k] = nlookups;
			count[k] = nkept;
			for (int i = 0; i < nkept; i++)
				ends[nlookups++] = &shared_ends[nshared++];
		}
		else if (expected == 0)
			first[k] = nlookups;	/* none to show, nothing to look for */
		else if (!ulp_info_shown && nprobes < ULP_PROBES &&
				 may_have_initial_subflow(c))
		{
			/*
			 * Not enough to describe the connection, but its initial subflow
			 * tells whether a dump would (ulp_info_shown), where nothing else
			 * looked up here does.
			 */
			ends[nlookups++] = &c->ends;
			nprobes++;
		}
	}
	if (shared_known != NULL)
		LWLockRelease(shared_known->lock);
	found = palloc(sizeof(MptcpSubflow *) * (nlookups + 1));
	mptcp_lookup_ends(diag, nlookups, ends, found);

	/*
	 * The ULP info, where shown, says whose subflow it is; where the kernel
	 * hides it, it hides it in a dump too.  (One socket that shows it is
	 * proof; those that do not, for this query only.)
	 */
	for (int i = 0; i < nlookups && !ulp_info_shown; i++)
	{
		if (found[i] != NULL)
		{
			ulp_info_known = true;
			ulp_info_shown = found[i]->flags_known;
		}
	}

	/* a connection is described if all its subflows were found */
	for (int k = 0; k < n; k++)
	{
		MptcpConn  *c = conns[k].row->conn;
		List	   *subflows = NIL;

		if (first[k] < 0)
			continue;
		for (int i = first[k]; i < first[k] + count[k]; i++)
		{
			MptcpSubflow *s = found[i];

			if (s == NULL || (s->flags_known && s->token != c->info.token))
				break;
			subflows = lappend(subflows, s);
		}
		if (list_length(subflows) < count[k])
			continue;
		conns[k].subflows = subflows;
		conns[k].unknown = SUBFLOWS_KNOWN;
		stats->looked_up++;
	}
	/* (not known yet: a dump, which 6.15 needs) */
	stats->dump_describes = !ulp_info_known || ulp_info_shown;
}

/* keep the ends of the subflows found for the session's next query */
static void
remember_subflows(MptcpConnSubflows *conns, int n)
{
	MemoryContext cxt;
	HASHCTL		ctl;
	HTAB	   *known;
	MptcpKeptSubflows *kept = NULL;
	int			nkept = 0;

	/* (a context of its own: gone with the query if this fails) */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "mptcpinfo known subflows",
								ALLOCSET_SMALL_SIZES);
	ctl.keysize = sizeof(uint32);
	ctl.entrysize = sizeof(MptcpKnownSubflows);
	ctl.hcxt = cxt;
	known = hash_create("mptcpinfo known subflows", Max(n, 16), &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	if (shared_known != NULL)
		kept = palloc(sizeof(MptcpKeptSubflows) * (n + 1));
	for (int k = 0; k < n; k++)
	{
		MptcpConn  *c = conns[k].row->conn;
		int			expected = mptcp_conn_subflows(c);
		MptcpSockEnds ends[MPTCP_MAX_SUBFLOWS];
		int			nends = 0;
		bool		initial_left = false;
		MptcpKnownSubflows *ks;
		ListCell   *lc;

		/* (a subflow in TIME_WAIT, or one closed since, is not one) */
		foreach(lc, conns[k].subflows)
		{
			MptcpSubflow *s = lfirst(lc);

			if (s->state != 0 && nends < MPTCP_MAX_SUBFLOWS)
			{
				ends[nends++] = s->ends;
				initial_left |= same_ends(&s->ends, &c->ends);
			}
		}

		/*
		 * All of them, as many as the kernel counts.  Before Linux 6.8 it
		 * does not say whether the initial subflow is left, and the count
		 * takes it to be: once it has closed, one subflow fewer is all of
		 * them, if none of them is the initial one (it has the connection's
		 * ends).  Kept with the kernel's count, so that the next query looks
		 * them up while that count stays, rather than read a dump and ask the
		 * process every time.
		 */
		if (nends == 0 ||
			!(nends == expected ||
			  (nends == expected - 1 && !initial_left &&
			   !HAS_FIELD(MptcpInfo, subflows_total, c->info_len))))
			continue;
		ks = hash_search(known, &c->info.token, HASH_ENTER, NULL);
		ks->inode = c->inode;
		ks->expected = expected;
		ks->n = nends;
		ks->ends = MemoryContextAlloc(cxt, sizeof(MptcpSockEnds) * nends);
		memcpy(ks->ends, ends, sizeof(MptcpSockEnds) * nends);
		/* (a connection's initial subflow alone is found without it) */
		if (kept != NULL && !(nends == 1 && initial_left) &&
			nends <= SHARED_MAX_SUBFLOWS)
		{
			kept[nkept].token = c->info.token;
			kept[nkept].inode = c->inode;
			kept[nkept].expected = expected;
			kept[nkept].n = nends;
			memcpy(kept[nkept].ends, ends, sizeof(MptcpSockEnds) * nends);
			nkept++;
		}
	}
	if (nkept > 0)
		shared_known_keep(kept, nkept);
	if (known_subflows_cxt != NULL)
		MemoryContextDelete(known_subflows_cxt);
	MemoryContextSetParent(cxt, TopMemoryContext);
	known_subflows = known;
	known_subflows_cxt = cxt;
}

static const MptcpSubflowSource lookup_source = {
	.before_dump = true,
	.describe = lookup_subflows,
	.done = remember_subflows,
};

void
mptcp_lookup_init(void)
{
	mptcp_subflows_add_source(&lookup_source);
	if (process_shared_preload_libraries_in_progress)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = shared_known_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = shared_known_startup;
	}
}
