/*-------------------------------------------------------------------------
 *
 * mptcp_startup.c
 *	  What the server's MPTCP will do, said once at server start.
 *
 * With mptcpinfo in shared_preload_libraries and listen_mptcp on, a
 * background worker runs once, after the postmaster has opened its listen
 * sockets.  It logs a WARNING, with a hint that gives the command that
 * fixes it, for each setting of the network namespace that keeps
 * connections on one path or makes them slow:
 *
 * - a signal endpoint without a port on an address the server does not
 *	 listen on (the joins of clients are refused there);
 * - net.mptcp.enabled = 0;
 * - a limit of 0 additional subflows;
 * - bbr as the congestion control of new sockets: the network namespace's
 *	 default, unless every route leading off the host sets another one, or
 *	 a route's own (mptcp_route.c).
 *
 * then one LOG line with what the path manager offers clients: its signal
 * endpoints and its limits.  Having no signal endpoint is not a mistake
 * (clients may open subflows from addresses of their own): the LOG line
 * says so.
 *
 * The worker is a process of its own so that the listen sockets exist when
 * it looks, and its messages go wherever the server's log goes.  It is
 * never restarted.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_startup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>

#include "lib/stringinfo.h"
#include "libpq/mptcp.h"
#include "miscadmin.h"
#include "mptcp_diag.h"
#include "mptcp_pm.h"
#include "mptcp_proc.h"
#include "mptcp_route.h"
#include "mptcp_startup.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"

PGDLLEXPORT void mptcpinfo_startup_main(Datum main_arg);

void
mptcp_startup_register(void)
{
#ifdef USE_MPTCP
	BackgroundWorker worker;

	if (!listen_mptcp)
		return;
	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "mptcpinfo", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "mptcpinfo_startup_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "mptcpinfo startup check", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "mptcpinfo startup check", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
#endif
}

/* a sysctl's value, as pg_mptcp_settings has it, or NULL */
static const char *
sysctl_value(List *sysctls, const char *name)
{
	ListCell   *lc;

	foreach(lc, sysctls)
	{
		MptcpProcItem *item = lfirst(lc);

		if (strcmp(item->name, name) == 0)
			return item->value;
	}
	return NULL;
}

/* "198.18.2.1", or "[2001:db8::1]" with a port to follow */
static char *
endpoint_address(const MptcpEndpoint *ep)
{
	char		buf[INET6_ADDRSTRLEN];

	if (inet_ntop(ep->family, ep->addr, buf, sizeof(buf)) == NULL)
		return pstrdup("?");
	return pstrdup(buf);
}

/* warn about signal endpoints where the joins of clients are refused */
static void
check_endpoints(List *endpoints)
{
	MptcpDiag  *listeners = NULL;
	ListCell   *lc;

	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);
		char	   *addr;
		bool		known;
		bool		joins;

		/* with a port, the kernel itself listens there */
		if (!(ep->flags & MPTCP_ENDP_SIGNAL) || ep->port != 0 ||
			(ep->family != AF_INET && ep->family != AF_INET6))
			continue;
		if (listeners == NULL)
		{
			listeners = mptcp_diag_read(MPTCP_DIAG_LISTENERS);
			mptcp_diag_close(listeners);
		}
		joins = mptcp_pm_accepts_joins(ep, listeners, &known);
		/* never warn, nor advise anything, on what we could not read */
		if (!known)
		{
			ereport(LOG,
					(errmsg("could not check whether the MPTCP signal endpoints accept joins"),
					 errdetail("The kernel does not list the server's MPTCP listening sockets to it (Linux 5.19 and later do).")));
			return;
		}
		if (joins)
			continue;
		addr = endpoint_address(ep);
		ereport(WARNING,
				(errmsg("MPTCP signal endpoint %s is on an address the server does not listen on",
						addr),
				 errdetail("Clients are told to join at %s port %d, where their joins are refused, so their connections stay on one path.",
						   addr, PostPortNumber),
				 errhint("Add %s to \"listen_addresses\", or replace endpoint %d with one that has a port of its own.",
						 addr, ep->id)));
	}
}

/* bbr, or one of its variants */
static bool
is_bbr(const char *cc)
{
	return cc != NULL && strncmp(cc, "bbr", 3) == 0;
}

/*
 * Warn if new connections will get bbr: from the network namespace's
 * default, unless every route leading off the host locks another one in
 * (without "lock", joined subflows can still get the default: see
 * mptcp_route.c), or from a route that sets it.
 */
