/*-------------------------------------------------------------------------
 *
 * mptcp_pm.c
 *	  The kernel's MPTCP path manager, read through generic netlink.
 *
 * This is what "ip mptcp endpoint show" and "ip mptcp limits show" do: the
 * generic netlink family "mptcp_pm" answers the GET_ADDR dump with the
 * endpoints of the caller's network namespace and GET_LIMITS with its
 * limits.  Reading needs no privilege.  A kernel without MPTCP, or with an
 * MPTCP built without the in-kernel path manager, has no such family; then
 * there is nothing to show.
 *
 * The constants are spelled out here because the installed headers of
 * older systems lack some of them; the kernel never renumbers them.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_pm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "libpq/mptcp.h"
#include "mptcp_netlink.h"
#include "mptcp_pm.h"
#include "postmaster/postmaster.h"

/*
 * With a port, the kernel listens at the endpoint itself.  Without one,
 * joins come to the endpoint's address at the server's own port, where an
 * MPTCP socket must listen, bound to the address or to the wildcard
 * address of a family that covers it.  The listeners cannot tell where the
 * kernel could not list them (before Linux 5.19), nor where our own server
 * listens with MPTCP and is not among them.
 */
static const uint8 any4_mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
static const uint8 any6[16] = {0};

bool
mptcp_pm_accepts_joins(const MptcpEndpoint *ep, const MptcpDiag *listeners,
					   bool *known)
{
	uint8		mapped[16];
	bool		ours_listed = !listen_mptcp;
	bool		joins = false;
	ListCell   *lc;

	*known = true;
	if (ep->port != 0)
		return true;
	mptcp_addr_to_mapped(ep->family, ep->addr, mapped);
	foreach(lc, listeners->listeners)
	{
		MptcpListener *l = lfirst(lc);

		if (!l->mptcp || l->ends.local_port != PostPortNumber)
			continue;
		ours_listed = true;
		if (memcmp(l->ends.local, mapped, 16) == 0 ||
			(l->ends.family == AF_INET && ep->family == AF_INET &&
			 memcmp(l->ends.local, any4_mapped, 16) == 0) ||
			(l->ends.family == AF_INET6 &&
			 memcmp(l->ends.local, any6, 16) == 0 &&
			 (ep->family == AF_INET6 || !l->v6only)))
			joins = true;
	}
	*known = listeners->listeners_read && ours_listed;
	return joins;
}

#ifdef USE_MPTCP
#include <linux/genetlink.h>

#define PM_FAMILY_NAME "mptcp_pm"	/* MPTCP_PM_NAME */
#define PM_VERSION 1			/* MPTCP_PM_VER */
#define PM_CMD_GET_ADDR 3		/* MPTCP_PM_CMD_GET_ADDR */
#define PM_CMD_GET_LIMITS 6		/* MPTCP_PM_CMD_GET_LIMITS */
#define PM_ATTR_ADDR 1			/* MPTCP_PM_ATTR_ADDR, nested */
#define PM_ATTR_RCV_ADD_ADDRS 2 /* MPTCP_PM_ATTR_RCV_ADD_ADDRS, u32 */
#define PM_ATTR_SUBFLOWS 3		/* MPTCP_PM_ATTR_SUBFLOWS, u32 */
#define PM_ADDR_ATTR_FAMILY 1	/* MPTCP_PM_ADDR_ATTR_*: u16 */
#define PM_ADDR_ATTR_ID 2		/* u8 */
#define PM_ADDR_ATTR_ADDR4 3	/* struct in_addr */
#define PM_ADDR_ATTR_ADDR6 4	/* struct in6_addr */
#define PM_ADDR_ATTR_PORT 5		/* u16, host order */
#define PM_ADDR_ATTR_FLAGS 6	/* u32 */
#define PM_ADDR_ATTR_IF_IDX 7	/* s32 */

/* what one request may bring back, at most: the kernel has 8 endpoints */
#define PM_MAX_MESSAGES 1024

/* called for each answer; payload is what follows the genlmsghdr */
typedef void (*MptcpGenlCallback) (struct nlattr *attrs, int len, void *arg);

