/*-------------------------------------------------------------------------
 *
 * mptcp_conns.h
 *	  pg_stat_mptcp, and turning the kernel's values into columns of the
 *	  module's views.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_conns.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_CONNS_H
#define MPTCP_CONNS_H

#include "fmgr.h"
#include "libpq/mptcp.h"

#ifdef USE_MPTCP
#define MPTCP_IN_BUILD true
#else
/* A build without MPTCP (no IPPROTO_MPTCP) has nothing to show: no rows. */
#define MPTCP_IN_BUILD false
#endif

/* column i of values/nulls: datum if cond, else NULL */
#define COL(cond, datum) \
	do { if (cond) { values[i] = (datum); nulls[i] = false; } i++; } while (0)

/* an address as mptcp_addr_to_mapped() stores it, as an inet */
extern Datum mptcpinfo_inet_datum(int family, const uint8 *mapped);

/* milliseconds as an interval */
extern Datum mptcpinfo_ms_interval(uint32 ms);

#endif							/* MPTCP_CONNS_H */
