/*
 * What the kernel's socket diagnostics cost per MPTCP subflow, without
 * PostgreSQL: the floor under pg_stat_mptcp_subflows (issue 46, item 6).
 *
 * N MPTCP connections with 2 subflows each (and NOISE plain TCP connections)
 * in the caller's network namespace; then, in every round and in turn, the
 * ways sock_diag can describe the server side's 2N subflows:
 *   - lookups by ends, 16 to a datagram (what mptcpinfo does once it knows
 *     a connection's subflows), with the extensions mptcpinfo asks for
 *     (tcp_info, which brings the MPTCP ULP info, and the congestion
 *     control), with tcp_info alone, and with none;
 *   - a dump of the TCP sockets filtered in the kernel by the server's port
 *     (bytecode, as "ss sport = :P" sends), with and without extensions;
 *   - the same dump with a filter nothing passes: the walk of the kernel's
 *     table alone;
 *   - the dump of the MPTCP connections (what pg_stat_mptcp reads).
 * Each line gives the answers (checked against what is expected) and the
 * median time over the rounds, with the 10th and 90th percentiles.
 *
 * Usage (as root, in a namespace of its own): see sock-diag-cost.sh.
 *
 * "sock-diag-cost --floor PORT [ROUNDS]" opens nothing: it measures, for
 * the TCP sockets of local port PORT already there (a server's, with its
 * clients' subflows), the cheapest description of them (the dump by port,
 * tcp_info + congestion) and the dump of the MPTCP connections: a line a
 * round, "MS TCP-MS MPTCP-MS SOCKETS", then the medians, "floor MS tcp MS
 * mptcp MS sockets N".  The monitoring bench runs it beside the views, on
 * the same connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MPTCP_PROTO 262
#define EXT_INFO (1 << (INET_DIAG_INFO - 1))
#define EXT_CONG (1 << (INET_DIAG_CONG - 1))
/* every TCP state but LISTEN, TIME_WAIT and CLOSE */
#define STATES (0xfff & ~(1 << 10) & ~(1 << 6) & ~(1 << 7))
#define BATCH 16

static struct inet_diag_sockid *subflows;
static int nsubflows;
static int max_subflows;
static unsigned short server_port;
static char buf[1 << 16];

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

/* read a dump's answers; with "collect", keep the ends of the server's sockets */
static int
drain(int fd, int collect)
{
	int			n = 0;

	for (;;)
	{
		ssize_t		len = recv(fd, buf, sizeof(buf), 0);

		if (len <= 0)
			die("recv");
		for (struct nlmsghdr *h = (void *) buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len))
		{
			struct inet_diag_msg *m = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE)
				return n;
			if (h->nlmsg_type == NLMSG_ERROR)
			{
				fprintf(stderr, "dump refused: %s\n",
						strerror(-((struct nlmsgerr *) NLMSG_DATA(h))->error));
				exit(1);
			}
			if (collect && ntohs(m->id.idiag_sport) == server_port &&
				nsubflows < max_subflows)
				subflows[nsubflows++] = m->id;
			n++;
		}
	}
}

/* a TCP (or MPTCP) dump; port_filter: only sockets of this local port */
static int
dump(int fd, int protocol, int ext, int port_filter, int collect)
{
	struct
	{
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
		char		attrs[32];
	}			q;
	char	   *a;

	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.req.sdiag_family = AF_INET;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = STATES;
	q.req.idiag_ext = ext;
	q.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(q.req));
	a = (char *) &q + q.nlh.nlmsg_len;
	if (port_filter >= 0)
	{
		/* "sport == P": 8 bytes on, to the end, accepts; 12, past it, rejects */
		struct nlattr *na = (void *) a;
		struct inet_diag_bc_op *op = (void *) (na + 1);

		op[0] = (struct inet_diag_bc_op) {INET_DIAG_BC_S_EQ, 8, 12};
		op[1] = (struct inet_diag_bc_op) {0, 0, port_filter};
		na->nla_type = INET_DIAG_REQ_BYTECODE;
		na->nla_len = NLA_HDRLEN + 2 * sizeof(*op);
		a += NLA_ALIGN(na->nla_len);
	}
	if (protocol == MPTCP_PROTO)
	{
		struct nlattr *na = (void *) a;

		na->nla_type = INET_DIAG_REQ_PROTOCOL;
		na->nla_len = NLA_HDRLEN + sizeof(int);
		*(int *) (na + 1) = MPTCP_PROTO;
		a += NLA_ALIGN(na->nla_len);
	}
	q.nlh.nlmsg_len = a - (char *) &q;
	if (send(fd, &q, q.nlh.nlmsg_len, 0) < 0)
		die("send");
	return drain(fd, collect);
}

