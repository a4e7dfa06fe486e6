/*-------------------------------------------------------------------------
 *
 * mptcp_netlink.c
 *	  One netlink request and its answers.
 *
 * Each netlink request of the module (socket diagnostics, and any other
 * netlink family it reads) is sent here, and its answers are read until
 * the kernel says it is done, or, for lookups of single sockets, several
 * requests of one answer each are.  The loops are here, once:
 * bounded in time (the socket's receive timeout) and in the number of
 * answers, and cancellable.  They read only what the kernel sent, and
 * whole datagrams: anything else fails the request.  A socket belongs to
 * the memory context it was opened in, so that no ERROR, in a callback or
 * in its caller's code, leaves it open.
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
#include "utils/injection_point.h"
#include "utils/memutils.h"

#ifdef USE_MPTCP

#include <unistd.h>
#include <sys/socket.h>

/* a receive buffer: the kernel's dumps come in pieces of about 32 kB */
#define NETLINK_BUFSIZE 65536

/* the kernel answers at once; never wait long all the same */
#define NETLINK_TIMEOUT_SECONDS 5

static void
close_netlink(void *arg)
{
	MptcpNetlink *nl = arg;

	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}

MptcpNetlink *
mptcp_netlink_open(int protocol)
{
	struct timeval timeout = {.tv_sec = NETLINK_TIMEOUT_SECONDS};

	/* (allocated first: no ERROR between the socket and its callback) */
	MptcpNetlink *nl = palloc(sizeof(MptcpNetlink));
	int			save_errno;

	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
	/* (without the timeout, a kernel that never answers would hang us) */
	if (nl->fd >= 0 &&
		setsockopt(nl->fd, SOL_SOCKET, SO_RCVTIMEO, &timeout,
				   sizeof(timeout)) == 0)
	{
		nl->close_cb.func = close_netlink;
		nl->close_cb.arg = nl;
		MemoryContextRegisterResetCallback(CurrentMemoryContext,
										   &nl->close_cb);
		return nl;
	}
	save_errno = errno;
	close_netlink(nl);
	pfree(nl);
	errno = save_errno;
	return NULL;
}

/* (nl stays, with its callback, until its memory context goes) */
void
mptcp_netlink_close(MptcpNetlink *nl)
{
	close_netlink(nl);
}

/*
 * How often a dump that the kernel marks interrupted is read: a table that
 * changes all the time (sockets of a busy host) would otherwise keep us
 * reading.
 */
#define NETLINK_DUMP_ATTEMPTS 3

/* (for a test shim in exchange(): is this a dump's first reading?) */
static bool test_first_reading = false;

/*
 * An interrupted dump (NLM_F_DUMP_INTR: the table changed while the kernel
 * went through it) may miss entries or give some twice.  Each reader would
 * make its own choice: keep the partial answers, drop them, read again.
 * The policy is here, once, for every dump: read it again from the start,
 * with what the interrupted one gave forgotten, and give up after
 * NETLINK_DUMP_ATTEMPTS readings, as the request failing (EAGAIN) with
 * nothing given, which each caller reports as it reports other failures.
 */
