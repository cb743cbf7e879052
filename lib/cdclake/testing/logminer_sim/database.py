"""The simulated database: tables, redo threads and logs, transactions, injected faults (:class:`OracleDatabase`;
its sessions, :class:`~.dbapi.SimulatedOracle`, are in :mod:`.dbapi`)."""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import gc
import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.sources.oracle import queries as Q
from cdclake.testing.logminer_sim.errors import RowLockedError, _db_error
from cdclake.testing.logminer_sim.values import (
    _NUMBER_KINDS,
    _TEXT_KINDS,
    OracleType,
    _fmt_date,
    _internal_bytes,
    _metadata_type,
    _normalise,
    _oracle_float_text,
    _oracle_number_text,
    _quote,
    _ts_literal_text,
    _ts_parts,
    _unistr_escape,
    canonical_value,
    parse_oracle_type,
    store_value,
)

NULL_ROWID = "AAAAAAAAAAAAAAAAAA"
RESETLOGS_ID = 1175182873
_FK = 10_000_000  # file key = thread * _FK + sequence

COLUMNS: tuple[str, ...] = tuple(Q.CONTENTS_COLUMNS)
(I_SCN, I_START_SCN, I_COMMIT_SCN, I_TIMESTAMP, I_COMMIT_TIMESTAMP, I_XID, I_OP, I_OPERATION, I_OWNER, I_TABLE,
 I_ROW_ID, I_ROLLBACK, I_RS_ID, I_SSN, I_CSF, I_SQL_REDO, I_THREAD, I_USERNAME, I_INFO) = range(19)
assert COLUMNS == ("SCN", "START_SCN", "COMMIT_SCN", "TIMESTAMP", "COMMIT_TIMESTAMP", "XID", "OPERATION_CODE",
                   "OPERATION", "SEG_OWNER", "TABLE_NAME", "ROW_ID", "ROLLBACK", "RS_ID", "SSN", "CSF", "SQL_REDO",
                   "THREAD#", "USERNAME", "INFO"), "queries.CONTENTS_COLUMNS changed: update the simulator"

OPERATION_NAMES = {
    Q.OP_INSERT: "INSERT", Q.OP_DELETE: "DELETE", Q.OP_UPDATE: "UPDATE", Q.OP_DDL: "DDL", Q.OP_START: "START",
    Q.OP_COMMIT: "COMMIT", Q.OP_ROLLBACK: "ROLLBACK", Q.OP_SELECT_LOB_LOCATOR: "SELECT_LOB_LOCATOR",
    Q.OP_LOB_WRITE: "LOB_WRITE", Q.OP_LOB_TRIM: "LOB_TRIM", Q.OP_LOB_ERASE: "LOB_ERASE",
    Q.OP_MISSING_SCN: "MISSING_SCN", Q.OP_UNSUPPORTED: "UNSUPPORTED",
    Q.OP_XML_BEGIN: "XML DOC BEGIN", Q.OP_XML_WRITE: "XML DOC WRITE", Q.OP_XML_END: "XML DOC END",
    Q.OP_EXT_STRING_BEGIN: "32K_BEGIN", Q.OP_EXT_STRING_WRITE: "32K_WRITE", Q.OP_EXT_STRING_END: "32K_END",
}

DEFAULT_PRIVILEGES = (
    "CREATE SESSION", "SET CONTAINER", "SELECT ANY TABLE", "FLASHBACK ANY TABLE", "SELECT ANY TRANSACTION",
    "SELECT ANY DICTIONARY", "LOGMINING", "CREATE TABLE", "LOCK ANY TABLE", "CREATE SEQUENCE",
)
DEFAULT_ROLES = ("SELECT_CATALOG_ROLE", "EXECUTE_CATALOG_ROLE", "CONNECT")


# ---- tables ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    name: str
    type_text: str
    type: OracleType


@dataclass(frozen=True)
class TableDef:
    """One version of a table's definition (a new one per DDL; see :meth:`OracleDatabase.schema_at`)."""

    owner: str
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    obj_id: int
    version: int = 1
    supplemental_all: bool = True
    supplemental_pk: bool = True
    organization: str = "HEAP"
    pdb: str | None = None

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise _db_error(f'ORA-00904: "{name}": invalid identifier')

    @property
    def column_names(self) -> tuple[str, ...]:
        names = self.__dict__.get("_names")
        if names is None:
            names = tuple(c.name for c in self.columns)
            object.__setattr__(self, "_names", names)
        return names

    @property
    def qualified(self) -> str:
        return f'"{self.owner}"."{self.name}"'

    def create_ddl(self) -> str:
        cols = []
        for c in self.columns:
            cols.append(f'"{c.name}" {c.type_text}' + (" NOT NULL" if c.name in self.primary_key else ""))
        if self.primary_key:
            cols.append("PRIMARY KEY (" + ", ".join(f'"{c}"' for c in self.primary_key) + ")")
        org = " ORGANIZATION INDEX" if self.organization == "IOT" else ""
        return f"CREATE TABLE {self.qualified} (" + ", ".join(cols) + ")" + org

    def metadata_ddl(self, supplemental_all: bool) -> str:
        """What ``DBMS_METADATA.GET_DDL('TABLE', ...)`` returns for this version."""
        lines = []
        for c in self.columns:
            nn = " NOT NULL ENABLE" if c.name in self.primary_key else ""
            lines.append(f'\t"{c.name}" {_metadata_type(c.type)}{nn}')
        if self.primary_key:
            pk = ", ".join(f'"{c}"' for c in self.primary_key)
            lines.append(f'\t CONSTRAINT "SYS_C00{self.obj_id}" PRIMARY KEY ({pk})\n  USING INDEX PCTFREE 10 '
                         'INITRANS 2 MAXTRANS 255 COMPUTE STATISTICS \n  TABLESPACE "USERS"  ENABLE')
        if supplemental_all:
            lines.append("\t SUPPLEMENTAL LOG DATA (ALL) COLUMNS")
        lobs = "".join(
            f' \n LOB ("{c.name}") STORE AS SECUREFILE (\n  TABLESPACE "USERS" ENABLE STORAGE IN ROW 4000 CHUNK 8192'
            "\n  NOCACHE LOGGING  NOCOMPRESS  KEEP_DUPLICATES )"
            for c in self.columns if c.type.is_lob and c.type.kind != "XMLTYPE")
        lobs += "".join(
            f' \n XMLTYPE COLUMN "{c.name}" STORE AS SECUREFILE BINARY XML (\n  TABLESPACE "USERS" ENABLE STORAGE IN '
            "ROW 4000 CHUNK 8192\n  NOCACHE LOGGING  NOCOMPRESS  KEEP_DUPLICATES ) ALLOW NONSCHEMA DISALLOW ANYSCHEMA"
            for c in self.columns if c.type.kind == "XMLTYPE")
        return (f"\n  CREATE TABLE {self.qualified} \n   (" + ", \n".join(lines)
                + "\n   ) SEGMENT CREATION IMMEDIATE \n  PCTFREE 10 PCTUSED 40 INITRANS 1 MAXTRANS 255 \n"
                " NOCOMPRESS LOGGING\n  STORAGE(INITIAL 65536 NEXT 1048576 MINEXTENTS 1 MAXEXTENTS 2147483645\n"
                "  PCTINCREASE 0 FREELISTS 1 FREELIST GROUPS 1\n  BUFFER_POOL DEFAULT FLASH_CACHE DEFAULT "
                'CELL_FLASH_CACHE DEFAULT)\n  TABLESPACE "USERS" ' + lobs)

    def key_of(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(values.get(c) for c in self.primary_key)


class _TableState:
    """The runtime of one table object (obj#): current rows (with uncommitted changes), committed rows,
    committed history, locks, schema versions."""

    def __init__(self, defn: TableDef, scn: int) -> None:
        self.obj_id = defn.obj_id
        self.data_obj_id = defn.obj_id
        self.defn: TableDef | None = defn
        self.versions: list[tuple[int, TableDef | None]] = [(scn, defn)]
        self.rows: dict[str, dict[str, Any]] = {}
        self.committed: dict[str, dict[str, Any]] = {}
        self.history: list[tuple[int, str, dict[str, Any] | None]] = []  # (scn, rowid, values); rowid "*": clear
        self.pk_index: dict[tuple[Any, ...], str] = {}
        self.locks: dict[str, SimulatedTransaction] = {}
        self.key_locks: dict[tuple[Any, ...], SimulatedTransaction] = {}
        self.table_locks: set[Any] = set()  # the connections holding a LOCK TABLE
        self.next_slot = 0
        self.table_all_logging = defn.supplemental_all
        self._block_key: tuple[int, int] = (-1, -1)
        self._block_prefix = ""

    def def_at(self, scn: int) -> TableDef | None:
        found: TableDef | None = None
        for vscn, d in self.versions:
            if vscn <= scn:
                found = d
            else:
                break
        return found

    def new_rowid(self) -> str:
        n = self.next_slot
        self.next_slot += 1
        block, slot = divmod(n, 64)
        if self._block_key != (self.data_obj_id, block):
            self._block_key = (self.data_obj_id, block)
            self._block_prefix = _b64(self.data_obj_id, 6) + "AAH" + _b64(1000 + block, 6) + "AA"
        return self._block_prefix + _B64[slot]


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_B64[n & 63])
        n >>= 6
    return "".join(reversed(out))


# ---- redo logs ---------------------------------------------------------------------------------------

