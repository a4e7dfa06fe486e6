// SPDX-License-Identifier: GPL-2.0
/*
 * pg-mptcp-subflow.bpf.c: a cgroup sock_ops program that closes a
 * PostgreSQL MPTCP subflow whose path is dead while another subflow of the
 * same connection still delivers, and leaves every subflow to the kernel's
 * own timeouts when all of them are silent together.
 *
 * Why: MPTCP keeps scheduling data on a subflow whose path died until TCP
 * gives up on it (minutes with the defaults), so a synchronous commit whose
 * WAL lands there waits.  A fixed short TCP_USER_TIMEOUT on every subflow
 * closes a dead path quickly, but it also closes every subflow at once when
 * all paths stop for a second (a switch reconverging, a VM migrating): the
 * MPTCP connection then dies and the standby reconnects.  What tells the two
 * apart is whether a sibling subflow was acknowledged while this one waited,
 * which only a per-connection view can see.
 *
 * How: the RTT callback (BPF_SOCK_OPS_RTT_CB: an acknowledgement of new
 * data that gave an RTT sample, about once per round trip while data flows)
 * records, per MPTCP connection, when and on which subflow data was last
 * acknowledged.  At each retransmission timeout of a subflow, the program
 * asks whether another subflow was acknowledged since this subflow's
 * previous timeout (or, at the first, since its own last acknowledgement),
 * and whether this one was (its snd_una moved: the RTT callback comes once
 * per round trip at most, and not for the first acknowledgements after a
 * timeout).  After close_after_rtos timeouts in a row with a live sibling
 * and no progress of its own, the path is dead while another delivers: it
 * sets TCP_USER_TIMEOUT to 1 ms, which the kernel acts on at the next timer
 * tick (tcp_clamp_rto_to_user_timeout()): the subflow is reset and MPTCP
 * resends its data on the others.  A timeout without a live sibling, or
 * after progress of its own, starts the count again, so an outage of every
 * path never closes anything, however long, and a subflow whose own path
 * came back is acknowledged before a second timeout can count (a close the
 * kernel has not acted on yet is taken back then).
 *
 * Two more settings, each the kernel's own, on subflows only: before a
 * subflow's first SYN, TCP_SYNCNT = syn_retries (an attempt on a dead
 * address gives up in seconds instead of about two minutes); once it is
 * established, TCP_RTO_MAX_MS = rto_max_ms (Linux 6.15 and later; older
 * kernels refuse it, which is counted): a subflow's retransmission timer
 * backs off to that at most, so a path that comes back after an outage of
 * every path is tried again within rto_max_ms rather than after a backoff
 * as long as the outage itself.  (The kernel then also gives up on a
 * subflow sooner: about 14 s without an acknowledgement at 1 s and
 * tcp_retries2 = 15.)  Where the kernel refuses TCP_RTO_MAX_MS, the
 * subflow gets TCP_THIN_LINEAR_TIMEOUTS instead: while fewer than four
 * segments are in flight (a synchronous commit's WAL), its first six
 * retransmissions come one RTO apart rather than doubling, so a path back
 * from an outage of a second or two is tried again within about one RTO.
 *
 * Needs Linux 5.19 or later with BTF and CONFIG_BPF_JIT
 * (bpf_skc_to_mptcp_sock()); subflows are attached to their connection's
 * cgroup.  Built with clang -target bpf from the UAPI headers and libbpf's
 * bpf_helpers.h only.  Loaded by host/host-setup (bpftool).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* include/uapi/linux/tcp.h and socket.h, which clash with linux/bpf.h */
#define SOL_TCP				6
#define TCP_SYNCNT			7
#define TCP_THIN_LINEAR_TIMEOUTS	16
#define TCP_USER_TIMEOUT	18
#define TCP_RTO_MAX_MS		44

char		LICENSE[] SEC("license") = "GPL";

