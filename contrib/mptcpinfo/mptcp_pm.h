/*-------------------------------------------------------------------------
 *
 * mptcp_pm.h
 *	  The kernel's MPTCP path manager, read through generic netlink.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_pm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_PM_H
#define MPTCP_PM_H

#include "mptcp_diag.h"
#include "nodes/pg_list.h"

/* endpoint flags, as the kernel numbers them (MPTCP_PM_ADDR_FLAG_*) */
#define MPTCP_ENDP_SIGNAL	(1 << 0)
#define MPTCP_ENDP_SUBFLOW	(1 << 1)
#define MPTCP_ENDP_BACKUP	(1 << 2)
#define MPTCP_ENDP_FULLMESH	(1 << 3)

/* one endpoint of the path manager ("ip mptcp endpoint show") */
typedef struct MptcpEndpoint
{
	int			id;
	int			family;			/* AF_INET or AF_INET6, 0 if not reported */
	uint8		addr[16];		/* 4 or 16 bytes, network order */
	int			port;			/* 0 if none */
	int			ifindex;		/* 0 if none */
	uint32		flags;			/* MPTCP_ENDP_* */
} MptcpEndpoint;

/* the path manager's limits ("ip mptcp limits show") */
typedef struct MptcpPmLimits
{
	bool		found;
	uint32		subflows;
	uint32		add_addr_accepted;
} MptcpPmLimits;

/*
 * The endpoints and the limits, each unless its pointer is NULL.  Returns
 * false when the kernel cannot answer (no generic netlink, no "mptcp_pm"
 * family, or an error); then what was filled in means nothing.  Never
 * raises an error; the reason goes to DEBUG1.
 */
extern bool mptcp_pm_read(List **endpoints, MptcpPmLimits *limits);

/*
 * Can peers join at signal endpoint ep?  *known is false where "listeners"
 * (read with MPTCP_DIAG_LISTENERS) cannot tell.  Only an endpoint without
 * a port needs them: else "listeners" may be NULL.
 */
extern bool mptcp_pm_accepts_joins(const MptcpEndpoint *ep,
								   const MptcpDiag *listeners, bool *known);

#endif							/* MPTCP_PM_H */
