/*-------------------------------------------------------------------------
 *
 * mptcp_netlink.c
 *	  One netlink request and its answers, for sock_diag and generic
 *	  netlink alike.
 *
 * The kernel sources of this module that speak netlink, the socket
 * diagnostics (mptcp_diag.c), routes (mptcp_route.c) and the path manager's
 * generic netlink family (mptcp_pm.c), send one request and read answers
 * until the kernel says it is done, or (mptcp_diag.c's lookups of single
 * sockets) several requests of one answer each.  The loops are here, once:
 * bounded in time (the socket's receive timeout) and in the number of
 * answers, cancellable, and they never leave the socket open behind an
 * ERROR.  They read only what the kernel sent, and whole datagrams:
 * anything else fails the request.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_netlink.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "mptcp_netlink.h"
#include "utils/memutils.h"

#ifdef USE_MPTCP

#include <unistd.h>
#include <sys/socket.h>

/* a receive buffer: the kernel's dumps come in pieces of about 32 kB */
#define NETLINK_BUFSIZE 65536

/* the kernel answers at once; never wait long all the same */
#define NETLINK_TIMEOUT_SECONDS 5

int
mptcp_netlink_open(int protocol)
{
	struct timeval timeout = {.tv_sec = NETLINK_TIMEOUT_SECONDS};
	int			fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
	/* (without the timeout, a kernel that never answers would hang us) */
	if (fd >= 0 &&
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) < 0)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		return -1;
	}
	return fd;
}

/* sequence numbers of this process's requests, on whatever socket */
static uint32 netlink_seq = 0;

/*
 * The receive buffer, allocated once: a view's query can make a hundred
 * requests, and a new 64 kB buffer each time costs page faults.
 */
static char *
netlink_buffer(void)
{
	static char *buf = NULL;

	if (buf == NULL)
		buf = MemoryContextAlloc(TopMemoryContext, NETLINK_BUFSIZE);
	return buf;
}

/*
 * Receive one datagram from the kernel into buf (NETLINK_BUFSIZE bytes):
 * its length, or -1 with errno set if the kernel does not answer in time
 * (EAGAIN) or sent more than fits (EMSGSIZE).
 */
static ssize_t
recv_from_kernel(int fd, char *buf)
{
	for (;;)
	{
		struct sockaddr_nl from;
		struct iovec iov;
		struct msghdr msg;
		ssize_t		len;

		CHECK_FOR_INTERRUPTS();

		iov.iov_base = buf;
		iov.iov_len = NETLINK_BUFSIZE;
		memset(&msg, 0, sizeof(msg));
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		len = recvmsg(fd, &msg, 0);
		/* a signal (e.g. a report request) is no reason to give up */
		if (len < 0 && errno == EINTR)
			continue;
		if (len == 0)
			errno = EPROTO;
		if (len <= 0)
			return -1;
		/* only the kernel answers; ignore what another process sends */
		if (msg.msg_namelen < sizeof(from) ||
			from.nl_family != AF_NETLINK || from.nl_pid != 0)
			continue;
		/* a datagram larger than the buffer lost its end */
		if (msg.msg_flags & MSG_TRUNC)
		{
			errno = EMSGSIZE;
			return -1;
		}
		return len;
	}
}

