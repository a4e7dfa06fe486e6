/*-------------------------------------------------------------------------
 *
 * mptcp_report.h
 *	  Asking a server process to describe its MPTCP sockets.
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 * src/include/libpq/mptcp_report.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCP_REPORT_H
#define MPTCP_REPORT_H

#include <signal.h>

/*
 * Called by a process that was sent PROCSIG_MPTCP_REPORT, at its next
 * CHECK_FOR_INTERRUPTS() or while it waits for its client.  Only the
 * process that holds a socket can ask the kernel about its subflows
 * without privileges, so a module that shows them (contrib/mptcpinfo)
 * sets this hook and signals the processes whose connections it shows.
 * It is called once more at the start of proc_exit(), with
 * proc_exit_inprogress set, whether asked or not.  The hook must not throw
 * errors.
 */
typedef void (*mptcp_report_hook_type) (void);
extern PGDLLIMPORT mptcp_report_hook_type mptcp_report_hook;

/*
 * Called with the socket of each connection that a server process opens
 * with libpq, once it is established (libpq-be-fe-helpers.h, and the
 * walreceiver's library): the kernel's socket dumps do not say which
 * process holds a socket, so a module that shows the connections of server
 * processes notes here which ones this process opened.  The hook should not
 * throw errors.
 */
typedef void (*mptcp_opened_hook_type) (int sock);
extern PGDLLIMPORT mptcp_opened_hook_type mptcp_opened_hook;

extern PGDLLIMPORT volatile sig_atomic_t MptcpReportPending;

extern void HandleMptcpReportInterrupt(void);
extern void ProcessMptcpReportInterrupt(void);
extern void ProcessMptcpReportAtExit(void);

#endif							/* MPTCP_REPORT_H */
