/*-------------------------------------------------------------------------
 *
 * mptcpinfo.c
 *	  Multipath TCP (MPTCP) figures of the server's connections.
 *
 * The figures of connections come from the kernel's socket diagnostics
 * (mptcp_diag.c): each MPTCP connection's struct mptcp_info.  Those of
 * subflows come from the processes that hold the connections, which ask
 * the kernel about their own sockets when asked (mptcp_report.c); with
 * mptcpinfo not in shared_preload_libraries, from socket diagnostics
 * where the kernel shows subflows to us (Linux 6.15, or CAP_NET_ADMIN).
 * Connections are matched to server processes in both directions:
 *
 * - incoming: a backend's connection from its client, by the client's
 *	 address and port, as in pg_stat_activity;
 * - outgoing: a connection a server process opened itself (a walreceiver,
 *	 a logical replication worker, postgres_fdw or dblink in a backend), by
 *	 the inode of its socket, which /proc/PID/fd names (mptcp_proc.c).  The
 *	 file descriptors are only read if some MPTCP connection of the
 *	 namespace is not one of the incoming ones.
 *
 * The path manager's endpoints (mptcp_pm.c, generic netlink), the
 * namespace's MPTCP sysctls and counters (mptcp_proc.c, procfs) explain
 * what the connections do; pg_mptcp_endpoints also asks sock_diag for the
 * server's listening sockets to tell whether joins to an endpoint can
 * succeed.
 *
 * pg_stat_mptcp costs the querying backend a few netlink round trips and
 * the other backends nothing.  pg_stat_mptcp_subflows also interrupts each
 * process whose MPTCP connections the caller may see, once per query: only
 * the process holding a socket is told its subflows without privileges.
 * Neither needs privileges.
 *
 * What cannot be known is never shown as a fact: a column the kernel did
 * not fill is NULL, and a connection whose subflows cannot be read gets one
 * row with NULL subflow columns and a NOTICE that says why.
 *
 * struct mptcp_info and struct tcp_info grow with kernel versions; a field
 * is only reported when the kernel's answer is long enough to contain it,
 * else it is NULL.
 *
 * This file holds the SQL entry points and what turns the kernel's answers
 * into rows; each kernel source has its own file.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcpinfo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/utsname.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <net/if.h>

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "mptcp_diag.h"
#include "mptcp_pm.h"
#include "mptcp_proc.h"
#include "mptcp_report.h"
#include "mptcp_startup.h"
#include "postmaster/postmaster.h"
#include "replication/walreceiver.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/inet.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#ifdef USE_MPTCP
#define MPTCP_IN_BUILD true
#else
/* A build without MPTCP (no IPPROTO_MPTCP) has nothing to show: no rows. */
#define MPTCP_IN_BUILD false
#endif

PG_MODULE_MAGIC_EXT(
					.name = "mptcpinfo",
					.version = PG_VERSION
);

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_1_2);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_1);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_subflows_1_2);
PG_FUNCTION_INFO_V1(pg_mptcp_get_endpoints);
PG_FUNCTION_INFO_V1(pg_mptcp_get_settings);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_counters);

/*
 * Loaded at server start (shared_preload_libraries), the module says once
 * what the server's MPTCP will do; see mptcp_startup.c.
 */
void
_PG_init(void)
{
	if (process_shared_preload_libraries_in_progress)
	{
		mptcp_startup_register();
		mptcp_report_init();
	}
}

#define HAS_PGSTAT_PERMISSIONS(role) \
	(has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) || \
	 has_privs_of_role(GetUserId(), role))

/* the columns of each version's functions */
#define NUM_MPTCP_COLS_V1_0 23
#define NUM_MPTCP_COLS 24		/* 1.2: direction */
#define NUM_SUBFLOW_COLS_V1_0 16
#define NUM_SUBFLOW_COLS_V1_1 17	/* backup */
#define NUM_SUBFLOW_COLS 19		/* 1.2: token, congestion_control */
#define NUM_ENDPOINT_COLS 9
#define NUM_SETTING_COLS 3
#define NUM_COUNTER_COLS 2

/* the sockets of one process: a few, more with many fdw connections */
#define MAX_PROCESS_SOCKETS 1024

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

