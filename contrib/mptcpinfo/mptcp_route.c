/*-------------------------------------------------------------------------
 *
 * mptcp_route.c
 *	  The routes of the server's network namespace and the congestion
 *	  control each sets, read through rtnetlink.
 *
 * A route may set the congestion control of the TCP sockets that use it
 * ("ip route change ... congctl lock reno"), and it then wins over the
 * network namespace's default (net.ipv4.tcp_congestion_control) for every
 * MPTCP subflow over it, joined ones included, on whichever side sets it.
 * That lets a host keep bbr as its default and give its MPTCP paths
 * another one.  "lock" matters on the server: a subflow that joins after
 * the server has set a socket option on the connection gets the MPTCP
 * socket's options, its congestion control among them (the network
 * namespace's default when the listening socket was made), unless the
 * route locks its own.  This is what "ip route show" does: an RTM_GETROUTE dump per address
 * family, needing no privilege; the congestion control is the RTAX_CC_ALGO
 * metric of the route.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_route.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/mptcp.h"
#include "lib/stringinfo.h"
#include "mptcp_netlink.h"
#include "mptcp_route.h"

#ifdef USE_MPTCP
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <linux/rtnetlink.h>

/* more routes than this (a full routing table) are not worth a look */
#define ROUTE_MAX_MESSAGES 10000

static void
copy_addr(uint8 *to, const struct rtattr *rta, int family)
{
	int			len = (family == AF_INET6) ? 16 : 4;

	if (RTA_PAYLOAD(rta) >= len)
		memcpy(to, RTA_DATA(rta), len);
}

/* what route_cb collects into, and the loopback interface it leaves out */
struct route_dump
{
	List	   *routes;
	int			lo_ifindex;		/* 0 if there is no "lo" */
};

static void
route_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct route_dump *dump = arg;
	const struct rtmsg *rtm = NLMSG_DATA(nlh);
	int			len = RTM_PAYLOAD(nlh);
	const struct rtattr *rta;
	uint32		table;
	MptcpRoute *route;

	if (nlh->nlmsg_type != RTM_NEWROUTE ||
		nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)) ||
		rtm->rtm_type != RTN_UNICAST ||
		(rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6))
		return;

	route = palloc0(sizeof(MptcpRoute));
	route->family = rtm->rtm_family;
	route->dst_len = rtm->rtm_dst_len;
	route->protocol = rtm->rtm_protocol;
	route->scope = rtm->rtm_scope;
	table = rtm->rtm_table;
	for (rta = RTM_RTA(rtm); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
	{
		switch (rta->rta_type)
		{
			case RTA_TABLE:
				if (RTA_PAYLOAD(rta) >= sizeof(uint32))
					table = *(uint32 *) RTA_DATA(rta);
				break;
			case RTA_DST:
				copy_addr(route->dst, rta, route->family);
				break;
			case RTA_GATEWAY:
				copy_addr(route->gateway, rta, route->family);
				route->has_gateway = true;
				break;
			case RTA_PREFSRC:
				copy_addr(route->prefsrc, rta, route->family);
				route->has_prefsrc = true;
				break;
			case RTA_OIF:
				if (RTA_PAYLOAD(rta) >= sizeof(int))
					route->ifindex = *(int *) RTA_DATA(rta);
				break;
			case RTA_PRIORITY:
				if (RTA_PAYLOAD(rta) >= sizeof(uint32))
					route->priority = *(uint32 *) RTA_DATA(rta);
				break;
			case RTA_METRICS:
				{
					const struct rtattr *m;
					int			mlen = RTA_PAYLOAD(rta);

					for (m = RTA_DATA(rta); RTA_OK(m, mlen); m = RTA_NEXT(m, mlen))
					{
						if (m->rta_type == RTAX_CC_ALGO && RTA_PAYLOAD(m) > 0)
							snprintf(route->congctl, sizeof(route->congctl),
									 "%.*s", (int) RTA_PAYLOAD(m),
									 (char *) RTA_DATA(m));
						else if (m->rta_type == RTAX_LOCK &&
								 RTA_PAYLOAD(m) >= sizeof(uint32))
							route->congctl_locked =
								(*(uint32 *) RTA_DATA(m) & (1 << RTAX_CC_ALGO)) != 0;
					}
				}
				break;
		}
	}

	/* traffic that stays on the host, or on one link of IPv6 */
	if (table != RT_TABLE_MAIN ||
		(route->ifindex > 0 && route->ifindex == dump->lo_ifindex) ||
		(route->family == AF_INET6 && route->dst_len >= 10 &&
		 route->dst[0] == 0xfe && (route->dst[1] & 0xc0) == 0x80))
	{
		pfree(route);
		return;
	}
	dump->routes = lappend(dump->routes, route);
}

