/* contrib/mptcpinfo/mptcpinfo--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mptcpinfo UPDATE TO '1.1'" to load this file. \quit

-- pg_stat_mptcp_subflows gains the column backup.
ALTER EXTENSION mptcpinfo DROP VIEW pg_stat_mptcp_subflows;
ALTER EXTENSION mptcpinfo DROP FUNCTION pg_stat_get_mptcp_subflows();
DROP VIEW pg_stat_mptcp_subflows;
DROP FUNCTION pg_stat_get_mptcp_subflows();

CREATE FUNCTION pg_stat_get_mptcp_subflows(
    OUT pid integer,
    OUT local_addr inet,
    OUT local_port integer,
    OUT remote_addr inet,
    OUT remote_port integer,
    OUT established boolean,
    OUT rtt float8,
    OUT rttvar float8,
    OUT snd_cwnd bigint,
    OUT snd_mss bigint,
    OUT bytes_sent bigint,
    OUT bytes_acked bigint,
    OUT bytes_received bigint,
    OUT bytes_retrans bigint,
    OUT total_retrans bigint,
    OUT delivery_rate bigint,
    OUT backup boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_get_mptcp_subflows_1_1'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per subflow of each MPTCP connection.
CREATE VIEW pg_stat_mptcp_subflows AS
    SELECT * FROM pg_stat_get_mptcp_subflows();

-- The subflows can make server processes report (before Linux 6.15), so
-- only pg_read_all_stats (and so pg_monitor) may read them, as from 1.3 on.
REVOKE ALL ON FUNCTION pg_stat_get_mptcp_subflows() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_subflows() TO pg_read_all_stats;
GRANT SELECT ON pg_stat_mptcp_subflows TO pg_read_all_stats;

-- What explains the connections: the path manager's endpoints, the MPTCP
-- settings and counters of the server's network namespace.
CREATE FUNCTION pg_mptcp_get_endpoints(
    OUT id integer,
    OUT address inet,
    OUT port integer,
    OUT interface text,
    OUT signal boolean,
    OUT subflow boolean,
    OUT backup boolean,
    OUT fullmesh boolean,
    OUT accepts_joins boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_mptcp_get_endpoints'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_mptcp_endpoints AS
    SELECT * FROM pg_mptcp_get_endpoints();

CREATE FUNCTION pg_mptcp_get_settings(
    OUT name text,
    OUT setting text,
    OUT description text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_mptcp_get_settings'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_mptcp_settings AS
    SELECT * FROM pg_mptcp_get_settings();

CREATE FUNCTION pg_stat_get_mptcp_counters(
    OUT name text,
    OUT value bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_get_mptcp_counters'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_stat_mptcp_counters AS
    SELECT * FROM pg_stat_get_mptcp_counters();

-- These describe the host's network configuration: for pg_monitor only,
-- as pg_buffercache is.
REVOKE ALL ON FUNCTION pg_mptcp_get_endpoints() FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_mptcp_get_settings() FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_stat_get_mptcp_counters() FROM PUBLIC;
REVOKE ALL ON pg_mptcp_endpoints, pg_mptcp_settings, pg_stat_mptcp_counters FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_mptcp_get_endpoints() TO pg_monitor;
GRANT EXECUTE ON FUNCTION pg_mptcp_get_settings() TO pg_monitor;
GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_counters() TO pg_monitor;
GRANT SELECT ON pg_mptcp_endpoints, pg_mptcp_settings, pg_stat_mptcp_counters TO pg_monitor;
