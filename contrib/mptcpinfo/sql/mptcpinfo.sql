CREATE EXTENSION mptcpinfo;

-- the shape of the views
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp_subflows'::regclass AND attnum > 0
 ORDER BY attnum;

-- one row per backend with a TCP client connection, none for this session
-- if it uses a Unix-domain socket
SELECT count(*) = (SELECT count(*) FROM pg_stat_activity
                    WHERE pid = pg_backend_pid() AND client_port > 0)
       AS own_row_iff_tcp
  FROM pg_stat_mptcp WHERE pid = pg_backend_pid();
SELECT count(*) AS rows_without_tcp_client
  FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE a.client_port IS NULL OR a.client_port < 0;
SELECT count(*) AS subflows_without_mptcp
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid)
 WHERE m.mptcp IS NOT TRUE;

-- privileges: everyone may look, as at pg_stat_activity (details of
-- other roles' connections need pg_read_all_stats, see the TAP test)
SELECT has_table_privilege('public', 'pg_stat_mptcp', 'SELECT') AS public_view,
       has_table_privilege('pg_monitor', 'pg_stat_mptcp', 'SELECT') AS monitor_view,
       has_table_privilege('pg_monitor', 'pg_stat_mptcp_subflows', 'SELECT') AS monitor_subflows;
CREATE ROLE regress_mptcpinfo_user;
SET ROLE regress_mptcpinfo_user;
SELECT count(*) >= 0 AS can_read FROM pg_stat_mptcp;
SELECT count(*) >= 0 AS can_read FROM pg_stat_mptcp_subflows;
RESET ROLE;
DROP ROLE regress_mptcpinfo_user;

DROP EXTENSION mptcpinfo;