bool
mptcp_netlink_dump(int fd, struct nlmsghdr *req, MptcpNetlinkCallback cb,
				   void (*forget) (void *arg), void *arg, int max_answers)
{
	Assert((req->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP);
	for (int attempt = 1;; attempt++)
	{
		int			save_errno;

		test_first_reading = (attempt == 1);
		if (mptcp_netlink_request(fd, req, cb, arg, max_answers))
			return true;
		/* (a failed request gives nothing either) */
		save_errno = errno;
		forget(arg);
		errno = save_errno;
		if (errno != EINTR)
			return false;
		if (attempt == NETLINK_DUMP_ATTEMPTS)
		{
			errno = EAGAIN;
			return false;
		}
	}
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

/*
 * Send nreqs requests, laid out one after the other in reqs (each at
 * NLMSG_ALIGN of the previous one's nlmsg_len; their sequence numbers are
 * set here), in one datagram, and pass each answer to cb, with the index of
 * its request, until every request has had its last: a dump's NLMSG_DONE,
 * another request's one answer, or an error (given to cb as nlh NULL and
 * the kernel's errno; 0 acknowledges).
 * Returns false with errno set if the kernel does not answer them all, or
 * sends more than max_answers; *interrupted says whether a dump was
 * interrupted by a change.
 */
static bool
exchange(int fd, char *reqs, int nreqs,
		 void (*cb) (const struct nlmsghdr *nlh, int index, int error, void *arg),
		 void *arg, int max_answers, bool *interrupted)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	bool		dump = (((struct nlmsghdr *) reqs)->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	uint32		first_seq = netlink_seq + 1;
	size_t		total = 0;
	char	   *buf = netlink_buffer();
	int			finished = 0;
	int			answers = 0;
	bool		ok = true;

	/* (t/010: every reading interrupted, or each dump's first, emptied) */
	bool		test_missing = dump && test_first_reading &&
		IS_INJECTION_POINT_ATTACHED("mptcpinfo-dump-interrupted-once");
	bool		test_interrupted = dump &&
		(test_missing ||
		 IS_INJECTION_POINT_ATTACHED("mptcpinfo-dump-interrupted"));

	Assert(nreqs == 1 || !dump);
	for (int i = 0; i < nreqs; i++)
	{
		struct nlmsghdr *req = (struct nlmsghdr *) (reqs + total);

		req->nlmsg_seq = ++netlink_seq;
		total += NLMSG_ALIGN(req->nlmsg_len);
	}
	*interrupted = false;
	if (sendto(fd, reqs, total, 0,
			   (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
		return false;

	while (finished < nreqs && ok)
	{
		ssize_t		len = recv_from_kernel(fd, buf);
		struct nlmsghdr *nlh;

		ok = (len >= 0);
		for (nlh = (struct nlmsghdr *) buf; ok && NLMSG_OK(nlh, len);
			 nlh = NLMSG_NEXT(nlh, len))
		{
			uint32		index = nlh->nlmsg_seq - first_seq;
			const struct nlmsgerr *err = NLMSG_DATA(nlh);

			/* (unsigned: a sequence number below first_seq is large) */
			if (index >= (uint32) nreqs)
				continue;
			if (test_interrupted)
				nlh->nlmsg_flags |= NLM_F_DUMP_INTR;
			if (test_missing && nlh->nlmsg_type != NLMSG_DONE &&
				nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			/* the table changed under the dump: it may miss entries */
			if (nlh->nlmsg_flags & NLM_F_DUMP_INTR)
				*interrupted = true;
			if (nlh->nlmsg_type == NLMSG_DONE)
			{
				/* a dump that failed midway says so here */
				if (nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) &&
					*(int *) NLMSG_DATA(nlh) < 0)
				{
					errno = -*(int *) NLMSG_DATA(nlh);
					ok = false;
				}
				finished++;
			}
			else if (nlh->nlmsg_type == NLMSG_ERROR)
			{
				if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err->error)))
				{
					errno = EPROTO;
					ok = false;
				}
				else
					cb(NULL, index, -err->error, arg);
				finished++;
			}
			else if (++answers > max_answers)
			{
				errno = EMSGSIZE;
				ok = false;
			}
			else
			{
				cb(nlh, index, 0, arg);
				finished += !dump;
			}
		}
	}
	return ok;
}

/* a request's callback, and the error that ended it */
typedef struct MptcpOneRequest
{
	MptcpNetlinkCallback cb;
	void	   *arg;
	int			error;
} MptcpOneRequest;

static void
one_answer(const struct nlmsghdr *nlh, int index, int error, void *arg)
{
	MptcpOneRequest *one = arg;

	if (nlh != NULL)
		one->cb(nlh, one->arg);
	else
		one->error = error;
}

bool
mptcp_netlink_request(int fd, struct nlmsghdr *req, MptcpNetlinkCallback cb,
					  void *arg, int max_answers)
{
	MptcpOneRequest one = {cb, arg, 0};
	bool		interrupted;

	if (!exchange(fd, (char *) req, 1, one_answer, &one, max_answers,
				  &interrupted))
		return false;
	errno = one.error != 0 ? one.error : EINTR;
	return one.error == 0 && !interrupted;
}

bool
mptcp_netlink_batch(int fd, char *reqs, int nreqs, MptcpNetlinkBatchCallback cb,
					void *arg)
{
	bool		interrupted;

	Assert(nreqs > 0);
	return exchange(fd, reqs, nreqs, cb, arg, nreqs, &interrupted);
}

#endif							/* USE_MPTCP */