/* the client address of a backend, in the form of MptcpSockEnds.remote */
static bool
backend_client(PgBackendStatus *beentry, uint8 *addr, uint16 *port)
{
	/* (false for a Unix-domain socket, or no client) */
	return mptcp_sockaddr_to_mapped(&beentry->st_clientaddr.addr, addr, port,
									NULL);
}

static Datum
inet_datum(int family, const uint8 *mapped)
{
	inet	   *res = palloc0(sizeof(inet));
	static const uint8 v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (family == AF_INET || memcmp(mapped, v4prefix, 12) == 0)
	{
		ip_family(res) = PGSQL_AF_INET;
		ip_bits(res) = 32;
		memcpy(ip_addr(res), mapped + 12, 4);
	}
	else
	{
		ip_family(res) = PGSQL_AF_INET6;
		ip_bits(res) = 128;
		memcpy(ip_addr(res), mapped, 16);
	}
	SET_INET_VARSIZE(res);
	return InetPGetDatum(res);
}

static Datum
uint64_numeric(uint64 v)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), UINT64_FORMAT, v);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

static Datum
ms_interval(uint32 ms)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) ms * 1000;
	return IntervalPGetDatum(result);
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

/* the MPTCP connection from a backend's client, if any */
static MptcpConn *
find_incoming(MptcpDiag *diag, PgBackendStatus *beentry)
{
	uint8		addr[16];
	uint16		port;
	ListCell   *lc;

	if (!backend_client(beentry, addr, &port))
		return NULL;
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->ends.remote_port == port && c->ends.local_port == PostPortNumber &&
			memcmp(c->ends.remote, addr, 16) == 0)
			return c;
	}
	return NULL;
}

/*
 * Can this process have opened connections?  Backends can (postgres_fdw,
 * dblink), background workers (logical replication workers, extensions'
 * workers) and the walreceiver; the other auxiliary processes and the
 * walsenders do not.
 */
static bool
may_connect(PgBackendStatus *beentry)
{
	return beentry->st_backendType == B_BACKEND ||
		beentry->st_backendType == B_BG_WORKER ||
		beentry->st_backendType == B_WAL_RECEIVER;
}

/*
 * The MPTCP connections that a server process opened: the ones not yet
 * claimed whose socket the process has open.  Appends a row for each.
 */
static List *
add_outgoing(List *rows, MptcpDiag *diag, PgBackendStatus *beentry,
			 bool visible)
{
	uint64	   *inodes = palloc(sizeof(uint64) * MAX_PROCESS_SOCKETS);
	int			n;
	ListCell   *lc;

	n = mptcp_proc_socket_inodes(beentry->st_procpid, inodes,
								 MAX_PROCESS_SOCKETS);
	foreach(lc, diag->conns)
	{
		MptcpConn  *c = lfirst(lc);

		if (c->pid != 0 || c->inode == 0)
			continue;
		for (int j = 0; j < n; j++)
		{
			if (c->inode == inodes[j])
			{
				MptcpRow   *row = palloc0(sizeof(MptcpRow));

				c->pid = beentry->st_procpid;
				row->beentry = beentry;
				row->visible = visible;
				row->outgoing = true;
				row->conn = c;
				rows = lappend(rows, row);
				break;
			}
		}
	}
	pfree(inodes);
	return rows;
}

/*
 * The rows of pg_stat_mptcp, in the order of the server's processes: for
 * each backend with a TCP client connection, that connection; for each
 * server process, the MPTCP connections it opened; for a walreceiver
 * connected over plain TCP, a row without MPTCP figures.
 *
 * With all_outgoing false (the functions of versions 1.0 and 1.1, which
 * have no direction column), the outgoing connections of walreceivers
 * only.
 *
 * A process whose details the caller may not see gets one row, with its
 * pid only, however many connections it has.
 */
