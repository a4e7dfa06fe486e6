/*-------------------------------------------------------------------------
 *
 * mptcp_report.c
 *	  Asking a server process to describe its MPTCP sockets.
 *
 * Linux tells an unprivileged process about the subflows of an MPTCP
 * connection only through getsockopt() on the connection's own socket
 * (MPTCP_FULL_INFO and friends): socket diagnostics show the subflows'
 * MPTCP details only to CAP_NET_ADMIN before Linux 6.15.  So the process
 * that holds the socket has to be asked.  Core provides the asking, a
 * process signal answered at the next CHECK_FOR_INTERRUPTS() or while the
 * process waits to read from or write to its client (a COPY or a base
 * backup over slow paths waits there most of the time); what is reported,
 * and where, is up to the module that sets mptcp_report_hook.  Without a
 * hook, the request is ignored.
 *
 * A process that has begun to exit holds interrupts off and answers no
 * more requests, yet it can take seconds to finish (dropping its temporary
 * tables, aborting its transaction).  So the hook is also called once at
 * the start of proc_exit(), before any exit callback: the module can
 * answer what is pending there and tell its askers not to wait.
 *
 * The sockets a process opened itself (a walreceiver, a logical replication
 * worker, postgres_fdw, dblink) are its to report too, so the module is also
 * told of each one as it is opened (mptcp_opened_hook), rather than having
 * to search the process's file descriptors for them.
 *
 * Portions Copyright (c) 1996-2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  src/backend/libpq/mptcp_report.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/mptcp_report.h"
#include "miscadmin.h"

mptcp_report_hook_type mptcp_report_hook = NULL;
mptcp_opened_hook_type mptcp_opened_hook = NULL;

volatile sig_atomic_t MptcpReportPending = false;

/*
 * HandleMptcpReportInterrupt: handle receipt of PROCSIG_MPTCP_REPORT.
 *
 * Signal handler portion: just note the request.  procsignal_sigusr1_handler
 * sets our latch.
 */
void
HandleMptcpReportInterrupt(void)
{
	InterruptPending = true;
	MptcpReportPending = true;
}

/*
 * ProcessMptcpReportInterrupt: answer the request, from ProcessInterrupts().
 */
void
ProcessMptcpReportInterrupt(void)
{
	/*
	 * The client read and write paths call this too, and interrupts may be
	 * held off there; leave the request to ProcessInterrupts() then.
	 */
	if (InterruptHoldoffCount != 0 || CritSectionCount != 0)
		return;

	MptcpReportPending = false;

	if (mptcp_report_hook)
		(*mptcp_report_hook) ();
}

/*
 * ProcessMptcpReportAtExit: the hook's last call, from proc_exit_prepare()
 * (proc_exit_inprogress is set).
 */
void
ProcessMptcpReportAtExit(void)
{
	MptcpReportPending = false;

	if (mptcp_report_hook)
		(*mptcp_report_hook) ();
}
