/*-------------------------------------------------------------------------
 *
 * mptcp_netlink.h
 *	  One netlink request and its answers, for sock_diag and generic
 *	  netlink alike.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_netlink.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_NETLINK_H
#define MPTCP_NETLINK_H

#include "libpq/mptcp.h"

#ifdef USE_MPTCP
#include <linux/netlink.h>

#include "utils/palloc.h"

/* called for each answer of a request, NLMSG_DONE and NLMSG_ERROR aside */
typedef void (*MptcpNetlinkCallback) (const struct nlmsghdr *nlh, void *arg);

/*
 * A netlink socket, closed by mptcp_netlink_close() or, at the latest (an
 * ERROR), with the memory context that was current when it was opened.
 */
typedef struct MptcpNetlink
{
	int			fd;
	MemoryContextCallback close_cb;
} MptcpNetlink;

/*
 * A netlink socket of the given protocol (NETLINK_SOCK_DIAG,
 * NETLINK_GENERIC) that never waits long for the kernel's answer; NULL with
 * errno set on failure.
 */
extern MptcpNetlink *mptcp_netlink_open(int protocol);
extern void mptcp_netlink_close(MptcpNetlink *nl);

/*
 * Send the request "req" (its nlmsg_len set; its sequence number is set
 * here) on fd and pass each answer to cb, at most max_answers of them.  A
 * dump (NLM_F_DUMP) ends with NLMSG_DONE, another request with its one
 * answer or an acknowledgement.  Returns false with errno set if the kernel
 * refuses or does not answer, EINTR if a dump was interrupted by a change
 * (NLM_F_DUMP_INTR): its answers may then be incomplete.  The callback may
 * allocate and throw: the socket's memory context closes it.
 */
extern bool mptcp_netlink_request(int fd, struct nlmsghdr *req,
								  MptcpNetlinkCallback cb, void *arg,
								  int max_answers);

/*
 * Send the dump request "req" (NLM_F_DUMP) as mptcp_netlink_request() does.
 * A dump that the kernel marks interrupted by a change is read again from
 * the start, a few times at most, after forget(arg), which forgets what cb
 * was given; a request that fails calls forget(arg) too, so that the
 * caller keeps a whole answer or nothing.  Returns false with errno set on
 * failure, EAGAIN if the dump was interrupted every time.
 */
extern bool mptcp_netlink_dump(int fd, struct nlmsghdr *req,
							   MptcpNetlinkCallback cb, void (*forget) (void *arg),
							   void *arg, int max_answers);

/*
 * Send nreqs requests of one answer each, laid out one after the other in
 * reqs (at NLMSG_ALIGN of the previous one's nlmsg_len), in one datagram;
 * cb gets each answer, or nlh NULL and the errno of a request the kernel
 * refused (ENOENT: no such object).  False, errno set, if any is missing.
 */
typedef void (*MptcpNetlinkBatchCallback) (const struct nlmsghdr *nlh, int index,
										   int error, void *arg);
extern bool mptcp_netlink_batch(int fd, char *reqs, int nreqs,
								MptcpNetlinkBatchCallback cb, void *arg);

#endif							/* USE_MPTCP */

#endif							/* MPTCP_NETLINK_H */