@dataclass
class LogFile:
    """One redo log of one thread. ``next_change`` is None while CURRENT."""

    thread: int
    sequence: int
    first_change: int
    first_time: dt.datetime
    group: int
    next_change: int | None = None
    next_time: dt.datetime | None = None
    archived: dict[int, str] = field(default_factory=dict)  # dest_id -> archived file name
    deleted: set[int] = field(default_factory=set)  # dest_ids whose copy was purged
    dictionary: bool = False  # holds a DBMS_LOGMNR_D.BUILD

    @property
    def key(self) -> int:
        return self.thread * _FK + self.sequence

    def covers(self, lo: int, hi: int) -> bool:
        """Holds some SCN of [lo, hi]."""
        return self.first_change <= hi and (self.next_change is None or self.next_change > lo)


@dataclass
class ArchiveDest:
    dest_id: int
    dest_name: str
    status: str = "VALID"
    type: str = "LOCAL"


class _Thread:
    def __init__(self, number: int, groups: list[int], scn: int, time: dt.datetime) -> None:
        self.number = number
        self.status = "OPEN"
        self.enabled = "PUBLIC"
        self.groups = groups
        self.group_seq: dict[int, int | None] = {g: None for g in groups}
        self.logs: dict[int, LogFile] = {}
        self.current = LogFile(number, 1, scn, time, groups[0])
        self.logs[1] = self.current
        self.group_seq[groups[0]] = 1
        self.block = 0

    def online(self, log: LogFile) -> bool:
        return self.group_seq.get(log.group) == log.sequence


# ---- transactions -----------------------------------------------------------------------------------

@dataclass(slots=True)
class _Change:
    state: _TableState
    defn: TableDef
    rowid: str
    kind: str  # I U D L (LOB op: no undo row)
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    set_cols: tuple[str, ...] = ()
    unsupported: frozenset[str] = frozenset()
    lob_ops: list[int] = field(default_factory=list)  # op codes of the LOB rows written after the DML row


class SimulatedTransaction:
    """An open transaction of one session on one redo thread (``db.begin(thread=..., username=...)``).

    Changes emit redo at once (interleaving with other open transactions); ``commit()`` and
    ``rollback()`` end it. Row locks make concurrent changes of one row raise :class:`RowLockedError`.
    """

    def __init__(self, db: OracleDatabase, thread: int, username: str | None, pdb: str | None) -> None:
        if thread not in db._threads:
            raise ValueError(f"no redo thread {thread}")
        self.db = db
        self.thread = thread
        self.username = username
        self.pdb = pdb
        self.xid = db._new_xid(thread)
        self.xid_hex = self.xid.hex().upper()
        self.start_scn: int | None = None
        self.start_time: dt.datetime | None = None
        self.commit_scn: int | None = None
        self.state = "open"
        self._changes: list[_Change] = []
        self._savepoints: dict[str, tuple[int, int]] = {}
        self._locks: list[tuple[str, _TableState, Any]] = []  # ("row"|"key", state, rowid|key) in order taken

    def __repr__(self) -> str:
        return f"<SimulatedTransaction {self.xid_hex} thread={self.thread} {self.state}>"

    # ---- helpers ---------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.state != "open":
            raise RuntimeError(f"transaction {self.xid_hex} is {self.state}")

    def _scn(self) -> tuple[int, dt.datetime]:
        return self.db._op_scn(self)

    def _lock_row(self, state: _TableState, rowid: str) -> None:
        holder = state.locks.get(rowid)
        if holder is None:
            state.locks[rowid] = self
            self._locks.append(("row", state, rowid))
        elif holder is not self:
            raise RowLockedError(f"ORA-00054: resource busy (row {rowid} locked by transaction {holder.xid_hex})")

    def _lock_key(self, state: _TableState, key: tuple[Any, ...]) -> None:
        if not key:
            return
        holder = state.key_locks.get(key)
        if holder is None:
            state.key_locks[key] = self
            self._locks.append(("key", state, key))
        elif holder is not self:
            raise RowLockedError(f"ORA-00054: resource busy (key {key!r} locked by transaction {holder.xid_hex})")

    def _check_key(self, state: _TableState, key: tuple[Any, ...]) -> None:
        holder = state.key_locks.get(key)
        if holder is not None and holder is not self:
            raise RowLockedError(f"ORA-00054: resource busy (key {key!r} locked by transaction {holder.xid_hex})")

    def _find(self, state: _TableState, key: Mapping[str, Any]) -> str:
        defn = state.defn
        assert defn is not None
        norm = {c: store_value(defn.column(c).type, v) for c, v in key.items()}
        if defn.primary_key and set(norm) == set(defn.primary_key):
            ktuple = tuple(norm[c] for c in defn.primary_key)
            self._check_key(state, ktuple)
            rowid = state.pk_index.get(ktuple)
        else:
            found = [r for r, vals in state.rows.items() if all(vals.get(c) == v for c, v in norm.items())]
            if len(found) > 1:
                raise LookupError(f"{len(found)} rows of {defn.owner}.{defn.name} match {dict(key)!r}")
            rowid = found[0] if found else None
        if rowid is None:
            raise LookupError(f"no row of {defn.owner}.{defn.name} matches {dict(key)!r}")
        holder = state.locks.get(rowid)
        if holder is not None and holder is not self:
            raise RowLockedError(f"ORA-00054: resource busy (row {rowid} locked by transaction {holder.xid_hex})")
        return rowid

    def _normalise(self, defn: TableDef, values: Mapping[str, Any]) -> dict[str, Any]:
        names = defn.column_names
        for c in values:
            if c not in names:
                defn.column(c)  # raises ORA-00904
        return {c.name: store_value(c.type, values.get(c.name)) for c in defn.columns}

    # ---- DML ---------------------------------------------------------------------------------------

    def insert(self, owner: str, table: str, values: Mapping[str, Any]) -> str:
        """Insert a row; returns its ROWID. Long LOB values are written through LOB_WRITE rows."""
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        row = self._normalise(defn, values)
        key = defn.key_of(row)
        if defn.primary_key:
            self._check_key(state, key)
            if key in state.pk_index:
                other = state.locks.get(state.pk_index[key])
                if other is not None and other is not self:
                    raise RowLockedError(f"ORA-00054: resource busy (key {key!r} locked by {other.xid_hex})")
                raise _db_error(f"ORA-00001: unique constraint ({defn.owner}.SYS_C00{defn.obj_id}) violated")
        rowid = state.new_rowid()
        self._lock_row(state, rowid)
        self._lock_key(state, key)
        state.rows[rowid] = row
        if defn.primary_key:
            state.pk_index[key] = rowid
        scn, ts = self._scn()
        sql, long_lobs = db._render_insert(defn, row)
        db._record(self, scn, ts, Q.OP_INSERT, defn, rowid, sql, alt=("I", defn, row, None, ()))
        lob_ops: list[int] = []
        for col in long_lobs:
            lob_ops += db._lob_rows(self, defn, rowid, row, col, row[col], None)
        self._changes.append(_Change(state, defn, rowid, "I", None, row, lob_ops=lob_ops))
        return rowid

    def update(self, owner: str, table: str, key: Mapping[str, Any], changes: Mapping[str, Any]) -> str:
        """Update the row matching ``key`` (the primary key, or any columns matching one row)."""
        return self._update(owner, table, key, changes, frozenset())

    def unsupported_update(self, owner: str, table: str, key: Mapping[str, Any], changes: Mapping[str, Any],
                           unsupported: Iterable[str]) -> str:
        """An update whose ``unsupported`` columns LogMiner renders as ``Unsupported Type`` (SET and WHERE);
        the model still applies every change."""
        return self._update(owner, table, key, changes, frozenset(unsupported))

    def _update(self, owner: str, table: str, key: Mapping[str, Any] | None, changes: Mapping[str, Any],
                unsupported: frozenset[str], rowid: str | None = None) -> str:
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        if rowid is None:
            assert key is not None
            rowid = self._find(state, key)
        elif state.locks.get(rowid) not in (None, self):
            raise RowLockedError(f"ORA-00054: resource busy (row {rowid} locked)")
        before = state.rows[rowid]
        new = {c: store_value(defn.column(c).type, v) for c, v in changes.items()}
        after = {**before, **new}
        old_key, new_key = defn.key_of(before), defn.key_of(after)
        if defn.primary_key and new_key != old_key:
            self._check_key(state, new_key)
            if new_key in state.pk_index:
                raise _db_error(f"ORA-00001: unique constraint ({defn.owner}.SYS_C00{defn.obj_id}) violated")
        self._lock_row(state, rowid)
        self._lock_key(state, old_key)
        self._lock_key(state, new_key)
        state.rows[rowid] = after
        if defn.primary_key and new_key != old_key:
            del state.pk_index[old_key]
            state.pk_index[new_key] = rowid
        long_lobs = [c for c in new if db._lob_rows_needed(defn.column(c).type, after[c])]
        set_cols = tuple(c for c in new if c not in long_lobs)
        if set_cols:
            scn, ts = self._scn()
            sql = db._render_update(defn, before, after, set_cols, unsupported)
            db._record(self, scn, ts, Q.OP_UPDATE, defn, rowid, sql,
                       alt=("U", defn, after, before, set_cols) if not unsupported else None)
        lob_ops: list[int] = []
        for col in long_lobs:
            lob_ops += db._lob_rows(self, defn, rowid, after, col, after[col], before.get(col))
        self._changes.append(_Change(state, defn, rowid, "U" if set_cols else "L", before, after, set_cols,
                                     unsupported, lob_ops))
        return rowid

    def delete(self, owner: str, table: str, key: Mapping[str, Any]) -> str:
        """Delete the row matching ``key``; returns its ROWID."""
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        rowid = self._find(state, key)
        before = state.rows[rowid]
        old_key = defn.key_of(before)
        self._lock_row(state, rowid)
        self._lock_key(state, old_key)
        del state.rows[rowid]
        if defn.primary_key:
            del state.pk_index[old_key]
        scn, ts = self._scn()
        db._record(self, scn, ts, Q.OP_DELETE, defn, rowid, db._render_delete(defn, before),
                   alt=("D", defn, None, before, ()))
        self._changes.append(_Change(state, defn, rowid, "D", before, None))
        return rowid

    def failed_insert(self, owner: str, table: str, values: Mapping[str, Any]) -> str:
        """A statement-level rollback (e.g. ORA-00001): the INSERT row, then its ``ROLLBACK = 1`` undo
        (a DELETE with the same ROW_ID); the table does not change. Returns the ROWID used."""
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        row = self._normalise(defn, values)
        rowid = state.new_rowid()
        scn, ts = self._scn()
        sql, _long = db._render_insert(defn, row, lob_inline=True)
        db._record(self, scn, ts, Q.OP_INSERT, defn, rowid, sql)
        scn, ts = self._scn()
        db._record(self, scn, ts, Q.OP_DELETE, defn, rowid, db._render_delete(defn, row), rollback=1)
        return rowid

    def lob_write(self, owner: str, table: str, key: Mapping[str, Any], column: str, value: str | bytes) -> str:
        """Write a whole LOB value through its locator: SELECT_LOB_LOCATOR, LOB_WRITE chunks and, when the
        new value is shorter than the old, LOB_TRIM."""
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        col = defn.column(column)
        if not col.type.is_lob:
            raise ValueError(f"{column} is not a LOB column")
        rowid = self._find(state, key)
        before = state.rows[rowid]
        after = {**before, column: store_value(col.type, value)}
        self._lock_row(state, rowid)
        self._lock_key(state, defn.key_of(before))
        state.rows[rowid] = after
        lob_ops = db._lob_rows(self, defn, rowid, after, column, after[column], before.get(column))
        self._changes.append(_Change(state, defn, rowid, "L", before, after, (column,), lob_ops=lob_ops))
        return rowid

    def lob_erase(self, owner: str, table: str, key: Mapping[str, Any], column: str, amount: int,
                  offset: int = 1) -> str:
        """``DBMS_LOB.ERASE``: ``amount`` characters (spaces) or bytes (zeros) from 1-based ``offset``."""
        self._check_open()
        db = self.db
        state = db._state(owner, table)
        defn = state.defn
        assert defn is not None
        col = defn.column(column)
        rowid = self._find(state, key)
        before = state.rows[rowid]
        old = before.get(column)
        if old is None:
            raise ValueError("cannot erase a NULL LOB")
        fill: Any = b"\x00" if isinstance(old, bytes) else " "
        end = min(len(old), offset - 1 + amount)
        new = old[: offset - 1] + fill * (end - (offset - 1)) + old[end:]
        after = {**before, column: new}
        self._lock_row(state, rowid)
        state.rows[rowid] = after
        loc, _buf = _lob_vars(col.type)
        db._lob_locator(self, defn, rowid, after, column)
        scn, ts = self._scn()
        db._record(self, scn, ts, Q.OP_LOB_ERASE, defn, rowid, f" dbms_lob.erase({loc}, {amount}, {offset});")
        self._changes.append(_Change(state, defn, rowid, "L", before, after, (column,),
                                     lob_ops=[Q.OP_SELECT_LOB_LOCATOR, Q.OP_LOB_ERASE]))
        return rowid

    def unsupported_operation(self, owner: str, table: str) -> None:
        """An ``OPERATION_CODE = 255`` row (a change LogMiner cannot render); no model change."""
        self._check_open()
        defn = self.db._state(owner, table).defn
        assert defn is not None
        scn, ts = self._scn()
        self.db._record(self, scn, ts, Q.OP_UNSUPPORTED, defn, NULL_ROWID, "Unsupported",
                        info="Object or Data type Unsupported")

    # ---- savepoints and the end -------------------------------------------------------------------

    def savepoint(self, name: str) -> None:
        self._check_open()
        self._savepoints[name.upper()] = (len(self._changes), len(self._locks))

    def rollback_to(self, name: str) -> None:
        """Undo the changes after the savepoint: ``ROLLBACK = 1`` rows in reverse order."""
        self._check_open()
        mark = self._savepoints.get(name.upper())
        if mark is None:
            raise _db_error(f"ORA-01086: savepoint '{name.upper()}' never established in this session or is invalid")
        nchanges, nlocks = mark
        self._undo(self._changes[nchanges:])
        del self._changes[nchanges:]
        self._release(self._locks[nlocks:])
        del self._locks[nlocks:]
        self._savepoints = {k: v for k, v in self._savepoints.items() if v[0] <= nchanges}

    def _undo(self, changes: list[_Change]) -> None:
        db = self.db
        for c in reversed(changes):
            state, defn = c.state, c.defn
            for op in reversed(c.lob_ops):  # LOB undo: one row per LOB row, same ROW_ID, no SQL
                scn, ts = self._scn()
                db._record(self, scn, ts, op, defn, c.rowid, None, rollback=1)
            if c.kind == "I":
                assert c.after is not None
                del state.rows[c.rowid]
                if defn.primary_key:
                    state.pk_index.pop(defn.key_of(c.after), None)
                scn, ts = self._scn()
                db._record(self, scn, ts, Q.OP_DELETE, defn, c.rowid, db._render_delete(defn, c.after), rollback=1)
            elif c.kind == "D":
                assert c.before is not None
                state.rows[c.rowid] = c.before
                if defn.primary_key:
                    state.pk_index[defn.key_of(c.before)] = c.rowid
                scn, ts = self._scn()
                sql, _long = db._render_insert(defn, c.before, lob_inline=True)
                db._record(self, scn, ts, Q.OP_INSERT, defn, c.rowid, sql, rollback=1)
            else:
                assert c.before is not None and c.after is not None
                state.rows[c.rowid] = c.before
                if defn.primary_key:
                    ak, bk = defn.key_of(c.after), defn.key_of(c.before)
                    if ak != bk:
                        state.pk_index.pop(ak, None)
                        state.pk_index[bk] = c.rowid
                if c.kind == "U":
                    scn, ts = self._scn()
                    sql = db._render_update(defn, c.after, c.before, c.set_cols, c.unsupported)
                    db._record(self, scn, ts, Q.OP_UPDATE, defn, c.rowid, sql, rollback=1)

    def _release(self, locks: list[tuple[str, _TableState, Any]]) -> None:
        for kind, state, ident in locks:
            table = state.locks if kind == "row" else state.key_locks
            if table.get(ident) is self:
                del table[ident]

    def _end(self, state: str) -> None:
        self._release(self._locks)
        self._locks = []
        self.state = state
        self.db._open_txns.pop(self, None)

    def commit(self) -> int | None:
        """Commit: the COMMIT row (with COMMIT_SCN), committed state and history, LGWR flush. Returns the
        commit SCN (None for a transaction without changes: it writes no redo)."""
        self._check_open()
        db = self.db
        if self.start_scn is None:
            self._end("committed")
            return None
        scn, ts = db._tick()
        db._record(self, scn, ts, Q.OP_COMMIT, None, NULL_ROWID, "commit", commit=(scn, ts))
        seen: dict[tuple[int, str], _Change] = {}
        for c in self._changes:
            seen.pop((id(c.state), c.rowid), None)
            seen[(id(c.state), c.rowid)] = c
        for c in seen.values():
            final = c.state.rows.get(c.rowid)
            if final is None:
                c.state.committed.pop(c.rowid, None)
            else:
                c.state.committed[c.rowid] = final
            c.state.history.append((scn, c.rowid, final))
        self.commit_scn = scn
        self._end("committed")
        db.flush()
        return scn

    def rollback(self) -> None:
        """Roll back: undo rows (``ROLLBACK = 1``, reverse order), then the ROLLBACK row (op 36)."""
        self._check_open()
        if self.start_scn is None:
            self._end("rolled back")
            return
        self._undo(self._changes)
        self._changes = []
        scn, ts = self.db._tick()
        self.db._record(self, scn, ts, Q.OP_ROLLBACK, None, NULL_ROWID, "rollback", rollback=1)
        self._end("rolled back")


