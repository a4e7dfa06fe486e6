/*-------------------------------------------------------------------------
 *
 * mptcpinfo.h
 *	  What the files of SQL entry points share: the rows of pg_stat_mptcp
 *	  (mptcp_match.c), and turning the kernel's values into columns.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcpinfo.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef MPTCPINFO_H
#define MPTCPINFO_H

#include "libpq/mptcp.h"
#include "mptcp_diag.h"
#include "utils/backend_status.h"

#ifdef USE_MPTCP
#define MPTCP_IN_BUILD true
#else
/* A build without MPTCP (no IPPROTO_MPTCP) has nothing to show: no rows. */
#define MPTCP_IN_BUILD false
#endif

/* column i of values/nulls: datum if cond, else NULL */
#define COL(cond, datum) \
	do { if (cond) { values[i] = (datum); nulls[i] = false; } i++; } while (0)

/* the pid of the process that holds a PGPROC now, 0 if none */
#define MPTCP_PROC_PID(proc) ((proc)->pid)

/*
 * One row of pg_stat_mptcp: a connection of a server process, or (conn
 * NULL) a backend's plain TCP client connection or a walreceiver's plain
 * TCP connection.
 */
typedef struct MptcpRow
{
	PgBackendStatus *beentry;
	bool		visible;		/* may the caller see its details? */
	bool		outgoing;		/* opened by the server process */
	MptcpConn  *conn;
} MptcpRow;

/*
 * The rows of pg_stat_mptcp for the MPTCP connections of "diag", in the
 * order of the server's processes.  With all_outgoing false (versions 1.0
 * and 1.1), the outgoing connections of walreceivers only.
 */
extern List *mptcp_match_rows(MptcpDiag *diag, bool all_outgoing);

/*
 * What mptcp_diag_read() needs to read for the rows: the families
 * (MPTCP_DIAG_CONNS_INET, _INET6) of the server processes' connections.
 */
extern int	mptcp_match_families(void);

/* an address as mptcp_addr_to_mapped() stores it, as an inet */
extern Datum mptcpinfo_inet_datum(int family, const uint8 *mapped);

/* milliseconds as an interval */
extern Datum mptcpinfo_ms_interval(uint32 ms);

/* mptcpinfo.subflow_source */
typedef enum
{
	SUBFLOW_SOURCE_AUTO,		/* ask the kernel, then the processes */
	SUBFLOW_SOURCE_PROCESSES,	/* always ask the processes */
} SubflowSource;

extern PGDLLIMPORT int mptcpinfo_subflow_source;

#endif							/* MPTCPINFO_H */
