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
 * refuses or does not answer.  The callback may allocate: if an ERROR
 * escapes it, fd is closed first.  Otherwise the caller closes fd.
 */
extern bool mptcp_netlink_request(int fd, struct nlmsghdr *req,
								  NetlinkCallback cb, void *arg,
								  int max_answers);

/*
 * String attributes: the payload of len bytes need not be NUL-terminated.
 * mptcp_netlink_strlcpy copies it into dst (of dstsize bytes, truncating,
 * always terminated); mptcp_netlink_streq says whether it is exactly str.
 */
extern void mptcp_netlink_strlcpy(char *dst, const void *payload, size_t len,
								  size_t dstsize);
extern bool mptcp_netlink_streq(const void *payload, size_t len,
								const char *str);

#endif							/* USE_MPTCP */

#endif							/* MPTCP_NETLINK_H */
