/*-------------------------------------------------------------------------
 *
 * mptcp_config.c
 *	  The SQL entry points of the namespace's MPTCP configuration and
 *	  counters: pg_mptcp_endpoints, pg_mptcp_settings and
 *	  pg_stat_mptcp_counters.
 *
 * The path manager's endpoints come from generic netlink (mptcp_pm.c),
 * whether joins to them can succeed from the listening sockets
 * (mptcp_diag.c), the sysctls and counters from procfs (mptcp_proc.c).
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_config.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <net/if.h>

#include "fmgr.h"
#include "funcapi.h"
#include "libpq/mptcp.h"
#include "mptcp_conns.h"
#include "mptcp_diag.h"
#include "mptcp_pm.h"
#include "mptcp_proc.h"
#include "postmaster/postmaster.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#define NUM_ENDPOINT_COLS 9
#define NUM_SETTING_COLS 3
#define NUM_COUNTER_COLS 2

PG_FUNCTION_INFO_V1(pg_mptcp_get_endpoints);
PG_FUNCTION_INFO_V1(pg_mptcp_get_settings);
PG_FUNCTION_INFO_V1(pg_stat_get_mptcp_counters);

static Datum
endpoint_addr_datum(const MptcpEndpoint *ep)
{
	uint8		addr[16];

	mptcp_addr_to_mapped(ep->family, ep->addr, addr);
	return mptcpinfo_inet_datum(ep->family, addr);
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
			bool		joins = mptcp_pm_accepts_joins(ep, listeners,
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
emit_settings(List *sysctls, const MptcpPmLimits *limits, ReturnSetInfo *rsinfo)
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
		emit_setting(rsinfo, "limits.subflows", psprintf("%u", limits->subflows),
					 "Most additional subflows per connection (ip mptcp limits)");
		emit_setting(rsinfo, "limits.add_addr_accepted",
					 psprintf("%u", limits->add_addr_accepted),
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

/* the SQL definition and this library must agree (an ALTER EXTENSION missed) */
static void
check_natts(ReturnSetInfo *rsinfo, int ncols)
{
	if (rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output arguments");
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
	check_natts(rsinfo, NUM_ENDPOINT_COLS);
	if (!mptcp_pm_read(&endpoints, NULL))
		return (Datum) 0;
	/* the listening sockets matter for signal endpoints without a port */
	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);

		if ((ep->flags & MPTCP_ENDP_SIGNAL) && ep->port == 0)
		{
			listeners = mptcp_diag_read(MPTCP_DIAG_LISTENERS);
			mptcp_diag_close(listeners);
			break;
		}
	}
	emit_endpoints(endpoints, listeners, rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP sysctls and path manager limits */
Datum
pg_mptcp_get_settings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MptcpPmLimits limits;
	List	   *sysctls;

	InitMaterializedSRF(fcinfo, 0);
	check_natts(rsinfo, NUM_SETTING_COLS);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	sysctls = mptcp_proc_sysctls();
	emit_settings(sysctls, mptcp_pm_read(NULL, &limits) ? &limits : NULL,
				  rsinfo);
	return (Datum) 0;
}

/* the namespace's MPTCP counters */
Datum
pg_stat_get_mptcp_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	check_natts(rsinfo, NUM_COUNTER_COLS);
	if (!MPTCP_IN_BUILD)
		return (Datum) 0;
	emit_counters(mptcp_proc_counters(), rsinfo);
	return (Datum) 0;
}