static void
check_congestion_control(const char *default_cc)
{
	List	   *routes = NIL;
	bool		have_routes = mptcp_route_list(&routes);
	MptcpRoute *bbr_route = NULL;
	int			nbbr = 0;
	ListCell   *lc;

	/*
	 * (A changed default needs a restart: the listening socket keeps the one
	 * it was made with, and subflows joining the server's connections can
	 * take it from there.)
	 */
	foreach(lc, routes)
	{
		MptcpRoute *route = lfirst(lc);
		bool		overrides = route->congctl[0] != '\0' &&
			(route->congctl_locked || !is_bbr(default_cc));

		if (is_bbr(overrides ? route->congctl : default_cc))
		{
			if (nbbr++ == 0)
				bbr_route = route;
		}
	}

	if (is_bbr(default_cc) && (!have_routes || routes == NIL))
		ereport(WARNING,
				(errmsg("congestion control \"%s\" makes MPTCP connections over several paths slower",
						default_cc),
				 errdetail("Over paths of equal rate, MPTCP connections reach less of their summed rate with \"%s\" than with \"reno\" or \"cubic\".",
						   default_cc),
				 errhint("Use another one with \"sysctl -w net.ipv4.tcp_congestion_control=reno\", then restart the server.")));
	else if (is_bbr(default_cc) && bbr_route != NULL)
		ereport(WARNING,
				(errmsg("congestion control \"%s\" makes MPTCP connections over several paths slower",
						default_cc),
				 errdetail_plural("It is the network namespace's default, and \"congctl lock\" overrides it on %d of the %d route leading off this host.",
								  "It is the network namespace's default, and \"congctl lock\" overrides it on %d of the %d routes leading off this host.",
								  list_length(routes), list_length(routes) - nbbr, list_length(routes)),
				 errhint("Set another one on the routes of the MPTCP paths, such as \"%s\", which new connections use at once, or for the whole network namespace with \"sysctl -w net.ipv4.tcp_congestion_control=reno\", then restart the server.",
						 mptcp_route_command(bbr_route, "reno"))));
	else if (bbr_route != NULL)
		ereport(WARNING,
				(errmsg("congestion control \"%s\" makes MPTCP connections over several paths slower",
						bbr_route->congctl),
				 errdetail_plural("It is set by %d of the %d route leading off this host.",
								  "It is set by %d of the %d routes leading off this host.",
								  list_length(routes), nbbr, list_length(routes)),
				 errhint("Set another one on those routes, such as \"%s\"; new connections use it.",
						 mptcp_route_command(bbr_route, "reno"))));
}

/* the one LOG line: what the path manager offers clients */
static void
log_offer(List *endpoints, uint32 subflows, uint32 add_addr_accepted)
{
	StringInfoData signals;
	ListCell   *lc;

	initStringInfo(&signals);
	foreach(lc, endpoints)
	{
		MptcpEndpoint *ep = lfirst(lc);

		if (!(ep->flags & MPTCP_ENDP_SIGNAL) ||
			(ep->family != AF_INET && ep->family != AF_INET6))
			continue;
		if (signals.len > 0)
			appendStringInfoString(&signals, ", ");
		appendStringInfoString(&signals, endpoint_address(ep));
		if (ep->port != 0)
			appendStringInfo(&signals, " port %d", ep->port);
		if (ep->flags & MPTCP_ENDP_BACKUP)
			appendStringInfoString(&signals, " (backup)");
	}

	if (signals.len > 0)
		ereport(LOG,
				(errmsg("MPTCP path manager offers clients signal endpoints %s; limits: subflows %u, add_addr_accepted %u",
						signals.data, subflows, add_addr_accepted)));
	else
		ereport(LOG,
				(errmsg("MPTCP path manager offers clients no signal endpoints; limits: subflows %u, add_addr_accepted %u",
						subflows, add_addr_accepted),
				 errdetail("Clients can still open subflows from addresses of their own.")));
}

/*
 * The worker: the warnings, then the LOG line, so that whoever waits for
 * the LOG line has them all.
 */
void
mptcpinfo_startup_main(Datum main_arg)
{
	List	   *endpoints = NIL;
	List	   *sysctls;
	MptcpPmLimits limits = {0};
	bool		have_pm;
	bool		disabled;
	const char *value;

	BackgroundWorkerUnblockSignals();

	sysctls = mptcp_proc_sysctls();
	have_pm = mptcp_pm_read(&endpoints, &limits);

	value = sysctl_value(sysctls, "net.mptcp.enabled");
	disabled = (value != NULL && strcmp(value, "0") == 0);
	if (disabled)
		ereport(WARNING,
				(errmsg("MPTCP is disabled in the server's network namespace"),
				 errdetail("\"net.mptcp.enabled\" is 0, so all connections use plain TCP."),
				 errhint("Enable it with \"sysctl -w net.mptcp.enabled=1\", then restart the server.")));

	if (have_pm)
	{
		/* (disabled, the server listens with plain TCP: that is the cause) */
		if (!disabled)
			check_endpoints(endpoints);
		if (limits.subflows == 0)
			ereport(WARNING,
					(errmsg("MPTCP path manager allows no additional subflows"),
					 errdetail("The limit \"subflows\" is 0, so every MPTCP connection stays on one path."),
					 errhint("Raise it with \"ip mptcp limits set subflows 8\".")));
	}

	check_congestion_control(sysctl_value(sysctls, "net.ipv4.tcp_congestion_control"));

	if (have_pm)
		log_offer(endpoints, limits.subflows, limits.add_addr_accepted);
	else
		ereport(LOG,
				(errmsg("MPTCP path manager cannot be read"),
				 errdetail("The kernel has no generic netlink family \"mptcp_pm\".")));

	proc_exit(0);
}
