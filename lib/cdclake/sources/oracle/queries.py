"""Every statement the Oracle miner and preflight issue, in one place.

The LogMiner simulator (:mod:`cdclake.testing.logminer_sim`) answers exactly these statements, so
the code path under test is the one that runs against Oracle. Binds are python-oracledb named binds.
"""

from __future__ import annotations

from collections.abc import Iterable

# ---- database facts ----------------------------------------------------------------------------

CURRENT_SCN = "SELECT CURRENT_SCN FROM V$DATABASE"
DATABASE_INFO = "SELECT NAME, LOG_MODE, SUPPLEMENTAL_LOG_DATA_MIN, SUPPLEMENTAL_LOG_DATA_ALL, CDB FROM V$DATABASE"
# Which database this is (a checkpoint is only valid against the DBID it was taken on) and its Data
# Guard role: a physical standby cannot be mined, a logical standby has SCNs of its own.
# RESETLOGS_CHANGE# names the incarnation: an OPEN RESETLOGS (incomplete recovery, flashback, failover)
# discards every change at or above it from the SCN lineage a checkpoint counts in.
DATABASE_ROLE = "SELECT DBID, DATABASE_ROLE, OPEN_MODE, RESETLOGS_CHANGE# FROM V$DATABASE"
VERSION = "SELECT VERSION FROM V$INSTANCE"
SESSION_PRIVILEGES = "SELECT PRIVILEGE FROM SESSION_PRIVS"
SESSION_ROLES = "SELECT ROLE FROM SESSION_ROLES"
SESSION_USER = "SELECT SYS_CONTEXT('USERENV', 'SESSION_USER') FROM DUAL"
MAX_STRING_SIZE = "SELECT VALUE FROM V$PARAMETER WHERE NAME = 'max_string_size'"
# Tables with (ALL) COLUMNS supplemental logging; database-wide ALL logging covers every table.
ALL_COLUMN_LOGGING = "SELECT OWNER, TABLE_NAME FROM ALL_LOG_GROUPS WHERE LOG_GROUP_TYPE = 'ALL COLUMN LOGGING'"
# Candidate tables (the include/exclude regexes are applied to OWNER.TABLE_NAME client-side).
TABLES = (
    "SELECT OWNER, TABLE_NAME FROM ALL_TABLES WHERE NESTED = 'NO' AND (IOT_TYPE IS NULL) "
    "AND OWNER NOT IN ({system_schemas}) ORDER BY OWNER, TABLE_NAME"
)
TABLE_DDL = "SELECT DBMS_METADATA.GET_DDL('TABLE', :name, :owner) FROM DUAL"
# Held only while the snapshot SCN and the table definitions are read (no DDL in between).
LOCK_TABLE = 'LOCK TABLE "{owner}"."{table}" IN ROW SHARE MODE'

# The oldest open transaction: a snapshot must mine from its start so its early changes are seen.
OLDEST_OPEN_TRANSACTION = "SELECT MIN(START_SCN) FROM GV$TRANSACTION"

SYSTEM_SCHEMAS = (
    "APPQOSSYS", "AUDSYS", "CTXSYS", "DVSYS", "DBSFWUSER", "DBSNMP", "QSMADMIN_INTERNAL", "LBACSYS", "MDSYS",
    "OJVMSYS", "OLAPSYS", "ORDDATA", "ORDSYS", "OUTLN", "SYS", "SYSTEM", "VECSYS", "WMSYS", "XDB",
)

# ---- redo log files ----------------------------------------------------------------------------

