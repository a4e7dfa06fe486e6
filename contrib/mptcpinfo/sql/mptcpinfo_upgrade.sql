-- Installations of earlier versions: version 1.0, then each update.  After
-- the last one, the objects and their privileges are those of a fresh
-- installation (mptcpinfo.sql).
CREATE EXTENSION mptcpinfo VERSION '1.0';
SELECT count(*) AS subflow_columns_1_0
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp_subflows'::regclass AND attnum > 0;
SELECT count(*) >= 0 AS can_read_1_0 FROM pg_stat_mptcp_subflows;
ALTER EXTENSION mptcpinfo UPDATE TO '1.1';
SELECT pg_describe_object(classid, objid, 0) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND classid <> 'pg_type'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mptcpinfo')
 ORDER BY 1;
SELECT count(*) >= 0 AS can_read_1_1 FROM pg_stat_mptcp_subflows;
SELECT count(*) >= 0 AS can_read_1_1 FROM pg_stat_mptcp;
ALTER EXTENSION mptcpinfo UPDATE TO '1.2';
SELECT pg_describe_object(classid, objid, 0) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND classid <> 'pg_type'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mptcpinfo')
 ORDER BY 1;
SELECT has_table_privilege('public', v, 'SELECT') AS public_view
  FROM unnest(ARRAY['pg_stat_mptcp', 'pg_stat_mptcp_subflows']) AS v;
ALTER EXTENSION mptcpinfo UPDATE TO '1.3';
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
DROP EXTENSION mptcpinfo;