def _lob_class(t: OracleType) -> str:
    """How an INSERT renders the column: "lob" (long values by LOB_WRITE), "xml" (always by XML rows),
    "ext" (VARCHAR2/NVARCHAR2/RAW that may exceed the standard size: 32K rows), or ""."""
    if t.kind == "XMLTYPE":
        return "xml"
    if t.is_lob:
        return "lob"
    if (t.kind in ("VARCHAR2", "NVARCHAR2") and (t.length or 0) > 4000) or (t.kind == "RAW" and (t.length or 0) > 2000):
        return "ext"
    return ""


def _lob_vars(t: OracleType) -> tuple[str, str]:
    return {"CLOB": ("loc_c", "buf_c"), "NCLOB": ("loc_nc", "buf_nc"), "BLOB": ("loc_b", "buf_b")}[t.kind]


_LOB_DECLARE = ("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6174); \n loc_b BLOB; \n buf_b RAW(6174); \n"
                " loc_nc NCLOB; \n buf_nc NVARCHAR2(6174); \nBEGIN\n")


# ---- faults ------------------------------------------------------------------------------------------

@dataclass
class _Fault:
    target: str
    message: str
    times: int
    after_rows: int | None
    action: Callable[[], None] | None = None  # run_next: do this instead of failing


# ---- the database -----------------------------------------------------------------------------------