THREADS = "SELECT THREAD#, STATUS, ENABLED FROM V$THREAD ORDER BY THREAD#"
ARCHIVE_DESTINATIONS = (
    "SELECT DEST_ID, DEST_NAME FROM V$ARCHIVE_DEST_STATUS WHERE STATUS = 'VALID' AND TYPE = 'LOCAL' ORDER BY DEST_ID"
)
# One member per online group; NEXT_CHANGE# of the CURRENT log is the maximum SCN (or NULL).
ONLINE_LOGS = (
    "SELECT L.THREAD#, L.SEQUENCE#, L.FIRST_CHANGE#, L.NEXT_CHANGE#, L.STATUS, MIN(F.MEMBER) "
    "FROM V$LOG L JOIN V$LOGFILE F ON F.GROUP# = L.GROUP# "
    "WHERE F.STATUS IS NULL OR F.STATUS <> 'INVALID' "
    "GROUP BY L.THREAD#, L.SEQUENCE#, L.FIRST_CHANGE#, L.NEXT_CHANGE#, L.STATUS ORDER BY L.THREAD#, L.SEQUENCE#"
)
# Archived logs of one destination that end after ``lo`` (earlier ones are not needed).
ARCHIVED_LOGS = (
    "SELECT THREAD#, SEQUENCE#, FIRST_CHANGE#, NEXT_CHANGE#, NAME FROM V$ARCHIVED_LOG "
    "WHERE NAME IS NOT NULL AND ARCHIVED = 'YES' AND STATUS = 'A' AND DELETED = 'NO' AND STANDBY_DEST = 'NO' "
    "AND DEST_ID = :dest_id AND NEXT_CHANGE# > :lo ORDER BY THREAD#, SEQUENCE#"
)
# The oldest SCN still in some archived log of the destination (for the purged-log error).
OLDEST_ARCHIVED_SCN = (
    "SELECT THREAD#, MIN(FIRST_CHANGE#) FROM V$ARCHIVED_LOG WHERE NAME IS NOT NULL AND STATUS = 'A' "
    "AND DELETED = 'NO' AND DEST_ID = :dest_id GROUP BY THREAD#"
)
SCN_TIMES = "SELECT SCN_TO_TIMESTAMP(:lo), SCN_TO_TIMESTAMP(:hi) FROM DUAL"
# Archived logs holding a LogMiner dictionary (DBMS_LOGMNR_D.BUILD) that ends before ``lo``, newest first:
# with DICT_FROM_REDO_LOGS a session adds the logs from the dictionary's first log onward.
DICTIONARY_LOGS = (
    "SELECT FIRST_CHANGE#, NEXT_CHANGE#, DICTIONARY_BEGIN, DICTIONARY_END FROM V$ARCHIVED_LOG "
    "WHERE (DICTIONARY_BEGIN = 'YES' OR DICTIONARY_END = 'YES') AND NAME IS NOT NULL AND STATUS = 'A' "
    "AND DELETED = 'NO' AND DEST_ID = :dest_id AND NEXT_CHANGE# <= :lo ORDER BY FIRST_CHANGE# DESC"
)

# ---- LGWR flush: a commit forces redo up to the planned SCN onto the online logs -----------------

FLUSH_TABLE_EXISTS = "SELECT COUNT(*) FROM USER_TABLES WHERE TABLE_NAME = :name"
FLUSH_TABLE_CREATE = "CREATE TABLE {table} (LAST_SCN NUMBER(19,0))"
FLUSH_TABLE_INIT = "INSERT INTO {table} (LAST_SCN) VALUES (0)"
FLUSH = "UPDATE {table} SET LAST_SCN = :scn"

# ---- redo_log_catalog: one pipeline per database claims the dictionary builds ---------------------
# A one-row table (SLOT is always 1) in the capture user's schema: the INSERT of a second pipeline
# fails on the primary key, so two pipelines cannot both claim it, even at the same instant.

DICTIONARY_CLAIM_CREATE = "CREATE TABLE {table} (SLOT NUMBER(1,0) PRIMARY KEY, PIPELINE VARCHAR2(1000) NOT NULL)"
DICTIONARY_CLAIM_READ = "SELECT PIPELINE FROM {table} WHERE SLOT = 1"
DICTIONARY_CLAIM_INSERT = "INSERT INTO {table} (SLOT, PIPELINE) VALUES (1, :pipeline)"

# ---- LogMiner session ----------------------------------------------------------------------------

ADD_LOGFILE = "BEGIN SYS.DBMS_LOGMNR.ADD_LOGFILE(LOGFILENAME => :name, OPTIONS => SYS.DBMS_LOGMNR.ADDFILE); END;"
START_LOGMNR = "BEGIN SYS.DBMS_LOGMNR.START_LOGMNR(STARTSCN => :lo, ENDSCN => :hi, OPTIONS => {options}); END;"
END_LOGMNR = "BEGIN SYS.DBMS_LOGMNR.END_LOGMNR; END;"
BUILD_DICTIONARY = "BEGIN SYS.DBMS_LOGMNR_D.BUILD(OPTIONS => SYS.DBMS_LOGMNR_D.STORE_IN_REDO_LOGS); END;"

