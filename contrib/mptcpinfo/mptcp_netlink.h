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

/* called for each answer of a request, NLMSG_DONE and NLMSG_ERROR aside */
typedef void (*NetlinkCallback) (const struct nlmsghdr *nlh, void *arg);

/*
 * A netlink socket of the given protocol (NETLINK_SOCK_DIAG,
 * NETLINK_GENERIC) that never waits long for the kernel's answer; -1 with
 * errno set on failure.
 */
extern int	mptcp_netlink_open(int protocol);

/*
 * Send the request "req" (its nlmsg_len set; its sequence number is set
 * here) on fd and pass each answer to cb, at most max_answers of them.  A
 * dump (NLM_F_DUMP) ends with NLMSG_DONE, another request with its one
 * answer or an acknowledgement.  Returns false with errno set if the kernel
 * refuses or does not answer, EINTR if a dump was interrupted by a change
 * (NLM_F_DUMP_INTR): its answers may then be incomplete.  The callback may
 * allocate: if an ERROR escapes it, fd is closed first.  Otherwise the
 * caller closes fd.
 */
extern bool mptcp_netlink_request(int fd, struct nlmsghdr *req,
								  NetlinkCallback cb, void *arg,
								  int max_answers);

/* called for the answer of each request of a batch, by its index */
typedef void (*NetlinkBatchCallback) (const struct nlmsghdr *nlh, int index,
									  int error, void *arg);

/*
 * Send nreqs requests that each get one answer (not dumps, no
 * acknowledgements), laid out one after the other in reqs (each at
 * NLMSG_ALIGN of the previous one's nlmsg_len; their sequence numbers are
 * set here), in one datagram, and pass each answer to cb: nlh the answer
 * and error 0, or nlh NULL and the kernel's errno (ENOENT: no such object)
 * when it refused that request.  Returns false with errno set if the kernel
 * did not answer them all.  Closes fd behind an ERROR, as above.
 */
extern bool mptcp_netlink_batch(int fd, char *reqs, int nreqs,
								NetlinkBatchCallback cb, void *arg);

/*
 * Send the dump request "req" (NLM_F_DUMP) as mptcp_netlink_request() does.
 * A dump that the kernel marks interrupted by a change is read again from
 * the start, a few times at most, after forget(arg), which forgets what cb
 * was given; a request that fails calls forget(arg) too, so that the
 * caller keeps a whole answer or nothing.  Returns false with errno set on
 * failure, EAGAIN if the dump was interrupted every time.
 */
extern bool mptcp_netlink_dump(int fd, struct nlmsghdr *req,
							   NetlinkCallback cb, void (*forget) (void *arg),
							   void *arg, int max_answers);

#endif							/* USE_MPTCP */

#endif							/* MPTCP_NETLINK_H */