static List *
collect_rows(MptcpDiag *diag, bool all_outgoing)
{
	int			num_backends;
	List	   *rows = NIL;
	int			unclaimed = 0;
	ListCell   *lc;

	/*
	 * The kernel's answer is fresh, so the backend status must be too: the
	 * transaction's snapshot could match a dead backend's entry (and its
	 * role, for the visibility check) with a new connection that reuses its
	 * pid or client address.
	 */
	pgstat_clear_backend_activity_snapshot();
	num_backends = pgstat_fetch_stat_numbackends();

	/* first the incoming connections, claimed by their address */
	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		MptcpConn  *c;

		CHECK_FOR_INTERRUPTS();

		if (beentry->st_procpid != 0 &&
			(c = find_incoming(diag, beentry)) != NULL)
			c->pid = beentry->st_procpid;
	}
	/* only if some connection is not one of them, look for outgoing ones */
	foreach(lc, diag->conns)
	{
		if (((MptcpConn *) lfirst(lc))->pid == 0)
			unclaimed++;
	}

	for (int i = 1; i <= num_backends; i++)
	{
		PgBackendStatus *beentry =
			&pgstat_get_local_beentry_by_index(i)->backendStatus;
		bool		visible = HAS_PGSTAT_PERMISSIONS(beentry->st_userid);
		bool		walreceiver = walreceiver_on_tcp(beentry);
		int			nrows = list_length(rows);
		uint8		addr[16];
		uint16		port;

		if (beentry->st_procpid == 0)
			continue;
		if (backend_client(beentry, addr, &port))
		{
			MptcpRow   *row = palloc0(sizeof(MptcpRow));

			row->beentry = beentry;
			row->visible = visible;
			row->conn = find_incoming(diag, beentry);
			rows = lappend(rows, row);
		}
		if (unclaimed > 0 && (walreceiver ||
							  (all_outgoing && may_connect(beentry))))
		{
			int			before = list_length(rows);

			rows = add_outgoing(rows, diag, beentry, visible);
			unclaimed -= list_length(rows) - before;
		}
		if (walreceiver && list_length(rows) == nrows)
		{
			/* a walreceiver on plain TCP, or one whose socket was missed */
			MptcpRow   *row = palloc0(sizeof(MptcpRow));

			row->beentry = beentry;
			row->visible = visible;
			row->outgoing = true;
			rows = lappend(rows, row);
		}
		/* one row with nothing but the pid for a process the caller can't see */
		if (!visible && list_length(rows) > nrows + 1)
			rows = list_truncate(rows, nrows + 1);
	}
	return rows;
}

/*
 * Is the running kernel this release or later?  Needed where the length of
 * struct mptcp_info cannot tell: the kernel pads it to 8 bytes, and a field
 * added later may sit in an older kernel's padding, which reads as 0.
 * Three do: csum_enabled (5.14) sits in the padding of 5.12's struct, of
 * the same length; retransmits (6.5) in that of 5.14's, so it is taken
 * with bytes_acked, the last field that came with it; last_data_sent
 * (6.10) in that of 6.8's, so it is taken with last_ack_recv.
 */
static bool
kernel_at_least(int major, int minor)
{
	static int	k_major = -1,
				k_minor = -1;

	if (k_major < 0)
	{
		struct utsname u;

		if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &k_major, &k_minor) != 2)
			k_major = k_minor = 0;
	}
	return k_major > major || (k_major == major && k_minor >= minor);
}

#define COL(cond, datum) \
	do { if (cond) { values[i] = (datum); nulls[i] = false; } i++; } while (0)

