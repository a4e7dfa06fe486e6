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
 * MPTCP connection then dies and the standby reconnects.  The difference
 * between the two faults is whether a sibling subflow was acknowledged
 * while this one waited, which only a per-connection view can tell.
 *
 * How: every acknowledgement that gives an RTT sample (BPF_SOCK_OPS_RTT_CB)
 * records, per MPTCP connection, when and on which subflow data was last
 * acknowledged.  At a subflow's first retransmission timeout of a stall,
 * the program notes whether a sibling was acknowledged within the last
 * alive_window_ms; at its close_after_rtos-th timeout, if a sibling was
 * acknowledged then and is again now, it sets TCP_USER_TIMEOUT to 1 ms,
 * which the kernel acts on at once (tcp_clamp_rto_to_user_timeout()): the
 * subflow is reset and MPTCP resends its data on the others.  A stall that
 * began while every path was silent is never cut short.
 *
 * Two more settings, each the kernel's own, on subflows only: before a
 * subflow's first SYN, TCP_SYNCNT = syn_retries (an attempt on a dead
 * address gives up in seconds instead of about two minutes); once it is
 * established, TCP_RTO_MAX_MS = rto_max_ms (Linux 6.15 and later; older
 * kernels refuse it, which is counted): a subflow's retransmission timer
 * backs off to that at most, so a path that comes back after an outage of
 * every path is tried again within rto_max_ms rather than after a backoff
 * as long as the outage itself.
 *
 * Needs Linux 6.1 or later (bpf_skc_to_mptcp_sock(); subflows are attached
 * to their connection's cgroup).  Built with clang -target bpf from the
 * UAPI headers and libbpf's bpf_helpers.h only, so the object is the same on
 * every architecture of one byte order.  Loaded by host-setup (bpftool).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

/* include/uapi/linux/tcp.h and socket.h, which clash with linux/bpf.h */
#define SOL_TCP				6
#define TCP_SYNCNT			7
#define TCP_USER_TIMEOUT	18
#define TCP_RTO_MAX_MS		44

#define NSEC_PER_MSEC		1000000ULL

char		LICENSE[] SEC("license") = "GPL";	/* the MPTCP helper is GPL-only */

/* set by host-setup after loading, before attaching */
struct pg_mptcp_config
{
	__u32		syn_retries;	/* 0: leave TCP_SYNCNT alone */
	__u32		alive_window_ms;	/* a sibling acknowledged this recently
									 * delivers */
	__u32		close_after_rtos;	/* 0: never close a subflow */
	__u32		rto_max_ms;		/* 0: leave TCP_RTO_MAX_MS alone */
};

/* what --status prints; keep in step with COUNTERS in host-setup */
enum pg_mptcp_counter
{
	PG_MPTCP_SUBFLOWS_WATCHED,	/* subflows established */
	PG_MPTCP_RTO_SIBLING_ALIVE, /* timeouts while a sibling delivered */
	PG_MPTCP_RTO_ALL_SILENT,	/* timeouts while every subflow was silent */
	PG_MPTCP_CLOSED_DEAD_PATH,	/* subflows closed: dead path, live sibling */
	PG_MPTCP_CLOSE_REFUSED,		/* the kernel refused TCP_USER_TIMEOUT */
	PG_MPTCP_SYNCNT_SET,		/* subflow connects given TCP_SYNCNT */
	PG_MPTCP_SYNCNT_REFUSED,	/* ... that refused it */
	PG_MPTCP_PLAIN_TCP,			/* plain TCP sockets left alone */
	PG_MPTCP_RTO_MAX_SET,		/* subflows given TCP_RTO_MAX_MS */
	PG_MPTCP_RTO_MAX_REFUSED,	/* ... that refused it (before 6.15) */
	PG_MPTCP_NCOUNTERS
};

/* per MPTCP connection: the last acknowledgement on any of its subflows */
struct pg_mptcp_progress
{
	__u64		at_ns;
	__u64		subflow;		/* which subflow, as an opaque identity */
};

/* per subflow: the state of its current stall */
struct pg_mptcp_stall
{
	__u32		sibling_alive_at_first_rto;
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

struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);			/* the MPTCP socket's address */
	__type(value, struct pg_mptcp_progress);
}			progress SEC(".maps");

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

/* was a subflow other than this one acknowledged within the window? */
static __always_inline int
sibling_alive(__u64 conn, __u64 self, __u64 now, const struct pg_mptcp_config *cfg)
{
	struct pg_mptcp_progress *p = bpf_map_lookup_elem(&progress, &conn);

	return p && p->subflow != self &&
		now - p->at_ns < cfg->alive_window_ms * NSEC_PER_MSEC;
}

SEC("sockops")
int
pg_mptcp_subflow(struct bpf_sock_ops *skops)
{
	__u32		zero = 0;
	struct pg_mptcp_config *cfg;
	struct bpf_sock *sk;
	struct mptcp_sock *msk;
	struct pg_mptcp_stall *stall;
	__u64		conn,
				self,
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
	/* identities only, never dereferenced */
	conn = (__u64) msk;
	self = (__u64) sk;
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
				count(set_tcp_option(skops, TCP_RTO_MAX_MS, cfg->rto_max_ms) == 0 ?
					  PG_MPTCP_RTO_MAX_SET : PG_MPTCP_RTO_MAX_REFUSED);
			bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
									  BPF_SOCK_OPS_RTO_CB_FLAG |
									  BPF_SOCK_OPS_RTT_CB_FLAG);
			break;

		case BPF_SOCK_OPS_RTT_CB:
			{
				struct pg_mptcp_progress p = {.at_ns = now,.subflow = self};

				bpf_map_update_elem(&progress, &conn, &p, BPF_ANY);
				stall = bpf_sk_storage_get(&stalls, sk, 0, 0);
				if (stall)
					stall->sibling_alive_at_first_rto = 0;
				break;
			}

		case BPF_SOCK_OPS_RTO_CB:
			{
				__u32		rtos = skops->args[0];	/* icsk_retransmits so far */
				int			alive = sibling_alive(conn, self, now, cfg);

				count(alive ? PG_MPTCP_RTO_SIBLING_ALIVE : PG_MPTCP_RTO_ALL_SILENT);
				stall = bpf_sk_storage_get(&stalls, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
				if (!stall)
					break;
				if (rtos == 0)
				{
					stall->sibling_alive_at_first_rto = alive;
					break;
				}
				if (cfg->close_after_rtos == 0 || rtos < cfg->close_after_rtos ||
					!alive || !stall->sibling_alive_at_first_rto)
					break;
				count(set_tcp_option(skops, TCP_USER_TIMEOUT, 1) == 0 ?
					  PG_MPTCP_CLOSED_DEAD_PATH : PG_MPTCP_CLOSE_REFUSED);
				break;
			}
	}
	return 1;
}
