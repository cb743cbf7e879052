"""Every statement the Db2 source sends over its driver connection (``ibm_db_dbi``, ``?`` markers).

``{cs}`` is the Capture control schema (``source.control_schema``). Nothing else is sent on the driver
connection: the capture emulator (:mod:`cdclake.testing.db2_emulator`) answers these texts and refuses any
other, so the source cannot drift into SQL that no test has run. Spark's JDBC reads are built by
:mod:`cdclake.sources.db2.reads` from :data:`CD_READ` and :data:`TABLE_READ`.

Sequences (``IBMSNAP_COMMITSEQ`` and the synchpoints) travel as bytes; the window bounds are bound as
bytes too, and compared by Db2 as binary strings (all of them 16 bytes since Db2 10.1).
"""

from __future__ import annotations

#: the registrations (not the global record): which source tables Capture captures, into which CD tables
REGISTRATIONS = (
    "SELECT SOURCE_OWNER, SOURCE_TABLE, CD_OWNER, CD_TABLE, STATE, STATE_INFO, CHG_UPD_TO_DEL_INS, "
    "BEFORE_IMG_PREFIX, CD_OLD_SYNCHPOINT, CD_NEW_SYNCHPOINT FROM {cs}.IBMSNAP_REGISTER "
    "WHERE GLOBAL_RECORD = 'N' AND SOURCE_OWNER <> ''"
)

#: Capture's high-water mark: everything committed at or below it is in the CD tables (the global record's
#: synchpoint, advanced every commit cycle; with Debezium, the newest registration synchpoint counts too)
HIGH_WATER_MARK = (
    "SELECT MAX(T.SYNCHPOINT), MAX(T.SYNCHTIME) FROM (SELECT CD_NEW_SYNCHPOINT AS SYNCHPOINT, "
    "CAST(NULL AS TIMESTAMP) AS SYNCHTIME FROM {cs}.IBMSNAP_REGISTER "
    "UNION ALL SELECT SYNCHPOINT AS SYNCHPOINT, SYNCHTIME AS SYNCHTIME FROM {cs}.IBMSNAP_REGISTER) T"
)


#: where Capture restarts: its newest commit, the oldest in-flight transaction, where it first started
RESTART = (
    "SELECT MAX_COMMITSEQ, MAX_COMMIT_TIME, MIN_INFLIGHTSEQ, CURR_COMMIT_TIME, CAPTURE_FIRST_SEQ "
    "FROM {cs}.IBMSNAP_RESTART"
)


#: how far Capture's retention pruning can have reached: the oldest transaction it kept, its retention limit
#: (minutes) and the server's clock
RETENTION = (
    "SELECT (SELECT MIN(IBMSNAP_COMMITSEQ) FROM {cs}.IBMSNAP_UOW), RETENTION_LIMIT, CURRENT TIMESTAMP "
    "FROM {cs}.IBMSNAP_CAPPARMS"
)

#: each source table's prune points: Capture prunes its CD rows up to the lowest subscription synchpoint once
#: every subscription has one (a NULL synchpoint, as ADDTABLE's own row has, holds that pruning off)
PRUNE_POINTS = (
    "SELECT SOURCE_OWNER, SOURCE_TABLE, COUNT(*), COUNT(SYNCHPOINT), MIN(SYNCHPOINT) FROM {cs}.IBMSNAP_PRUNCNTL "
    "GROUP BY SOURCE_OWNER, SOURCE_TABLE"
)

#: a table as the catalog knows it (type, when created and last altered)
TABLE = (
    "SELECT TABSCHEMA, TABNAME, TYPE, CREATE_TIME, ALTER_TIME FROM SYSCAT.TABLES "
    "WHERE TABSCHEMA = ? AND TABNAME = ?"
)

#: a table's columns, in order, with their primary-key place (KEYSEQ)
COLUMNS = (
    "SELECT COLNAME, COLNO, TYPENAME, LENGTH, SCALE, NULLS, CODEPAGE, DEFAULT, KEYSEQ FROM SYSCAT.COLUMNS "
    "WHERE TABSCHEMA = ? AND TABNAME = ? ORDER BY COLNO"
)

