/*-------------------------------------------------------------------------
 *
 * mptcp_ask.h
 *	  Subflows and opened connections as the server's processes report
 *	  them, for kernels before 6.15.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_ask.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_ASK_H
#define MPTCP_ASK_H

/*
 * At _PG_init(): mptcpinfo.subflow_source, the processes as sources of
 * subflows and of opened connections, and at shared_preload_libraries
 * time their slots and core's hooks.
 */
extern void mptcp_ask_init(void);

#endif							/* MPTCP_ASK_H */
