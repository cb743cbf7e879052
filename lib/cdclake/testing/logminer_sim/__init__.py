r"""A LogMiner simulator: a DB-API connection that answers the miner's statements from simulated redo.

No Oracle server runs in the test environment, so :class:`SimulatedOracle` models the parts of one
that cdclake's miner talks to: an SCN clock and a wall clock, redo threads (RAC) with online log
groups reused in a circle and archived copies per destination, tables with their schema history and
committed row history (flashback), interleaved transactions with savepoints, statement-level and
full rollbacks (``ROLLBACK = 1`` undo rows), LOB locator/write/trim/erase rows, XMLTYPE values as
XML_BEGIN/WRITE/END rows and, with ``max_string_size="EXTENDED"``, VARCHAR2/NVARCHAR2 over 4000 bytes
and RAW over 2000 as 32K_BEGIN/WRITE/END rows (``LM_EMPTY_STRING`` in the INSERT), DDL with LogMiner's
``INTERNAL DDL`` noise, LGWR (redo is visible only once flushed), and the preflight facts
(``V$DATABASE``, privileges, supplemental logging...).

:meth:`SimulatedOracle.connect` returns a :class:`SimulatedConnection`; its cursors answer exactly the
statements of :mod:`cdclake.sources.oracle.queries` (matched on whitespace-normalised text), plus
any ``V$LOGMNR_CONTENTS`` query of the :func:`~cdclake.sources.oracle.queries.contents_query`
shape, whose ``WHERE`` is compiled into a Python predicate. Anything else raises
:class:`UnknownStatementError`, naming the statement, so the miner cannot issue something untested.
Errors are :class:`SimulatedDatabaseError`, whose ``str()`` starts with the ``ORA-``/``DPY-`` code like
``oracledb.DatabaseError``; :meth:`SimulatedOracle.fail_next` injects them.

>>> from cdclake.sources.oracle import queries as Q
>>> db = SimulatedOracle(threads=2)
>>> _ = db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("NAME", "NVARCHAR2(20)")], ["ID"])
>>> lo = db.current_scn
>>> tx = db.begin(thread=2, username="APP")
>>> rowid = tx.insert("APP", "T", {"ID": 1, "NAME": "café"})
>>> commit_scn = tx.commit()
>>> db.canonical("APP", "T")
[{'ID': '1', 'NAME': 'café'}]
>>> conn = db.connect()
>>> cur = conn.cursor()
>>> for (thread, seq, first, nxt, status, member) in cur.execute(Q.ONLINE_LOGS).fetchall():
...     if status == "CURRENT":
...         cur.execute(Q.ADD_LOGFILE, name=member)
>>> options = Q.START_OPTIONS["online_catalog"]
>>> cur.execute(Q.START_LOGMNR.format(options=options), lo=lo, hi=commit_scn)
>>> _ = cur.execute(Q.contents_query(["APP"], ["C##CDC"], lob=False, pdb=None), {"lo": lo, "hi": commit_scn})
>>> for row in cur.fetchmany(10_000):
...     print(row[6], row[7], row[16], row[15])
6 START 2 set transaction read write
1 INSERT 2 insert into "APP"."T"("ID","NAME") values ('1','caf' || UNISTR('\00e9'))
7 COMMIT 2 commit
>>> cur.execute(Q.END_LOGMNR)

Several commits can share one SCN (``with db.hold_scn(): ...``); ``db.jump_scn(n)`` makes an SCN
gap; ``with db.bulk(): ...`` pauses the GC while building millions of rows. Reading ``CURRENT_SCN``
consumes an SCN, as on Oracle.

The workload generator :func:`random_workload` drives several tables (:func:`create_typed_tables`)
with interleaved transactions across threads, rollbacks, savepoints, long transactions, primary-key
updates, delete + re-insert, log switches, archiving and SCN jumps, deterministically per seed.

The package, by concern (everything public is re-exported here):

- ``errors``: the ``oracledb``-like errors (:class:`SimulatedDatabaseError` and its kin) and
  :class:`UnknownStatementError`;
- ``values``: column types (:func:`parse_oracle_type`) and values: stored as Oracle keeps them
  (:func:`store_value`), rendered into ``SQL_REDO``, canonical (:func:`canonical_value`), and Oracle's
  internal encodings;
- ``database``: tables, redo threads and logs, transactions and injected faults (:class:`OracleDatabase`);
- ``dbapi``: statement matching, the contents query's ``WHERE`` compiler, LogMiner sessions,
  :class:`SimulatedCursor`, :class:`SimulatedConnection`, :class:`SimulatedLob` and
  :class:`SimulatedOracle` (the database with its :meth:`~SimulatedOracle.connect`);
- ``workload``: the workload generator (:func:`random_workload`, :func:`create_typed_tables`...).
"""

from __future__ import annotations

from cdclake.testing.logminer_sim.database import (
    COLUMNS,
    DEFAULT_PRIVILEGES,
    DEFAULT_ROLES,
    I_COMMIT_SCN,
    I_COMMIT_TIMESTAMP,
    I_CSF,
    I_INFO,
    I_OP,
    I_OPERATION,
    I_OWNER,
    I_ROLLBACK,
    I_ROW_ID,
    I_RS_ID,
    I_SCN,
    I_SQL_REDO,
    I_SSN,
    I_START_SCN,
    I_TABLE,
    I_THREAD,
    I_TIMESTAMP,
    I_USERNAME,
    I_XID,
    NULL_ROWID,
    OPERATION_NAMES,
    RESETLOGS_ID,
    ArchiveDest,
    Column,
    LogFile,
    OracleDatabase,
    SimulatedTransaction,
    TableDef,
)
from cdclake.testing.logminer_sim.dbapi import (
    _HANDLED,
    MAX_SCN,
    SimulatedConnection,
    SimulatedCursor,
    SimulatedLob,
    SimulatedOracle,
    unhandled_statements,
)
from cdclake.testing.logminer_sim.errors import (
    OracleErrorInfo,
    RowLockedError,
    SimulatedDatabaseError,
    SimulatedOperationalError,
    UnknownStatementError,
)
from cdclake.testing.logminer_sim.values import OracleType, canonical_value, parse_oracle_type, store_value
from cdclake.testing.logminer_sim.workload import (
    WorkloadStats,
    create_typed_tables,
    random_value,
    random_workload,
    store_row,
)

__all__ = [
    "COLUMNS", "DEFAULT_PRIVILEGES", "DEFAULT_ROLES", "I_COMMIT_SCN", "I_COMMIT_TIMESTAMP", "I_CSF", "I_INFO", "I_OP",
    "I_OPERATION", "I_OWNER", "I_ROLLBACK", "I_ROW_ID", "I_RS_ID", "I_SCN", "I_SQL_REDO", "I_SSN", "I_START_SCN",
    "I_TABLE", "I_THREAD", "I_TIMESTAMP", "I_USERNAME", "I_XID", "MAX_SCN", "NULL_ROWID", "OPERATION_NAMES",
    "RESETLOGS_ID", "_HANDLED", "ArchiveDest", "Column", "LogFile", "OracleDatabase", "OracleErrorInfo", "OracleType",
    "RowLockedError", "SimulatedConnection", "SimulatedCursor", "SimulatedDatabaseError", "SimulatedLob",
    "SimulatedOperationalError", "SimulatedOracle", "SimulatedTransaction", "TableDef", "UnknownStatementError",
    "WorkloadStats", "canonical_value", "create_typed_tables", "parse_oracle_type", "random_value", "random_workload",
    "store_row", "store_value", "unhandled_statements",
]