#define NLA_DATA(nla) ((void *) ((char *) (nla) + NLA_HDRLEN))
#define NLA_PAYLOAD(nla) ((int) (nla)->nla_len - NLA_HDRLEN)
#define NLA_OK(nla, len) \
	((len) >= (int) sizeof(struct nlattr) && \
	 (nla)->nla_len >= sizeof(struct nlattr) && (nla)->nla_len <= (len))
#define NLA_NEXT(nla, len) \
	((len) -= NLA_ALIGN((nla)->nla_len), \
	 (struct nlattr *) ((char *) (nla) + NLA_ALIGN((nla)->nla_len)))

typedef struct MptcpGenlAnswer
{
	MptcpGenlCallback cb;
	void		(*forget) (void *arg);
	void	   *arg;
} MptcpGenlAnswer;

/* an answer of the kernel: pass its attributes on */
static void
genl_answer(const struct nlmsghdr *nlh, void *arg)
{
	MptcpGenlAnswer *answer = arg;

	if (nlh->nlmsg_len >= NLMSG_LENGTH(GENL_HDRLEN))
		answer->cb((struct nlattr *) ((char *) NLMSG_DATA(nlh) + GENL_HDRLEN),
				   nlh->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN), answer->arg);
}

/* a dump read again, or failed: the caller's forget */
static void
genl_forget(void *arg)
{
	MptcpGenlAnswer *answer = arg;

	answer->forget(answer->arg);
}

/*
 * Send one generic netlink request (with one optional string attribute) and
 * pass each answer to cb; a dump if forget is given, which forgets what cb
 * was given when the dump is read again (mptcp_netlink_dump()).  Returns
 * false, errno set, on failure.
 */
static bool
genl_request(int fd, uint16 family, uint8 cmd, uint16 str_type,
			 const char *str, MptcpGenlCallback cb, void (*forget) (void *arg),
			 void *arg)
{
	struct
	{
		struct nlmsghdr nlh;
		struct genlmsghdr genl;
		char		attrs[64];
	}			req;
	MptcpGenlAnswer answer = {cb, forget, arg};

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req.nlh.nlmsg_type = family;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | (forget != NULL ? NLM_F_DUMP : 0);
	req.genl.cmd = cmd;
	req.genl.version = (family == GENL_ID_CTRL) ? 1 : PM_VERSION;
	if (str)
	{
		struct nlattr *nla = (struct nlattr *) req.attrs;
		int			slen = strlen(str) + 1;

		Assert(NLA_HDRLEN + NLA_ALIGN(slen) <= sizeof(req.attrs));
		nla->nla_type = str_type;
		nla->nla_len = NLA_HDRLEN + slen;
		memcpy(NLA_DATA(nla), str, slen);
		req.nlh.nlmsg_len += NLA_ALIGN(nla->nla_len);
	}

	if (forget != NULL)
		return mptcp_netlink_dump(fd, &req.nlh, genl_answer, genl_forget,
								  &answer, PM_MAX_MESSAGES);
	return mptcp_netlink_request(fd, &req.nlh, genl_answer, &answer,
								 PM_MAX_MESSAGES);
}

