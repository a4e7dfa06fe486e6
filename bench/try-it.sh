#!/bin/bash
# README.mptcp section 3, "Try it in network namespaces", as a script: run by "make check"
# so that the guide's commands stay true.  Usage, from the top of this
# repository after "make install", as an unprivileged user:
#   unshare -Un --map-user=$(id -u) --map-group=$(id -g) --keep-caps bash bench/try-it.sh [BIN]
set -euo pipefail
export PATH=${1:-$PWD/.work/18/install/bin}:$PATH
trap 'pg_ctl -D /tmp/pgmp -w stop >/dev/null 2>&1 || true; bash src/test/mptcp/lab.sh down /tmp/lab' EXIT

bash src/test/mptcp/lab.sh up /tmp/lab 2 50mbit
rm -rf /tmp/pgmp
initdb -D /tmp/pgmp -A trust -U postgres >/dev/null
cat >>/tmp/pgmp/postgresql.conf <<EOC
listen_addresses = '*'
listen_mptcp = on
unix_socket_directories = '/tmp'
EOC
echo "host all all 198.18.0.0/15 trust" >>/tmp/pgmp/pg_hba.conf
pg_ctl -D /tmp/pgmp -l /tmp/pgmp/log -w start >/dev/null
bash src/test/mptcp/lab.sh client /tmp/lab psql -X "host=198.18.1.1 user=postgres mptcp=1" \
	-c '\conninfo' -c 'CREATE EXTENSION IF NOT EXISTS mptcpinfo' -c 'SELECT pg_sleep(0.5)' \
	-c 'SELECT mptcp, subflows FROM pg_stat_mptcp WHERE pid = pg_backend_pid()' \
	-c 'SELECT local_addr, remote_addr FROM pg_stat_mptcp_subflows WHERE pid = pg_backend_pid()' |
	tee /tmp/pgmp/try-it.out
# (psql 18 prints a table row, psql 17 a line when MPTCP is in use)
grep -Eq 'MPTCP Connection *\| true|^MPTCP connection$' /tmp/pgmp/try-it.out
grep -Eq '^ t +\| +2$' /tmp/pgmp/try-it.out
echo "try-it: a multipath connection with 2 subflows"