_COMMON_OPTIONS = (
    "SYS.DBMS_LOGMNR.SKIP_CORRUPTION + SYS.DBMS_LOGMNR.NO_SQL_DELIMITER + SYS.DBMS_LOGMNR.NO_ROWID_IN_STMT"
)
START_OPTIONS = {
    "online_catalog": f"{_COMMON_OPTIONS} + SYS.DBMS_LOGMNR.DICT_FROM_ONLINE_CATALOG",
    "redo_log_catalog": f"{_COMMON_OPTIONS} + SYS.DBMS_LOGMNR.DICT_FROM_REDO_LOGS + SYS.DBMS_LOGMNR.DDL_DICT_TRACKING",
}

# Operation codes (V$LOGMNR_CONTENTS.OPERATION_CODE).
OP_INSERT, OP_DELETE, OP_UPDATE, OP_DDL = 1, 2, 3, 5
OP_START, OP_COMMIT, OP_ROLLBACK = 6, 7, 36
OP_SELECT_LOB_LOCATOR, OP_LOB_WRITE, OP_LOB_TRIM, OP_LOB_ERASE = 9, 10, 11, 29
OP_MISSING_SCN, OP_UNSUPPORTED = 34, 255
OP_XML_BEGIN, OP_XML_WRITE, OP_XML_END = 68, 70, 71
OP_EXT_STRING_BEGIN, OP_EXT_STRING_WRITE, OP_EXT_STRING_END = 91, 92, 93

TRANSACTION_CODES = (OP_START, OP_COMMIT, OP_ROLLBACK)
DML_CODES = (OP_INSERT, OP_DELETE, OP_UPDATE, OP_MISSING_SCN, OP_UNSUPPORTED)
LOB_CODES = (OP_SELECT_LOB_LOCATOR, OP_LOB_WRITE, OP_LOB_TRIM, OP_LOB_ERASE, OP_XML_BEGIN, OP_XML_WRITE,
             OP_XML_END, OP_EXT_STRING_BEGIN, OP_EXT_STRING_WRITE, OP_EXT_STRING_END)

# Columns of the contents query, named as in the view (the export mode reads the same names).
CONTENTS_COLUMNS = (
    "SCN", "START_SCN", "COMMIT_SCN", "TIMESTAMP", "COMMIT_TIMESTAMP", "XID", "OPERATION_CODE", "OPERATION",
    "SEG_OWNER", "TABLE_NAME", "ROW_ID", "ROLLBACK", "RS_ID", "SSN", "CSF", "SQL_REDO", "THREAD#", "USERNAME",
    "INFO",
)


def sql_list(values: Iterable[str]) -> str:
    """A SQL IN-list of string literals (``''`` escaped); LogMiner IN-lists hold at most 1000 items."""
    items = [str(v).replace("'", "''") for v in values]
    if not items:
        return "NULL"
    if len(items) > 1000:
        raise ValueError("IN-list longer than 1000 items")
    return ", ".join(f"'{v}'" for v in items)


def contents_query(owners: Iterable[str], excluded_users: Iterable[str], lob: bool, pdb: str | None) -> str:
    """The ``V$LOGMNR_CONTENTS`` query of one mining batch (binds ``:lo`` and ``:hi``).

    Transaction control rows are never filtered by owner or user (a transaction's changes and its
    commit may come from different sessions' views of it); DML and DDL rows are restricted to the
    captured owners, without the pipeline's own user, and DDL rows without LogMiner's internal DDL.
    """
    dml = ", ".join(str(c) for c in DML_CODES + (LOB_CODES if lob else ()))
    control = ", ".join(str(c) for c in TRANSACTION_CODES)
    owner_list = sql_list(sorted(set(owners)))
    users = sorted(set(excluded_users))
    user_filter = f" AND (USERNAME IS NULL OR USERNAME NOT IN ({sql_list(users)}))" if users else ""
    pdb_filter = f" AND SRC_CON_NAME = '{pdb.replace(chr(39), chr(39) * 2)}'" if pdb else ""
    columns = ", ".join("RAWTOHEX(XID)" if c == "XID" else c for c in CONTENTS_COLUMNS)
    return (
        f"SELECT {columns} FROM V$LOGMNR_CONTENTS WHERE SCN > :lo AND SCN <= :hi AND ("
        f"OPERATION_CODE IN ({control}) "
        f"OR (OPERATION_CODE IN ({dml}) AND SEG_OWNER IN ({owner_list}){user_filter}{pdb_filter}) "
        f"OR (OPERATION_CODE = {OP_DDL} AND SEG_OWNER IN ({owner_list}){pdb_filter} "
        f"AND (INFO IS NULL OR INFO NOT LIKE 'INTERNAL DDL%')))"
    )
