/*-------------------------------------------------------------------------
 *
 * mptcp_walreceiver.h
 *	  A standby's walreceiver connection in pg_stat_mptcp.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_walreceiver.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_WALRECEIVER_H
#define MPTCP_WALRECEIVER_H

/* at _PG_init(): find walreceivers' connections by the primary's address */
extern void mptcp_walreceiver_init(void);

#endif							/* MPTCP_WALRECEIVER_H */