/* an interrupted dump read again, or a failed one (mptcp_netlink_dump) */
static void
forget_routes(void *arg)
{
	struct route_dump *dump = arg;

	list_free_deep(dump->routes);
	dump->routes = NIL;
}
#endif							/* USE_MPTCP */

bool
mptcp_route_list(List **routes)
{
#ifdef USE_MPTCP
	struct route_dump dump;
	MptcpNetlink *nl;
	struct
	{
		struct nlmsghdr nlh;
		struct rtmsg rtm;
	}			req;

	dump.routes = NIL;
	dump.lo_ifindex = if_nametoindex("lo");

	if ((nl = mptcp_netlink_open(NETLINK_ROUTE)) == NULL)
	{
		elog(DEBUG1, "could not create rtnetlink socket: %m");
		return false;
	}
	/* AF_UNSPEC: one dump of every family's routes, IPv6 where there is */
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(req.rtm));
	req.nlh.nlmsg_type = RTM_GETROUTE;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.rtm.rtm_family = AF_UNSPEC;
	if (!mptcp_netlink_dump(nl->fd, &req.nlh, route_cb, forget_routes, &dump,
							ROUTE_MAX_MESSAGES))
	{
		elog(DEBUG1, "could not read the routes: %m");
		mptcp_netlink_close(nl);
		return false;
	}
	mptcp_netlink_close(nl);
	*routes = dump.routes;
	return true;
#else
	return false;
#endif
}

char *
mptcp_route_command(const MptcpRoute *route, const char *cc)
{
#ifdef USE_MPTCP
	StringInfoData cmd;
	char		buf[INET6_ADDRSTRLEN];
	char		ifname[IF_NAMESIZE];
	static const uint8 zero[16] = {0};

	initStringInfo(&cmd);
	appendStringInfoString(&cmd, route->family == AF_INET6 ?
						   "ip -6 route change " : "ip route change ");
	if (route->dst_len == 0 && memcmp(route->dst, zero, sizeof(zero)) == 0)
		appendStringInfoString(&cmd, "default");
	else
		appendStringInfo(&cmd, "%s/%d",
						 inet_ntop(route->family, route->dst, buf, sizeof(buf)),
						 route->dst_len);
	if (route->has_gateway)
		appendStringInfo(&cmd, " via %s",
						 inet_ntop(route->family, route->gateway, buf, sizeof(buf)));
	if (route->ifindex > 0 && if_indextoname(route->ifindex, ifname) != NULL)
		appendStringInfo(&cmd, " dev %s", ifname);
	/* what "ip route change" would otherwise reset */
	if (route->protocol == RTPROT_KERNEL)
		appendStringInfoString(&cmd, " proto kernel");
	if (route->scope == RT_SCOPE_LINK)
		appendStringInfoString(&cmd, " scope link");
	if (route->has_prefsrc)
		appendStringInfo(&cmd, " src %s",
						 inet_ntop(route->family, route->prefsrc, buf, sizeof(buf)));
	if (route->priority != 0)
		appendStringInfo(&cmd, " metric %u", route->priority);
	appendStringInfo(&cmd, " congctl lock %s", cc);
	return cmd.data;
#else
	return pstrdup("");
#endif
}