static void
emit_conn(MptcpRow *row, bool conns_known, ReturnSetInfo *rsinfo)
{
	Datum		values[NUM_MPTCP_COLS] = {0};
	bool		nulls[NUM_MPTCP_COLS];
	bool		with_direction = rsinfo->setDesc->natts > NUM_MPTCP_COLS_V1_0;
	MptcpConn  *c = row->conn;
	MptcpInfo  *mi;
	size_t		len;
	int			i = 0;

	memset(nulls, true, sizeof(nulls));
	COL(true, Int32GetDatum(row->beentry->st_procpid));
	if (!row->visible)
		goto done;
	if (with_direction)
		COL(true, CStringGetTextDatum(row->outgoing ? "outgoing" : "incoming"));

	/* plain TCP, or a connection that fell back to TCP; NULL if unknown */
	COL(c != NULL || conns_known, BoolGetDatum(c != NULL &&
											   !(c->info.flags & MPTCP_INFO_FLAG_FALLBACK)));
	if (c == NULL || c->info_len == 0)
		goto done;

	mi = &c->info;
	len = c->info_len;

	/* the total number of subflows, the initial one included */
	COL(true, Int32GetDatum(HAS_FIELD(MptcpInfo, subflows_total, len) && mi->subflows_total > 0 ?
							mi->subflows_total : mi->subflows + 1));
	COL(true, Int32GetDatum(mi->add_addr_signal));
	COL(true, Int32GetDatum(mi->add_addr_accepted));
	COL(true, Int32GetDatum(mi->subflows_max));
	COL(true, Int32GetDatum(mi->add_addr_signal_max));
	COL(true, Int32GetDatum(mi->add_addr_accepted_max));
	COL(HAS_FIELD(MptcpInfo, local_addr_used, len), Int32GetDatum(mi->local_addr_used));
	COL(HAS_FIELD(MptcpInfo, local_addr_max, len), Int32GetDatum(mi->local_addr_max));
	COL(HAS_FIELD(MptcpInfo, csum_enabled, len) &&
		(HAS_FIELD(MptcpInfo, bytes_acked, len) || kernel_at_least(5, 14)),
		BoolGetDatum(mi->csum_enabled != 0));
	COL(true, Int64GetDatum(mi->token));
	COL(true, uint64_numeric(mi->write_seq));
	COL(true, uint64_numeric(mi->snd_una));
	COL(true, uint64_numeric(mi->rcv_nxt));
	COL(HAS_FIELD(MptcpInfo, bytes_sent, len), Int64GetDatum(mi->bytes_sent));
	COL(HAS_FIELD(MptcpInfo, bytes_received, len), Int64GetDatum(mi->bytes_received));
	COL(HAS_FIELD(MptcpInfo, bytes_acked, len), Int64GetDatum(mi->bytes_acked));
	COL(HAS_FIELD(MptcpInfo, bytes_retrans, len), Int64GetDatum(mi->bytes_retrans));
	/* (see kernel_at_least() for why these look at later fields) */
	COL(HAS_FIELD(MptcpInfo, bytes_acked, len), Int64GetDatum(mi->retransmits));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_data_sent));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_data_recv));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), ms_interval(mi->last_ack_recv));
	Assert(i == rsinfo->setDesc->natts);

done:
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* does the running kernel have MPTCP at all? */
static bool
kernel_has_mptcp(void)
{
	return access("/proc/sys/net/mptcp/enabled", F_OK) == 0;
}

/* why connections got a row without subflow figures, for the NOTICEs */
typedef struct Unreadable
{
	int			not_loaded;
	int			no_answer;
	int			failed;
	int			failed_errno;
	int			unsupported;
	int			truncated;		/* shown, but not all of their subflows */
} Unreadable;

/*
 * One row of pg_stat_mptcp_subflows.  With ends NULL, the row of a
 * connection whose subflows cannot be read: its pid and token only.
 */