/* set by host-setup after loading, before attaching */
struct pg_mptcp_config
{
	__u32		syn_retries;	/* 0: leave TCP_SYNCNT alone */
	__u32		close_after_rtos;	/* 0: never close a subflow */
	__u32		rto_max_ms;		/* 0: leave TCP_RTO_MAX_MS alone */
};

/* what --status prints; keep in step with COUNTERS in host-setup */
enum pg_mptcp_counter
{
	PG_MPTCP_SUBFLOWS_WATCHED,	/* subflows established */
	PG_MPTCP_RTO_SIBLING_ALIVE, /* timeouts while a sibling delivered */
	PG_MPTCP_RTO_ALL_SILENT,	/* timeouts while no sibling delivered */
	PG_MPTCP_CLOSED_DEAD_PATH,	/* subflows closed: dead path, live sibling */
	PG_MPTCP_CLOSE_REFUSED,		/* the kernel refused TCP_USER_TIMEOUT */
	PG_MPTCP_SYNCNT_SET,		/* subflow connects given TCP_SYNCNT */
	PG_MPTCP_SYNCNT_REFUSED,	/* ... that refused it */
	PG_MPTCP_PLAIN_TCP,			/* plain TCP sockets left alone */
	PG_MPTCP_RTO_MAX_SET,		/* subflows given TCP_RTO_MAX_MS */
	PG_MPTCP_RTO_MAX_REFUSED,	/* ... that refused it (before 6.15) */
	PG_MPTCP_CLOSE_TAKEN_BACK,	/* acknowledged after all: kept */
	PG_MPTCP_LINEAR_SET,		/* subflows given TCP_THIN_LINEAR_TIMEOUTS instead */
	PG_MPTCP_LINEAR_REFUSED,	/* ... that refused it too */
	PG_MPTCP_NCOUNTERS
};

/* per MPTCP connection: the last acknowledgement on any of its subflows */
struct pg_mptcp_conn
{
	__u64		acked_at_ns;
	__u64		acked_on;		/* that subflow's socket cookie */
};

/* per subflow: its current stall */
struct pg_mptcp_stall
{
	__u64		since_ns;		/* its last ack, then its last timeout */
	__u32		snd_una;		/* at that time */
	__u32		live_sibling_rtos;	/* timeouts in a row with a live sibling */
	__u32		closing;		/* TCP_USER_TIMEOUT is 1 ms */
};

struct
{
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pg_mptcp_config);
}			config SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PG_MPTCP_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
}			counters SEC(".maps");

/* on the MPTCP socket, as the kernel's selftest progs/mptcp_sock.c does */
struct
{
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pg_mptcp_conn);
}			conns SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pg_mptcp_stall);
}			stalls SEC(".maps");

