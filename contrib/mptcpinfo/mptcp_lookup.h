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

#include "mptcp_tcp.h"

/*
 * The TCP sockets with exactly these ends, each asked for by its ends
 * instead of a dump: found[i] is that of ends[i], or NULL if there is none
 * (or it is closing), or the kernel could not answer.
 */
extern void mptcp_lookup_ends(MptcpDiag *diag, int n,
							  const MptcpSockEnds *const *ends,
							  MptcpSubflow **found);

/*
 * At _PG_init(): look subflows up before a dump reads them; preloaded, with
 * what every session found kept in shared memory.
 */
extern void mptcp_lookup_init(void);

#endif							/* MPTCP_LOOKUP_H */