class OracleDatabase:
    """The simulated database. See the package docstring; every knob is an attribute that may be changed
    later (``db.log_mode = "NOARCHIVELOG"``, ``db.privileges = [...]``...)."""

    def __init__(
        self,
        *,
        threads: int = 1,
        start_scn: int = 1_000_000,
        start_time: dt.datetime = dt.datetime(2024, 1, 1, 0, 0, 0),
        scn_step: int = 1,
        time_step: dt.timedelta = dt.timedelta(milliseconds=10),
        groups_per_thread: int = 3,
        archive_destinations: int = 1,
        auto_archive: bool = False,
        log_mode: str = "ARCHIVELOG",
        supplemental_min: str = "YES",
        supplemental_all: str = "NO",
        cdb: str = "NO",
        pdb_name: str | None = None,
        version: str = "19.0.0.0.0",
        name: str = "ORCL",
        session_user: str = "C##CDC",
        max_string_size: str = "STANDARD",
        literal_split: int | None = 1000,
        max_redo_len: int = 4000,
        lob_inline_max: int = 1000,
        lob_chunk: int = 1024,
        unistr: str = "pieces",
        unistr_varchar: bool = True,
        number_leading_zero: bool = False,
        shuffle_where: bool = False,
        omit_trailing_nulls: bool = True,
        track_dictionary: bool = False,
        dbid: int = 1_620_554_931,
        database_role: str = "PRIMARY",
        seed: int = 0,
    ) -> None:
        self.start_scn = start_scn
        self._scn = start_scn
        self._time = start_time
        self.scn_step = scn_step
        self.time_step = time_step
        self._hold = 0
        self._time_scns: list[int] = [start_scn]
        self._time_vals: list[dt.datetime] = [start_time]
        self.log_mode = log_mode
        self.supplemental_min = supplemental_min
        self.supplemental_all = supplemental_all
        self.cdb = cdb
        self.pdb_name = pdb_name if pdb_name is not None else ("ORCLPDB1" if cdb == "YES" else None)
        self.version = version
        self.name = name
        self.session_user = session_user
        self.max_string_size = max_string_size
        self.privileges: list[str] = list(DEFAULT_PRIVILEGES)
        self.roles: list[str] = list(DEFAULT_ROLES)
        self.literal_split = literal_split
        self.max_redo_len = max_redo_len
        self.lob_inline_max = lob_inline_max
        self.lob_chunk = lob_chunk
        self.unistr = unistr
        self.unistr_varchar = unistr_varchar
        self.number_leading_zero = number_leading_zero
        self.shuffle_where = shuffle_where
        self.omit_trailing_nulls = omit_trailing_nulls
        self.track_dictionary = track_dictionary
        # V$DATABASE identity and Data Guard role; a LOGICAL STANDBY's guard refuses the session's DML/DDL.
        self.dbid = dbid
        self.database_role = database_role
        self.resetlogs_change = 1  # RESETLOGS_CHANGE# of the current incarnation (tests set it to simulate one)
        self.open_mode = "READ WRITE"
        self.auto_archive = auto_archive
        self.rng = random.Random(seed)
        self.archive_dests: list[ArchiveDest] = [ArchiveDest(1, "LOG_ARCHIVE_DEST_1")]
        if archive_destinations >= 2:
            self.archive_dests.append(ArchiveDest(2, "LOG_ARCHIVE_DEST_2"))
        self._threads: dict[int, _Thread] = {}
        for t in range(1, threads + 1):
            groups = list(range((t - 1) * groups_per_thread + 1, t * groups_per_thread + 1))
            self._threads[t] = _Thread(t, groups, start_scn, start_time)
        # redo rows: SCN-ordered; recs[i] = (out tuple, thread, eid, file key, con name, alt or None)
        self._scns: list[int] = []
        self._recs: list[tuple[Any, ...]] = []
        self._eid = 0
        self._flushed_eid = 0
        self.flushed_scn = start_scn
        self._tables: dict[tuple[str, str], _TableState] = {}
        self._objects: list[_TableState] = []
        self._next_obj = 74_500
        self._xid_counter = 0
        self._open_txns: dict[SimulatedTransaction, None] = {}
        self._faults: list[_Fault] = []
        self._lit_cache: dict[OracleType, Callable[[Any], str]] = {}
        self._plans: dict[int, tuple[TableDef, list[tuple[str, str, Callable[[Any], str], str, str]]]] = {}
        self.statements: list[str] = []  # every statement executed, normalised (for assertions)

    # ---- clocks -----------------------------------------------------------------------------------

    @property
    def current_scn(self) -> int:
        return self._scn

    @property
    def now(self) -> dt.datetime:
        return self._time

    def _tick(self) -> tuple[int, dt.datetime]:
        if not self._hold:
            self._scn += self.scn_step
            self._time += self.time_step
            if self._scn != self._time_scns[-1]:
                self._time_scns.append(self._scn)
                self._time_vals.append(self._time)
        return self._scn, self._time

    def _advance(self, scns: int, time: dt.timedelta) -> None:
        self._scn += scns
        self._time += time
        self._time_scns.append(self._scn)
        self._time_vals.append(self._time)

    def jump_scn(self, n: int, time: dt.timedelta = dt.timedelta(milliseconds=1)) -> int:
        """Advance the SCN by ``n`` in (almost) no time: an SCN gap. Returns the new SCN."""
        self._advance(n, time)
        return self._scn

    def advance_time(self, delta: dt.timedelta, scns: int = 1) -> None:
        """Let wall-clock time pass (with ``scns`` SCNs)."""
        self._advance(scns, delta)

    @staticmethod
    @contextlib.contextmanager
    def bulk() -> Iterator[None]:
        """Pause Python's cyclic GC while building a big history (a third faster for millions of rows)."""
        was = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if was:
                gc.enable()

    @contextlib.contextmanager
    def hold_scn(self) -> Iterator[None]:
        """Operations inside share one SCN (and time): e.g. several commits at one SCN, across threads."""
        self._tick()
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1

    def scn_to_timestamp(self, scn: int) -> dt.datetime:
        i = bisect.bisect_right(self._time_scns, scn) - 1
        if i < 0 or scn > self._scn:
            raise _db_error("ORA-08181: specified number is not a valid system change number")
        return self._time_vals[i]

    # ---- redo rows --------------------------------------------------------------------------------

    def _new_xid(self, thread: int) -> bytes:
        n = self._xid_counter
        self._xid_counter += 1
        usn = 10 * thread + n % 10
        slot = (n // 10) % 48
        sqn = 1000 + n
        return usn.to_bytes(2, "little") + slot.to_bytes(2, "little") + sqn.to_bytes(4, "little")

    def _op_scn(self, tx: SimulatedTransaction) -> tuple[int, dt.datetime]:
        """The SCN of a change of ``tx``; the first change also emits the START row (same SCN)."""
        if tx.start_scn is None:
            scn, ts = self._tick()
            tx.start_scn, tx.start_time = scn, ts
            self._open_txns[tx] = None
            self._record(tx, scn, ts, Q.OP_START, None, NULL_ROWID, "set transaction read write")
            return scn, ts
        return self._tick()

    def _record(self, tx: SimulatedTransaction | None, scn: int, ts: dt.datetime, op: int, defn: TableDef | None,
                rowid: str, sql: str | None, *, rollback: int = 0, info: str | None = None,
                commit: tuple[int, dt.datetime] | None = None, alt: tuple[Any, ...] | None = None,
                thread: int | None = None, owner: str | None = None, table: str | None = None,
                xid: str | None = None, username: str | None = None, con: str | None = None) -> None:
        thread = tx.thread if tx is not None else (thread or 1)
        th = self._threads[thread]
        log = th.current
        th.block += 1
        rs_id = f" 0x{log.sequence:06x}.{th.block:08x}.{0x10:04x} "
        fkey = log.key
        if defn is not None:
            owner, table, con = defn.owner, defn.name, defn.pdb
        elif tx is not None:
            con = tx.pdb
        if tx is not None:
            start_scn, xid, username = tx.start_scn, tx.xid_hex, tx.username
        else:
            start_scn = scn
        commit_scn, commit_ts = commit if commit is not None else (None, None)
        L = self.max_redo_len
        parts: list[str | None] = [sql[i:i + L] for i in range(0, len(sql), L)] if sql and len(sql) > L else [sql]
        last = len(parts) - 1
        altref = None
        if alt is not None and self.track_dictionary and defn is not None:
            altref = (defn.obj_id, defn.version, alt)
        for k, part in enumerate(parts):
            out = (scn, start_scn, commit_scn, ts, commit_ts, xid, op, OPERATION_NAMES[op], owner, table, rowid,
                   rollback, rs_id, 0, 1 if k < last else 0, part, thread, username, info)
            self._insert(scn, thread, (out, thread, self._eid, fkey, con, (altref, k) if altref else None))

    def _insert(self, scn: int, thread: int, rec: tuple[Any, ...]) -> None:
        self._eid += 1
        scns, recs = self._scns, self._recs
        if not scns or scns[-1] < scn or (scns[-1] == scn and recs[-1][1] <= thread):
            scns.append(scn)
            recs.append(rec)
            return
        lo = bisect.bisect_left(scns, scn)
        p = len(scns)
        while p > lo and (scns[p - 1] > scn or recs[p - 1][1] > thread):
            p -= 1
        scns.insert(p, scn)
        recs.insert(p, rec)

    def flush(self) -> None:
        """LGWR: everything emitted so far becomes visible to LogMiner."""
        self._flushed_eid = self._eid
        self.flushed_scn = self._scn

    # ---- SQL_REDO rendering -----------------------------------------------------------------------

    def _text_literal(self, s: str, national: bool) -> str:
        split = self.literal_split
        segments = [s[i:i + split] for i in range(0, len(s), split)] if split and len(s) > split else [s]
        use_unistr = national or self.unistr_varchar
        pieces: list[str] = []
        for seg in segments:
            if not use_unistr or seg.isascii():
                pieces.append(_quote(seg))
            elif self.unistr == "whole":
                pieces.append("UNISTR('" + "".join(
                    ch.replace("'", "''") if ch.isascii() and ch != "\\" else _unistr_escape(ch) for ch in seg) + "')")
            else:
                for is_ascii, run in itertools.groupby(seg, key=str.isascii):
                    text = "".join(run)
                    pieces.append(_quote(text) if is_ascii else "UNISTR('" + _unistr_escape(text) + "')")
        return " || ".join(pieces)

    def _literal_fn(self, t: OracleType) -> Callable[[Any], str]:
        fn = self._lit_cache.get(t)
        if fn is not None:
            return fn
        k = t.kind
        lz = self.number_leading_zero
        if k in _NUMBER_KINDS:
            def fn(v: Any) -> str:
                return "'" + (str(v) if isinstance(v, int) else _oracle_number_text(v, lz)) + "'"
        elif k in ("BINARY_DOUBLE", "BINARY_FLOAT"):
            def fn(v: Any) -> str:
                return "'" + _oracle_float_text(v) + "'"
        elif k in _TEXT_KINDS or k in ("CLOB", "NCLOB"):
            national = t.national
            empty = "EMPTY_CLOB()"

            def fn(v: Any) -> str:
                return self._text_literal(v, national) if v else empty
        elif k in ("RAW", "BLOB"):
            def fn(v: Any) -> str:
                return f"HEXTORAW('{v.hex().upper()}')" if v else "EMPTY_BLOB()"
        elif k == "DATE":
            def fn(v: Any) -> str:
                return f"TO_DATE('{_fmt_date(v)}', 'YYYY-MM-DD HH24:MI:SS')"
        elif k in ("TIMESTAMP", "TSLTZ"):
            def fn(v: Any) -> str:
                return f"TO_TIMESTAMP('{_ts_literal_text(v)}')"
        elif k == "TSTZ":
            def fn(v: Any) -> str:
                base, nanos, zone = _ts_parts(v)
                return f"TO_TIMESTAMP_TZ('{_fmt_date(base)}.{f'{nanos:09d}'.rstrip('0')} {zone}')"
        elif k == "IYM":
            def fn(v: Any) -> str:
                return f"TO_YMINTERVAL('{v}')"
        elif k == "IDS":
            def fn(v: Any) -> str:
                return f"TO_DSINTERVAL('{v}')"
        else:
            def fn(v: Any) -> str:
                return "Unsupported Type"
        self._lit_cache[t] = fn
        return fn

    def _lit(self, t: OracleType, v: Any) -> str:
        return "NULL" if v is None else self._literal_fn(t)(v)

    def _lob_is_long(self, v: Any) -> bool:
        return v is not None and len(v) > self.lob_inline_max

    def _ext_long(self, t: OracleType, v: Any) -> bool:
        """An extended-string value (``MAX_STRING_SIZE=EXTENDED``) over the standard size: VARCHAR2 over
        4000 bytes (AL32UTF8), NVARCHAR2 over 4000 (AL16UTF16), RAW over 2000."""
        if v is None or self.max_string_size != "EXTENDED":
            return False
        if t.kind == "VARCHAR2":
            return len(v) > 1000 and len(v.encode("utf-8")) > 4000
        if t.kind == "NVARCHAR2":
            return len(v) > 1000 and len(v.encode("utf-16-be")) > 4000
        return t.kind == "RAW" and len(v) > 2000

    def _lob_rows_needed(self, t: OracleType, v: Any) -> bool:
        """The value is written by LOB-style rows after the DML row: XMLTYPE always, a LOB above
        ``lob_inline_max``, an extended string over the standard size."""
        if t.kind == "XMLTYPE":
            return True
        if t.is_lob:
            return self._lob_is_long(v)
        return self._ext_long(t, v)

    def _render_insert(self, defn: TableDef, row: Mapping[str, Any], lob_inline: bool = False,
                       names: Callable[[int, Column], str] | None = None,
                       lit: Callable[[Column, Any], str] | None = None) -> tuple[str, list[str]]:
        cols = list(defn.columns)
        if self.omit_trailing_nulls:
            while len(cols) > 1 and row.get(cols[-1].name) is None:
                cols.pop()
        long_lobs: list[str] = []
        vals = []
        if lit is None and names is None:
            plan = self._plans.get(id(defn))
            if plan is None or plan[0] is not defn:
                plan = (defn, [(c.name, f'"{c.name}"', self._literal_fn(c.type), _lob_class(c.type),
                                "EMPTY_BLOB()" if c.type.kind == "BLOB" else "EMPTY_CLOB()") for c in defn.columns])
                self._plans[id(defn)] = plan
            quoted = []
            for name, qname, fn, lob, empty in plan[1][: len(cols)]:
                v = row.get(name)
                if lob == "xml":  # never in the INSERT: XML_BEGIN/WRITE/END rows follow it
                    if v is not None and not lob_inline:
                        long_lobs.append(name)
                    continue
                quoted.append(qname)
                if v is None:
                    vals.append("NULL")
                elif lob == "lob" and not lob_inline and len(v) > self.lob_inline_max:
                    long_lobs.append(name)
                    vals.append(empty)
                elif lob == "ext" and not lob_inline and self._ext_long(defn.column(name).type, v):
                    long_lobs.append(name)
                    vals.append("LM_EMPTY_STRING")  # the value follows as 32K_BEGIN/WRITE/END rows
                else:
                    vals.append(fn(v))
            return (f"insert into {defn.qualified}(" + ",".join(quoted) + ") values (" + ",".join(vals) + ")",
                    long_lobs)
        for c in cols:
            v = row.get(c.name)
            vals.append(lit(c, v) if lit is not None else self._lit(c.type, v))
        col_names = [names(i, c) if names else f'"{c.name}"' for i, c in enumerate(cols)]
        return (f'insert into {defn.qualified}(' + ",".join(col_names) + ") values (" + ",".join(vals) + ")",
                long_lobs)

    def _where_cols(self, defn: TableDef, set_cols: Sequence[str]) -> list[Column]:
        if self.supplemental_min != "NO" and (self.supplemental_all == "YES" or self._state_of(defn).table_all_logging):
            cols = [c for c in defn.columns if not c.type.is_lob]
        elif self.supplemental_min != "NO" and defn.supplemental_pk:
            wanted = set(defn.primary_key) | set(set_cols)
            cols = [c for c in defn.columns if c.name in wanted and not c.type.is_lob]
        else:
            cols = [c for c in defn.columns if c.name in set_cols and not c.type.is_lob]
        if self.shuffle_where:
            self.rng.shuffle(cols)
        return cols

    def _cond(self, c: Column, v: Any, name: str | None = None, lit: str | None = None) -> str:
        n = name or f'"{c.name}"'
        if v is None:
            return f"{n} IS NULL"
        return f"{n} = {lit if lit is not None else self._lit(c.type, v)}"

    def _render_update(self, defn: TableDef, before: Mapping[str, Any], after: Mapping[str, Any],
                       set_cols: Sequence[str], unsupported: frozenset[str] = frozenset()) -> str:
        sets = []
        for name in set_cols:
            c = defn.column(name)
            lit = "Unsupported Type" if name in unsupported else self._lit(c.type, after.get(name))
            sets.append(f'"{name}" = {lit}')
        where = [self._cond(c, before.get(c.name), lit="Unsupported Type" if c.name in unsupported else None)
                 for c in self._where_cols(defn, set_cols)]
        sql = f"update {defn.qualified} set " + ", ".join(sets)
        return sql + (" where " + " and ".join(where) if where else "")

    def _render_delete(self, defn: TableDef, before: Mapping[str, Any]) -> str:
        cols = [c for c in defn.columns if not c.type.is_lob]
        if self.shuffle_where:
            self.rng.shuffle(cols)
        return f"delete from {defn.qualified} where " + " and ".join(self._cond(c, before.get(c.name)) for c in cols)

    def _lob_locator(self, tx: SimulatedTransaction, defn: TableDef, rowid: str, row: Mapping[str, Any],
                     column: str) -> None:
        col = defn.column(column)
        loc, _buf = _lob_vars(col.type)
        where = " and ".join(self._cond(c, row.get(c.name)) for c in self._where_cols(defn, ()))
        if not where:
            where = " and ".join(self._cond(c, row.get(c.name)) for c in defn.columns if not c.type.is_lob)
        sql = f'{_LOB_DECLARE} select "{column}" into {loc} from {defn.qualified} where {where} for update;'
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_SELECT_LOB_LOCATOR, defn, rowid, sql)

    def _lob_rows(self, tx: SimulatedTransaction, defn: TableDef, rowid: str, row: Mapping[str, Any], column: str,
                  value: str | bytes | None, old: str | bytes | None, force_trim: bool = False) -> list[int]:
        """SELECT_LOB_LOCATOR, LOB_WRITE chunks, LOB_TRIM when shorter; returns the op codes written.
        XMLTYPE and extended-string columns get their own rows (:meth:`_xml_rows`, :meth:`_ext_rows`)."""
        col = defn.column(column)
        if col.type.kind == "XMLTYPE":
            return self._xml_rows(tx, defn, rowid, row, column, value)  # type: ignore[arg-type]
        if not col.type.is_lob:
            return self._ext_rows(tx, defn, rowid, row, column, value)  # type: ignore[arg-type]
        loc, buf = _lob_vars(col.type)
        self._lob_locator(tx, defn, rowid, row, column)
        ops = [Q.OP_SELECT_LOB_LOCATOR]
        value = value if value is not None else (b"" if col.type.kind == "BLOB" else "")
        step = max(1, self.lob_chunk)
        for i in range(0, len(value), step):
            piece = value[i:i + step]
            lit = f"HEXTORAW('{piece.hex().upper()}')" if isinstance(piece, bytes) else _quote(piece)
            scn, ts = tx._scn()
            self._record(tx, scn, ts, Q.OP_LOB_WRITE, defn, rowid,
                         f" {buf} := {lit};\n  dbms_lob.write({loc}, {len(piece)}, {i + 1}, {buf});")
            ops.append(Q.OP_LOB_WRITE)
        if force_trim or (old is not None and len(old) > len(value)):
            scn, ts = tx._scn()
            self._record(tx, scn, ts, Q.OP_LOB_TRIM, defn, rowid, f" dbms_lob.trim({loc}, {len(value)});")
            ops.append(Q.OP_LOB_TRIM)
        return ops

    def _xml_rows(self, tx: SimulatedTransaction, defn: TableDef, rowid: str, row: Mapping[str, Any], column: str,
                  value: str | None) -> list[int]:
        """XML_BEGIN naming the row, XML_WRITE fragments, XML_END (no SQL), as LogMiner writes an XMLTYPE
        value (binary XML storage): quoted text chunks (``||``/``UNISTR`` like DML literals) up to
        ``lob_inline_max`` characters, above that ``HEXTORAW`` chunks of the UTF-8 bytes (split anywhere,
        even inside a character; the last one without its closing quote, an Oracle quirk Debezium
        notes); ``XML_REDO := NULL`` for NULL."""
        info = "XML sql_redo not re-executable"
        where = " and ".join(self._cond(c, row.get(c.name)) for c in self._where_cols(defn, ())
                             if not self._lob_rows_needed(c.type, row.get(c.name)))
        sql = f'XML DOC BEGIN:  select "{column}" from {defn.qualified}' + (f" where {where}" if where else "")
        step = max(1, self.lob_chunk)
        writes: list[str]
        if value is None:
            writes = ["XML_REDO := NULL"]
        elif len(value) <= self.lob_inline_max:
            chunks = [value[i:i + step] for i in range(0, len(value), step)] or [""]
            writes = [f"XML_REDO := {self._text_literal(c, False) if c else _quote(c)}\n amount: {len(c)}"
                      for c in chunks]
        else:
            data = value.encode("utf-8")
            writes = [f"XML_REDO := HEXTORAW('{data[i:i + step].hex().upper()}"
                      f"{chr(39) if i + step < len(data) else ''}):{len(data[i:i + step])}"
                      for i in range(0, len(data), step)]
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_XML_BEGIN, defn, rowid, sql, info=info)
        for w in writes:
            scn, ts = tx._scn()
            self._record(tx, scn, ts, Q.OP_XML_WRITE, defn, rowid, w, info=info)
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_XML_END, defn, rowid, None)
        return [Q.OP_XML_BEGIN] + [Q.OP_XML_WRITE] * len(writes) + [Q.OP_XML_END]

    def _ext_rows(self, tx: SimulatedTransaction, defn: TableDef, rowid: str, row: Mapping[str, Any], column: str,
                  value: str | bytes) -> list[int]:
        """A VARCHAR2/NVARCHAR2/RAW value over the standard size (``MAX_STRING_SIZE=EXTENDED``), the way
        Debezium's ExtendedStringParser reads it: 32K_BEGIN declares a temporary LOB and quotes the
        UPDATE that sets the column from it, 32K_WRITE rows append ``lob_chunk`` characters (bytes for
        RAW) to it, 32K_END runs the UPDATE."""
        binary = isinstance(value, bytes)
        conds = [self._cond(c, row.get(c.name), name=f'a."{c.name}"') for c in self._where_cols(defn, ())
                 if c.name != column and not self._lob_rows_needed(c.type, row.get(c.name))]
        stmt = f'update {defn.qualified} a set a."{column}" = :{column}' + (
            " where " + " and ".join(conds) if conds else "") + ";"
        decl = "TempLob BLOB;\n buf_b   RAW(32767);" if binary else "TempLob CLOB;\n buf_c   VARCHAR2(32767);"
        begin = (f"DECLARE\n {decl}\n Stmt    CLOB;\nBEGIN\n DBMS_LOB.CreateTemporary(TempLob, FALSE);\n"
                 f" Stmt := {_quote(stmt)};")
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_EXT_STRING_BEGIN, defn, rowid, begin)
        ops = [Q.OP_EXT_STRING_BEGIN]
        step = max(1, self.lob_chunk)
        buf = "buf_b" if binary else "buf_c"
        for i in range(0, len(value), step):
            piece = value[i:i + step]
            lit = f"HEXTORAW('{piece.hex().upper()}')" if isinstance(piece, bytes) else _quote(piece)
            scn, ts = tx._scn()
            self._record(tx, scn, ts, Q.OP_EXT_STRING_WRITE, defn, rowid,
                         f"\n {buf} := {lit};\n DBMS_LOB.WRITEAPPEND(TempLob, {len(piece)}, {buf});")
            ops.append(Q.OP_EXT_STRING_WRITE)
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_EXT_STRING_END, defn, rowid,
                     "\n EXECUTE IMMEDIATE Stmt USING TempLob;\n DBMS_LOB.FreeTemporary(TempLob);\nEND;")
        return [*ops, Q.OP_EXT_STRING_END]

    # ---- unknown objects (online catalog after DDL) ----------------------------------------------

    def _restale(self, rec: tuple[Any, ...], current: TableDef | None) -> list[tuple[Any, ...]]:
        """The rows LogMiner shows for a DML row whose object changed since (online dictionary)."""
        (altref, piece) = rec[5]
        if piece:
            return []
        _obj, _ver, (kind, defn, after, before, set_cols) = altref
        out = rec[0]
        same_cols = current is not None and [(c.name, c.type) for c in current.columns] == [
            (c.name, c.type) for c in defn.columns]
        if same_cols:
            assert current is not None
            shown = current
            info = out[I_INFO]

            def name_of(i: int, c: Column) -> str:
                return f'"{c.name}"'

            def lit_of(c: Column, v: Any) -> str:
                return self._lit(c.type, v)
        else:
            shown = TableDef("UNKNOWN", f"OBJ# {defn.obj_id}", defn.columns, (), defn.obj_id)
            info = "Dictionary Version Mismatch"

            def name_of(i: int, c: Column) -> str:
                return f'"COL {i + 1}"'

            def lit_of(c: Column, v: Any) -> str:
                return "NULL" if v is None else f"HEXTORAW('{_internal_bytes(c.type, v).hex()}')"
        pos = {c.name: i for i, c in enumerate(defn.columns)}
        if kind == "I":
            sql, _ = self._render_insert(shown, after, lob_inline=True, names=name_of, lit=lit_of)
        else:
            image = before
            conds = []
            for c in defn.columns:
                if c.type.is_lob:
                    continue
                v = image.get(c.name)
                n = name_of(pos[c.name], c)
                conds.append(f"{n} IS NULL" if v is None else f"{n} = {lit_of(c, v)}")
            if kind == "D":
                sql = f"delete from {shown.qualified} where " + " and ".join(conds)
            else:
                sets = ", ".join(f"{name_of(pos[s], defn.column(s))} = {lit_of(defn.column(s), after.get(s))}"
                                 for s in set_cols)
                sql = f"update {shown.qualified} set {sets} where " + " and ".join(conds)
        L = self.max_redo_len
        parts = [sql[i:i + L] for i in range(0, len(sql), L)] if len(sql) > L else [sql]
        rows = []
        for k, part in enumerate(parts):
            o = list(out)
            o[I_OWNER], o[I_TABLE], o[I_INFO] = shown.owner, shown.name, info
            o[I_CSF], o[I_SQL_REDO] = (1 if k < len(parts) - 1 else 0), part
            rows.append(tuple(o))
        return rows

    # ---- tables and DDL ---------------------------------------------------------------------------

    def _state(self, owner: str, table: str) -> _TableState:
        state = self._tables.get((owner, table))
        if state is None:
            raise _db_error(f'ORA-00942: table or view "{owner}"."{table}" does not exist')
        return state

    def _state_of(self, defn: TableDef) -> _TableState:
        for s in reversed(self._objects):
            if s.obj_id == defn.obj_id:
                return s
        raise KeyError(defn.obj_id)

    def table(self, owner: str, table: str) -> TableDef:
        """The current definition of a table."""
        defn = self._state(owner, table).defn
        assert defn is not None
        return defn

    def tables(self) -> list[TableDef]:
        return [s.defn for s in self._tables.values() if s.defn is not None]

    def _check_ddl_allowed(self, state: _TableState) -> None:
        if state.locks or state.key_locks or state.table_locks:
            raise _db_error("ORA-00054: resource busy and acquire with NOWAIT specified or timeout expired")

    def _ddl(self, owner: str, table: str, text: str, *, thread: int, username: str | None, pdb: str | None,
             sys_rows: Sequence[tuple[int, str, str]] = (), internal: Sequence[str] = ()) -> int:
        """A DDL transaction: START, SYS dictionary DML, INTERNAL DDL rows, the DDL row, COMMIT."""
        tx = SimulatedTransaction(self, thread, username or owner, pdb)
        scn, ts = tx._scn()
        for op, name, sql in sys_rows:
            rowid = _b64(18, 6) + _b64(1, 3) + _b64(self._next_obj % 4096, 6) + _b64(0, 3)
            self._record(tx, scn, ts, op, None, rowid, sql, owner="SYS", table=name)
        for sql in internal:
            scn, ts = tx._scn()
            self._record(tx, scn, ts, Q.OP_DDL, None, NULL_ROWID, sql, info="INTERNAL DDL", owner=owner, table=table)
        scn, ts = tx._scn()
        self._record(tx, scn, ts, Q.OP_DDL, None, NULL_ROWID, text, owner=owner, table=table)
        tx.commit()
        return scn

    def create_table(self, owner: str, table: str, columns: Sequence[tuple[str, str]], primary_key: Sequence[str] = (),
                     *, supplemental_all: bool = True, supplemental_pk: bool = True, ddl_text: str | None = None,
                     emit_supplemental_ddl: bool = True, organization: str = "HEAP", thread: int = 1,
                     username: str | None = None, pdb: str | None = None) -> TableDef:
        """Create a table (DDL redo: START, SYS rows, INTERNAL DDL, the CREATE TABLE, COMMIT; then, with
        ``supplemental_all``, ``ALTER TABLE ... ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS``)."""
        if (owner, table) in self._tables:
            raise _db_error("ORA-00955: name is already used by an existing object")
        obj = self._next_obj
        self._next_obj += 1
        cols = tuple(Column(n, t, parse_oracle_type(t)) for n, t in columns)
        for k in primary_key:
            if k not in {c.name for c in cols}:
                raise ValueError(f"primary key column {k} is not a column")
        defn = TableDef(owner, table, cols, tuple(primary_key), obj, 1, supplemental_all, supplemental_pk,
                        organization, pdb if pdb is not None else self.pdb_name)
        text = ddl_text or defn.create_ddl()
        state = _TableState(defn, self._scn)
        state.table_all_logging = False
        sys_rows = [(Q.OP_INSERT, "OBJ$", f'insert into "SYS"."OBJ$"("OBJ#","DATAOBJ#","OWNER#","NAME","NAMESPACE",'
                     f'"TYPE#") values (\'{obj}\',\'{obj}\',\'111\',\'{table}\',\'1\',\'2\')'),
                    (Q.OP_INSERT, "TAB$", f'insert into "SYS"."TAB$"("OBJ#","DATAOBJ#","TS#","COLS") values '
                     f"('{obj}','{obj}','4','{len(cols)}')")]
        internal = ([f'create unique index "{owner}"."SYS_C00{obj}" on {defn.qualified}('
                     + ",".join(f'"{k}"' for k in primary_key) + ")"] if primary_key else [])
        scn = self._ddl(owner, table, text, thread=thread, username=username, pdb=defn.pdb, sys_rows=sys_rows,
                        internal=internal)
        state.versions = [(scn, defn)]
        self._tables[(owner, table)] = state
        self._objects.append(state)
        if supplemental_all:
            if emit_supplemental_ddl:
                self._ddl(owner, table, f"ALTER TABLE {defn.qualified} ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS",
                          thread=thread, username=username, pdb=defn.pdb)
            state.table_all_logging = True
        return defn

    def alter_table(self, owner: str, table: str, ddl_text: str, new_columns: Sequence[tuple[str, str]] | None = None,
                    *, primary_key: Sequence[str] | None = None, defaults: Mapping[str, Any] | None = None,
                    renamed: Mapping[str, str] | None = None, thread: int = 1, username: str | None = None) -> TableDef:
        """Any ALTER TABLE: ``ddl_text`` is the redo text; ``new_columns`` the complete new column list
        (None: unchanged). Existing rows keep values by column name (``renamed``: old -> new), new
        columns get ``defaults`` (else NULL)."""
        state = self._state(owner, table)
        self._check_ddl_allowed(state)
        old = state.defn
        assert old is not None
        cols = old.columns if new_columns is None else tuple(Column(n, t, parse_oracle_type(t)) for n, t in new_columns)
        pk = tuple(primary_key) if primary_key is not None else tuple(
            (renamed or {}).get(k, k) for k in old.primary_key)
        new = TableDef(owner, table, cols, pk, old.obj_id, old.version + 1, old.supplemental_all,
                       old.supplemental_pk, old.organization, old.pdb)
        scn = self._ddl(owner, table, ddl_text, thread=thread, username=username, pdb=old.pdb,
                        internal=[f"ALTER TABLE {old.qualified} MODIFY DEFAULT ATTRIBUTES"] if new_columns else [])
        inverse = {v: k for k, v in (renamed or {}).items()}
        defaults = dict(defaults or {})
        self._reshape(state, new, scn, lambda row: {
            c.name: store_value(c.type, row[inverse.get(c.name, c.name)]) if inverse.get(c.name, c.name) in row
            else store_value(c.type, defaults.get(c.name)) for c in cols})
        return new

    def _reshape(self, state: _TableState, new: TableDef, scn: int,
                 fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        state.defn = new
        state.versions.append((scn, new))
        state.committed = {rid: fn(row) for rid, row in state.committed.items()}
        state.rows = dict(state.committed)
        for rid, row in state.committed.items():
            state.history.append((scn, rid, row))
        state.pk_index = {new.key_of(row): rid for rid, row in state.rows.items()} if new.primary_key else {}

    def add_column(self, owner: str, table: str, column: str, type_text: str, default: Any = None, **kw: Any
                   ) -> TableDef:
        """``ALTER TABLE "O"."T" ADD ("C" type)``."""
        old = self.table(owner, table)
        text = f'ALTER TABLE {old.qualified} ADD ("{column}" {type_text}' + (
            f" DEFAULT {self._lit(parse_oracle_type(type_text), store_value(parse_oracle_type(type_text), default))}"
            if default is not None else "") + ")"
        cols = [(c.name, c.type_text) for c in old.columns] + [(column, type_text)]
        return self.alter_table(owner, table, text, cols, defaults={column: default}, **kw)

    def drop_column(self, owner: str, table: str, column: str, **kw: Any) -> TableDef:
        """``ALTER TABLE "O"."T" DROP COLUMN "C"``."""
        old = self.table(owner, table)
        cols = [(c.name, c.type_text) for c in old.columns if c.name != column]
        return self.alter_table(owner, table, f'ALTER TABLE {old.qualified} DROP COLUMN "{column}"', cols, **kw)

    def drop_table(self, owner: str, table: str, *, purge: bool = False, thread: int = 1,
                   username: str | None = None) -> int:
        """``DROP TABLE`` (rows gone; the schema history keeps the old versions). Returns the DDL SCN."""
        state = self._state(owner, table)
        self._check_ddl_allowed(state)
        assert state.defn is not None
        scn = self._ddl(owner, table, f"DROP TABLE {state.defn.qualified}" + (" PURGE" if purge else ""),
                        thread=thread, username=username, pdb=state.defn.pdb,
                        sys_rows=[(Q.OP_DELETE, "OBJ$", f'delete from "SYS"."OBJ$" where "OBJ#" = \'{state.obj_id}\'')])
        state.defn = None
        state.versions.append((scn, None))
        state.rows, state.committed, state.pk_index = {}, {}, {}
        state.history.append((scn, "*", None))
        del self._tables[(owner, table)]
        return scn

    def truncate_table(self, owner: str, table: str, *, thread: int = 1, username: str | None = None) -> int:
        """``TRUNCATE TABLE`` (a new data object id: new ROWIDs afterwards). Returns the DDL SCN."""
        state = self._state(owner, table)
        self._check_ddl_allowed(state)
        assert state.defn is not None
        scn = self._ddl(owner, table, f"TRUNCATE TABLE {state.defn.qualified}", thread=thread, username=username,
                        pdb=state.defn.pdb)
        state.rows, state.committed, state.pk_index = {}, {}, {}
        state.history.append((scn, "*", None))
        state.data_obj_id = self._next_obj
        state.next_slot = 0
        self._next_obj += 1
        return scn

    def rename_table(self, owner: str, table: str, new_name: str, *, thread: int = 1,
                     username: str | None = None) -> TableDef:
        """``ALTER TABLE "O"."T" RENAME TO "N"`` (same object, new name)."""
        state = self._state(owner, table)
        self._check_ddl_allowed(state)
        old = state.defn
        assert old is not None
        if (owner, new_name) in self._tables:
            raise _db_error("ORA-00955: name is already used by an existing object")
        scn = self._ddl(owner, table, f'ALTER TABLE {old.qualified} RENAME TO "{new_name}"', thread=thread,
                        username=username, pdb=old.pdb)
        new = TableDef(owner, new_name, old.columns, old.primary_key, old.obj_id, old.version + 1,
                       old.supplemental_all, old.supplemental_pk, old.organization, old.pdb)
        state.defn = new
        state.versions.append((scn, new))
        del self._tables[(owner, table)]
        self._tables[(owner, new_name)] = state
        return new

    def set_table_logging(self, owner: str, table: str, all_columns: bool, *, emit_ddl: bool = True) -> None:
        """Add or drop the table's ``SUPPLEMENTAL LOG DATA (ALL) COLUMNS``."""
        state = self._state(owner, table)
        assert state.defn is not None
        if emit_ddl:
            verb = "ADD" if all_columns else "DROP"
            self._ddl(owner, table, f"ALTER TABLE {state.defn.qualified} {verb} SUPPLEMENTAL LOG DATA (ALL) COLUMNS",
                      thread=1, username=None, pdb=state.defn.pdb)
        state.table_all_logging = all_columns

    def _resolve(self, owner: str, table: str, scn: int) -> tuple[_TableState, TableDef] | None:
        for state in reversed(self._objects):
            d = state.def_at(scn)
            if d is not None and d.owner == owner and d.name == table:
                return state, d
        return None

    def schema_at(self, owner: str, table: str, scn: int) -> TableDef | None:
        """The table's definition in force at ``scn`` (None: it did not exist then)."""
        found = self._resolve(owner, table, scn)
        return found[1] if found else None

    def rows_at(self, owner: str, table: str, scn: int) -> list[dict[str, Any]]:
        """The committed rows as of ``scn`` (flashback ``AS OF SCN``), ordered by primary key."""
        found = self._resolve(owner, table, scn)
        if found is None:
            raise _db_error(f'ORA-00942: table or view "{owner}"."{table}" does not exist (at SCN {scn})')
        state, defn = found
        rows: dict[str, dict[str, Any]] = {}
        for hscn, rowid, values in state.history:
            if hscn > scn:
                break
            if rowid == "*":
                rows.clear()
            elif values is None:
                rows.pop(rowid, None)
            else:
                rows[rowid] = values
        return _ordered(defn, rows)

    def rows(self, owner: str, table: str) -> list[dict[str, Any]]:
        """The committed rows now, ordered by primary key."""
        state = self._state(owner, table)
        assert state.defn is not None
        return _ordered(state.defn, state.committed)

    def canonical(self, owner: str, table: str, scn: int | None = None) -> list[dict[str, str | None]]:
        """Committed rows (now, or as of ``scn``) as canonical strings per column type."""
        if scn is None:
            defn = self.table(owner, table)
            rows = self.rows(owner, table)
        else:
            d = self.schema_at(owner, table, scn)
            if d is None:
                raise _db_error(f'ORA-00942: table or view "{owner}"."{table}" does not exist (at SCN {scn})')
            defn, rows = d, self.rows_at(owner, table, scn)
        return [{c.name: canonical_value(c.type, r.get(c.name)) for c in defn.columns} for r in rows]

    # ---- transactions -----------------------------------------------------------------------------

    def begin(self, thread: int = 1, username: str | None = "APP", pdb: str | None = None) -> SimulatedTransaction:
        """A new transaction on redo thread ``thread`` (it writes redo from its first change)."""
        return SimulatedTransaction(self, thread, username, pdb if pdb is not None else self.pdb_name)

    @property
    def open_transactions(self) -> list[SimulatedTransaction]:
        """Transactions with changes and no end yet (what ``GV$TRANSACTION`` lists)."""
        return list(self._open_txns)

    def oldest_open_scn(self) -> int | None:
        scns = [t.start_scn for t in self._open_txns if t.start_scn is not None]
        return min(scns) if scns else None

    def emit_missing_scn(self, thread: int = 1, owner: str | None = None, table: str | None = None) -> int:
        """A ``MISSING_SCN`` (op 34) row: LogMiner's marker of redo it could not read (SEG_OWNER NULL
        unless ``owner`` is given)."""
        scn, ts = self._tick()
        self._record(None, scn, ts, Q.OP_MISSING_SCN, None, NULL_ROWID, None, thread=thread, owner=owner,
                     table=table, xid="0000000000000000", info="Missing SCN")
        return scn

    # ---- redo logs --------------------------------------------------------------------------------

    @property
    def threads(self) -> dict[int, _Thread]:
        return self._threads

    def logs(self, thread: int | None = None) -> list[LogFile]:
        """Every log ever opened (of one thread, or all), by thread then sequence."""
        out = []
        for t, th in sorted(self._threads.items()):
            if thread is None or t == thread:
                out.extend(th.logs[s] for s in sorted(th.logs))
        return out

    def current_log(self, thread: int = 1) -> LogFile:
        return self._threads[thread].current

    def member_name(self, group: int) -> str:
        return f"/u01/app/oracle/oradata/{self.name}/redo{group:02d}.log"

    def archive_name(self, dest_id: int, log: LogFile) -> str:
        if dest_id == 1:
            return f"/arch/{log.thread}_{log.sequence}_{RESETLOGS_ID}.arc"
        return (f"/fra/{self.name}/archivelog/d{dest_id}/o1_mf_{log.thread}_{log.sequence}_"
                f"{log.first_change:x}_.arc")

    def is_online(self, log: LogFile) -> bool:
        return self._threads[log.thread].online(log)

    def switch_log(self, thread: int | None = None) -> None:
        """Close the CURRENT log of ``thread`` (all threads when None) and open the next sequence in the
        next online group (circular reuse; an unarchived log is archived first in ARCHIVELOG mode, lost
        otherwise). Flushes redo."""
        for t in ([thread] if thread is not None else sorted(self._threads)):
            th = self._threads[t]
            self._advance(1, self.time_step)
            cur = th.current
            cur.next_change, cur.next_time = self._scn, self._time
            g = th.groups[(th.groups.index(cur.group) + 1) % len(th.groups)]
            old_seq = th.group_seq.get(g)
            if old_seq is not None and self.log_mode == "ARCHIVELOG":
                old = th.logs[old_seq]
                if not old.archived:
                    self._archive(old)
            new = LogFile(t, cur.sequence + 1, self._scn, self._time, g)
            th.logs[new.sequence] = new
            th.group_seq[g] = new.sequence
            th.current = new
            th.block = 0
            if self.auto_archive:
                self._archive(cur)
        self.flush()

    def _archive(self, log: LogFile) -> None:
        if self.log_mode != "ARCHIVELOG" or log.next_change is None or not self.is_online(log):
            return
        for d in self.archive_dests:
            if d.status == "VALID" and d.dest_id not in log.archived:
                log.archived[d.dest_id] = self.archive_name(d.dest_id, log)

    def archive_logs(self) -> None:
        """The archiver: archived copies of every closed online log, for each VALID destination."""
        for th in self._threads.values():
            for log in th.logs.values():
                self._archive(log)

    def purge_archived(self, thread: int, up_to_sequence: int, dest_id: int | None = None) -> None:
        """Delete the archived copies (of one destination, or all) of sequences ``<= up_to_sequence``."""
        for log in self._threads[thread].logs.values():
            if log.sequence <= up_to_sequence:
                for d in list(log.archived):
                    if dest_id is None or d == dest_id:
                        log.deleted.add(d)

    def _file_by_name(self, name: str) -> LogFile:
        for th in self._threads.values():
            for log in th.logs.values():
                for d, n in log.archived.items():
                    if n == name:
                        if d in log.deleted:
                            raise _db_error(f"ORA-01284: file {name} cannot be opened\nORA-00308: cannot open "
                                            f"archived log '{name}'\nORA-27037: unable to obtain file status\n"
                                            "Linux-x86_64 Error: 2: No such file or directory")
                        return log
            for g in th.groups:
                if self.member_name(g) == name:
                    seq = th.group_seq.get(g)
                    if seq is None:
                        break
                    return th.logs[seq]
        raise _db_error(f"ORA-01284: file {name} cannot be opened\nORA-00308: cannot open archived log '{name}'\n"
                        "ORA-27037: unable to obtain file status\nLinux-x86_64 Error: 2: No such file or directory")

    # ---- faults -----------------------------------------------------------------------------------

    def fail_next(self, target: str, error_text: str, times: int = 1, after_rows: int | None = None) -> None:
        """Make the next ``times`` matching calls fail with ``error_text`` (a :class:`SimulatedDatabaseError`;
        a :class:`SimulatedOperationalError` that also drops the connection for DPY-4011, ORA-03113...).

        ``target``: a statement kind — a :mod:`queries` constant name (``"ADD_LOGFILE"``, ``"CURRENT_SCN"``,
        ``"FLUSH"``...), ``"CONTENTS"`` (the contents query), ``"CONNECT"``, ``"COMMIT"``, ``"ROLLBACK"``,
        ``"PING"`` — or a prefix of the (whitespace-normalised, case-insensitive) statement text.
        ``after_rows``: the statement runs, the fetch that would deliver row ``after_rows + 1`` fails.
        """
        self._faults.append(_Fault(target.strip(), error_text, times, after_rows))

    def run_next(self, target: str, action: Callable[[], None], times: int = 1,
                 after_rows: int | None = None) -> None:
        """Run ``action`` (e.g. a log switch) just before the next ``times`` statements matching ``target``
        (as in :meth:`fail_next`) execute, or, with ``after_rows``, once the fetch that delivers row
        ``after_rows + 1`` has read its rows: the fetches after it see what ``action`` changed."""
        self._faults.append(_Fault(target.strip(), "", times, after_rows, action))

    def _take_fault(self, kind: str, statement: str | None = None) -> _Fault | None:
        for f in self._faults:
            t = f.target.upper()
            if t == kind or (statement is not None and statement.upper().startswith(_normalise(t))):
                f.times -= 1
                if f.times <= 0:
                    self._faults.remove(f)
                return f
        return None

    # ---- contents / export ------------------------------------------------------------------------

    def redo(self, lo: int | None = None, hi: int | None = None, *, flushed_only: bool = True) -> list[tuple[Any, ...]]:
        """The ``V$LOGMNR_CONTENTS`` rows (unfiltered, all files) with ``lo < SCN <= hi``."""
        a = 0 if lo is None else bisect.bisect_right(self._scns, lo)
        b = len(self._scns) if hi is None else bisect.bisect_right(self._scns, hi)
        limit = self._flushed_eid if flushed_only else self._eid
        return [rec[0] for rec in self._recs[a:b] if rec[2] < limit]

    def export_contents(self, path: str | Path, fmt: str = "csv", lo: int | None = None,
                        hi: int | None = None) -> int:
        """Write the (flushed) ``V$LOGMNR_CONTENTS`` rows, unfiltered, as CSV or Parquet with the view's
        column names (``XID`` as hex). Returns the number of rows."""
        import pyarrow as pa

        rows = self.redo(lo, hi)
        types = {"SCN": pa.int64(), "START_SCN": pa.int64(), "COMMIT_SCN": pa.int64(),
                 "TIMESTAMP": pa.timestamp("us"), "COMMIT_TIMESTAMP": pa.timestamp("us"), "OPERATION_CODE": pa.int32(),
                 "ROLLBACK": pa.int32(), "SSN": pa.int64(), "CSF": pa.int32(), "THREAD#": pa.int32()}
        arrays = [pa.array([r[i] for r in rows], type=types.get(name, pa.string())) for i, name in enumerate(COLUMNS)]
        table = pa.Table.from_arrays(arrays, names=list(COLUMNS))
        if fmt == "csv":
            import pyarrow.csv as pacsv

            pacsv.write_csv(table, str(path))
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, str(path))
        else:
            raise ValueError(f"unknown export format {fmt!r}")
        return len(rows)


def _ordered(defn: TableDef, rows: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    def sort_key(item: tuple[str, dict[str, Any]]) -> tuple[Any, ...]:
        rid, row = item
        return tuple((row.get(k) is None, str(type(row.get(k))), row.get(k) if row.get(k) is not None else 0)
                     for k in defn.primary_key) + (rid,)

    return [dict(row) for _rid, row in sorted(rows.items(), key=sort_key)]
