-- a fresh installation (updates from earlier versions: mptcpinfo_upgrade.sql)
CREATE EXTENSION mptcpinfo;
SELECT extversion FROM pg_extension WHERE extname = 'mptcpinfo';
SELECT pg_describe_object(classid, objid, 0) AS object,
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('public', objid, 'SELECT')
            ELSE has_function_privilege('public', objid, 'EXECUTE') END AS public,
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('pg_read_all_stats', objid, 'SELECT')
            ELSE has_function_privilege('pg_read_all_stats', objid, 'EXECUTE') END AS read_all_stats,
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('pg_monitor', objid, 'SELECT')
            ELSE has_function_privilege('pg_monitor', objid, 'EXECUTE') END AS monitor
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND classid <> 'pg_type'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mptcpinfo')
 ORDER BY 1;

-- the shape of the views
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp_subflows'::regclass AND attnum > 0
 ORDER BY attnum;

SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_mptcp_endpoints'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_mptcp_settings'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp_counters'::regclass AND attnum > 0
 ORDER BY attnum;

-- whatever the kernel has (nothing, without MPTCP), no error
SELECT count(*) FILTER (WHERE name NOT LIKE 'net.mptcp.%'
                          AND name NOT LIKE 'limits.%'
                          AND name <> 'net.ipv4.tcp_congestion_control') AS odd_settings
  FROM pg_mptcp_settings;
SELECT count(*) FILTER (WHERE name NOT LIKE 'MPTcpExt%' OR value < 0) AS odd_counters
  FROM pg_stat_mptcp_counters;
SELECT count(*) FILTER (WHERE accepts_joins IS NOT NULL AND NOT signal) AS odd_endpoints
  FROM pg_mptcp_endpoints;

-- one incoming row per backend with a TCP client connection, none for this
-- session if it uses a Unix-domain socket; outgoing rows only for the
-- connections server processes open (none here)
SELECT count(*) = (SELECT count(*) FROM pg_stat_activity
                    WHERE pid = pg_backend_pid() AND client_port > 0)
       AS own_row_iff_tcp
  FROM pg_stat_mptcp WHERE pid = pg_backend_pid();
SELECT count(*) AS rows_without_tcp_client
  FROM pg_stat_mptcp m JOIN pg_stat_activity a USING (pid)
 WHERE m.direction = 'incoming'
   AND (a.client_port IS NULL OR a.client_port < 0);
SELECT count(*) AS odd_directions
  FROM pg_stat_mptcp
 WHERE direction NOT IN ('incoming', 'outgoing');
SELECT count(*) AS own_outgoing
  FROM pg_stat_mptcp WHERE pid = pg_backend_pid() AND direction = 'outgoing';
SELECT count(*) AS subflows_without_mptcp
  FROM pg_stat_mptcp_subflows s JOIN pg_stat_mptcp m USING (pid, token)
 WHERE m.mptcp IS NOT TRUE;

-- privileges: everyone may read pg_stat_mptcp, as pg_stat_activity (details
-- of other roles' connections need pg_read_all_stats, see the TAP test);
-- pg_stat_mptcp_subflows makes server processes read their sockets, so it
-- needs pg_read_all_stats
CREATE ROLE regress_mptcpinfo_user;
SET ROLE regress_mptcpinfo_user;
SELECT count(*) >= 0 AS can_read FROM pg_stat_mptcp;
SELECT count(*) FROM pg_stat_mptcp_subflows;
SELECT count(*) FROM pg_stat_get_mptcp_subflows();
RESET ROLE;
GRANT pg_read_all_stats TO regress_mptcpinfo_user;
SET ROLE regress_mptcpinfo_user;
SELECT count(*) >= 0 AS can_read FROM pg_stat_mptcp_subflows;
RESET ROLE;
REVOKE pg_read_all_stats FROM regress_mptcpinfo_user;
SET ROLE regress_mptcpinfo_user;
-- endpoints, settings and counters describe the host: pg_monitor only
SELECT has_table_privilege('public', v, 'SELECT') AS public_view,
       has_table_privilege('pg_monitor', v, 'SELECT') AS monitor_view
  FROM unnest(ARRAY['pg_mptcp_endpoints', 'pg_mptcp_settings',
                    'pg_stat_mptcp_counters']) AS v;
SELECT has_function_privilege('public', f, 'EXECUTE') AS public_function,
       has_function_privilege('pg_monitor', f, 'EXECUTE') AS monitor_function
  FROM unnest(ARRAY['pg_mptcp_get_endpoints()', 'pg_mptcp_get_settings()',
                    'pg_stat_get_mptcp_counters()']) AS f;
SELECT count(*) FROM pg_mptcp_endpoints;
SELECT count(*) FROM pg_mptcp_settings;
SELECT count(*) FROM pg_stat_mptcp_counters;
RESET ROLE;
GRANT pg_monitor TO regress_mptcpinfo_user;
SET ROLE regress_mptcpinfo_user;
SELECT count(*) >= 0 AS can_read FROM pg_mptcp_endpoints;
SELECT count(*) >= 0 AS can_read FROM pg_mptcp_settings;
SELECT count(*) >= 0 AS can_read FROM pg_stat_mptcp_counters;
RESET ROLE;
DROP ROLE regress_mptcpinfo_user;

DROP EXTENSION mptcpinfo;
