// SPDX-License-Identifier: GPL-2.0
/*
 * Check that an MPTCP socket accepts TCP_USER_TIMEOUT and TCP_RTO_MAX_MS,
 * reports them back, rejects invalid values, and that a connection
 * accepted from a listener carries the listener's values, as for TCP.
 *
 * Written in the style of tools/testing/selftests/net/mptcp/mptcp_sockopt.c
 * for the pg-mptcp kernel series (kernel/ in the pg-mptcp repository).
 *
 * Usage: mptcp_user_timeout [-6] [-t]
 *   -6  use ::1 instead of 127.0.0.1
 *   -t  use plain TCP sockets: checks the test itself, passes on any
 *       kernel with TCP_RTO_MAX_MS (6.15 or later)
 *
 * Exit status: 0 pass, 1 fail, 4 (KSFT_SKIP) MPTCP not available.
 */

#define _GNU_SOURCE

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/tcp.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef TCP_USER_TIMEOUT
#define TCP_USER_TIMEOUT 18
#endif
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif
#ifndef TCP_IS_MPTCP
#define TCP_IS_MPTCP 43
#endif

#define KSFT_SKIP 4

static int pf = AF_INET;
static int proto = IPPROTO_MPTCP;
static int failures;

static void xerror(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("FAIL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static const char *optname_str(int optname)
{
	return optname == TCP_USER_TIMEOUT ? "TCP_USER_TIMEOUT" : "TCP_RTO_MAX_MS";
}

static int new_socket(void)
{
	int fd = socket(pf, SOCK_STREAM, proto);

	if (fd < 0) {
		if (proto == IPPROTO_MPTCP &&
		    (errno == EPROTONOSUPPORT || errno == ENOPROTOOPT ||
		     errno == EINVAL)) {
			fprintf(stderr, "SKIP: MPTCP not available: %s\n",
				strerror(errno));
			exit(KSFT_SKIP);
		}
		xerror("socket: %s", strerror(errno));
	}
	return fd;
}

/* set, expecting success, then read back and compare */
static void set_get(int fd, const char *what, int optname, int val)
{
	socklen_t len = sizeof(int);
	int out = -1;

	if (setsockopt(fd, IPPROTO_TCP, optname, &val, sizeof(val))) {
		fail("%s: setsockopt(%s, %d): %s (errno %d)", what,
		     optname_str(optname), val, strerror(errno), errno);
		return;
	}
	if (getsockopt(fd, IPPROTO_TCP, optname, &out, &len)) {
		fail("%s: getsockopt(%s): %s (errno %d)", what,
		     optname_str(optname), strerror(errno), errno);
		return;
	}
	if (len != sizeof(int) || out != val)
		fail("%s: %s reads back %d (len %u), want %d", what,
		     optname_str(optname), out, (unsigned int)len, val);
	else
		printf("ok: %s: %s set and read back %d\n", what,
		       optname_str(optname), val);
}

static void expect_get(int fd, const char *what, int optname, int want)
{
	socklen_t len = sizeof(int);
	int out = -1;

	if (getsockopt(fd, IPPROTO_TCP, optname, &out, &len)) {
		fail("%s: getsockopt(%s): %s (errno %d)", what,
		     optname_str(optname), strerror(errno), errno);
		return;
	}
	if (out != want)
		fail("%s: %s is %d, want %d", what, optname_str(optname),
		     out, want);
	else
		printf("ok: %s: %s is %d\n", what, optname_str(optname), out);
}

static void expect_einval(int fd, const char *what, int optname, int val)
{
	if (setsockopt(fd, IPPROTO_TCP, optname, &val, sizeof(val)) == 0) {
		fail("%s: setsockopt(%s, %d) succeeded, want EINVAL", what,
		     optname_str(optname), val);
		return;
	}
	if (errno != EINVAL)
		fail("%s: setsockopt(%s, %d): %s (errno %d), want EINVAL", what,
		     optname_str(optname), val, strerror(errno), errno);
	else
		printf("ok: %s: %s %d rejected with EINVAL\n", what,
		       optname_str(optname), val);
}

static socklen_t loopback(struct sockaddr_storage *ss, unsigned short port)
{
	memset(ss, 0, sizeof(*ss));
	if (pf == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		a->sin6_port = htons(port);
		return sizeof(*a);
	}
	((struct sockaddr_in *)ss)->sin_family = AF_INET;
	((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	((struct sockaddr_in *)ss)->sin_port = htons(port);
	return sizeof(struct sockaddr_in);
}

/* a connection that fell back to TCP would pass TCP options through */
static void check_is_mptcp(int fd)
{
	socklen_t len = sizeof(int);
	int val = 0;

	if (getsockopt(fd, IPPROTO_TCP, TCP_IS_MPTCP, &val, &len))
		printf("note: TCP_IS_MPTCP not available (kernel before 6.10)\n");
	else if (val != 1)
		xerror("the connection fell back to TCP (TCP_IS_MPTCP %d)", val);
	else
		printf("ok: connected: TCP_IS_MPTCP is 1\n");
}

static void test_connected(void)
{
	struct sockaddr_storage ss;
	int lfd, cfd, afd;
	socklen_t sl;

	lfd = new_socket();
	sl = loopback(&ss, 0);
	if (bind(lfd, (struct sockaddr *)&ss, sl) || listen(lfd, 1))
		xerror("bind/listen: %s", strerror(errno));
	if (getsockname(lfd, (struct sockaddr *)&ss, &sl))
		xerror("getsockname: %s", strerror(errno));

	/* set on the listener: accepted connections must inherit it */
	set_get(lfd, "listener", TCP_USER_TIMEOUT, 7000);
	set_get(lfd, "listener", TCP_RTO_MAX_MS, 3000);

	cfd = new_socket();
	if (connect(cfd, (struct sockaddr *)&ss, sl))
		xerror("connect: %s", strerror(errno));
	afd = accept(lfd, NULL, NULL);
	if (afd < 0)
		xerror("accept: %s", strerror(errno));

	if (proto == IPPROTO_MPTCP)
		check_is_mptcp(cfd);

	expect_get(afd, "accepted", TCP_USER_TIMEOUT, 7000);
	expect_get(afd, "accepted", TCP_RTO_MAX_MS, 3000);

	/* set on an established connection: applies to its subflows */
	set_get(cfd, "connected", TCP_USER_TIMEOUT, 10000);
	set_get(cfd, "connected", TCP_RTO_MAX_MS, 2000);
	set_get(cfd, "connected", TCP_USER_TIMEOUT, 0);

	close(afd);
	close(cfd);
	close(lfd);
}

static void test_unconnected(void)
{
	int fd = new_socket();

	expect_get(fd, "new socket", TCP_USER_TIMEOUT, 0);
	set_get(fd, "new socket", TCP_USER_TIMEOUT, 5000);
	expect_einval(fd, "new socket", TCP_USER_TIMEOUT, -1);
	expect_get(fd, "new socket", TCP_USER_TIMEOUT, 5000);

	set_get(fd, "new socket", TCP_RTO_MAX_MS, 5000);
	expect_einval(fd, "new socket", TCP_RTO_MAX_MS, 999);
	expect_einval(fd, "new socket", TCP_RTO_MAX_MS, 120001);
	expect_get(fd, "new socket", TCP_RTO_MAX_MS, 5000);

	close(fd);
}

int main(int argc, char *argv[])
{
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);

	while ((c = getopt(argc, argv, "6t")) != -1) {
		switch (c) {
		case '6':
			pf = AF_INET6;
			break;
		case 't':
			proto = IPPROTO_TCP;
			break;
		default:
			fprintf(stderr, "usage: %s [-6] [-t]\n", argv[0]);
			return 1;
		}
	}

	printf("%s sockets, %s\n", proto == IPPROTO_MPTCP ? "MPTCP" : "TCP",
	       pf == AF_INET6 ? "IPv6" : "IPv4");
	test_unconnected();
	test_connected();

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
