/*-------------------------------------------------------------------------
 *
 * mptcp_route.h
 *	  The routes of the server's network namespace and the congestion
 *	  control each sets ("ip route ... congctl"), read through rtnetlink.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_route.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_ROUTE_H
#define MPTCP_ROUTE_H

#include "nodes/pg_list.h"

/* one unicast route of the main table ("ip route show") */
typedef struct MptcpRoute
{
	int			family;			/* AF_INET or AF_INET6 */
	uint8		dst[16];		/* network order; all zero for "default" */
	int			dst_len;
	bool		has_gateway;
	uint8		gateway[16];
	int			ifindex;		/* 0 for a multipath route */
	bool		has_prefsrc;
	uint8		prefsrc[16];
	uint8		protocol;		/* RTPROT_* */
	uint8		scope;			/* RT_SCOPE_* */
	uint32		priority;		/* the metric; 0 if none */
	char		congctl[16];	/* "" if the route sets none */
	bool		congctl_locked; /* "congctl lock" */
} MptcpRoute;

/*
 * The unicast routes of the main table, IPv4 and IPv6, that lead off the
 * host: routes through the loopback interface and IPv6 link-local routes
 * left out.  Returns false, with nothing filled in, when the kernel cannot
 * answer (the reason goes to DEBUG1) or has more routes than are worth
 * looking at.
 */
extern bool mptcp_route_list(List **routes);

/* "ip [-6] route change ... congctl lock CC": the route as it is, with CC */
extern char *mptcp_route_command(const MptcpRoute *route, const char *cc);

#endif							/* MPTCP_ROUTE_H */
