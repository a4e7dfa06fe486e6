/*-------------------------------------------------------------------------
 *
 * mptcp_conns.c
 *	  pg_stat_mptcp: Multipath TCP (MPTCP) figures of the server's
 *	  connections.
 *
 * Each query of pg_stat_mptcp reads the kernel once, with one netlink
 * socket: a socket diagnostics dump of the MPTCP sockets (mptcp_diag.c)
 * gives each connection's struct mptcp_info.  The connections are matched
 * to the server's processes from what pg_stat_activity already knows
 * (mptcp_match.c), without asking them anything.  pg_stat_mptcp_subflows
 * starts from the same rows; where each connection's subflows come from is
 * told in mptcp_subflows.c.
 *
 * What cannot be known is never shown as a fact: a column the kernel did
 * not fill is NULL, and a connection whose subflows cannot be read gets one
 * row with NULL subflow columns and a NOTICE that says why.
 *
 * struct mptcp_info and struct tcp_info grow with kernel versions; a field
 * is only reported when the kernel's answer is long enough to contain it,
 * else it is NULL.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_conns.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/utsname.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "mptcp_conns.h"
#include "mptcp_diag.h"
#include "mptcp_match.h"
#include "utils/builtins.h"
#include "utils/inet.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "varatt.h"

PG_FUNCTION_INFO_V1(pg_stat_get_mptcp);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_1_2);

/* the columns of each version's functions (of pg_stat_mptcp_subflows: mptcp_subflows.c) */
#define NUM_MPTCP_COLS_V1_0 23
#define NUM_MPTCP_COLS 24		/* 1.2: direction */

Datum
mptcpinfo_inet_datum(int family, const uint8 *mapped)
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

	/* (a sequence number beyond int64 takes the slow way, through text) */
	if (v <= (uint64) PG_INT64_MAX)
		return NumericGetDatum(int64_to_numeric((int64) v));
	snprintf(buf, sizeof(buf), UINT64_FORMAT, v);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

Datum
mptcpinfo_ms_interval(uint32 ms)
{
	Interval   *result = palloc0(sizeof(Interval));

	result->time = (int64) ms * 1000;
	return IntervalPGetDatum(result);
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
	COL(true, Int32GetDatum(mptcp_conn_subflows(c)));
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
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), mptcpinfo_ms_interval(mi->last_data_sent));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), mptcpinfo_ms_interval(mi->last_data_recv));
	COL(HAS_FIELD(MptcpInfo, last_ack_recv, len), mptcpinfo_ms_interval(mi->last_ack_recv));
	Assert(i == rsinfo->setDesc->natts);

done:
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
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
	diag = mptcp_diag_read(mptcp_match_families());
	mptcp_diag_close(diag);
	/* (a kernel without MPTCP at all has no connections to miss) */
	conns_known = diag->conns_read ||
		access("/proc/sys/net/mptcp/enabled", F_OK) != 0;
	foreach(lc, mptcp_match_rows(diag, all_outgoing))
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