/* the server's subflows asked for by their ends, BATCH to a datagram */
static int
lookups(int fd, int ext)
{
	struct
	{
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	}			q[BATCH];
	int			found = 0;

	for (int first = 0; first < nsubflows; first += BATCH)
	{
		int			k = nsubflows - first < BATCH ? nsubflows - first : BATCH;

		memset(q, 0, sizeof(q));
		for (int i = 0; i < k; i++)
		{
			q[i].nlh.nlmsg_len = sizeof(q[i]);
			q[i].nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
			q[i].nlh.nlmsg_flags = NLM_F_REQUEST;
			q[i].req.sdiag_family = AF_INET;
			q[i].req.sdiag_protocol = IPPROTO_TCP;
			q[i].req.idiag_states = STATES;
			q[i].req.idiag_ext = ext;
			q[i].req.id = subflows[first + i];
			q[i].req.id.idiag_cookie[0] = q[i].req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
		}
		if (send(fd, q, sizeof(q[0]) * k, 0) < 0)
			die("send");
		/* one datagram of answers each */
		for (int i = 0; i < k; i++)
		{
			ssize_t		len = recv(fd, buf, sizeof(buf), 0);
			struct nlmsghdr *h = (void *) buf;

			if (len <= 0)
				die("recv");
			found += NLMSG_OK(h, len) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY;
		}
	}
	return found;
}

static int
cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static int
connect_pairs(int protocol, const char *addr, int n, int send_byte)
{
	int			l = socket(AF_INET, SOCK_STREAM, protocol);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t	sl = sizeof(sa);

	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (l < 0 || bind(l, (void *) &sa, sizeof(sa)) || listen(l, 4096) ||
		getsockname(l, (void *) &sa, &sl))
		die("listen");
	for (int i = 0; i < n; i++)
	{
		int			c = socket(AF_INET, SOCK_STREAM, protocol);

		if (c < 0 || connect(c, (void *) &sa, sizeof(sa)) || accept(l, NULL, NULL) < 0)
			die("connect");
		/* (the server side is fully established, and takes the join, on data) */
		if (send_byte && write(c, "x", 1) != 1)
			die("write");
	}
	return ntohs(sa.sin_port);
}

static int
floor_main(int argc, char **argv)
{
	int			rounds = argc > 3 ? atoi(argv[3]) : 21;
	double	   *tcp,
			   *mptcp,
			   *sum;
	int			fd,
				n = 0;
	int			rcvbuf = 1 << 20;

	server_port = argc > 2 ? atoi(argv[2]) : 0;
	if (server_port == 0 || rounds < 1)
	{
		fprintf(stderr, "usage: sock-diag-cost --floor PORT [ROUNDS]\n");
		return 2;
	}
	fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		die("netlink");
	tcp = calloc(rounds, sizeof(double));
	mptcp = calloc(rounds, sizeof(double));
	sum = calloc(rounds, sizeof(double));
	for (int r = 0; r < rounds; r++)
	{
		double		t0 = now_ms();

		n = dump(fd, IPPROTO_TCP, EXT_INFO | EXT_CONG, server_port, 0);
		tcp[r] = now_ms() - t0;
		t0 = now_ms();
		dump(fd, MPTCP_PROTO, EXT_INFO, -1, 0);
		mptcp[r] = now_ms() - t0;
		sum[r] = tcp[r] + mptcp[r];
		printf("%.3f %.3f %.3f %d\n", sum[r], tcp[r], mptcp[r], n);
	}
	qsort(tcp, rounds, sizeof(double), cmp);
	qsort(mptcp, rounds, sizeof(double), cmp);
	qsort(sum, rounds, sizeof(double), cmp);
	printf("floor %.3f tcp %.3f mptcp %.3f sockets %d\n",
		   sum[rounds / 2], tcp[rounds / 2], mptcp[rounds / 2], n);
	return 0;
}