#: transactions Capture recorded in a commit-sequence range: the commit clock counts them
UOW_COUNT = (
    "SELECT COUNT(*) FROM {cs}.IBMSNAP_UOW WHERE IBMSNAP_COMMITSEQ > ? AND IBMSNAP_COMMITSEQ <= ?"
)

#: the newest transaction of a commit-sequence range that committed at or before a time (a schema change's place)
UOW_LAST_BEFORE = (
    "SELECT MAX(IBMSNAP_COMMITSEQ) FROM {cs}.IBMSNAP_UOW WHERE IBMSNAP_LOGMARKER <= ? "
    "AND IBMSNAP_COMMITSEQ > ? AND IBMSNAP_COMMITSEQ <= ?"
)


#: when a transaction committed (a table's oldest pending change, for the lag)
UOW_TIME = "SELECT IBMSNAP_LOGMARKER FROM {cs}.IBMSNAP_UOW WHERE IBMSNAP_COMMITSEQ = ?"

#: a CD table's rows in a commit-sequence range, per operation: plans a window's reads and counts it
CD_COUNT = (
    "SELECT COUNT(*), MIN(IBMSNAP_COMMITSEQ), MAX(IBMSNAP_COMMITSEQ) FROM {cd} "
    "WHERE IBMSNAP_COMMITSEQ > ? AND IBMSNAP_COMMITSEQ <= ?"
)


#: the oldest change a CD table still holds (a table pruned, or recreated and reloaded, is told apart by it)
CD_OLDEST = "SELECT MIN(IBMSNAP_COMMITSEQ) FROM {cd}"

#: the snapshot's table locks (``source.snapshot.lock_mode: share``), on a connection of their own
LOCK_TIMEOUT = "SET CURRENT LOCK TIMEOUT = {seconds}"
LOCK_TABLE = "LOCK TABLE {table} IN SHARE MODE"

#: key range of a table for the snapshot's partitioned read
KEY_RANGE = "SELECT MIN({key}), MAX({key}), COUNT(*) FROM {table}"

# ---- Spark JDBC reads (dbtable subqueries; the same text runs on Db2 and on the emulator's engine) ----------

#: a CD table's rows of a window: the sequences as hex, the data columns as selected; each Spark task reads
#: one :data:`SEQ_RANGE` of it
CD_READ = (
    "(SELECT IBMSNAP_COMMITSEQ AS CDCLAKE_SEQ, HEX(IBMSNAP_COMMITSEQ) AS CDCLAKE_COMMITSEQ, "
    "HEX(IBMSNAP_INTENTSEQ) AS CDCLAKE_INTENTSEQ, IBMSNAP_OPERATION AS CDCLAKE_OPERATION{columns} FROM {cd} "
    "WHERE IBMSNAP_COMMITSEQ > X'{lo}' AND IBMSNAP_COMMITSEQ <= X'{hi}') CDCLAKE_CD"
)

#: one task's part of a :data:`CD_READ`
SEQ_RANGE = "CDCLAKE_SEQ > X'{lo}' AND CDCLAKE_SEQ <= X'{hi}'"

#: the transactions of a commit-sequence range: their commit time and unit-of-work id
UOW_READ = (
    "(SELECT HEX(IBMSNAP_COMMITSEQ) AS CDCLAKE_COMMITSEQ, HEX(IBMSNAP_UOWID) AS CDCLAKE_UOWID, "
    "CAST(IBMSNAP_LOGMARKER AS VARCHAR(32)) AS CDCLAKE_LOGMARKER FROM {cs}.IBMSNAP_UOW "
    "WHERE IBMSNAP_COMMITSEQ > X'{lo}' AND IBMSNAP_COMMITSEQ <= X'{hi}') CDCLAKE_UOW"
)

#: a source table's rows for a snapshot
TABLE_READ = "(SELECT {columns} FROM {table}{where}) CDCLAKE_T"