static void
emit_subflow(ReturnSetInfo *rsinfo, int pid, uint32 token,
			 const MptcpSockEnds *ends, const TcpInfo *ti, size_t len,
			 bool flags_known, uint32 flags, const char *cc)
{
	int			ncols = rsinfo->setDesc->natts;
	Datum		values[NUM_SUBFLOW_COLS] = {0};
	bool		nulls[NUM_SUBFLOW_COLS];
	bool		known = (ends != NULL);
	int			i = 0;

	if (!known)
		len = 0;
	memset(nulls, true, sizeof(nulls));
	COL(true, Int32GetDatum(pid));
	COL(known, inet_datum(ends->family, ends->local));
	COL(known, Int32GetDatum(ends->local_port));
	COL(known, inet_datum(ends->family, ends->remote));
	COL(known, Int32GetDatum(ends->remote_port));
	COL(HAS_FIELD(TcpInfo, state, len), BoolGetDatum(ti->state == 1));	/* TCP_ESTABLISHED */
	COL(HAS_FIELD(TcpInfo, rtt, len), Float8GetDatum(ti->rtt / 1000.0));
	COL(HAS_FIELD(TcpInfo, rttvar, len), Float8GetDatum(ti->rttvar / 1000.0));
	COL(HAS_FIELD(TcpInfo, snd_cwnd, len), Int64GetDatum(ti->snd_cwnd));
	COL(HAS_FIELD(TcpInfo, snd_mss, len), Int64GetDatum(ti->snd_mss));
	COL(HAS_FIELD(TcpInfo, bytes_sent, len), Int64GetDatum(ti->bytes_sent));
	COL(HAS_FIELD(TcpInfo, bytes_acked, len), Int64GetDatum(ti->bytes_acked));
	COL(HAS_FIELD(TcpInfo, bytes_received, len), Int64GetDatum(ti->bytes_received));
	COL(HAS_FIELD(TcpInfo, bytes_retrans, len), Int64GetDatum(ti->bytes_retrans));
	COL(HAS_FIELD(TcpInfo, total_retrans, len), Int64GetDatum(ti->total_retrans));
	COL(HAS_FIELD(TcpInfo, delivery_rate, len), Int64GetDatum(ti->delivery_rate));
	/* version 1.1: NULL where the kernel does not show us the flags */
	if (ncols > NUM_SUBFLOW_COLS_V1_0)
		COL(known && flags_known,
			BoolGetDatum((flags & (MPTCP_SUBFLOW_FLAG_BKUP_LOC |
								   MPTCP_SUBFLOW_FLAG_BKUP_REM)) != 0));
	/* version 1.2 */
	if (ncols > NUM_SUBFLOW_COLS_V1_1)
	{
		COL(true, Int64GetDatum(token));
		COL(known && cc != NULL && cc[0] != '\0', CStringGetTextDatum(cc));
	}
	Assert(i == ncols);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* is this a connection whose subflows are to be shown? */
static bool
shows_subflows(MptcpRow *row)
{
	return row->visible && row->conn != NULL &&
		!(row->conn->info.flags & MPTCP_INFO_FLAG_FALLBACK);
}

/* a connection's subflows, as its process reported them */
static void
emit_reported_subflows(MptcpRow *row, MptcpReport *rep,
					   ReturnSetInfo *rsinfo, Unreadable *u)
{
	MptcpConn  *c = row->conn;
	int			pid = row->beentry->st_procpid;
	int			n = 0;

	for (int k = 0; k < rep->nsubflows; k++)
	{
		MptcpReportedSubflow *s = &rep->subflows[k];
		char		cc[16];
		uint32		flags;
		bool		flags_known;

		if (s->inode != c->inode)
			continue;
		CHECK_FOR_INTERRUPTS();
		/* what only socket diagnostics say: congestion control, flags */
		if (!mptcp_diag_subflow_details(&s->ends, cc, sizeof(cc), &flags,
										&flags_known))
		{
			cc[0] = '\0';
			flags_known = false;
		}
		emit_subflow(rsinfo, pid, s->token, &s->ends, &s->info, s->info_len,
					 flags_known, flags, cc);
		n++;
	}
	if (rep->nmissing > 0)
		u->truncated++;
	if (n > 0)
		return;

	switch (rep->status)
	{
		case MPTCP_REPORT_NOT_LOADED:
			u->not_loaded++;
			break;
		case MPTCP_REPORT_NO_ANSWER:
			u->no_answer++;
			break;
		case MPTCP_REPORT_FAILED:
			u->failed++;
			u->failed_errno = rep->sys_errno;
			break;
		case MPTCP_REPORT_OK:
			if (rep->nunsupported > 0)
				u->unsupported++;
			else if (rep->nmissing == 0)
				return;			/* closed since we looked */
			break;
	}
	emit_subflow(rsinfo, pid, c->info.token, NULL, NULL, 0, false, 0, NULL);
}

/*
 * Without mptcpinfo preloaded: the subflows that socket diagnostics show
 * us, those of all the namespace's connections.
 */
static void
emit_diag_subflows(MptcpRow *row, MptcpDiag *diag, ReturnSetInfo *rsinfo,
				   Unreadable *u)
{
	MptcpConn  *c = row->conn;
	int			pid = row->beentry->st_procpid;
	int			n = 0;
	ListCell   *lc;

	foreach(lc, diag->subflows)
	{
		MptcpSubflow *s = lfirst(lc);

		if (s->token != c->info.token)
			continue;
		s->info.state = s->state;	/* (diagnostics give it apart) */
		emit_subflow(rsinfo, pid, s->token, &s->ends, &s->info,
					 Max(s->info_len, offsetof(TcpInfo, ca_state)),
					 true, s->flags, s->congestion_control);
		n++;
	}
	if (n == 0)
	{
		u->not_loaded++;
		emit_subflow(rsinfo, pid, c->info.token, NULL, NULL, 0, false, 0, NULL);
	}
}

/* say why some connections have no subflow figures */
static void
report_unreadable(const Unreadable *u)
{
	if (u->not_loaded > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->not_loaded, u->not_loaded),
				 errdetail("Before Linux 6.15, the kernel shows the subflows of a connection without privileges only to the process that holds it, and mptcpinfo asks that process only when it is loaded at server start."),
				 errhint("Add \"mptcpinfo\" to \"shared_preload_libraries\" and restart the server.")));
	if (u->no_answer > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->no_answer, u->no_answer),
				 errdetail("The server processes holding them did not answer within the time allowed.")));
	if (u->failed > 0)
	{
		errno = u->failed_errno;
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->failed, u->failed),
				 errdetail("Asking the kernel about them failed: %m.")));
	}
	if (u->unsupported > 0)
		ereport(NOTICE,
				(errmsg_plural("subflows of %d MPTCP connection cannot be shown",
							   "subflows of %d MPTCP connections cannot be shown",
							   u->unsupported, u->unsupported),
				 errdetail("The kernel describes the subflows of a connection to the process holding it from Linux 5.16 on.")));
	if (u->truncated > 0)
		ereport(NOTICE,
				(errmsg_plural("not all subflows of %d server process are shown",
							   "not all subflows of %d server processes are shown",
							   u->truncated, u->truncated),
				 errdetail("A process reports at most %d subflows.",
						   MPTCP_REPORT_MAX_SUBFLOWS)));
}