int
main(int argc, char **argv)
{
	static const char *const names[] = {
		"lookups, tcp_info + congestion (mptcpinfo)",
		"lookups, tcp_info",
		"lookups, no extension",
		"dump by port, tcp_info + congestion",
		"dump by port, no extension",
		"dump, filter passing none (the walk)",
		"dump of the MPTCP connections, mptcp_info",
	};
	enum {NMODES = 7};
	int			n = argc > 1 ? atoi(argv[1]) : 1000;
	int			noise = argc > 2 ? atoi(argv[2]) : 0;
	int			rounds = argc > 3 ? atoi(argv[3]) : 101;
	int			expected[NMODES];
	int			answers[NMODES];
	double	   *t[NMODES];
	int			fd;
	int			rcvbuf = 1 << 20;

	if (argc > 1 && strcmp(argv[1], "--floor") == 0)
		return floor_main(argc, argv);
	if (n < 1 || noise < 0 || rounds < 1)
	{
		fprintf(stderr, "usage: sock-diag-cost CONNECTIONS [NOISE [ROUNDS]]\n");
		return 2;
	}
	server_port = connect_pairs(MPTCP_PROTO, "198.18.0.1", n, 1);
	connect_pairs(IPPROTO_TCP, "198.18.0.1", noise, 0);
	sleep(2);					/* the joins */

	fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		die("netlink");
	max_subflows = 4 * n;		/* (2 expected a connection) */
	subflows = calloc(max_subflows, sizeof(*subflows));
	dump(fd, IPPROTO_TCP, 0, server_port, 1);
	printf("%d MPTCP connections, %d subflows on the server side; %d plain TCP connections\n",
		   n, nsubflows, noise);
	if (nsubflows != 2 * n)
	{
		fprintf(stderr, "expected %d subflows (2 a connection), found %d\n", 2 * n, nsubflows);
		return 1;
	}
	for (int m = 0; m < NMODES; m++)
	{
		t[m] = calloc(rounds, sizeof(double));
		expected[m] = m == 5 ? 0 : m == 6 ? 2 * n : nsubflows;
	}
	/* (the modes in turn in every round: drift hits them all alike) */
	for (int r = 0; r < rounds; r++)
		for (int m = 0; m < NMODES; m++)
		{
			double		t0 = now_ms();

			switch (m)
			{
				case 0: answers[m] = lookups(fd, EXT_INFO | EXT_CONG); break;
				case 1: answers[m] = lookups(fd, EXT_INFO); break;
				case 2: answers[m] = lookups(fd, 0); break;
				case 3: answers[m] = dump(fd, IPPROTO_TCP, EXT_INFO | EXT_CONG, server_port, 0); break;
				case 4: answers[m] = dump(fd, IPPROTO_TCP, 0, server_port, 0); break;
				case 5: answers[m] = dump(fd, IPPROTO_TCP, 0, 1, 0); break;
				case 6: answers[m] = dump(fd, MPTCP_PROTO, EXT_INFO, -1, 0); break;
			}
			t[m][r] = now_ms() - t0;
			if (answers[m] != expected[m])
			{
				fprintf(stderr, "%s: %d answers, expected %d\n", names[m], answers[m], expected[m]);
				return 1;
			}
		}
	printf("%-44s %7s %9s %7s %7s\n", "", "answers", "median ms", "p10", "p90");
	for (int m = 0; m < NMODES; m++)
	{
		qsort(t[m], rounds, sizeof(double), cmp);
		printf("%-44s %7d %9.3f %7.3f %7.3f\n", names[m], answers[m],
			   t[m][rounds / 2], t[m][rounds / 10], t[m][rounds * 9 / 10]);
	}
	return 0;
}
