/*-------------------------------------------------------------------------
 *
 * mptcp_proc.h
 *	  MPTCP figures of the server's network namespace read from procfs.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_proc.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_PROC_H
#define MPTCP_PROC_H

#include "nodes/pg_list.h"

/* a name and its value, as read */
typedef struct MptcpProcItem
{
	char	   *name;
	char	   *value;			/* NULL if it could not be read */
} MptcpProcItem;

/*
 * None of these raise an error for a missing or unreadable file: they return
 * what they could read (possibly nothing), and say why at DEBUG1.
 */

/*
 * the files of /proc/sys/net/mptcp, named "net.mptcp.NAME", and the TCP
 * sysctls that matter to MPTCP (net.ipv4.tcp_congestion_control), sorted
 */
extern List *mptcp_proc_sysctls(void);

/* the MPTcpExt counters of /proc/net/netstat, named as nstat does */
extern List *mptcp_proc_counters(void);

#endif							/* MPTCP_PROC_H */