/*
 * Can peers join at this endpoint?  With a port, the kernel listens there
 * itself.  Without one, joins come to the endpoint's address at the
 * server's own port: false if unknown ("known" false), for the caller to
 * show as NULL.
 */
static bool
endpoint_accepts_joins(const MptcpEndpoint *ep, MptcpDiag *listeners,
					   bool *known)
{
	*known = true;
	if (ep->port != 0)
		return true;
	*known = mptcp_diag_listeners_known(listeners, listen_mptcp,
										PostPortNumber);
	return mptcp_diag_accepts_joins(listeners, ep->family, ep->addr,
									PostPortNumber);
}

static Datum
endpoint_addr_datum(const MptcpEndpoint *ep)
{
	uint8		addr[16];

	mptcp_addr_to_mapped(ep->family, ep->addr, addr);
	return inet_datum(ep->family, addr);
}

static void
emit_endpoints(List *endpoints, MptcpDiag *listeners, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);
		Datum		values[NUM_ENDPOINT_COLS] = {0};
		bool		nulls[NUM_ENDPOINT_COLS];
		char		ifname[IF_NAMESIZE];
		bool		known = (ep->family == AF_INET || ep->family == AF_INET6);
		int			i = 0;

		memset(nulls, true, sizeof(nulls));
		COL(true, Int32GetDatum(ep->id));
		COL(known, endpoint_addr_datum(ep));
		COL(ep->port != 0, Int32GetDatum(ep->port));
		COL(ep->ifindex > 0 && if_indextoname(ep->ifindex, ifname) != NULL,
			CStringGetTextDatum(ifname));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_SIGNAL) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_SUBFLOW) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_BACKUP) != 0));
		COL(true, BoolGetDatum((ep->flags & MPTCP_ENDP_FULLMESH) != 0));
		if ((ep->flags & MPTCP_ENDP_SIGNAL) && known)
		{
			bool		joins_known;
			bool		joins = endpoint_accepts_joins(ep, listeners,
													   &joins_known);

			COL(joins_known, BoolGetDatum(joins));
		}
		else
			COL(false, (Datum) 0);	/* does not apply */
		Assert(i == NUM_ENDPOINT_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* descriptions of the settings, after the kernel's mptcp-sysctl.rst */
static const struct
{
	const char *name;
	const char *description;
}			setting_descriptions[] =

{
	{"net.ipv4.tcp_congestion_control",
	"Congestion control of new TCP sockets, MPTCP subflows included"},
	{"net.mptcp.add_addr_timeout",
	"Seconds after which an unacknowledged ADD_ADDR is sent again"},
	{"net.mptcp.allow_join_initial_addr_port",
	"Whether peers may join at the address and port of the initial subflow"},
	{"net.mptcp.available_path_managers",
	"Path managers the kernel offers"},
	{"net.mptcp.available_schedulers",
	"Packet schedulers the kernel offers"},
	{"net.mptcp.blackhole_timeout",
	"Seconds during which MPTCP is not used for new connections after a firewall blackhole was detected (0 turns the detection off)"},
	{"net.mptcp.checksum_enabled",
	"Whether new connections ask for DSS checksums"},
	{"net.mptcp.close_timeout",
	"Seconds a connection without subflows is kept before it is closed"},
	{"net.mptcp.enabled",
	"Whether MPTCP sockets can be created"},
	{"net.mptcp.path_manager",
	"Path manager of new connections"},
	{"net.mptcp.pm_type",
	"Path manager of new connections (0 in-kernel, 1 userspace), older form of path_manager"},
	{"net.mptcp.scheduler",
	"Packet scheduler of new connections"},
	{"net.mptcp.stale_loss_cnt",
	"Retransmission timeouts after which a subflow is considered stale"},
	{"net.mptcp.syn_retrans_before_tcp_fallback",
	"SYN retransmissions with MPTCP options before the connection falls back to TCP"},
};

static void
emit_setting(ReturnSetInfo *rsinfo, const char *name, const char *setting,
			 const char *description)
{
	Datum		values[NUM_SETTING_COLS] = {0};
	bool		nulls[NUM_SETTING_COLS];
	int			i = 0;

	memset(nulls, true, sizeof(nulls));
	COL(true, CStringGetTextDatum(name));
	COL(setting != NULL, CStringGetTextDatum(setting));
	COL(description != NULL, CStringGetTextDatum(description));
	Assert(i == NUM_SETTING_COLS);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
emit_settings(List *sysctls, const uint32 *limits, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, sysctls)
	{
		MptcpProcItem *item = lfirst(lc);
		const char *description = NULL;

		for (int i = 0; i < lengthof(setting_descriptions); i++)
		{
			if (strcmp(setting_descriptions[i].name, item->name) == 0)
				description = setting_descriptions[i].description;
		}
		emit_setting(rsinfo, item->name, item->value, description);
	}

	if (limits != NULL)
	{
		char		buf[16];

		snprintf(buf, sizeof(buf), "%u", limits[0]);
		emit_setting(rsinfo, "limits.subflows", buf,
					 "Most additional subflows per connection (ip mptcp limits)");
		snprintf(buf, sizeof(buf), "%u", limits[1]);
		emit_setting(rsinfo, "limits.add_addr_accepted", buf,
					 "Most addresses announced by the peer that a connection uses (ip mptcp limits)");
	}
}

static void
emit_counters(List *counters, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, counters)
	{
		MptcpProcItem *item = lfirst(lc);
		Datum		values[NUM_COUNTER_COLS] = {0};
		bool		nulls[NUM_COUNTER_COLS];
		char	   *end;
		unsigned long long v;
		int			i = 0;

		memset(nulls, true, sizeof(nulls));
		errno = 0;
		v = strtoull(item->value, &end, 10);
		COL(true, CStringGetTextDatum(item->name));
		COL(errno == 0 && *end == '\0' && v <= PG_INT64_MAX, Int64GetDatum((int64) v));
		Assert(i == NUM_COUNTER_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* pg_stat_mptcp: each version's shape, from the same rows */
static Datum
stat_mptcp(FunctionCallInfo fcinfo, int ncols, bool all_outgoing)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MptcpDiag  *diag;
	bool		conns_known;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	diag = mptcp_diag_read(MPTCP_DIAG_CONNS);
	conns_known = diag->conns_read || !kernel_has_mptcp();
	foreach(lc, collect_rows(diag, all_outgoing))
		emit_conn(lfirst(lc), conns_known, rsinfo);
	return (Datum) 0;
}

/* versions 1.0 and 1.1: no direction, no outgoing connections but the walreceiver's */
Datum
pg_stat_get_mptcp(PG_FUNCTION_ARGS)
{
	return stat_mptcp(fcinfo, NUM_MPTCP_COLS_V1_0, false);
}

Datum
pg_stat_get_mptcp_1_2(PG_FUNCTION_ARGS)
{
	return stat_mptcp(fcinfo, NUM_MPTCP_COLS, true);
}

/* pg_stat_mptcp_subflows, likewise */
static Datum
stat_mptcp_subflows(FunctionCallInfo fcinfo, int ncols, bool all_outgoing)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Unreadable	u = {0};
	MptcpDiag  *diag;
	List	   *rows;
	ListCell   *lc;
	int		   *pids;
	int			npids = 0;
	MptcpReport **reports;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;

	diag = mptcp_diag_read(MPTCP_DIAG_CONNS);
	rows = collect_rows(diag, all_outgoing);

	/* ask each process with connections to show, once */
	pids = palloc(sizeof(int) * (list_length(rows) + 1));
	foreach(lc, rows)
	{
		MptcpRow   *row = lfirst(lc);
		int			pid = row->beentry->st_procpid;

		if (shows_subflows(row) && (npids == 0 || pids[npids - 1] != pid))
			pids[npids++] = pid;
	}
	reports = mptcp_report_collect(npids, pids);

	if (npids > 0 && reports[0]->status == MPTCP_REPORT_NOT_LOADED)
	{
		/* not preloaded: what socket diagnostics show, if anything */
		MptcpDiag  *tcp = mptcp_diag_read(MPTCP_DIAG_SUBFLOWS);

		foreach(lc, rows)
		{
			if (shows_subflows(lfirst(lc)))
				emit_diag_subflows(lfirst(lc), tcp, rsinfo, &u);
		}
	}
	else
	{
		int			k = -1;

		/* (rows of a process are adjacent: pids[] follows them) */
		foreach(lc, rows)
		{
			MptcpRow   *row = lfirst(lc);

			if (!shows_subflows(row))
				continue;
			if (k < 0 || pids[k] != row->beentry->st_procpid)
				k++;
			Assert(k < npids && pids[k] == row->beentry->st_procpid);
			emit_reported_subflows(row, reports[k], rsinfo, &u);
		}
	}
	report_unreadable(&u);
	return (Datum) 0;
}

/* version 1.0, without the backup column */
Datum
pg_stat_get_mptcp_subflows(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS_V1_0, false);
}