static __always_inline void
count(__u32 which)
{
	__u64	   *n = bpf_map_lookup_elem(&counters, &which);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline int
set_tcp_option(struct bpf_sock_ops *skops, int option, int value)
{
	return bpf_setsockopt(skops, SOL_TCP, option, &value, sizeof(value));
}

SEC("sockops")
int
pg_mptcp_sflow(struct bpf_sock_ops *skops)
{
	__u32		zero = 0;
	struct pg_mptcp_config *cfg;
	struct bpf_sock *sk;
	struct mptcp_sock *msk;
	struct pg_mptcp_conn *conn;
	struct pg_mptcp_stall *stall;
	__u64		self,
				now;
	int			op = skops->op;

	if (op != BPF_SOCK_OPS_TCP_CONNECT_CB &&
		op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB &&
		op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
		op != BPF_SOCK_OPS_RTT_CB &&
		op != BPF_SOCK_OPS_RTO_CB)
		return 1;
	cfg = bpf_map_lookup_elem(&config, &zero);
	sk = skops->sk;
	if (!cfg || !sk)
		return 1;
	/* non-NULL only for a subflow: a TCP socket with an MPTCP context */
	msk = bpf_skc_to_mptcp_sock(sk);
	if (!msk)
	{
		if (op != BPF_SOCK_OPS_RTT_CB && op != BPF_SOCK_OPS_RTO_CB)
			count(PG_MPTCP_PLAIN_TCP);
		return 1;
	}
	self = bpf_get_socket_cookie(skops);
	now = bpf_ktime_get_ns();

	switch (op)
	{
		case BPF_SOCK_OPS_TCP_CONNECT_CB:
			if (cfg->syn_retries)
				count(set_tcp_option(skops, TCP_SYNCNT, cfg->syn_retries) == 0 ?
					  PG_MPTCP_SYNCNT_SET : PG_MPTCP_SYNCNT_REFUSED);
			break;

		case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
			count(PG_MPTCP_SUBFLOWS_WATCHED);
			if (cfg->rto_max_ms)
			{
				if (set_tcp_option(skops, TCP_RTO_MAX_MS, cfg->rto_max_ms) == 0)
					count(PG_MPTCP_RTO_MAX_SET);
				else
				{
					count(PG_MPTCP_RTO_MAX_REFUSED);
					count(set_tcp_option(skops, TCP_THIN_LINEAR_TIMEOUTS, 1) == 0 ?
						  PG_MPTCP_LINEAR_SET : PG_MPTCP_LINEAR_REFUSED);
				}
			}
			bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
									  BPF_SOCK_OPS_RTO_CB_FLAG |
									  BPF_SOCK_OPS_RTT_CB_FLAG);
			stall = bpf_sk_storage_get(&stalls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
			if (stall)
			{
				stall->since_ns = now;
				stall->snd_una = skops->snd_una;
			}
			break;

		case BPF_SOCK_OPS_RTT_CB:
			conn = bpf_sk_storage_get(&conns, msk, 0, BPF_SK_STORAGE_GET_F_CREATE);
			if (conn)
			{
				/* (two stores: a reader may rarely see a torn pair) */
				conn->acked_at_ns = now;
				conn->acked_on = self;
			}
			stall = bpf_sk_storage_get(&stalls, sk, 0, 0);
			if (!stall)
				break;
			stall->since_ns = now;
			stall->snd_una = skops->snd_una;
			stall->live_sibling_rtos = 0;
			if (stall->closing)
			{
				/* acknowledged before the kernel acted: keep it */
				stall->closing = 0;
				set_tcp_option(skops, TCP_USER_TIMEOUT, 0);
				count(PG_MPTCP_CLOSE_TAKEN_BACK);
			}
			break;

		case BPF_SOCK_OPS_RTO_CB:
			{
				int			alive;

				/* args[2]: the kernel is closing it now; counted already */
				if (skops->args[2])
					break;
				stall = bpf_sk_storage_get(&stalls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
				if (!stall || stall->closing)
					break;
				conn = bpf_sk_storage_get(&conns, msk, 0, 0);
				alive = conn && conn->acked_on != self &&
					conn->acked_at_ns > stall->since_ns;
				/* acknowledged since its last timeout: not dead */
				if (skops->snd_una != stall->snd_una)
					stall->live_sibling_rtos = 0;
				stall->since_ns = now;
				stall->snd_una = skops->snd_una;
				if (!alive)
				{
					stall->live_sibling_rtos = 0;
					count(PG_MPTCP_RTO_ALL_SILENT);
					break;
				}
				count(PG_MPTCP_RTO_SIBLING_ALIVE);
				stall->live_sibling_rtos++;
				if (cfg->close_after_rtos == 0 ||
					stall->live_sibling_rtos < cfg->close_after_rtos)
					break;
				if (set_tcp_option(skops, TCP_USER_TIMEOUT, 1) == 0)
				{
					stall->closing = 1;
					count(PG_MPTCP_CLOSED_DEAD_PATH);
				}
				else
					count(PG_MPTCP_CLOSE_REFUSED);
				break;
			}
	}
	return 1;
}
