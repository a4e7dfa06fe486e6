/*-------------------------------------------------------------------------
 *
 * mptcp_lookup.h
 *	  Subflows of pg_stat_mptcp_subflows looked up by their ends.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_lookup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_LOOKUP_H
#define MPTCP_LOOKUP_H

/* at _PG_init(): look subflows up before a dump reads them */
extern void mptcp_lookup_init(void);

#endif							/* MPTCP_LOOKUP_H */
