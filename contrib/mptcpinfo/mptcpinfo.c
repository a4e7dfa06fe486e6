/*-------------------------------------------------------------------------
 *
 * mptcpinfo.c
 *	  Multipath TCP (MPTCP) figures of the server's connections: the
 *	  module's start.
 *
 * The module comes in layers, each a set of files:
 * - the view pg_stat_mptcp (mptcp_conns.c, over mptcp_match.c), from the
 *	 kernel's socket diagnostics (mptcp_diag.c, over mptcp_netlink.c);
 * - the view pg_stat_mptcp_subflows (mptcp_subflows.c), from a dump of the
 *	 TCP sockets (mptcp_tcp.c);
 * - a standby's walreceiver connection (mptcp_walreceiver.c), a source of
 *	 the connections that processes opened (mptcp_outgoing.c);
 * - the subflows looked up by their ends (mptcp_lookup.c);
 * - the diagnostics: mptcp_config.c (the namespace's configuration, over
 *	 mptcp_pm.c, mptcp_proc.c and mptcp_route.c) and mptcp_startup.c;
 * - the report path for kernels before 6.15, over core's hooks: the
 *	 processes' side in mptcp_report.c, the askers' in mptcp_ask.c.
 * A later layer is a source of subflows (mptcp_subflows.h) or of
 * connections that processes opened (mptcp_outgoing.h), added here.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcpinfo.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "mptcp_ask.h"
#include "mptcp_lookup.h"
#include "mptcp_startup.h"
#include "mptcp_walreceiver.h"

PG_MODULE_MAGIC_EXT(
					.name = "mptcpinfo",
					.version = PG_VERSION
);

/*
 * Loaded at server start (shared_preload_libraries), the module also says
 * once what the server's MPTCP will do (see mptcp_startup.c), and can ask
 * the server's processes about their subflows (mptcp_ask.c).
 */
void
_PG_init(void)
{
	mptcp_lookup_init();
	mptcp_walreceiver_init();
	mptcp_ask_init();

	if (process_shared_preload_libraries_in_progress)
		mptcp_startup_register();
}