static void
family_id_cb(struct nlattr *nla, int len, void *arg)
{
	for (; NLA_OK(nla, len); nla = NLA_NEXT(nla, len))
	{
		if ((nla->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID &&
			NLA_PAYLOAD(nla) >= sizeof(uint16))
			*(uint16 *) arg = *(uint16 *) NLA_DATA(nla);
	}
}

/*
 * Open a generic netlink socket and find the "mptcp_pm" family.  Returns
 * NULL if there is none; says why at DEBUG1.
 */
static MptcpNetlink *
pm_open(uint16 *family)
{
	MptcpNetlink *nl;

	nl = mptcp_netlink_open(NETLINK_GENERIC);
	if (nl == NULL)
	{
		elog(DEBUG1, "could not create generic netlink socket: %m");
		return NULL;
	}

	*family = 0;
	if (!genl_request(nl->fd, GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
					  CTRL_ATTR_FAMILY_NAME, PM_FAMILY_NAME,
					  family_id_cb, NULL, family) || *family == 0)
	{
		elog(DEBUG1, "no generic netlink family \"%s\": %m", PM_FAMILY_NAME);
		mptcp_netlink_close(nl);
		return NULL;
	}
	return nl;
}

static void
endpoint_cb(struct nlattr *nla, int len, void *arg)
{
	List	  **endpoints = arg;

	for (; NLA_OK(nla, len); nla = NLA_NEXT(nla, len))
	{
		MptcpEndpoint *ep;
		struct nlattr *a;
		int			alen;

		if ((nla->nla_type & NLA_TYPE_MASK) != PM_ATTR_ADDR)
			continue;
		ep = palloc0(sizeof(MptcpEndpoint));
		alen = NLA_PAYLOAD(nla);
		for (a = NLA_DATA(nla); NLA_OK(a, alen); a = NLA_NEXT(a, alen))
		{
			void	   *d = NLA_DATA(a);
			int			dlen = NLA_PAYLOAD(a);

			switch (a->nla_type & NLA_TYPE_MASK)
			{
				case PM_ADDR_ATTR_FAMILY:
					if (dlen >= sizeof(uint16))
						ep->family = *(uint16 *) d;
					break;
				case PM_ADDR_ATTR_ID:
					if (dlen >= sizeof(uint8))
						ep->id = *(uint8 *) d;
					break;
				case PM_ADDR_ATTR_ADDR4:
					if (dlen >= 4)
						memcpy(ep->addr, d, 4);
					break;
				case PM_ADDR_ATTR_ADDR6:
					if (dlen >= 16)
						memcpy(ep->addr, d, 16);
					break;
				case PM_ADDR_ATTR_PORT:
					if (dlen >= sizeof(uint16))
						ep->port = *(uint16 *) d;
					break;
				case PM_ADDR_ATTR_FLAGS:
					if (dlen >= sizeof(uint32))
						ep->flags = *(uint32 *) d;
					break;
				case PM_ADDR_ATTR_IF_IDX:
					if (dlen >= sizeof(int32))
						ep->ifindex = *(int32 *) d;
					break;
			}
		}
		*endpoints = lappend(*endpoints, ep);
	}
}

static void
forget_endpoints(void *arg)
{
	List	  **endpoints = arg;

	list_free_deep(*endpoints);
	*endpoints = NIL;
}

static void
limits_cb(struct nlattr *nla, int len, void *arg)
{
	MptcpPmLimits *limits = arg;

	for (; NLA_OK(nla, len); nla = NLA_NEXT(nla, len))
	{
		if (NLA_PAYLOAD(nla) < sizeof(uint32))
			continue;
		if ((nla->nla_type & NLA_TYPE_MASK) == PM_ATTR_SUBFLOWS)
		{
			limits->subflows = *(uint32 *) NLA_DATA(nla);
			limits->found = true;
		}
		else if ((nla->nla_type & NLA_TYPE_MASK) == PM_ATTR_RCV_ADD_ADDRS)
		{
			limits->add_addr_accepted = *(uint32 *) NLA_DATA(nla);
			limits->found = true;
		}
	}
}
#endif							/* USE_MPTCP */

bool
mptcp_pm_read(List **endpoints, MptcpPmLimits *limits)
{
#ifdef USE_MPTCP
	uint16		family;
	MptcpNetlink *nl;
	int			fd;
	bool		ok = true;

	if ((nl = pm_open(&family)) == NULL)
		return false;
	fd = nl->fd;
	if (endpoints != NULL)
	{
		*endpoints = NIL;
		ok = genl_request(fd, family, PM_CMD_GET_ADDR, 0, NULL,
						  endpoint_cb, forget_endpoints, endpoints);
	}
	if (ok && limits != NULL)
	{
		memset(limits, 0, sizeof(*limits));
		ok = genl_request(fd, family, PM_CMD_GET_LIMITS, 0, NULL,
						  limits_cb, NULL, limits) && limits->found;
	}
	if (!ok)
		elog(DEBUG1, "could not read the MPTCP path manager: %m");
	mptcp_netlink_close(nl);
	return ok;
#else
	return false;
#endif
}
