"""The emulated Db2 database: tables, a log, transactions, and the ASN Capture agent that reads the log.

Storage is SQLite, one file per schema under ``root`` (``<SCHEMA>.db``), so that Spark reads the tables
through a real JDBC driver (``org.xerial:sqlite-jdbc``) with the same SQL text it sends to Db2: its
connections attach every schema file under its schema's name (:data:`JDBC_DRIVER`). Values are stored
the way the emulated JDBC reads must return them (:func:`store`): integers, DECIMAL as its exact text,
DECFLOAT and TIMESTAMP as the text Db2's ``CAST(... AS VARCHAR)`` gives, DATE and TIME as epoch
milliseconds (UTC), binary strings as BLOBs.

The log is a list of records, each with a 16-byte log sequence (:meth:`EmulatedDb2.next_lsn`); a
transaction's changes are applied to its tables when it commits (the emulator has no dirty reads).
Capture (:class:`CaptureAgent`) reads the log in commit order in cycles, and per committed transaction
that changed an active registration writes the CD rows (an update as a ``D`` + ``I`` pair when
``CHG_UPD_TO_DEL_INS = 'Y'``, else one ``U`` row), one ``IBMSNAP_UOW`` row, and then moves the global
record's ``SYNCHPOINT`` and ``IBMSNAP_RESTART``, all in one SQLite transaction, as Capture's commit
cycle does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.testing.db2_emulator.dbapi import EmulatedConnection, OperationalError
from cdclake.testing.db2_emulator.values import (
    ColumnType,
    EmulatorError,
    db2_timestamp_text,
    parse_type,
    sqlite_type,
    store,
)

CONTROL_TABLES = {
    "IBMSNAP_REGISTER": (
        "SOURCE_OWNER TEXT NOT NULL, SOURCE_TABLE TEXT NOT NULL, SOURCE_VIEW_QUAL INTEGER NOT NULL, "
        "GLOBAL_RECORD TEXT NOT NULL, SOURCE_STRUCTURE INTEGER NOT NULL, SOURCE_CONDENSED TEXT NOT NULL, "
        "SOURCE_COMPLETE TEXT NOT NULL, CD_OWNER TEXT, CD_TABLE TEXT, PHYS_CHANGE_OWNER TEXT, PHYS_CHANGE_TABLE TEXT, "
        "CD_OLD_SYNCHPOINT BLOB, CD_NEW_SYNCHPOINT BLOB, DISABLE_REFRESH INTEGER NOT NULL, CCD_OWNER TEXT, "
        "CCD_TABLE TEXT, CCD_OLD_SYNCHPOINT BLOB, SYNCHPOINT BLOB, SYNCHTIME TEXT, CCD_CONDENSED TEXT, "
        "CCD_COMPLETE TEXT, ARCH_LEVEL TEXT NOT NULL, DESCRIPTION TEXT, BEFORE_IMG_PREFIX TEXT, CONFLICT_LEVEL TEXT, "
        "CHG_UPD_TO_DEL_INS TEXT, CHGONLY TEXT, RECAPTURE TEXT, OPTION_FLAGS TEXT NOT NULL, STOP_ON_ERROR TEXT "
        "DEFAULT 'Y', STATE TEXT DEFAULT 'I', STATE_INFO TEXT, PRIMARY KEY (SOURCE_OWNER, SOURCE_TABLE, "
        "SOURCE_VIEW_QUAL)"),
    "IBMSNAP_UOW": (
        "IBMSNAP_UOWID BLOB NOT NULL, IBMSNAP_COMMITSEQ BLOB NOT NULL, IBMSNAP_LOGMARKER TEXT NOT NULL, "
        "IBMSNAP_AUTHTKN TEXT NOT NULL, IBMSNAP_AUTHID TEXT NOT NULL, IBMSNAP_REJ_CODE TEXT NOT NULL DEFAULT ' ', "
        "IBMSNAP_APPLY_QUAL TEXT NOT NULL DEFAULT ' ', UNIQUE (IBMSNAP_COMMITSEQ, IBMSNAP_LOGMARKER)"),
    "IBMSNAP_RESTART": (
        "MAX_COMMITSEQ BLOB NOT NULL, MAX_COMMIT_TIME TEXT NOT NULL, MIN_INFLIGHTSEQ BLOB NOT NULL, "
        "CURR_COMMIT_TIME TEXT NOT NULL, CAPTURE_FIRST_SEQ BLOB NOT NULL"),
    "IBMSNAP_CAPPARMS": (
        "RETENTION_LIMIT INTEGER, LAG_LIMIT INTEGER, COMMIT_INTERVAL INTEGER, PRUNE_INTERVAL INTEGER, "
        "TRACE_LIMIT INTEGER, MONITOR_LIMIT INTEGER, MONITOR_INTERVAL INTEGER, MEMORY_LIMIT INTEGER, "
        "REMOTE_SRC_SERVER TEXT, AUTOPRUNE TEXT, TERM TEXT, AUTOSTOP TEXT, LOGREUSE TEXT, LOGSTDOUT TEXT, "
        "SLEEP_INTERVAL INTEGER, CAPTURE_PATH TEXT, STARTMODE TEXT, LOGRDBUFSZ INTEGER, ARCH_LEVEL TEXT, "
        "COMPATIBILITY TEXT"),
    "IBMSNAP_CAPMON": (
        "MONITOR_TIME TEXT NOT NULL, RESTART_TIME TEXT NOT NULL, CURRENT_MEMORY INTEGER NOT NULL, "
        "CD_ROWS_INSERTED INTEGER NOT NULL, TRANS_PROCESSED INTEGER NOT NULL, SYNCHTIME TEXT, "
        "CURRENT_LOG_TIME TEXT, CURRENT_SEQ BLOB, RESTART_SEQ BLOB"),
    "IBMSNAP_PRUNCNTL": (
        "TARGET_SERVER TEXT NOT NULL, TARGET_OWNER TEXT NOT NULL, TARGET_TABLE TEXT NOT NULL, SYNCHTIME TEXT, "
        "SYNCHPOINT BLOB, SOURCE_OWNER TEXT NOT NULL, SOURCE_TABLE TEXT NOT NULL, SOURCE_VIEW_QUAL INTEGER NOT NULL, "
        "APPLY_QUAL TEXT NOT NULL, SET_NAME TEXT NOT NULL, CNTL_SERVER TEXT NOT NULL, TARGET_STRUCTURE INTEGER "
        "NOT NULL, CNTL_ALIAS TEXT, PHYS_CHANGE_OWNER TEXT, PHYS_CHANGE_TABLE TEXT, MAP_ID TEXT NOT NULL"),
}


# ---- the database -----------------------------------------------------------------------------------------


@dataclass
class Table:
    schema: str
    name: str
    columns: list[tuple[str, ColumnType, bool]]  # name, type, nullable
    primary_key: list[str]
    created: dt.datetime
    altered: dt.datetime
    defaults: dict[str, str] = field(default_factory=dict)  # SYSCAT.COLUMNS.DEFAULT: the default's SQL text

    @property
    def names(self) -> list[str]:
        return [c[0] for c in self.columns]

    def ctype(self, column: str) -> ColumnType:
        for name, ctype, _ in self.columns:
            if name == column:
                return ctype
        raise KeyError(column)


@dataclass
class LogRecord:
    lsn: bytes
    txid: int
    kind: str  # "I", "U", "D" (row changes), "C" (commit), "R" (rollback)
    schema: str = ""
    table: str = ""
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    time: dt.datetime | None = None
    authid: str = "APP"


@dataclass
class Registration:
    source_owner: str
    source_table: str
    cd_owner: str
    cd_table: str
    state: str = "A"
    chg_upd_to_del_ins: str = "Y"
    before_img_prefix: str | None = None
    cd_old_synchpoint: bytes | None = None
    cd_new_synchpoint: bytes | None = None
    # source column -> the CD column Capture writes it to, for source columns renamed since ADDTABLE
    cd_names: dict[str, str] = field(default_factory=dict)


class EmulatedDb2:
    """A Db2 LUW database with SQL Replication's Capture, emulated (module docstring).

    >>> import tempfile
    >>> db = EmulatedDb2(Path(tempfile.mkdtemp()))
    >>> db.create_table("APP", "T", [("ID", "INTEGER", False), ("NAME", "VARCHAR(20)", True)], ["ID"])
    >>> db.add_table("APP", "T")
    >>> with db.transaction() as tx:
    ...     tx.insert("APP", "T", {"ID": 1, "NAME": "café"})
    >>> db.capture.cycle()
    1
    >>> [r[2:] for r in db.select('SELECT * FROM ASNCDC."CDC_APP_T"')]
    [('I', 1, 'café')]
    """

    def __init__(self, root: Path, database: str = "TESTDB", control_schema: str = "ASNCDC",
                 compatibility: str = "1021") -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.database = database
        self.control_schema = control_schema
        self.compatibility = compatibility
        self.lock = threading.RLock()
        self.tables: dict[tuple[str, str], Table] = {}
        self.registrations: dict[tuple[str, str], Registration] = {}
        self.log: list[LogRecord] = []
        self._lsn = itertools.count(0x1000)
        self._txid = itertools.count(1)
        self.clock = dt.datetime(2026, 1, 1, 0, 0, 0)
        self.schemas: set[str] = set()
        self.conn = sqlite3.connect(self.root / "MAIN.db", isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self._attach(control_schema)
        for name, ddl in CONTROL_TABLES.items():
            self.conn.execute(f'CREATE TABLE "{control_schema}"."{name}" ({ddl})')
        self.conn.execute(f'CREATE INDEX "{control_schema}".UOWX ON "IBMSNAP_UOW" (IBMSNAP_COMMITSEQ)')
        self.conn.execute(
            f'INSERT INTO "{control_schema}"."IBMSNAP_CAPPARMS" VALUES (10080, 10080, 1, 300, 10080, 10080, 300, 32, '
            f"NULL, 'Y', 'Y', 'N', 'N', 'N', 1, NULL, 'WARMSI', 256, '1021', ?)", (compatibility,))
        self.capture = CaptureAgent(self)
        self.session_statements: list[str] = []  # what the emulated driver was sent, in order
        self.down = False  # the server does not answer
        self.locks: dict[tuple[str, str, tuple[Any, ...]], int] = {}  # row -> the open transaction changing it
        self.table_locks: dict[tuple[str, str], int] = {}  # table -> the connection holding it IN SHARE MODE

    # -- storage ---------------------------------------------------------------------------------------

    def _attach(self, schema: str) -> None:
        if schema in self.schemas:
            return
        path = self.root / f"{schema}.db"
        self.conn.execute(f"ATTACH DATABASE '{path}' AS \"{schema}\"")
        self.conn.execute(f'PRAGMA "{schema}".journal_mode=WAL')
        self.schemas.add(schema)

    @property
    def jdbc_url(self) -> str:
        """Spark reads through SQLite's driver with every schema file attached (``cdclake.testing.SchemaFilesDriver``
        in ``jvm/src``): ``source.jdbc_url``, with ``source.jdbc_driver`` :data:`JDBC_DRIVER`."""
        return f"jdbc:cdclake-schemas:{self.root / 'MAIN.db'}"

    def select(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def now(self) -> dt.datetime:
        """The emulated wall clock: a millisecond later each time it is read."""
        self.clock += dt.timedelta(milliseconds=1)
        return self.clock

    def next_lsn(self) -> bytes:
        """The next log sequence: 16 bytes (10 under COMPATIBILITY '0801'), ascending."""
        n = next(self._lsn) * 0x10 + 0x5
        raw = n.to_bytes(16, "big")
        return raw[6:] if self.compatibility < "1001" else raw

    # -- DDL ---------------------------------------------------------------------------------------------

    def create_table(self, schema: str, name: str, columns: list[tuple[str, str, bool]],
                     primary_key: list[str]) -> None:
        """``columns``: (name, Db2 type text, nullable)."""
        with self.lock:
            self._attach(schema)
            parsed = [(c, parse_type(t), n) for c, t, n in columns]
            cols = ", ".join(f'"{c}" {sqlite_type(t)}' for c, t, _ in parsed)
            pk = f', PRIMARY KEY ({", ".join(chr(34) + k + chr(34) for k in primary_key)})' if primary_key else ""
            self.conn.execute(f'CREATE TABLE "{schema}"."{name}" ({cols}{pk})')
            now = self.now()
            self.tables[(schema, name)] = Table(schema, name, parsed, list(primary_key), now, now)

    def table(self, schema: str, name: str) -> Table:
        try:
            return self.tables[(schema, name)]
        except KeyError:
            raise EmulatorError(-204, "42704", f'"{schema}.{name}" is an undefined name.') from None

    def add_table(self, schema: str, name: str, chg_upd_to_del_ins: str = "Y") -> None:
        """``CALL ASNCDC.ADDTABLE(schema, name)``: ``DATA CAPTURE CHANGES``, the CD table ``CDC_<s>_<t>`` (the
        sequence and operation columns, then the source's), the registration (active) and its prune row."""
        with self.lock:
            src = self.table(schema, name)
            cs = self.control_schema
            cd = f"CDC_{schema}_{name}"
            cols = [("IBMSNAP_COMMITSEQ", ColumnType("VARCHAR", 16, 0, True), False),
                    ("IBMSNAP_INTENTSEQ", ColumnType("VARCHAR", 16, 0, True), False),
                    ("IBMSNAP_OPERATION", ColumnType("CHARACTER", 1, 0), False), *src.columns]
            ddl = ", ".join(f'"{c}" {sqlite_type(t)}' for c, t, _ in cols)
            self.conn.execute(f'CREATE TABLE "{cs}"."{cd}" ({ddl})')
            self.conn.execute(f'CREATE UNIQUE INDEX "{cs}"."IX{cd}" ON "{cd}" (IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ)')
            now = self.now()
            self.tables[(cs, cd)] = Table(cs, cd, cols, [], now, now)
            reg = Registration(schema, name, cs, cd, "A", chg_upd_to_del_ins)
            self.registrations[(schema, name)] = reg
            self.conn.execute(
                f'INSERT INTO "{cs}"."IBMSNAP_REGISTER" (SOURCE_OWNER, SOURCE_TABLE, SOURCE_VIEW_QUAL, GLOBAL_RECORD, '
                "SOURCE_STRUCTURE, SOURCE_CONDENSED, SOURCE_COMPLETE, CD_OWNER, CD_TABLE, PHYS_CHANGE_OWNER, "
                "PHYS_CHANGE_TABLE, DISABLE_REFRESH, ARCH_LEVEL, CONFLICT_LEVEL, CHG_UPD_TO_DEL_INS, CHGONLY, "
                "RECAPTURE, OPTION_FLAGS, STOP_ON_ERROR, STATE) VALUES (?, ?, 0, 'N', 1, 'Y', 'Y', ?, ?, ?, ?, 0, "
                "'0801', '0', ?, 'N', 'Y', 'NNNN', 'Y', 'A')", (schema, name, cs, cd, cs, cd, chg_upd_to_del_ins))
            map_id = 1 + len(self.select(f'SELECT 1 FROM "{cs}"."IBMSNAP_PRUNCNTL"'))
            self.conn.execute(
                f'INSERT INTO "{cs}"."IBMSNAP_PRUNCNTL" VALUES (\'KAFKA\', ?, ?, NULL, NULL, ?, ?, 0, \'KAFKAQUAL\', '
                "'SET001', ?, 8, NULL, ?, ?, ?)", (schema, name, schema, name, self.database, cs, f'"{cd}"',
                                                    str(map_id)))

    def set_prune_point(self, schema: str, name: str, synchpoint: bytes | None) -> None:
        """Another subscriber (an Apply program) records how far it has applied ``schema.name``:
        ``UPDATE ASNCDC.IBMSNAP_PRUNCNTL SET SYNCHPOINT = ...``."""
        with self.lock:
            self.conn.execute(f'UPDATE "{self.control_schema}"."IBMSNAP_PRUNCNTL" SET SYNCHPOINT = ? '
                              "WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?", (synchpoint, schema, name))

    def set_state(self, schema: str, name: str, state: str) -> None:
        """``UPDATE ASNCDC.IBMSNAP_REGISTER SET STATE = ...`` (Capture acts on it at its next ``reinit``)."""
        with self.lock:
            self.conn.execute(f'UPDATE "{self.control_schema}"."IBMSNAP_REGISTER" SET STATE = ? '
                              "WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?", (state, schema, name))

    # -- schema changes (the steps of docs/db2.md's procedures) -----------------------------------------

    def add_column(self, schema: str, name: str, column: str, type_text: str, nullable: bool = True,
                   default: Any = None, before: str | None = None) -> None:
        """``ALTER TABLE ... ADD COLUMN`` (at the end; existing rows get ``default``), or with ``before`` the column
        it is put in front of: the export, re-create and load of the procedure for a column in the middle.
        Works on a CD table as well (the DBA's step of the procedures)."""
        with self.lock:
            t = self.table(schema, name)
            ctype = parse_type(type_text)
            at = len(t.columns) if before is None else t.names.index(before)
            columns = [*t.columns[:at], (column, ctype, nullable), *t.columns[at:]]
            self._rebuild(t, columns, {column: store(ctype, default)})
            if default is not None:
                t.defaults[column] = str(default) if isinstance(default, (int, float)) or ctype.typename in (
                    "DECIMAL", "DECFLOAT") else "'" + str(default).replace("'", "''") + "'"
            t.altered = self.now()

    def rename_column(self, schema: str, name: str, old: str, new: str) -> None:
        """``ALTER TABLE ... RENAME COLUMN``: a CD table keeps the old name until the DBA alters it too."""
        with self.lock:
            t = self.table(schema, name)
            self.conn.execute(f'ALTER TABLE "{schema}"."{name}" RENAME COLUMN "{old}" TO "{new}"')
            t.columns = [(new if c == old else c, ct, n) for c, ct, n in t.columns]
            t.primary_key = [new if k == old else k for k in t.primary_key]
            reg = self.registrations.get((schema, name))
            if reg is not None:  # Capture goes on writing the CD table's column of the old name
                reg.cd_names[new] = reg.cd_names.pop(old, old)
            t.altered = self.now()

    def drop_column(self, schema: str, name: str, column: str) -> None:
        """``ALTER TABLE ... DROP COLUMN`` (and the ``REORG`` Db2 wants after it)."""
        with self.lock:
            t = self.table(schema, name)
            self._rebuild(t, [c for c in t.columns if c[0] != column], {})
            t.altered = self.now()

    def set_data_type(self, schema: str, name: str, column: str, type_text: str) -> None:
        """``ALTER TABLE ... ALTER COLUMN ... SET DATA TYPE`` to a wider type (stored values stay as they are)."""
        with self.lock:
            t = self.table(schema, name)
            ctype = parse_type(type_text)
            t.columns = [(c, ctype if c == column else ct, n) for c, ct, n in t.columns]
            t.altered = self.now()

    def remove_table(self, schema: str, name: str) -> None:
        """``CALL ASNCDC.REMOVETABLE(schema, name)``: the registration and its prune row go, the CD table is
        dropped with the changes it still held."""
        with self.lock:
            reg = self.registrations.pop((schema, name))
            cs = self.control_schema
            self.conn.execute(f'DROP TABLE "{cs}"."{reg.cd_table}"')
            del self.tables[(cs, reg.cd_table)]
            self.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_REGISTER" WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?',
                              (schema, name))
            self.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_PRUNCNTL" WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?',
                              (schema, name))

    def _rebuild(self, t: Table, columns: list[tuple[str, ColumnType, bool]], fill: dict[str, Any]) -> None:
        """``t`` with ``columns``: its rows copied, a new column filled with ``fill``'s stored value."""
        q = f'"{t.schema}"."{t.name}"'
        ddl = ", ".join(f'"{c}" {sqlite_type(ct)}' for c, ct, _ in columns)
        pk = f', PRIMARY KEY ({", ".join(chr(34) + k + chr(34) for k in t.primary_key)})' if t.primary_key else ""
        self.conn.execute("BEGIN")
        try:
            self.conn.execute(f'CREATE TABLE "{t.schema}"."{t.name}__new" ({ddl}{pk})')
            values = [f'"{c}"' if c in t.names else "?" for c, _, _ in columns]
            params = tuple(fill.get(c) for c, _, _ in columns if c not in t.names)
            self.conn.execute(f'INSERT INTO "{t.schema}"."{t.name}__new" SELECT {", ".join(values)} FROM {q}', params)
            self.conn.execute(f"DROP TABLE {q}")
            self.conn.execute(f'ALTER TABLE "{t.schema}"."{t.name}__new" RENAME TO "{t.name}"')
            if t.schema == self.control_schema and t.name.startswith("CDC_"):
                self.conn.execute(f'CREATE UNIQUE INDEX "{t.schema}"."IX{t.name}" ON "{t.name}" '
                                  "(IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ)")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        t.columns = columns

    # -- the driver ------------------------------------------------------------------------------------------

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        """``ibm_db_dbi.connect(...)``: a connection answering the Db2 source's statements (arguments ignored)."""
        if self.down:
            raise OperationalError(str(EmulatorError(
                -30081, "08001", 'A communication error has been detected. Communication protocol being used: '
                '"TCP/IP".  Communication API being used: "SOCKETS".  Location where the error was detected: '
                '"127.0.0.1".  Communication function detecting the error: "connect".  Protocol specific error '
                'code(s): "111", "*", "*".')))
        return EmulatedConnection(self)

    # -- transactions -------------------------------------------------------------------------------------

    def begin(self, authid: str = "APP") -> Transaction:
        return Transaction(self, next(self._txid), authid)

    @contextlib.contextmanager
    def transaction(self, authid: str = "APP") -> Iterator[Transaction]:
        tx = self.begin(authid)
        try:
            yield tx
        except BaseException:
            tx.rollback()
            raise
        tx.commit()

    def row(self, schema: str, name: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        """The committed row with the (stored) primary key ``key``."""
        t = self.table(schema, name)
        cols = ", ".join(f'"{c}"' for c in t.names)
        where = " AND ".join(f'"{k}" IS ?' for k in t.primary_key)
        found = self.select(f'SELECT {cols} FROM "{schema}"."{name}" WHERE {where}', key)
        return dict(zip(t.names, found[0], strict=True)) if found else None

    def rows(self, schema: str, name: str) -> list[dict[str, Any]]:
        """The table's committed rows as the emulator stores them, keyed by column name."""
        t = self.table(schema, name)
        cols = ", ".join(f'"{c}"' for c in t.names)
        return [dict(zip(t.names, r, strict=True)) for r in self.select(f'SELECT {cols} FROM "{schema}"."{name}"')]

    def apply(self, rec: LogRecord) -> None:
        """Apply one committed change to its table."""
        t = self.table(rec.schema, rec.table)
        q = f'"{rec.schema}"."{rec.table}"'
        if rec.kind in ("U", "D"):
            assert rec.before is not None
            where = " AND ".join(f'"{k}" IS ?' for k in t.primary_key)
            cur = self.conn.execute(f"DELETE FROM {q} WHERE {where}", tuple(rec.before[k] for k in t.primary_key))
            if cur.rowcount != 1:
                raise EmulatorError(-100, "02000", f"no row of {q} has the key of {rec.before}")
        if rec.kind in ("I", "U"):
            assert rec.after is not None
            names = list(rec.after)
            values = tuple(rec.after[n] for n in names)
            self.conn.execute(f"INSERT INTO {q} ({', '.join(chr(34) + n + chr(34) for n in names)}) VALUES "
                              f"({', '.join('?' for _ in names)})", values)


class Transaction:
    """Changes of one transaction: logged now, applied to the tables (and visible to others) at commit.

    Images are kept in the stored form (:func:`store`). A row changed by an open transaction is locked: another
    transaction that changes it raises :class:`EmulatorError` (SQL0911N), as Db2 would make it wait.
    """

    def __init__(self, db: EmulatedDb2, txid: int, authid: str) -> None:
        self.db, self.txid, self.authid = db, txid, authid
        self.records: list[LogRecord] = []
        self.open = True
        self.overlay: dict[tuple[str, str, tuple[Any, ...]], dict[str, Any] | None] = {}

    def _log(self, kind: str, schema: str, table: str, before: dict[str, Any] | None,
             after: dict[str, Any] | None) -> None:
        if not self.open:
            raise RuntimeError("the transaction has ended")
        t = self.db.table(schema, table)
        if (schema, table) in self.db.table_locks:  # a writer waits for a share lock; here the wait times out
            raise EmulatorError(-911, "40001", f"{schema}.{table} is locked IN SHARE MODE (reason code 68)")
        for image in (before, after):
            if image is not None:
                key = (schema, table, tuple(image[k] for k in t.primary_key))
                owner = self.db.locks.setdefault(key, self.txid)
                if owner != self.txid:
                    raise EmulatorError(-911, "40001", f"row {key} is locked by transaction {owner}")
        with self.db.lock:
            rec = LogRecord(self.db.next_lsn(), self.txid, kind, schema, table, before, after, authid=self.authid)
            self.db.log.append(rec)
            self.records.append(rec)
        if before is not None:
            self.overlay[(schema, table, tuple(before[k] for k in t.primary_key))] = None
        if after is not None:
            self.overlay[(schema, table, tuple(after[k] for k in t.primary_key))] = after

    def current(self, schema: str, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The row with primary key ``key`` as this transaction sees it (stored form), or None."""
        t = self.db.table(schema, table)
        stored = tuple(store(t.ctype(k), key[k]) for k in t.primary_key)
        if (schema, table, stored) in self.overlay:
            return self.overlay[(schema, table, stored)]
        return self.db.row(schema, table, stored)

    def insert(self, schema: str, table: str, row: Mapping[str, Any]) -> None:
        t = self.db.table(schema, table)
        self._log("I", schema, table, None, {c: store(t.ctype(c), row.get(c)) for c in t.names})

    def update(self, schema: str, table: str, key: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
        """Update the row with primary key ``key``: ``changes`` (column -> value) may include key columns."""
        t = self.db.table(schema, table)
        old = self.current(schema, table, key)
        if old is None:
            raise EmulatorError(-100, "02000", f"no row of {schema}.{table} has the key {dict(key)}")
        self._log("U", schema, table, old, {**old, **{c: store(t.ctype(c), v) for c, v in changes.items()}})

    def delete(self, schema: str, table: str, key: Mapping[str, Any]) -> None:
        old = self.current(schema, table, key)
        if old is None:
            raise EmulatorError(-100, "02000", f"no row of {schema}.{table} has the key {dict(key)}")
        self._log("D", schema, table, old, None)

    def _release(self) -> None:
        for key in [k for k, owner in self.db.locks.items() if owner == self.txid]:
            del self.db.locks[key]

    def commit(self) -> None:
        with self.db.lock:
            self.open = False
            self.db.conn.execute("BEGIN")
            try:
                for rec in self.records:
                    self.db.apply(rec)
            except BaseException:
                self.db.conn.execute("ROLLBACK")
                raise
            self.db.conn.execute("COMMIT")
            self.db.log.append(LogRecord(self.db.next_lsn(), self.txid, "C", time=self.db.now(), authid=self.authid))
            self._release()

    def rollback(self) -> None:
        with self.db.lock:
            self.open = False
            self.db.log.append(LogRecord(self.db.next_lsn(), self.txid, "R"))
            self._release()


# ---- Capture -----------------------------------------------------------------------------------------------


class CaptureAgent:
    """ASN Capture, emulated: reads the log from where it stopped, writes CD and UOW rows of committed work.

    ``cycle(upto)`` is one commit cycle: every transaction that committed in the log up to index ``upto``
    (default: the log's end) and is not captured yet; changes of tables with an active registration become
    CD rows, the transaction a UOW row; the global record's ``SYNCHPOINT`` moves to the last log record
    read. Transactions still open at ``upto`` are captured by a later cycle.
    """

    def __init__(self, db: EmulatedDb2) -> None:
        self.db = db
        self.read_to = 0  # log index Capture has read up to
        self.pending: dict[int, list[LogRecord]] = {}
        self.running = True
        self.synchpoint: bytes | None = None
        self.first_seq: bytes | None = None
        self.restart_time = db.clock

    def cycle(self, upto: int | None = None) -> int:
        """One commit cycle; returns the CD rows written."""
        db = self.db
        cs = db.control_schema
        with db.lock:
            if not self.running:
                return 0
            end = len(db.log) if upto is None else min(upto, len(db.log))
            written = 0
            last_commit: LogRecord | None = None
            db.conn.execute("BEGIN")
            try:
                for rec in db.log[self.read_to:end]:
                    if self.first_seq is None:
                        self.first_seq = rec.lsn
                    if rec.kind in ("I", "U", "D"):
                        self.pending.setdefault(rec.txid, []).append(rec)
                    elif rec.kind == "R":
                        self.pending.pop(rec.txid, None)
                    elif rec.kind == "C":
                        written += self._commit(rec, self.pending.pop(rec.txid, []))
                        last_commit = rec
                if end > self.read_to:
                    self.synchpoint = db.log[end - 1].lsn
                    self.read_to = end
                elif self.synchpoint is None:  # at its first start Capture takes the log's end as its synchpoint
                    self.synchpoint = self.first_seq = db.next_lsn()
                now = db.now()
                if self.synchpoint is not None:
                    synchtime = db2_timestamp_text(now, 6)
                    self._global_record(self.synchpoint, synchtime)
                    if last_commit is not None:
                        inflight = min((r[0].lsn for r in self.pending.values() if r), default=self.synchpoint)
                        db.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_RESTART"')
                        db.conn.execute(f'INSERT INTO "{cs}"."IBMSNAP_RESTART" VALUES (?, ?, ?, ?, ?)', (
                            last_commit.lsn, db2_timestamp_text(last_commit.time, 6), inflight, synchtime,
                            self.first_seq))
                    db.conn.execute(f'INSERT INTO "{cs}"."IBMSNAP_CAPMON" VALUES (?, ?, 0, ?, 0, ?, ?, ?, ?)', (
                        synchtime, db2_timestamp_text(self.restart_time, 6), written, synchtime, synchtime,
                        self.synchpoint, self.synchpoint))
            except BaseException:
                db.conn.execute("ROLLBACK")
                raise
            db.conn.execute("COMMIT")
            return written

    def prune(self) -> int:
        """One pruning cycle (``AUTOPRUNE``, or ``asnccmd prune``); returns the CD rows deleted.

        Retention: transactions whose commit (``IBMSNAP_LOGMARKER``) is older than ``RETENTION_LIMIT``
        minutes go, with their CD rows, whether read or not. Subscriptions: a CD table whose prune-control
        rows all have a synchpoint loses its rows up to the lowest; the UOW table, up to the lowest over all
        tables (a NULL synchpoint, as ADDTABLE's row has, holds pruning off)."""
        db, cs = self.db, self.db.control_schema
        with db.lock:
            limit = db.select(f'SELECT RETENTION_LIMIT FROM "{cs}"."IBMSNAP_CAPPARMS"')[0][0]
            horizon = db2_timestamp_text(db.now() - dt.timedelta(minutes=int(limit)), 6)
            expired = db.select(f'SELECT MAX(IBMSNAP_COMMITSEQ) FROM "{cs}"."IBMSNAP_UOW" '
                                "WHERE IBMSNAP_LOGMARKER < ?", (horizon,))[0][0]
            points = {(r[0], r[1]): r[2] if r[3] == r[4] else None for r in db.select(
                f'SELECT SOURCE_OWNER, SOURCE_TABLE, MIN(SYNCHPOINT), COUNT(*), COUNT(SYNCHPOINT) '
                f'FROM "{cs}"."IBMSNAP_PRUNCNTL" GROUP BY SOURCE_OWNER, SOURCE_TABLE')}
            deleted = 0
            db.conn.execute("BEGIN")
            try:
                for key, reg in db.registrations.items():
                    upto = max((p for p in (expired, points.get(key)) if p is not None), default=None)
                    if upto is not None:
                        deleted += db.conn.execute(f'DELETE FROM "{cs}"."{reg.cd_table}" '
                                                   "WHERE IBMSNAP_COMMITSEQ <= ?", (upto,)).rowcount
                held = [points.get(k) for k in db.registrations]
                uow_upto = max((p for p in (expired, None if None in held else min(held, default=None))
                                if p is not None), default=None)
                if uow_upto is not None:
                    db.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_UOW" WHERE IBMSNAP_COMMITSEQ <= ?', (uow_upto,))
            except BaseException:
                db.conn.execute("ROLLBACK")
                raise
            db.conn.execute("COMMIT")
            return deleted

    def cold_start(self) -> None:
        """Capture restarted with ``STARTMODE COLD``: the CD and UOW tables emptied, reading resumes at the log's
        end (transactions committed since the last cycle, and those still open, are never captured)."""
        db, cs = self.db, self.db.control_schema
        with db.lock:
            for reg in db.registrations.values():
                db.conn.execute(f'DELETE FROM "{cs}"."{reg.cd_table}"')
            db.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_UOW"')
            self.pending.clear()
            self.read_to = len(db.log)
            self.synchpoint = self.first_seq = db.next_lsn()
            self.restart_time = db.now()
            synchtime = db2_timestamp_text(self.restart_time, 6)
            self._global_record(self.synchpoint, synchtime)
            db.conn.execute(f'DELETE FROM "{cs}"."IBMSNAP_RESTART"')
            db.conn.execute(f'INSERT INTO "{cs}"."IBMSNAP_RESTART" VALUES (?, ?, ?, ?, ?)', (
                self.synchpoint, synchtime, self.synchpoint, synchtime, self.first_seq))

    def _global_record(self, synchpoint: bytes, synchtime: str) -> None:
        db, cs = self.db, self.db.control_schema
        cur = db.conn.execute(f'UPDATE "{cs}"."IBMSNAP_REGISTER" SET SYNCHPOINT = ?, SYNCHTIME = ? '
                              "WHERE GLOBAL_RECORD = 'Y'", (synchpoint, synchtime))
        if cur.rowcount == 0:  # Capture inserts the global record itself at its first start
            db.conn.execute(
                f'INSERT INTO "{cs}"."IBMSNAP_REGISTER" (SOURCE_OWNER, SOURCE_TABLE, SOURCE_VIEW_QUAL, GLOBAL_RECORD, '
                "SOURCE_STRUCTURE, SOURCE_CONDENSED, SOURCE_COMPLETE, DISABLE_REFRESH, ARCH_LEVEL, OPTION_FLAGS, "
                "SYNCHPOINT, SYNCHTIME) VALUES ('', '', 0, 'Y', 0, 'N', 'N', 0, ?, 'NNNN', ?, ?)",
                (db.compatibility, synchpoint, synchtime))

    def _active(self, schema: str, table: str) -> Registration | None:
        reg = self.db.registrations.get((schema, table))
        if reg is None:
            return None
        state = self.db.select(f'SELECT STATE FROM "{self.db.control_schema}"."IBMSNAP_REGISTER" '
                               "WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?", (schema, table))
        return reg if state and state[0][0] == "A" else None

    def _commit(self, commit: LogRecord, changes: list[LogRecord]) -> int:
        db, cs = self.db, self.db.control_schema
        written = 0
        touched: set[tuple[str, str]] = set()
        for rec in changes:
            reg = self._active(rec.schema, rec.table)
            if reg is None:
                continue
            cd = db.table(cs, reg.cd_table)
            data_cols = [c for c, _, _ in cd.columns[3:]]
            rows: list[tuple[str, bytes, dict[str, Any]]] = []
            if rec.kind == "I":
                rows.append(("I", rec.lsn, rec.after or {}))
            elif rec.kind == "D":
                rows.append(("D", rec.lsn, rec.before or {}))
            elif reg.chg_upd_to_del_ins == "Y":
                # the pair's intent sequences: the D row's, then one just above it (still below the next record)
                rows.append(("D", rec.lsn, rec.before or {}))
                rows.append(("I", rec.lsn[:-1] + bytes([rec.lsn[-1] + 1]), rec.after or {}))
            else:
                rows.append(("U", rec.lsn, rec.after or {}))
            src = db.table(rec.schema, rec.table)
            for op, intent, image in rows:
                values = [image.get(self._source_name(reg, src, c)) for c in data_cols]
                db.conn.execute(
                    f'INSERT INTO "{cs}"."{reg.cd_table}" VALUES ({", ".join("?" for _ in range(3 + len(values)))})',
                    (commit.lsn, intent, op, *values))
                written += 1
            touched.add((rec.schema, rec.table))
        if written:
            uowid = commit.txid.to_bytes(10, "big")
            db.conn.execute(f'INSERT INTO "{cs}"."IBMSNAP_UOW" (IBMSNAP_UOWID, IBMSNAP_COMMITSEQ, IBMSNAP_LOGMARKER, '
                            "IBMSNAP_AUTHTKN, IBMSNAP_AUTHID) VALUES (?, ?, ?, ?, ?)",
                            (uowid, commit.lsn, db2_timestamp_text(commit.time, 6), "APPL", commit.authid))
            for schema, table in touched:
                db.conn.execute(f'UPDATE "{cs}"."IBMSNAP_REGISTER" SET CD_NEW_SYNCHPOINT = ? '
                                "WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?", (commit.lsn, schema, table))
        return written

    @staticmethod
    def _source_name(reg: Registration, src: Table, cd_column: str) -> str:
        """The source column a CD column carries: the one of that name, or the one renamed from it."""
        for name in src.names:
            if reg.cd_names.get(name, name) == cd_column:
                return name
        return cd_column