bool
mptcp_netlink_request(int fd, struct nlmsghdr *req, NetlinkCallback cb,
					  void *arg, int max_answers)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	bool		dump = (req->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	char	   *buf = netlink_buffer();
	bool		done = false;
	bool		ok = true;
	bool		interrupted = false;
	int			answers = 0;

	req->nlmsg_seq = ++netlink_seq;
	if (sendto(fd, req, req->nlmsg_len, 0,
			   (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
		return false;

	PG_TRY();
	{
		while (!done && ok)
		{
			ssize_t		len = recv_from_kernel(fd, buf);
			struct nlmsghdr *nlh;

			if (len < 0)
			{
				ok = false;
				break;
			}
			for (nlh = (struct nlmsghdr *) buf; NLMSG_OK(nlh, len);
				 nlh = NLMSG_NEXT(nlh, len))
			{
				if (nlh->nlmsg_seq != req->nlmsg_seq)
					continue;
				/* the table changed under the dump: it may miss entries */
				if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
					interrupted = true;
				if (nlh->nlmsg_type == NLMSG_DONE)
				{
					/* a dump that failed midway says so here */
					if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) &&
						*(int *) NLMSG_DATA(nlh) < 0)
					{
						errno = -*(int *) NLMSG_DATA(nlh);
						ok = false;
					}
					done = true;
					break;
				}
				if (nlh->nlmsg_type == NLMSG_ERROR)
				{
					const struct nlmsgerr *err = NLMSG_DATA(nlh);

					if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err->error)))
					{
						errno = EPROTO;
						ok = false;
					}
					else
					{
						/* an error of 0 acknowledges the request */
						errno = err->error ? -err->error : 0;
						ok = (err->error == 0);
					}
					done = true;
					break;
				}
				if (++answers > max_answers)
				{
					errno = EMSGSIZE;
					ok = false;
					break;
				}
				cb(nlh, arg);
				if (!dump)
				{
					done = true;
					break;
				}
			}
		}
	}
	PG_CATCH();
	{
		close(fd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (ok && interrupted)
	{
		errno = EINTR;
		ok = false;
	}
	return ok;
}

bool
mptcp_netlink_batch(int fd, char *reqs, int nreqs, NetlinkBatchCallback cb,
					void *arg)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32		first_seq = netlink_seq + 1;
	size_t		total = 0;
	char	   *buf = netlink_buffer();
	int			answered = 0;
	bool		ok = true;

	Assert(nreqs > 0);
	for (int i = 0; i < nreqs; i++)
	{
		struct nlmsghdr *req = (struct nlmsghdr *) (reqs + total);

		Assert(!(req->nlmsg_flags & (NLM_F_DUMP | NLM_F_ACK)));
		req->nlmsg_seq = ++netlink_seq;
		total += NLMSG_ALIGN(req->nlmsg_len);
	}
	if (sendto(fd, reqs, total, 0,
			   (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
		return false;

	PG_TRY();
	{
		while (answered < nreqs && ok)
		{
			ssize_t		len = recv_from_kernel(fd, buf);
			struct nlmsghdr *nlh;

			if (len < 0)
			{
				ok = false;
				break;
			}
			for (nlh = (struct nlmsghdr *) buf; NLMSG_OK(nlh, len);
				 nlh = NLMSG_NEXT(nlh, len))
			{
				uint32		index = nlh->nlmsg_seq - first_seq;

				/* (unsigned: a sequence number below first_seq is large) */
				if (index >= (uint32) nreqs)
					continue;
				answered++;
				if (nlh->nlmsg_type == NLMSG_ERROR)
				{
					const struct nlmsgerr *err = NLMSG_DATA(nlh);

					if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err->error)))
					{
						errno = EPROTO;
						ok = false;
						break;
					}
					cb(NULL, index, -err->error, arg);
				}
				else if (nlh->nlmsg_type != NLMSG_DONE)
					cb(nlh, index, 0, arg);
			}
		}
	}
	PG_CATCH();
	{
		close(fd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return ok;
}

void
mptcp_netlink_strlcpy(char *dst, const void *payload, size_t len,
					  size_t dstsize)
{
	size_t		n = strnlen(payload, len);

	Assert(dstsize > 0);
	n = Min(n, dstsize - 1);
	memcpy(dst, payload, n);
	dst[n] = '\0';
}

bool
mptcp_netlink_streq(const void *payload, size_t len, const char *str)
{
	size_t		n = strnlen(payload, len);

	return n == strlen(str) && memcmp(payload, str, n) == 0;
}

#endif							/* USE_MPTCP */
