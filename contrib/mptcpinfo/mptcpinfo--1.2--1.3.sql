/* contrib/mptcpinfo/mptcpinfo--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mptcpinfo UPDATE TO '1.3'" to load this file. \quit

-- pg_stat_mptcp_subflows makes server processes read their sockets (or,
-- without shared_preload_libraries, dumps every TCP socket of the network
-- namespace): pg_read_all_stats only, no longer every role.
REVOKE ALL ON FUNCTION pg_stat_get_mptcp_subflows() FROM PUBLIC;
REVOKE ALL ON pg_stat_mptcp_subflows FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_subflows() TO pg_read_all_stats;
GRANT SELECT ON pg_stat_mptcp_subflows TO pg_read_all_stats;
