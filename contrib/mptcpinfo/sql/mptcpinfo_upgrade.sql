-- Installations of earlier versions: version 1.0, then each update.  After
-- the last one, the objects and their privileges are those of a fresh
-- installation.

-- the extension's objects, and who may use them
CREATE FUNCTION pg_temp.mptcpinfo_objects(
    OUT object text, OUT public boolean, OUT read_all_stats boolean,
    OUT monitor boolean)
RETURNS SETOF record LANGUAGE sql AS $$
SELECT pg_describe_object(classid, objid, 0),
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('public', objid, 'SELECT')
            ELSE has_function_privilege('public', objid, 'EXECUTE') END,
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('pg_read_all_stats', objid, 'SELECT')
            ELSE has_function_privilege('pg_read_all_stats', objid, 'EXECUTE') END,
       CASE WHEN classid = 'pg_class'::regclass
            THEN has_table_privilege('pg_monitor', objid, 'SELECT')
            ELSE has_function_privilege('pg_monitor', objid, 'EXECUTE') END
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND classid <> 'pg_type'::regclass
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'mptcpinfo')
 ORDER BY 1
$$;
CREATE EXTENSION mptcpinfo;
CREATE TEMP TABLE fresh_install AS SELECT * FROM pg_temp.mptcpinfo_objects();
DROP EXTENSION mptcpinfo;

-- an earlier version installed as it is: the subflows are not for everyone
CREATE EXTENSION mptcpinfo VERSION '1.2';
SELECT has_table_privilege('public', 'pg_stat_mptcp_subflows', 'SELECT') AS public_subflows_1_2,
       has_function_privilege('public', 'pg_stat_get_mptcp_subflows()', 'EXECUTE') AS public_function_1_2;
DROP EXTENSION mptcpinfo;

CREATE EXTENSION mptcpinfo VERSION '1.0';
SELECT count(*) AS subflow_columns_1_0
  FROM pg_attribute
 WHERE attrelid = 'pg_stat_mptcp_subflows'::regclass AND attnum > 0;
SELECT count(*) >= 0 AS can_read_1_0 FROM pg_stat_mptcp_subflows;
ALTER EXTENSION mptcpinfo UPDATE TO '1.1';
SELECT object FROM pg_temp.mptcpinfo_objects();
SELECT count(*) >= 0 AS can_read_1_1 FROM pg_stat_mptcp_subflows;
SELECT count(*) >= 0 AS can_read_1_1 FROM pg_stat_mptcp;
ALTER EXTENSION mptcpinfo UPDATE TO '1.2';
SELECT object FROM pg_temp.mptcpinfo_objects();
SELECT has_table_privilege('public', v, 'SELECT') AS public_view
  FROM unnest(ARRAY['pg_stat_mptcp', 'pg_stat_mptcp_subflows']) AS v;
ALTER EXTENSION mptcpinfo UPDATE TO '1.3';
SELECT count(*) >= 0 AS can_read_1_3 FROM pg_stat_mptcp_subflows;
ALTER EXTENSION mptcpinfo UPDATE TO '1.4';
SELECT extversion FROM pg_extension WHERE extname = 'mptcpinfo';
SELECT * FROM pg_temp.mptcpinfo_objects();
-- what differs from a fresh installation: nothing
(SELECT * FROM pg_temp.mptcpinfo_objects() EXCEPT SELECT * FROM fresh_install)
UNION ALL
(SELECT * FROM fresh_install EXCEPT SELECT * FROM pg_temp.mptcpinfo_objects());
DROP EXTENSION mptcpinfo;
