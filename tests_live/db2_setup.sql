-- The Db2 server set-up of the live suite (make test-db2-live; docs/db2.md, 'The live suite').
--
-- Run once, as the instance owner (SYSADM, e.g. db2inst1), in the test database:
--     db2 connect to TESTDB
--     db2 -tvf tests_live/db2_setup.sql
-- CDCLAKE below is the test user (CDCLAKE_DB2_USER, upper case) and its schema (CDCLAKE_DB2_SCHEMA, by default
-- the user's name); ASNCDC is the control schema (CDCLAKE_DB2_CONTROL_SCHEMA). Replace them if yours differ:
--     sed 's/CDCLAKE/MYUSER/g' tests_live/db2_setup.sql > /tmp/db2_setup.sql
-- "Item N" is item N of the Db2 CDC reference (Debezium's set-up and procedures); "to verify" marks what it
-- does not say.

-- 1. Before this file, in a shell as the instance owner (item 4; the sources are Debezium's asncdctools):
--    a. the Capture start/stop UDF:   cd $HOME/asncdctools/src; bldrtn asncdc
--       (Db2 11.5: export PATH=$PATH:/opt/ibm/db2/V11.5.0.0/samples/c/ first)
--    b. db2 start db TESTDB; cd $HOME/sqllib/bnd; db2 connect to TESTDB
--       db2 bind db2schema.bnd blocking all grant public sqlerror continue      (JDBC reads of the catalog)
--    c. Capture reads the recovery log, so the database keeps it: archive logging on, and the full backup
--       Db2 then requires (item 4 asks for "a recent backup"; the logging method is to verify):
--       db2 update db cfg for TESTDB using LOGARCHMETH1 LOGRETAIN               (to verify: or DISK:/path)
--       db2 backup db TESTDB to /dev/null; db2 restart db TESTDB
--    d. cp $HOME/asncdctools/src/asncdc $HOME/sqllib/function; chmod 777 $HOME/sqllib/function
--    e. db2 connect to TESTDB
--       db2 -tvmf $HOME/asncdctools/src/asncdc_UDF.sql         (ASNCDC.ASNCDCSERVICES: start, stop, status, reinit)
--       db2 -tvmf $HOME/asncdctools/src/asncdctables.sql       (the control tables: IBMSNAP_REGISTER, _UOW, ...)
--       db2 -tvmf $HOME/asncdctools/src/asncdcaddremove.sql    (ASNCDC.ADDTABLE and ASNCDC.REMOVETABLE)

-- 2. The test user's schema: the tests create, alter and drop their tables there (as its owner).
--    Db2 has no CREATE USER: CDCLAKE is an operating-system or LDAP user (to verify for your authentication).
GRANT CONNECT, CREATETAB ON DATABASE TO USER CDCLAKE;
CREATE SCHEMA CDCLAKE AUTHORIZATION CDCLAKE;

-- 3. What the source reads on its driver connection (lib/cdclake/sources/db2/queries.py), and the STATE
--    updates of the schema-change procedures (items 49, 50: 'I' + reinit, ALTER, 'A' + reinit).
GRANT SELECT, UPDATE ON ASNCDC.IBMSNAP_REGISTER TO USER CDCLAKE;
GRANT SELECT ON ASNCDC.IBMSNAP_UOW TO USER CDCLAKE;
GRANT SELECT ON ASNCDC.IBMSNAP_RESTART TO USER CDCLAKE;
GRANT SELECT ON ASNCDC.IBMSNAP_CAPPARMS TO USER CDCLAKE;
GRANT SELECT ON ASNCDC.IBMSNAP_PRUNCNTL TO USER CDCLAKE;

-- 4. The CD tables. ADDTABLE creates them during the tests (ASNCDC."CDC_<schema>_<table>", item 8), owned by
--    the procedure's definer (to verify), so the user needs privileges on the whole schema: SELECT for the
--    windows' reads, ALTER for the online procedure's ALTER of a CD table. SELECTIN is a schema privilege of
--    Db2 11.5 (to verify for your version; before it: GRANT DATAACCESS ON DATABASE TO USER CDCLAKE).
GRANT SELECTIN, ALTERIN ON SCHEMA ASNCDC TO USER CDCLAKE;

-- 5. Registering and removing the test tables (items 8-10), and reinit after each (item 55). ADDTABLE's
--    ALTER TABLE ... DATA CAPTURE CHANGES of the user's table runs with the definer's authority (to verify).
GRANT EXECUTE ON PROCEDURE ASNCDC.ADDTABLE TO USER CDCLAKE;
GRANT EXECUTE ON PROCEDURE ASNCDC.REMOVETABLE TO USER CDCLAKE;
GRANT EXECUTE ON FUNCTION ASNCDC.ASNCDCSERVICES TO USER CDCLAKE;

-- 6. The catalog: the source reads SYSCAT.TABLES (creation and ALTER times) and SYSCAT.COLUMNS. PUBLIC can
--    read them unless the database was created RESTRICTIVE (to verify for yours); granted here either way.
GRANT SELECT ON SYSCAT.TABLES TO USER CDCLAKE;
GRANT SELECT ON SYSCAT.COLUMNS TO USER CDCLAKE;

-- 7. Fast Capture cycles, so that each wait of the tests is about a second (item 5: the defaults are 30 s and
--    5 s; Debezium's asncdctables.sql already inserts 1 and 1). Capture reads IBMSNAP_CAPPARMS when it starts
--    (to verify): if it already runs, stop it first, VALUES ASNCDC.ASNCDCSERVICES('stop','asncdc'), and start
--    it again (step 8) once the status says it is not running.
UPDATE ASNCDC.IBMSNAP_CAPPARMS SET COMMIT_INTERVAL = 1, SLEEP_INTERVAL = 1;
COMMIT;

-- 8. Start Capture (item 4, step 7): the answer is 'start -->  <asncap command>' or 'asncap is already running'.
VALUES ASNCDC.ASNCDCSERVICES('start','asncdc');

-- 9. Check it (item 55): while Capture runs, the answer contains 'is doing work'.
VALUES ASNCDC.ASNCDCSERVICES('status','asncdc');