Datum
pg_stat_get_mptcp_subflows_1_1(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS_V1_1, false);
}

Datum
pg_stat_get_mptcp_subflows_1_2(PG_FUNCTION_ARGS)
{
	return stat_mptcp_subflows(fcinfo, NUM_SUBFLOW_COLS, true);
}

/* the path manager's endpoints, and whether joins to them can succeed */
Datum
pg_mptcp_get_endpoints(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *endpoints = NIL;
	MptcpDiag  *listeners = NULL;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	if (!mptcp_pm_endpoints(&endpoints))
		return (Datum) 0;
	/* the listening sockets matter for signal endpoints without a port */
	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);

		if ((ep->flags & MPTCP_ENDP_SIGNAL) && ep->port == 0)
		{
			listeners = mptcp_diag_read(MPTCP_DIAG_LISTENERS);
			break;
		}
	}
	if (listeners == NULL)
		listeners = palloc0(sizeof(MptcpDiag));
	emit_endpoints(endpoints, listeners, rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP sysctls and path manager limits */
Datum
pg_mptcp_get_settings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint32		limits[2];
	List	   *sysctls;

	InitMaterializedSRF(fcinfo, 0);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	sysctls = mptcp_proc_sysctls();
	if (mptcp_pm_limits(&limits[0], &limits[1]))
		emit_settings(sysctls, limits, rsinfo);
	else
		emit_settings(sysctls, NULL, rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP counters */
Datum
pg_stat_get_mptcp_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	emit_counters(mptcp_proc_counters(), rsinfo);
	return (Datum) 0;
}
