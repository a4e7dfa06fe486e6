/*-------------------------------------------------------------------------
 *
 * mptcp_proc.c
 *	  MPTCP figures of the server's network namespace read from procfs.
 *
 * /proc/sys/net/mptcp holds the namespace's MPTCP sysctls, whichever the
 * running kernel has (and /proc/sys/net/ipv4 the TCP ones its subflows
 * use); /proc/net/netstat holds, on its two "MPTcpExt:"
 * lines, the kernel's MPTCP counters (what "nstat" shows as MPTcpExt*).
 * All of it is per network namespace, readable without privilege.
 *
 * Every read is bounded, and a missing or unreadable file yields nothing,
 * never an error.
 *
 * Copyright (c) 2026, PostgreSQL Global Development Group
 *
 * IDENTIFICATION
 *	  contrib/mptcpinfo/mptcp_proc.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "mptcp_proc.h"
#include "storage/fd.h"

#define SYSCTL_DIR "/proc/sys/net/mptcp"
#define NETSTAT_FILE "/proc/net/netstat"
#define COUNTER_PREFIX "MPTcpExt"

/* bounds: the kernel has about a dozen sysctls and a hundred counters */
#define MAX_SYSCTLS 128
#define MAX_SYSCTL_VALUE 1024
#define MAX_NETSTAT_SIZE (256 * 1024)

/*
 * Read at most max - 1 bytes of a file into buf, NUL-terminated.  Returns
 * the length, or -1 if the file cannot be read.
 */
static int
read_small_file(const char *path, char *buf, int max)
{
	FILE	   *f;
	size_t		len;

	if ((f = AllocateFile(path, "r")) == NULL)
	{
		elog(DEBUG1, "could not open file \"%s\": %m", path);
		return -1;
	}
	len = fread(buf, 1, max - 1, f);
	if (ferror(f))
	{
		elog(DEBUG1, "could not read file \"%s\": %m", path);
		FreeFile(f);
		return -1;
	}
	FreeFile(f);
	buf[len] = '\0';
	return (int) len;
}

static int
item_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp(((MptcpProcItem *) lfirst(a))->name,
				  ((MptcpProcItem *) lfirst(b))->name);
}

/* a sysctl "name" of the file "path", its value as sysctl(8) shows it */
static MptcpProcItem *
read_sysctl(const char *path, char *name)
{
	MptcpProcItem *item = palloc0(sizeof(MptcpProcItem));
	char		buf[MAX_SYSCTL_VALUE];
	int			len = read_small_file(path, buf, MAX_SYSCTL_VALUE);

	item->name = name;
	/* (without the final newline) */
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (len >= 0)
		item->value = pstrdup(buf);
	return item;
}

List *
mptcp_proc_sysctls(void)
{
	List	   *result = NIL;
	DIR		   *dir;
	struct dirent *de;
	char		path[MAXPGPATH];
	MptcpProcItem *item;

	dir = AllocateDir(SYSCTL_DIR);
	while ((de = ReadDirExtended(dir, SYSCTL_DIR, DEBUG1)) != NULL)
	{
		CHECK_FOR_INTERRUPTS();

		if (de->d_name[0] == '.')
			continue;
		if (list_length(result) >= MAX_SYSCTLS)
			break;
		snprintf(path, sizeof(path), "%s/%s", SYSCTL_DIR, de->d_name);
		result = lappend(result, read_sysctl(path, psprintf("net.mptcp.%s", de->d_name)));
	}
	if (dir)
		FreeDir(dir);

	/*
	 * each subflow is a TCP socket and gets the namespace's congestion
	 * control, if it can be read
	 */
	item = read_sysctl("/proc/sys/net/ipv4/tcp_congestion_control",
					   pstrdup("net.ipv4.tcp_congestion_control"));
	if (item->value != NULL)
		result = lappend(result, item);

	list_sort(result, item_cmp);
	return result;
}

List *
mptcp_proc_counters(void)
{
	List	   *result = NIL;
	char	   *buf = palloc(MAX_NETSTAT_SIZE);
	char	   *names = NULL;
	char	   *values = NULL;
	char	   *line;
	char	   *save;

	if (read_small_file(NETSTAT_FILE, buf, MAX_NETSTAT_SIZE) < 0)
	{
		pfree(buf);
		return NIL;
	}

	/* a line of names, then a line of values, both "MPTcpExt: ..." */
	for (line = strtok_r(buf, "\n", &save); line != NULL;
		 line = strtok_r(NULL, "\n", &save))
	{
		if (strncmp(line, COUNTER_PREFIX ":", strlen(COUNTER_PREFIX ":")) != 0)
			continue;
		if (names == NULL)
			names = line + strlen(COUNTER_PREFIX ":");
		else
		{
			values = line + strlen(COUNTER_PREFIX ":");
			break;
		}
	}
	if (values == NULL)
	{
		elog(DEBUG1, "no MPTCP counters in \"%s\"", NETSTAT_FILE);
		pfree(buf);
		return NIL;
	}

	for (;;)
	{
		size_t		nlen,
					vlen;
		MptcpProcItem *item;

		names += strspn(names, " ");
		values += strspn(values, " ");
		nlen = strcspn(names, " ");
		vlen = strcspn(values, " ");
		if (nlen == 0 || vlen == 0)
			break;
		item = palloc(sizeof(MptcpProcItem));
		item->name = psprintf("%s%.*s", COUNTER_PREFIX, (int) nlen, names);
		item->value = pnstrdup(values, vlen);
		result = lappend(result, item);
		names += nlen;
		values += vlen;
	}
	pfree(buf);
	return result;
}
