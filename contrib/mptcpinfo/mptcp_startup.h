/*-------------------------------------------------------------------------
 *
 * mptcp_startup.h
 *	  What the server's MPTCP will do, said once at server start.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_startup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_STARTUP_H
#define MPTCP_STARTUP_H

/*
 * Register the background worker that logs it, if listen_mptcp is on; to
 * be called while shared_preload_libraries is processed.
 */
extern void mptcp_startup_register(void);

#endif							/* MPTCP_STARTUP_H */
