/* contrib/mptcpinfo/mptcpinfo--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mptcpinfo UPDATE TO '1.4'" to load this file. \quit

-- pg_stat_mptcp_subflows shows whether each subflow makes progress: a path
-- that died leaves data in flight and retransmission timeouts that no ACK
-- ends.
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
    OUT backup boolean,
    OUT token bigint,
    OUT congestion_control text,
    OUT stalled boolean,
    OUT rto_timeouts integer,
    OUT rto float8,
    OUT unacked bigint,
    OUT last_data_sent interval,
    OUT last_ack_recv interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_get_mptcp_subflows_1_4'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

CREATE VIEW pg_stat_mptcp_subflows AS
    SELECT * FROM pg_stat_get_mptcp_subflows();

REVOKE ALL ON FUNCTION pg_stat_get_mptcp_subflows() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_subflows() TO pg_read_all_stats;
GRANT SELECT ON pg_stat_mptcp_subflows TO pg_read_all_stats;
