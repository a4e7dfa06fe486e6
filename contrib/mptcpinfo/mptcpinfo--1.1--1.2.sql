/* contrib/mptcpinfo/mptcpinfo--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION mptcpinfo UPDATE TO '1.2'" to load this file. \quit

-- pg_stat_mptcp gains the column direction, and rows for the connections
-- that server processes open (logical replication workers, postgres_fdw,
-- dblink); pg_stat_mptcp_subflows gains token and congestion_control.
ALTER EXTENSION mptcpinfo DROP VIEW pg_stat_mptcp;
ALTER EXTENSION mptcpinfo DROP FUNCTION pg_stat_get_mptcp();
ALTER EXTENSION mptcpinfo DROP VIEW pg_stat_mptcp_subflows;
ALTER EXTENSION mptcpinfo DROP FUNCTION pg_stat_get_mptcp_subflows();
DROP VIEW pg_stat_mptcp;
DROP FUNCTION pg_stat_get_mptcp();
DROP VIEW pg_stat_mptcp_subflows;
DROP FUNCTION pg_stat_get_mptcp_subflows();

CREATE FUNCTION pg_stat_get_mptcp(
    OUT pid integer,
    OUT direction text,
    OUT mptcp boolean,
    OUT subflows integer,
    OUT add_addr_signal integer,
    OUT add_addr_accepted integer,
    OUT subflows_max integer,
    OUT add_addr_signal_max integer,
    OUT add_addr_accepted_max integer,
    OUT local_addr_used integer,
    OUT local_addr_max integer,
    OUT checksum boolean,
    OUT token bigint,
    OUT write_seq numeric,
    OUT snd_una numeric,
    OUT rcv_nxt numeric,
    OUT bytes_sent bigint,
    OUT bytes_received bigint,
    OUT bytes_acked bigint,
    OUT bytes_retrans bigint,
    OUT retransmits bigint,
    OUT last_data_sent interval,
    OUT last_data_recv interval,
    OUT last_ack_recv interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_get_mptcp_1_2'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

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
    OUT congestion_control text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'pg_stat_get_mptcp_subflows_1_2'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- One row per TCP connection of a backend's client, and per MPTCP
-- connection that a server process opened.
CREATE VIEW pg_stat_mptcp AS
    SELECT * FROM pg_stat_get_mptcp();

-- One row per subflow of each MPTCP connection.
CREATE VIEW pg_stat_mptcp_subflows AS
    SELECT * FROM pg_stat_get_mptcp_subflows();

GRANT SELECT ON pg_stat_mptcp TO PUBLIC;
-- The subflows can make server processes report (before Linux 6.15), so
-- only pg_read_all_stats (and so pg_monitor) may read them, as from 1.3 on.
REVOKE ALL ON FUNCTION pg_stat_get_mptcp_subflows() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pg_stat_get_mptcp_subflows() TO pg_read_all_stats;
GRANT SELECT ON pg_stat_mptcp_subflows TO pg_read_all_stats;
