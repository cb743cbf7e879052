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
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import decimal
import gc
import itertools
import math
import random
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from cdclake.sources.oracle import queries as Q

__all__ = [
    "MAX_SCN",
    "ArchiveDest",
    "Column",
    "LogFile",
    "OracleType",
    "RowLockedError",
    "SimulatedConnection",
    "SimulatedCursor",
    "SimulatedDatabaseError",
    "SimulatedLob",
    "SimulatedOperationalError",
    "SimulatedOracle",
    "SimulatedTransaction",
    "TableDef",
    "UnknownStatementError",
    "WorkloadStats",
    "canonical_value",
    "create_typed_tables",
    "parse_oracle_type",
    "random_value",
    "random_workload",
    "store_row",
    "store_value",
    "unhandled_statements",
]

MAX_SCN = 18446744073709551615  # NEXT_CHANGE# of a CURRENT online log
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
_SYSTEM_TABLES = (("SYS", "OBJ$"), ("SYS", "TAB$"), ("SYS", "COL$"), ("SYSTEM", "HELP"), ("XDB", "XDB$CONFIG"),
                  ("MDSYS", "SDO_GEOR_XMLSCHEMA_TABLE"), ("AUDSYS", "AUD$UNIFIED"))

# ---- errors --------------------------------------------------------------------------------------

_CONNECTION_LOST = ("DPY-4011", "DPY-1001", "DPI-1080", "ORA-03113", "ORA-03114", "ORA-03135", "ORA-12537",
                    "ORA-12547", "ORA-01012", "ORA-00028", "ORA-02396", "ORA-12170")
_RE_CODE = re.compile(r"(ORA|DPY|DPI|PLS)-(\d+)")


class OracleErrorInfo:
    """Like python-oracledb's ``_Error``: ``exc.args[0]`` with ``full_code``, ``code``, ``message``."""

    def __init__(self, message: str) -> None:
        self.message = message
        m = _RE_CODE.match(message)
        self.full_code = m.group(0) if m else ""
        self.code = int(m.group(2)) if m else 0
        self.isrecoverable = False
        self.offset = 0

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"OracleErrorInfo({self.message!r})"


class SimulatedDatabaseError(Exception):
    """A database error; ``str(exc)`` starts with the ``ORA-``/``DPY-`` code (as ``oracledb.DatabaseError``)."""

    def __init__(self, message: str) -> None:
        super().__init__(OracleErrorInfo(message))

    @property
    def full_code(self) -> str:
        return self.args[0].full_code

    @property
    def message(self) -> str:
        return self.args[0].message


class SimulatedOperationalError(SimulatedDatabaseError):
    """The connection is gone (``DPY-4011``, ``ORA-03113``...); the connection is unusable afterwards."""


class RowLockedError(SimulatedDatabaseError):
    """Another open transaction holds the row (Oracle would block; the simulator refuses at once)."""


class UnknownStatementError(RuntimeError):
    """The simulator does not know the statement (deliberately not a database error: never retried)."""


def _db_error(message: str) -> SimulatedDatabaseError:
    if any(code in message for code in _CONNECTION_LOST):
        return SimulatedOperationalError(message)
    return SimulatedDatabaseError(message)


# ---- types ----------------------------------------------------------------------------------------

_TEXT_KINDS = frozenset({"VARCHAR2", "NVARCHAR2", "CHAR", "NCHAR"})
_LOB_KINDS = frozenset({"CLOB", "NCLOB", "BLOB", "XMLTYPE"})  # XMLTYPE: written by XML_BEGIN/WRITE/END rows
_NUMBER_KINDS = frozenset({"NUMBER", "FLOAT"})


@dataclass(frozen=True)
class OracleType:
    """A parsed Oracle column type. ``kind`` is one of NUMBER FLOAT BINARY_FLOAT BINARY_DOUBLE VARCHAR2
    NVARCHAR2 CHAR NCHAR CLOB NCLOB BLOB XMLTYPE RAW DATE TIMESTAMP TSTZ TSLTZ IYM IDS UNSUPPORTED."""

    text: str
    kind: str
    precision: int | None = None  # NUMBER/FLOAT precision, fractional-second digits, interval leading digits
    scale: int | None = None  # NUMBER scale; INTERVAL DAY TO SECOND fractional digits
    length: int | None = None  # characters (text) or bytes (RAW)

    @property
    def is_lob(self) -> bool:
        return self.kind in _LOB_KINDS

    @property
    def national(self) -> bool:
        return self.kind in ("NVARCHAR2", "NCHAR", "NCLOB")


def _norm_type_text(text: str) -> str:
    t = re.sub(r"\s+", " ", text.strip().upper())
    t = re.sub(r"\s*\(\s*", "(", t)
    t = re.sub(r"\s*\)", ")", t)
    return re.sub(r"\s*,\s*", ",", t)


def parse_oracle_type(text: str) -> OracleType:
    """Parse an Oracle type text (``NUMBER(12,2)``, ``TIMESTAMP(9) WITH TIME ZONE``, ``NVARCHAR2(50)``...)."""
    t = _norm_type_text(text)
    m = re.fullmatch(r"(NUMBER|DECIMAL|NUMERIC|DEC)(?:\((\*|\d+)(?:,(-?\d+))?\))?", t)
    if m:
        name, p, s = m.groups()
        if name != "NUMBER" and p is None:
            return OracleType(text, "NUMBER", 38, 0)
        prec = None if p in (None, "*") else int(p)
        scale = int(s) if s is not None else (0 if prec is not None else None)
        return OracleType(text, "NUMBER", prec, scale)
    if t in ("INTEGER", "INT", "SMALLINT"):
        return OracleType(text, "NUMBER", 38, 0)
    m = re.fullmatch(r"FLOAT(?:\((\d+)\))?", t)
    if m:
        return OracleType(text, "FLOAT", int(m.group(1) or 126))
    if t in ("REAL", "DOUBLE PRECISION"):
        return OracleType(text, "FLOAT", 63 if t == "REAL" else 126)
    if t in ("BINARY_FLOAT", "BINARY_DOUBLE"):
        return OracleType(text, t)
    m = re.fullmatch(r"(VARCHAR2|VARCHAR|NVARCHAR2|CHARACTER|CHAR|NCHAR)(?:\((\d+)(?: (?:BYTE|CHAR))?\))?", t)
    if m:
        name = {"VARCHAR": "VARCHAR2", "CHARACTER": "CHAR"}.get(m.group(1), m.group(1))
        length = int(m.group(2)) if m.group(2) else (1 if name in ("CHAR", "NCHAR") else 4000)
        return OracleType(text, name, length=length)
    if t in ("CLOB", "NCLOB", "BLOB", "DATE"):
        return OracleType(text, t)
    if t.replace('"', "") in ("XMLTYPE", "SYS.XMLTYPE", "PUBLIC.XMLTYPE"):
        return OracleType(text, "XMLTYPE")
    m = re.fullmatch(r"RAW\((\d+)\)", t)
    if m:
        return OracleType(text, "RAW", length=int(m.group(1)))
    m = re.fullmatch(r"TIMESTAMP(?:\((\d)\))?( WITH LOCAL TIME ZONE| WITH TIME ZONE)?", t)
    if m:
        kind = {None: "TIMESTAMP", " WITH TIME ZONE": "TSTZ", " WITH LOCAL TIME ZONE": "TSLTZ"}[m.group(2)]
        return OracleType(text, kind, int(m.group(1) or 6))
    m = re.fullmatch(r"INTERVAL YEAR(?:\((\d)\))? TO MONTH", t)
    if m:
        return OracleType(text, "IYM", int(m.group(1) or 2))
    m = re.fullmatch(r"INTERVAL DAY(?:\((\d)\))? TO SECOND(?:\((\d)\))?", t)
    if m:
        return OracleType(text, "IDS", int(m.group(1) or 2), int(m.group(2) or 6))
    return OracleType(text, "UNSUPPORTED")


def _metadata_type(t: OracleType) -> str:
    """The type as ``DBMS_METADATA.GET_DDL`` prints it."""
    k = t.kind
    if k == "NUMBER":
        if t.precision is None:
            return "NUMBER" if t.scale is None else f"NUMBER(*,{t.scale})"
        return f"NUMBER({t.precision},{t.scale or 0})"
    if k == "FLOAT":
        return f"FLOAT({t.precision})"
    if k in ("VARCHAR2", "CHAR"):
        return f"{k}({t.length} BYTE)"
    if k in ("NVARCHAR2", "NCHAR"):
        return f"{k}({t.length})"
    if k == "RAW":
        return f"RAW({t.length})"
    if k == "TIMESTAMP":
        return f"TIMESTAMP ({t.precision})"
    if k == "TSTZ":
        return f"TIMESTAMP ({t.precision}) WITH TIME ZONE"
    if k == "TSLTZ":
        return f"TIMESTAMP ({t.precision}) WITH LOCAL TIME ZONE"
    if k == "IYM":
        return f"INTERVAL YEAR ({t.precision}) TO MONTH"
    if k == "IDS":
        return f"INTERVAL DAY ({t.precision}) TO SECOND ({t.scale})"
    if k == "XMLTYPE":
        return '"SYS"."XMLTYPE"'
    return _norm_type_text(t.text)


# ---- values: storing, rendering, canonical ---------------------------------------------------------

_RE_TS = re.compile(r"\s*(\d{1,4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2}):(\d{2})(?:\.(\d*))?\s*(.*?)\s*")
_RE_YM = re.compile(r"\s*([+-])?(\d+)-(\d+)\s*")
_RE_DS = re.compile(r"\s*([+-])?(\d+) (\d+):(\d+):(\d+)(?:\.(\d*))?\s*")


def _fmt_date(d: dt.datetime) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d} {d.hour:02d}:{d.minute:02d}:{d.second:02d}"


def _ts_parts(value: Any) -> tuple[dt.datetime, int, str]:
    """``(seconds-precision naive datetime, nanoseconds, zone text)`` of a timestamp value."""
    if isinstance(value, dt.datetime):
        zone = ""
        if value.tzinfo is not None:
            off = value.utcoffset() or dt.timedelta(0)
            mins = int(off.total_seconds() // 60)
            sign = "-" if mins < 0 else "+"
            zone = f"{sign}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"
        return value.replace(microsecond=0, tzinfo=None), value.microsecond * 1000, zone
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day), 0, ""
    m = _RE_TS.fullmatch(str(value))
    if m is None:
        raise ValueError(f"not a timestamp: {value!r}")
    y, mo, d, h, mi, s, frac, zone = m.groups()
    base = dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
    return base, int((frac or "")[:9].ljust(9, "0")), zone


def _round_nanos(base: dt.datetime, nanos: int, digits: int) -> tuple[dt.datetime, int]:
    unit = 10 ** (9 - digits)
    nanos = (nanos + unit // 2) // unit * unit
    if nanos >= 10**9:
        base, nanos = base + dt.timedelta(seconds=1), nanos - 10**9
    return base, nanos


def _ts_value(base: dt.datetime, nanos: int, digits: int) -> dt.datetime | str:
    if nanos % 1000 == 0:
        return base.replace(microsecond=nanos // 1000)
    return f"{_fmt_date(base)}.{nanos:09d}"[: 20 + digits]


def _zone_text(zone: str) -> str:
    if zone in ("", "Z", "z", "UTC", "GMT"):
        return "+00:00"
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})?", zone)
    if m:
        return f"{m.group(1)}{int(m.group(2)):02d}:{m.group(3) or '00'}"
    return zone  # a region name


_CTX = decimal.Context(prec=200, rounding=ROUND_HALF_UP)


def _plain_decimal(d: Decimal) -> str:
    if d.is_zero():
        return "0"
    return format(d.normalize(_CTX), "f")


def _to_decimal(value: Any) -> Decimal:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    try:
        return Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ValueError(f"not a number: {value!r}") from exc


def _float32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


def store_value(t: OracleType, value: Any) -> Any:
    """Normalise a Python value for a column (Oracle semantics: NUMBER rounding, CHAR padding,
    ``''`` is NULL for text, fractional seconds rounded to the precision...)."""
    if value is None:
        return None
    k = t.kind
    if k == "NUMBER" and type(value) is int and t.scale == 0 and (
            t.precision is None or -(10 ** t.precision) < value < 10 ** t.precision):
        return value
    if k in ("VARCHAR2", "NVARCHAR2") and type(value) is str and value and (
            t.length is None or len(value) <= t.length):
        return value
    if k in _NUMBER_KINDS:
        d = _to_decimal(value)
        if not d.is_finite():
            raise _db_error(f"ORA-01722: invalid number ({value!r})")
        if k == "NUMBER" and t.scale is not None and t.precision is not None:
            d = _CTX.quantize(d, Decimal(1).scaleb(-t.scale))
            digits = len(d.as_tuple().digits) if not d.is_zero() else 0
            if d.adjusted() + 1 + t.scale > t.precision and digits and not d.is_zero():
                raise _db_error(
                    f"ORA-01438: value larger than specified precision allowed for this column ({value!r})")
        elif k == "NUMBER" and t.scale is not None:
            d = _CTX.quantize(d, Decimal(1).scaleb(-t.scale))
        if d == d.to_integral_value():
            return int(d)
        return d
    if k == "BINARY_DOUBLE":
        return float(value)
    if k == "BINARY_FLOAT":
        return _float32(float(value))
    if k in _TEXT_KINDS:
        s = str(value)
        if s == "":
            return None
        if t.length is not None and len(s) > t.length:
            raise _db_error(f"ORA-12899: value too large for column (actual: {len(s)}, maximum: {t.length})")
        if k in ("CHAR", "NCHAR"):
            s = s.ljust(t.length or 1)
        return s
    if k in ("CLOB", "NCLOB"):
        return str(value)
    if k in ("BLOB", "RAW"):
        b = bytes.fromhex(value) if isinstance(value, str) else bytes(value)
        if k == "RAW":
            if not b:
                return None
            if t.length is not None and len(b) > t.length:
                raise _db_error(f"ORA-12899: value too large for column (actual: {len(b)}, maximum: {t.length})")
        return b
    if k == "DATE":
        base, _nanos, _zone = _ts_parts(value)
        return base
    if k == "TIMESTAMP":
        base, nanos, _zone = _ts_parts(value)
        return _ts_value(*_round_nanos(base, nanos, t.precision or 0), t.precision or 0)
    if k == "TSLTZ":
        base, nanos, zone = _ts_parts(value)
        off = _zone_text(zone) if zone else "+00:00"
        if not re.fullmatch(r"[+-]\d{2}:\d{2}", off):
            from zoneinfo import ZoneInfo

            base = base.replace(tzinfo=ZoneInfo(off)).astimezone(dt.timezone.utc).replace(tzinfo=None)
        else:
            sign = -1 if off[0] == "-" else 1
            base = base - sign * dt.timedelta(hours=int(off[1:3]), minutes=int(off[4:6]))
        return _ts_value(*_round_nanos(base, nanos, t.precision or 0), t.precision or 0)
    if k == "TSTZ":
        base, nanos, zone = _ts_parts(value)
        base, nanos = _round_nanos(base, nanos, t.precision or 0)
        n = t.precision or 0
        frac = f".{nanos:09d}"[: n + 1] if n else ""
        return f"{_fmt_date(base)}{frac} {_zone_text(zone)}"
    if k == "IYM":
        if isinstance(value, int):
            sign, months = ("-" if value < 0 else "+"), abs(value)
        else:
            m = _RE_YM.fullmatch(str(value))
            if m is None:
                raise ValueError(f"not a year-to-month interval: {value!r}")
            sign, months = m.group(1) or "+", int(m.group(2)) * 12 + int(m.group(3))
        if months == 0:
            sign = "+"
        return f"{sign}{months // 12:0{t.precision or 2}d}-{months % 12:02d}"
    if k == "IDS":
        n = t.scale if t.scale is not None else 6
        if isinstance(value, dt.timedelta):
            total = value.days * 86400 * 10**9 + value.seconds * 10**9 + value.microseconds * 1000
        else:
            m = _RE_DS.fullmatch(str(value))
            if m is None:
                raise ValueError(f"not a day-to-second interval: {value!r}")
            sign_s, d, h, mi, s, frac = m.groups()
            secs = ((int(d) * 24 + int(h)) * 60 + int(mi)) * 60 + int(s)
            total = secs * 10**9 + int((frac or "")[:9].ljust(9, "0"))
            total = -total if sign_s == "-" else total
        sign = "-" if total < 0 else "+"
        total = abs(total)
        unit = 10 ** (9 - n)
        total = (total + unit // 2) // unit * unit
        secs, nanos = divmod(total, 10**9)
        mins, sec = divmod(secs, 60)
        hours, minute = divmod(mins, 60)
        day, hour = divmod(hours, 24)
        frac = f".{nanos:09d}"[: n + 1] if n else ""
        if total == 0:
            sign = "+"
        return f"{sign}{day:0{t.precision or 2}d} {hour:02d}:{minute:02d}:{sec:02d}{frac}"
    return value


def _oracle_number_text(v: Any, leading_zero: bool) -> str:
    text = _plain_decimal(_to_decimal(v))
    if not leading_zero:
        if text.startswith("0."):
            text = text[1:]
        elif text.startswith("-0."):
            text = "-" + text[2:]
    return text


def _oracle_float_text(x: float) -> str:
    """``TO_CHAR`` of a BINARY_DOUBLE: ``1.5E+000``, ``-2.25E-010``, ``0``, ``Inf``, ``Nan``."""
    if math.isnan(x):
        return "Nan"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    d = Decimal(repr(x))
    sign, digits, exp = d.as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    e = d.adjusted()
    mant = ds[0] + "." + (ds[1:] or "0")
    return f"{'-' if sign else ''}{mant}E{'+' if e >= 0 else '-'}{abs(e):03d}"


def _shortest_float32(x: float) -> str:
    for p in range(1, 10):
        text = f"{x:.{p}g}"
        if _float32(float(text)) == x:
            return text
    return repr(x)


def canonical_value(t: OracleType, value: Any) -> str | None:
    """The canonical string of a stored value (what a flashback snapshot yields; see the module doc)."""
    if value is None:
        return None
    k = t.kind
    if k in _NUMBER_KINDS:
        return _plain_decimal(_to_decimal(value))
    if k in ("BINARY_DOUBLE", "BINARY_FLOAT"):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        text = repr(value) if k == "BINARY_DOUBLE" else _shortest_float32(value)
        return _plain_decimal(Decimal(text))
    if k in _TEXT_KINDS or k in ("CLOB", "NCLOB"):
        return value
    if k in ("RAW", "BLOB"):
        return bytes(value).hex()
    if k == "DATE":
        return _fmt_date(value).replace(" ", "T")
    if k in ("TIMESTAMP", "TSLTZ", "TSTZ"):
        base, nanos, zone = _ts_parts(value)
        n = t.precision or 0
        text = _fmt_date(base).replace(" ", "T") + (f".{nanos:09d}"[: n + 1] if n else "")
        if k == "TSLTZ":
            return text + "+00:00"
        if k == "TSTZ":
            zone = _zone_text(zone)
            return text + zone if re.fullmatch(r"[+-]\d{2}:\d{2}", zone) else f"{text} {zone}"
        return text
    if k == "IYM":
        m = _RE_YM.fullmatch(value)
        assert m is not None
        months = int(m.group(2)) * 12 + int(m.group(3))
        return f"{'-' if m.group(1) == '-' and months else ''}P{months // 12}Y{months % 12}M"
    if k == "IDS":
        m = _RE_DS.fullmatch(value)
        assert m is not None
        sign, d, h, mi, s, frac = m.groups()
        frac = (frac or "").rstrip("0")
        zero = not any(int(x) for x in (d, h, mi, s)) and not frac
        return (f"{'-' if sign == '-' and not zero else ''}P{int(d)}DT{int(h)}H{int(mi)}M{int(s)}"
                f"{'.' + frac if frac else ''}S")
    return str(value)


def _ts_literal_text(value: Any) -> str:
    base, nanos, zone = _ts_parts(value)
    frac = f"{nanos:09d}".rstrip("0")
    return f"{_fmt_date(base)}.{frac}"


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _unistr_escape(s: str) -> str:
    out = []
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            out.append(f"\\{0xD800 + (cp >> 10):04x}\\{0xDC00 + (cp & 0x3FF):04x}")
        else:
            out.append(f"\\{cp:04x}")
    return "".join(out)


# ---- Oracle internal encodings (for HEXTORAW values of unknown objects) ------------------------------

def _ora_number_bytes(d: Decimal) -> bytes:
    if d.is_zero():
        return b"\x80"
    neg = d < 0
    t = abs(d).normalize(_CTX).as_tuple()
    digits = "".join(map(str, t.digits))
    intlen = len(digits) + int(t.exponent)
    if intlen % 2:
        digits, intlen = "0" + digits, intlen + 1
    if len(digits) % 2:
        digits += "0"
    pairs = [int(digits[i:i + 2]) for i in range(0, len(digits), 2)]
    while pairs and pairs[0] == 0:
        pairs.pop(0)
        intlen -= 2
    while pairs and pairs[-1] == 0:
        pairs.pop()
    exp100 = intlen // 2 - 1
    if not neg:
        return bytes([0xC1 + exp100] + [p + 1 for p in pairs])
    out = bytes([0x3E - exp100] + [101 - p for p in pairs])
    return out + b"\x66" if len(pairs) < 20 else out


def _internal_bytes(t: OracleType, v: Any) -> bytes:
    k = t.kind
    if k in _NUMBER_KINDS:
        return _ora_number_bytes(_to_decimal(v))
    if k in ("VARCHAR2", "CHAR", "CLOB"):
        return str(v).encode("utf-8")
    if k in ("NVARCHAR2", "NCHAR", "NCLOB"):
        return str(v).encode("utf-16-be")
    if k in ("RAW", "BLOB"):
        return bytes(v)
    if k == "BINARY_DOUBLE" or k == "BINARY_FLOAT":
        raw = bytearray(struct.pack(">d" if k == "BINARY_DOUBLE" else ">f", v))
        if raw[0] & 0x80:
            raw = bytearray(b ^ 0xFF for b in raw)
        else:
            raw[0] |= 0x80
        return bytes(raw)
    if k in ("DATE", "TIMESTAMP", "TSLTZ"):
        base, nanos, _zone = _ts_parts(v)
        out = bytes([100 + base.year // 100, 100 + base.year % 100, base.month, base.day, base.hour + 1,
                     base.minute + 1, base.second + 1])
        return out + (nanos.to_bytes(4, "big") if nanos and k != "DATE" else b"")
    return canonical_value(t, v).encode("utf-8") if v is not None else b""  # type: ignore[union-attr]


# ---- tables ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    name: str
    type_text: str
    type: OracleType


@dataclass(frozen=True)
class TableDef:
    """One version of a table's definition (a new one per DDL; see :meth:`SimulatedOracle.schema_at`)."""

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
        self.table_locks: set[SimulatedConnection] = set()
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

    def __init__(self, db: SimulatedOracle, thread: int, username: str | None, pdb: str | None) -> None:
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

class SimulatedOracle:
    """The simulated database. See the module docstring; every knob is an attribute that may be changed
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

    # ---- connections ------------------------------------------------------------------------------

    def connect(self, user: str | None = None, thread: int = 1, container: str | None = None) -> SimulatedConnection:
        """A new connection (a session on redo thread ``thread``, user ``session_user`` by default)."""
        fault = self._take_fault("CONNECT")
        if fault is not None:
            raise _db_error(fault.message)
        return SimulatedConnection(self, user or self.session_user, thread,
                                   container if container is not None else ("CDB$ROOT" if self.cdb == "YES" else None))

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


# ---- statements --------------------------------------------------------------------------------------

def _normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


_HANDLED = (
    "CURRENT_SCN", "DATABASE_INFO", "VERSION", "SESSION_PRIVILEGES", "SESSION_ROLES", "SESSION_USER",
    "MAX_STRING_SIZE", "ALL_COLUMN_LOGGING", "TABLES", "TABLE_DDL", "LOCK_TABLE", "OLDEST_OPEN_TRANSACTION",
    "THREADS", "ARCHIVE_DESTINATIONS", "ONLINE_LOGS", "ARCHIVED_LOGS", "OLDEST_ARCHIVED_SCN", "SCN_TIMES",
    "FLUSH_TABLE_EXISTS", "FLUSH_TABLE_CREATE", "FLUSH_TABLE_INIT", "FLUSH", "ADD_LOGFILE", "START_LOGMNR",
    "END_LOGMNR", "BUILD_DICTIONARY", "DATABASE_ROLE", "DICTIONARY_LOGS", "DICTIONARY_CLAIM_CREATE",
    "DICTIONARY_CLAIM_READ", "DICTIONARY_CLAIM_INSERT",
)
_STATEMENT_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|BEGIN|DECLARE|LOCK|MERGE|TRUNCATE)\b",
                              re.IGNORECASE)


def unhandled_statements() -> list[str]:
    """Names of statement constants in :mod:`queries` that the simulator does not answer (should be [])."""
    names = [n for n in dir(Q) if n.isupper() and not n.startswith("_") and isinstance(getattr(Q, n), str)
             and _STATEMENT_START.match(getattr(Q, n))]
    return [n for n in names if n not in _HANDLED]


def _template_regex(template: str) -> re.Pattern[str]:
    text = re.escape(_normalise(template))
    text = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>.+?)", text)
    text = text.replace(r"\ ", " ")
    return re.compile(text, re.IGNORECASE | re.DOTALL)


_TEMPLATES: list[tuple[str, re.Pattern[str]]] = [
    (name, _template_regex(getattr(Q, name))) for name in _HANDLED if isinstance(getattr(Q, name, None), str)
]
_RE_CONTENTS = re.compile(r"SELECT (?P<select>.+?) FROM V\$LOGMNR_CONTENTS(?: WHERE (?P<where>.+))?", re.I | re.S)


def _select_names(sql: str) -> list[str]:
    m = re.match(r"SELECT (.+?) FROM ", _normalise(sql), re.I | re.S)
    if not m:
        return []
    names = []
    for item in _split_top(m.group(1)):
        item = item.strip()
        mm = re.fullmatch(r"\w+\.([\w#$]+)", item)
        names.append(mm.group(1).upper() if mm else re.sub(r"\s+", "", item).upper())
    return names


def _split_top(text: str) -> list[str]:
    out, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == "'" :
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        elif not quote and ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def _literal_list(text: str) -> list[str]:
    return [m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", text)]


def _table_name(text: str, default_owner: str) -> tuple[str, str]:
    parts = [p.strip() for p in re.findall(r'"[^"]+"|[^.]+', text.strip())]
    parts = [p[1:-1] if p.startswith('"') else p.upper() for p in parts]
    return (parts[0], parts[1]) if len(parts) == 2 else (default_owner, parts[-1])


# ---- the WHERE compiler of the contents query ------------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<bind>:\w+)
  | (?P<op><=|>=|<>|!=|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_$#]*)
  )""", re.X)
_WHERE_COLUMNS = {name: f"r[{i}]" for i, name in enumerate(COLUMNS) if name != "XID"}
_WHERE_COLUMNS["SRC_CON_NAME"] = "c"
_NUMERIC_COLUMNS = {"SCN", "START_SCN", "COMMIT_SCN", "OPERATION_CODE", "ROLLBACK", "SSN", "CSF", "THREAD#"}


class _WhereCompiler:
    """Compiles a ``V$LOGMNR_CONTENTS`` WHERE clause into ``lambda r, c: ...`` (``r`` the row tuple,
    ``c`` SRC_CON_NAME) plus SCN bounds taken from the top-level conjuncts (for bisect)."""

    def __init__(self, where: str, binds: Mapping[str, Any], statement: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        where = where.strip()
        while pos < len(where):
            m = _TOKEN.match(where, pos)
            if m is None or m.end() == pos:
                raise UnknownStatementError(f"cannot parse the WHERE of: {statement}")
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(where) and where[pos].isspace():
                pos += 1
        self.i = 0
        self.binds = binds
        self.ns: dict[str, Any] = {}
        self.statement = statement
        self.lower: tuple[int, bool] | None = None  # (value, inclusive)
        self.upper: tuple[int, bool] | None = None

    def fail(self) -> UnknownStatementError:
        return UnknownStatementError(f"the simulator cannot evaluate this V$LOGMNR_CONTENTS WHERE: {self.statement}")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        self.i += 1
        return tok

    def kw(self, *words: str) -> bool:
        tok = self.peek()
        if tok and tok[0] == "word" and tok[1].upper() in words:
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        tok = self.take()
        if tok[1].upper() != value:
            raise self.fail()

    def compile(self) -> Callable[[tuple[Any, ...], Any], bool] | None:
        groups = [self.conjuncts(top=True)]
        while self.kw("OR"):
            groups.append(self.conjuncts(top=False))
        if self.peek() is not None:
            raise self.fail()
        if len(groups) == 1:
            parts = [p for p, bound in groups[0] if not self.take_bound(bound)]
        else:
            parts = ["(" + " and ".join(p for p, _b in g) + ")" for g in groups]
            parts = ["(" + " or ".join(parts) + ")"]
        if not parts:
            return None
        return eval("lambda r, c: " + " and ".join(parts), {"__builtins__": {}, **self.ns})

    def take_bound(self, bound: tuple[str, int] | None) -> bool:
        if bound is None:
            return False
        op, v = bound
        if op in (">", ">="):
            lo = v if op == ">" else v - 1  # as "SCN > lo"
            self.lower = (lo, False) if self.lower is None else (max(self.lower[0], lo), False)
        else:
            hi = v if op == "<=" else v - 1  # as "SCN <= hi"
            self.upper = (hi, True) if self.upper is None else (min(self.upper[0], hi), True)
        return True

    def conjuncts(self, top: bool) -> list[tuple[str, tuple[str, int] | None]]:
        parts = [self.atom()]
        while self.kw("AND"):
            parts.append(self.atom())
        return parts

    def expr(self) -> str:
        groups = ["(" + " and ".join(p for p, _b in self.conjuncts(False)) + ")"]
        while self.kw("OR"):
            groups.append("(" + " and ".join(p for p, _b in self.conjuncts(False)) + ")")
        return "(" + " or ".join(groups) + ")"

    def const(self, value: Any) -> str:
        name = f"_k{len(self.ns)}"
        self.ns[name] = value
        return name

    def value(self, numeric: bool) -> Any:
        kind, text = self.take()
        if kind == "str":
            v: Any = text[1:-1].replace("''", "'")
        elif kind == "num":
            v = Decimal(text)
            v = int(v) if v == v.to_integral_value() else v
        elif kind == "bind":
            key = text[1:].lower()
            if key not in self.binds:
                raise _db_error(f'DPY-4010: a bind variable replacement value for placeholder "{text}" '
                                "was not provided")
            v = self.binds[key]
        elif kind == "word" and text.upper() == "NULL":
            v = None
        else:
            raise self.fail()
        if numeric and isinstance(v, str):
            try:
                v = int(v)
            except ValueError:
                raise _db_error("ORA-01722: invalid number") from None
        return v

    def atom(self) -> tuple[str, tuple[str, int] | None]:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        if tok == ("punct", "("):
            self.i += 1
            inner = self.expr()
            self.expect(")")
            return inner, None
        kind, name = self.take()
        if kind != "word" or name.upper() not in _WHERE_COLUMNS:
            raise self.fail()
        col = name.upper()
        acc = _WHERE_COLUMNS[col]
        numeric = col in _NUMERIC_COLUMNS
        if self.kw("IS"):
            neg = self.kw("NOT")
            if not self.kw("NULL"):
                raise self.fail()
            return f"({acc} is {'not ' if neg else ''}None)", None
        neg = self.kw("NOT")
        if self.kw("IN"):
            self.expect("(")
            values = [self.value(numeric)]
            while self.peek() == ("punct", ","):
                self.i += 1
                values.append(self.value(numeric))
            self.expect(")")
            if len(values) > 1000:
                raise _db_error("ORA-01795: maximum number of expressions in a list is 1000")
            s = self.const(frozenset(v for v in values if v is not None))
            return f"({acc} is not None and {acc} {'not in' if neg else 'in'} {s})", None
        if self.kw("LIKE"):
            pattern = self.value(False)
            rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in str(pattern))
            r = self.const(re.compile(rx + r"\Z", re.S))
            return f"({acc} is not None and {'not ' if neg else ''}{r}.match({acc}))", None
        if neg:
            raise self.fail()
        kind, op = self.take()
        if kind != "op":
            raise self.fail()
        v = self.value(numeric)
        if v is None:
            return "False", None
        pyop = {"=": "==", "<>": "!=", "!=": "!="}.get(op, op)
        bound = (op, int(v)) if col == "SCN" and op in ("<", "<=", ">", ">=") else None
        return f"({acc} is not None and {acc} {pyop} {self.const(v)})", bound


# ---- LogMiner session, results, cursor, connection ---------------------------------------------------

@dataclass
class _Session:
    files: dict[int, LogFile] = field(default_factory=dict)  # file key -> log
    started: bool = False
    startscn: int = 0
    endscn: int = MAX_SCN
    options: frozenset[str] = frozenset()
    stale: dict[int, TableDef | None] = field(default_factory=dict)
    online: dict[int, int] = field(default_factory=dict)  # file key -> group, for files added by member name


@dataclass
class _Result:
    columns: list[str]
    rows: Iterable[tuple[Any, ...]] | None = None  # None: not a query
    rowcount: int = 0
    fault: _Fault | None = None


class SimulatedLob:
    """What a CLOB column fetches as (python-oracledb's ``LOB``): ``read()``, ``size()``, ``str()``."""

    def __init__(self, value: str) -> None:
        self._value = value

    def read(self, offset: int = 1, amount: int | None = None) -> str:
        end = None if amount is None else offset - 1 + amount
        return self._value[offset - 1:end]

    def size(self) -> int:
        return len(self._value)

    def __str__(self) -> str:
        return self._value


def _type_code(value: Any) -> str:
    if isinstance(value, (bool, int, float, Decimal)):
        return "DB_TYPE_NUMBER"
    if isinstance(value, dt.datetime):
        return "DB_TYPE_DATE"
    if isinstance(value, bytes):
        return "DB_TYPE_RAW"
    if isinstance(value, SimulatedLob):
        return "DB_TYPE_CLOB"
    return "DB_TYPE_VARCHAR"


_CONTENTS_TYPES = {"SCN": "DB_TYPE_NUMBER", "START_SCN": "DB_TYPE_NUMBER", "COMMIT_SCN": "DB_TYPE_NUMBER",
                   "TIMESTAMP": "DB_TYPE_DATE", "COMMIT_TIMESTAMP": "DB_TYPE_DATE", "OPERATION_CODE": "DB_TYPE_NUMBER",
                   "ROLLBACK": "DB_TYPE_NUMBER", "SSN": "DB_TYPE_NUMBER", "CSF": "DB_TYPE_NUMBER",
                   "THREAD#": "DB_TYPE_NUMBER", "XID": "DB_TYPE_RAW"}


class SimulatedCursor:
    """A DB-API cursor answering the miner's statements (see :class:`SimulatedConnection`)."""

    def __init__(self, connection: SimulatedConnection) -> None:
        self.connection = connection
        self.arraysize = 100
        self.prefetchrows = 2
        self.rowcount = -1
        self.description: list[tuple[Any, ...]] | None = None
        self.statement: str | None = None
        self._it: Iterator[tuple[Any, ...]] | None = None
        self._fault: _Fault | None = None
        self._fetched = 0
        self._closed = False

    def __enter__(self) -> SimulatedCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._it = None

    def _check(self) -> None:
        if self._closed:
            raise _db_error("DPY-1006: cursor is not open")
        self.connection._check()

    def execute(self, statement: str, parameters: Mapping[str, Any] | Sequence[Any] | None = None,
                **keyword_parameters: Any) -> SimulatedCursor | None:
        self._check()
        binds: dict[str, Any] = {}
        if isinstance(parameters, Mapping):
            binds.update({str(k).lstrip(":").lower(): v for k, v in parameters.items()})
        elif parameters is not None:
            names = list(dict.fromkeys(n.lower() for n in re.findall(r":(\w+)", statement)))
            binds.update(dict(zip(names, parameters)))
        binds.update({k.lstrip(":").lower(): v for k, v in keyword_parameters.items()})
        placeholders = {n.lower() for n in re.findall(r":(\w+)", re.sub(r"'(?:[^']|'')*'", "", statement))}
        for name in binds:
            if name not in placeholders:
                raise _db_error(f'DPY-4008: no bind placeholder named ":{name}" was found in the SQL text')
        self.statement = statement
        self._it, self._fault, self._fetched, self.description = None, None, 0, None
        result = self.connection._db_execute(statement, binds)
        if result.rows is None:
            self.rowcount = result.rowcount
            return None
        self.rowcount = 0
        types = dict(_CONTENTS_TYPES) if result.columns and result.columns[0] == "SCN" else {}
        rows = result.rows
        if not types and isinstance(rows, list) and rows:
            types = {c: _type_code(v) for c, v in zip(result.columns, rows[0])}
        self.description = [(c, types.get(c, "DB_TYPE_VARCHAR"), None, None, None, None, True) for c in result.columns]
        self._it = iter(rows)
        self._fault = result.fault
        return self

    def _fetch(self, n: int | None) -> list[tuple[Any, ...]]:
        self._check()
        if self._it is None:
            raise _db_error("DPY-1003: the executed statement does not return rows")
        rows = list(self._it) if n is None else list(itertools.islice(self._it, n))
        f = self._fault
        if f is not None and f.action is not None and f.after_rows is not None \
                and self._fetched + len(rows) > f.after_rows:
            self._fault = None
            f.action()
        elif f is not None and f.after_rows is not None and self._fetched + len(rows) > f.after_rows:
            self._it = None
            self.connection._raise(f.message)
        self._fetched += len(rows)
        self.rowcount += len(rows)
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._fetch(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        return self._fetch(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._fetch(None)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while True:
            rows = self._fetch(self.arraysize)
            if not rows:
                return
            yield from rows

    def setinputsizes(self, *args: Any, **kwargs: Any) -> None:
        return None


class SimulatedConnection:
    """A DB-API connection (one Oracle session) to a :class:`SimulatedOracle`.

    Holds a LogMiner session (``ADD_LOGFILE``/``START_LOGMNR``/``END_LOGMNR``), an implicit transaction
    for its own DML (the flush table), ``LOCK TABLE`` locks. A lost connection (an injected DPY-4011,
    ORA-03113...) rolls its transaction back and makes every later call raise ``DPY-1001``.
    """

    def __init__(self, db: SimulatedOracle, user: str, thread: int, container: str | None) -> None:
        self._db = db
        self.username = user
        self.thread = thread
        self.container = container
        self.autocommit = False
        self.call_timeout = 0
        self.stmtcachesize = 20
        self.outputtypehandler: Any = None
        self.inputtypehandler: Any = None
        self.module: str | None = None
        self.action: str | None = None
        self.client_identifier: str | None = None
        self.current_schema: str | None = None
        self.thin = True
        self.version = db.version
        self._open = True
        self._broken = False
        self._tx: SimulatedTransaction | None = None
        self._session = _Session()
        self._locked: set[_TableState] = set()

    def __enter__(self) -> SimulatedConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open:
            self.close()

    @property
    def logminer_files(self) -> list[LogFile]:
        return list(self._session.files.values())

    def _check(self) -> None:
        if not self._open:
            raise SimulatedOperationalError("DPY-1001: not connected to database")

    def _raise(self, message: str) -> None:
        err = _db_error(message)
        if isinstance(err, SimulatedOperationalError):
            self._drop()
        raise err

    def _drop(self) -> None:
        """The server side of a lost connection: roll back, end the LogMiner session, release locks."""
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()
        self._session = _Session()
        self._open = False
        self._broken = True

    def _release_locks(self) -> None:
        for state in self._locked:
            state.table_locks.discard(self)
        self._locked = set()

    def cursor(self) -> SimulatedCursor:
        self._check()
        return SimulatedCursor(self)

    def commit(self) -> None:
        self._check()
        fault = self._db._take_fault("COMMIT")
        if fault is not None:
            self._raise(fault.message)
        if self._tx is not None:
            self._tx.commit()
            self._tx = None
        self._release_locks()

    def rollback(self) -> None:
        self._check()
        fault = self._db._take_fault("ROLLBACK")
        if fault is not None:
            self._raise(fault.message)
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()

    def ping(self) -> None:
        self._check()
        fault = self._db._take_fault("PING")
        if fault is not None:
            self._raise(fault.message)

    def close(self) -> None:
        self._check()
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()
        self._session = _Session()
        self._open = False

    def _guard(self) -> None:
        if self._db.database_role == "LOGICAL STANDBY":
            raise _db_error("ORA-16224: Database Guard is enabled")

    def _transaction(self) -> SimulatedTransaction:
        self._guard()
        if self._tx is None or self._tx.state != "open":
            self._tx = self._db.begin(thread=self.thread, username=self.username, pdb=self.container)
        return self._tx

    # ---- dispatch ---------------------------------------------------------------------------------

    def _db_execute(self, statement: str, binds: dict[str, Any]) -> _Result:
        db = self._db
        norm = _normalise(statement)
        db.statements.append(norm)
        kind, groups = None, {}
        for name, rx in _TEMPLATES:
            m = rx.fullmatch(norm)
            if m is not None:
                kind, groups = name, m.groupdict()
                break
        if kind is None:
            m = _RE_CONTENTS.fullmatch(norm)
            if m is not None:
                kind, groups = "CONTENTS", m.groupdict()
        if kind is None:
            if norm.endswith(";") and not norm.upper().startswith(("BEGIN", "DECLARE")):
                raise _db_error("ORA-00933: SQL command not properly ended")
            raise UnknownStatementError(f"the LogMiner simulator does not answer this statement: {norm}")
        fault = db._take_fault(kind, norm)
        if fault is not None and fault.action is not None and fault.after_rows is None:
            fault.action()
            fault = None
        if fault is not None and fault.after_rows is None:
            self._raise(fault.message)
        result = getattr(self, f"_q_{kind.lower()}")(groups, binds)
        result.fault = fault
        return result

    def _bind(self, binds: Mapping[str, Any], name: str) -> Any:
        if name not in binds:
            raise _db_error(f'DPY-4010: a bind variable replacement value for placeholder ":{name}" was not provided')
        return binds[name]

    def _rows(self, columns_of: str, rows: list[tuple[Any, ...]]) -> _Result:
        return _Result(_select_names(getattr(Q, columns_of)), rows)

    def _q_current_scn(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        scn = db._scn
        db._advance(1, dt.timedelta(0))  # reading CURRENT_SCN consumes an SCN
        return self._rows("CURRENT_SCN", [(scn,)])

    def _q_database_info(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("DATABASE_INFO", [(db.name, db.log_mode, db.supplemental_min, db.supplemental_all, db.cdb)])

    def _q_version(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("VERSION", [(self._db.version,)])

    def _q_session_privileges(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_PRIVILEGES", [(p,) for p in self._db.privileges])

    def _q_session_roles(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_ROLES", [(r,) for r in self._db.roles])

    def _q_session_user(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_USER", [(self.username,)])

    def _q_max_string_size(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("MAX_STRING_SIZE", [(self._db.max_string_size,)])

    def _q_all_column_logging(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        rows = sorted((s.defn.owner, s.defn.name) for s in self._db._tables.values()
                      if s.defn is not None and s.table_all_logging)
        return self._rows("ALL_COLUMN_LOGGING", rows)

    def _q_tables(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        excluded = set(_literal_list(g["system_schemas"]))
        rows = [(d.owner, d.name) for d in self._db.tables() if d.organization != "IOT"] + list(_SYSTEM_TABLES)
        return self._rows("TABLES", sorted(r for r in rows if r[0] not in excluded))

    def _q_table_ddl(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name, owner = self._bind(b, "name"), self._bind(b, "owner")
        state = self._db._tables.get((owner, name))
        if state is None or state.defn is None:
            raise _db_error(f'ORA-31603: object "{name}" of type TABLE not found in schema "{owner}"')
        text = state.defn.metadata_ddl(state.table_all_logging)
        return self._rows("TABLE_DDL", [(SimulatedLob(text),)])

    def _q_lock_table(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        state = self._db._state(g["owner"], g["table"])
        state.table_locks.add(self)
        self._locked.add(state)
        return _Result([], None, 0)

    def _q_oldest_open_transaction(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("OLDEST_OPEN_TRANSACTION", [(self._db.oldest_open_scn(),)])

    def _q_threads(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("THREADS", [(t, th.status, th.enabled) for t, th in sorted(self._db._threads.items())])

    def _q_archive_destinations(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        rows = [(d.dest_id, d.dest_name) for d in sorted(self._db.archive_dests, key=lambda d: d.dest_id)
                if d.status == "VALID" and d.type == "LOCAL"]
        return self._rows("ARCHIVE_DESTINATIONS", rows)

    def _q_online_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        rows = []
        for t, th in sorted(db._threads.items()):
            for grp in th.groups:
                seq = th.group_seq.get(grp)
                member = db.member_name(grp)
                if seq is None:
                    rows.append((t, 0, 0, 0, "UNUSED", member))
                    continue
                log = th.logs[seq]
                if log is th.current:
                    status, nxt = "CURRENT", MAX_SCN
                else:
                    done = bool(log.archived) or db.log_mode != "ARCHIVELOG"
                    status, nxt = ("INACTIVE" if done else "ACTIVE"), log.next_change
                rows.append((t, seq, log.first_change, nxt, status, member))
        return self._rows("ONLINE_LOGS", sorted(rows, key=lambda r: (r[0], r[1])))

    def _q_archived_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest, lo = int(self._bind(b, "dest_id")), int(self._bind(b, "lo"))
        rows = [(log.thread, log.sequence, log.first_change, log.next_change, log.archived[dest])
                for log in self._db.logs() if dest in log.archived and dest not in log.deleted
                and log.next_change is not None and log.next_change > lo]
        return self._rows("ARCHIVED_LOGS", rows)

    def _q_oldest_archived_scn(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest = int(self._bind(b, "dest_id"))
        oldest: dict[int, int] = {}
        for log in self._db.logs():
            if dest in log.archived and dest not in log.deleted:
                oldest[log.thread] = min(oldest.get(log.thread, log.first_change), log.first_change)
        return self._rows("OLDEST_ARCHIVED_SCN", sorted(oldest.items()))

    def _q_scn_times(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("SCN_TIMES", [(db.scn_to_timestamp(int(self._bind(b, "lo"))),
                                         db.scn_to_timestamp(int(self._bind(b, "hi"))))])

    def _q_flush_table_exists(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name = self._bind(b, "name")
        n = sum(1 for d in self._db.tables() if d.owner == self.username and d.name == name)
        return self._rows("FLUSH_TABLE_EXISTS", [(n,)])

    def _q_flush_table_create(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        self._guard()
        owner, name = _table_name(g["table"], self.username)
        if self._tx is not None and self._tx.state == "open":  # DDL commits the session's transaction
            self._tx.commit()
            self._tx = None
        self._db.create_table(owner, name, [("LAST_SCN", "NUMBER(19,0)")], (), supplemental_all=False,
                              supplemental_pk=False, ddl_text=Q.FLUSH_TABLE_CREATE.format(table=g["table"]),
                              thread=self.thread, username=self.username, pdb=self.container)
        return _Result([], None, 0)

    def _q_flush_table_init(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        self._transaction().insert(owner, name, {"LAST_SCN": 0})
        return _Result([], None, 1)

    def _q_flush(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        scn = self._bind(b, "scn")
        state = self._db._state(owner, name)
        tx = self._transaction()
        rowids = list(state.rows)
        for rid in rowids:
            tx._update(owner, name, None, {"LAST_SCN": scn}, frozenset(), rowid=rid)
        return _Result([], None, len(rowids))

    def _q_add_logfile(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name = self._bind(b, "name")
        log = self._db._file_by_name(name)
        if log.key in self._session.files:
            raise _db_error(f"ORA-01289: cannot add duplicate logfile {name}")
        self._session.files[log.key] = log
        if name == self._db.member_name(log.group) and self._db.is_online(log):
            self._session.online[log.key] = log.group  # read from the group: it may be overwritten later
        return _Result([], None, 1)

    def _q_start_logmnr(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db, s = self._db, self._session
        options = set()
        for part in g["options"].split("+"):
            m = re.fullmatch(r"\s*(?:SYS\.)?DBMS_LOGMNR\.(\w+)\s*", part, re.I)
            if m is None:
                raise UnknownStatementError(f"unknown START_LOGMNR option {part.strip()!r}")
            options.add(m.group(1).upper())
        known = {"SKIP_CORRUPTION", "NO_SQL_DELIMITER", "NO_ROWID_IN_STMT", "DICT_FROM_ONLINE_CATALOG",
                 "DICT_FROM_REDO_LOGS", "DDL_DICT_TRACKING", "PRINT_PRETTY_SQL", "STRING_LITERALS_IN_STMT"}
        if "CONTINUOUS_MINE" in options:
            raise _db_error("ORA-44609: CONTINOUS_MINE is desupported for use with DBMS_LOGMNR.START_LOGMNR.")
        if options - known:
            raise UnknownStatementError(f"START_LOGMNR options not simulated: {sorted(options - known)}")
        if not s.files:
            raise _db_error("ORA-01292: no log file has been specified for the current LogMiner session")
        lo, hi = int(self._bind(b, "lo")), int(self._bind(b, "hi"))
        if hi < lo:
            raise _db_error("ORA-01281: SCN range specified is invalid")
        missing = [(log.thread, log.sequence) for log in db.logs() if log.covers(lo, hi) and log.key not in s.files]
        if missing:
            err = _db_error("ORA-01291: missing logfile")
            err.missing = missing  # type: ignore[attr-defined]
            raise err
        has_dictionary = any(f.dictionary and f.first_change <= lo for f in s.files.values())
        if "DICT_FROM_REDO_LOGS" in options and not has_dictionary:
            raise _db_error("ORA-01371: Complete LogMiner dictionary not found")
        if "DICT_FROM_REDO_LOGS" in options:  # DDL tracking reads every log of its thread from the dictionary on
            d = max((f for f in s.files.values() if f.dictionary and f.first_change <= lo),
                    key=lambda f: f.first_change)
            gaps = [(log.thread, log.sequence) for log in db.logs(d.thread) if log.covers(d.first_change, hi)
                    and log.key not in s.files]
            if gaps:
                err = _db_error("ORA-01291: missing logfile")
                err.missing = gaps  # type: ignore[attr-defined]
                raise err
        s.started, s.startscn, s.endscn, s.options = True, lo, hi, frozenset(options)
        s.stale = {}
        if db.track_dictionary and "DICT_FROM_REDO_LOGS" not in options:
            for state in db._objects:
                if len(state.versions) > 1:
                    s.stale[state.obj_id] = state.defn
        return _Result([], None, 0)

    def _q_end_logmnr(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        if not self._session.started and not self._session.files:
            raise _db_error("ORA-01307: no LogMiner session is currently active")
        self._session = _Session()
        return _Result([], None, 0)

    def _q_build_dictionary(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        db._advance(10, db.time_step)
        db._threads[self.thread].current.dictionary = True
        return _Result([], None, 0)

    def _q_database_role(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("DATABASE_ROLE", [(db.dbid, db.database_role, db.open_mode, db.resetlogs_change)])

    def _q_dictionary_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest, lo = int(self._bind(b, "dest_id")), int(self._bind(b, "lo"))
        rows = [(log.first_change, log.next_change, "YES", "YES") for log in self._db.logs()
                if log.dictionary and dest in log.archived and dest not in log.deleted
                and log.next_change is not None and log.next_change <= lo]
        return self._rows("DICTIONARY_LOGS", sorted(rows, key=lambda r: -r[0]))

    def _q_dictionary_claim_create(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        self._guard()
        owner, name = _table_name(g["table"], self.username)
        if (owner, name) in self._db._tables:
            raise _db_error("ORA-00955: name is already used by an existing object")
        if self._tx is not None and self._tx.state == "open":  # DDL commits the session's transaction
            self._tx.commit()
            self._tx = None
        self._db.create_table(owner, name, [("SLOT", "NUMBER(1,0)"), ("PIPELINE", "VARCHAR2(1000)")], ["SLOT"],
                              supplemental_all=False, supplemental_pk=False,
                              ddl_text=Q.DICTIONARY_CLAIM_CREATE.format(table=g["table"]), thread=self.thread,
                              username=self.username, pdb=self.container)
        return _Result([], None, 0)

    def _q_dictionary_claim_read(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        rows = [(r["PIPELINE"],) for r in self._db.rows(owner, name) if r["SLOT"] == 1]
        return self._rows("DICTIONARY_CLAIM_READ", rows)

    def _q_dictionary_claim_insert(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        self._transaction().insert(owner, name, {"SLOT": 1, "PIPELINE": self._bind(b, "pipeline")})
        return _Result([], None, 1)

    def _q_contents(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        s = self._session
        statement = f"SELECT {g['select']} FROM V$LOGMNR_CONTENTS WHERE {g['where']}"
        items = [re.sub(r"\s+", "", i).upper() for i in _split_top(g["select"])]
        names, exprs = [], []
        for item in items:
            if item == "RAWTOHEX(XID)":
                exprs.append(f"r[{I_XID}]")
            elif item == "XID":
                exprs.append(f"bytes.fromhex(r[{I_XID}]) if r[{I_XID}] is not None else None")
            elif item == "SRC_CON_NAME":
                exprs.append("c")
            elif item in COLUMNS:
                exprs.append(f"r[{COLUMNS.index(item)}]")
            else:
                raise UnknownStatementError(f"V$LOGMNR_CONTENTS column {item} is not simulated: {statement}")
            names.append(item)
        proj = None
        if exprs != [f"r[{i}]" for i in range(len(COLUMNS))]:
            proj = eval("lambda r, c: (" + ", ".join(exprs) + ",)", {"bytes": bytes})
        wc = _WhereCompiler(g["where"] or "", b, statement)
        pred = wc.compile() if g["where"] else None
        if not s.started:
            raise _db_error("ORA-01306: dbms_logmnr.start_logmnr() must be invoked before selecting from "
                            "v$logmnr_contents")
        low = s.startscn - 1 if wc.lower is None else max(wc.lower[0], s.startscn - 1)
        high = s.endscn if wc.upper is None else min(wc.upper[0], s.endscn)
        return _Result(names, self._contents(low, high, pred, proj))

    def _contents(self, low: int, high: int, pred: Callable[..., bool] | None,
                  proj: Callable[..., tuple[Any, ...]] | None) -> Iterator[tuple[Any, ...]]:
        """The matching rows, as of now (the range, files and LGWR position are fixed here)."""
        db, s = self._db, self._session
        recs = db._recs
        a, b = bisect.bisect_right(db._scns, low), bisect.bisect_right(db._scns, high)
        files = frozenset(s.files)
        # Files added by an online member name: (group -> sequence map, group, sequence, member).
        online = {k: (db._threads[s.files[k].thread].group_seq, grp, s.files[k].sequence, db.member_name(grp))
                  for k, grp in s.online.items()}
        flushed = db._flushed_eid
        stale = s.stale
        delimiter = "NO_SQL_DELIMITER" not in s.options
        rowid_in = "NO_ROWID_IN_STMT" not in s.options
        plain = not stale and not delimiter and not rowid_in

        def rows() -> Iterator[tuple[Any, ...]]:
            for i in range(a, b):
                rec = recs[i]
                if rec[2] >= flushed or rec[3] not in files:
                    continue
                if online:
                    w = online.get(rec[3])
                    if w is not None and w[0].get(w[1]) != w[2]:  # the group was reused: another sequence
                        raise _db_error(f"ORA-00310: archived log contains sequence {w[0].get(w[1])}; sequence "
                                        f"{w[2]} required\nORA-00334: archived log: '{w[3]}'")
                if plain:
                    out = rec[0]
                    if pred is None or pred(out, rec[4]):
                        yield out if proj is None else proj(out, rec[4])
                    continue
                outs = [rec[0]]
                alt = rec[5]
                if stale and alt is not None and alt[0][0] in stale:
                    current = stale[alt[0][0]]
                    if current is None or current.version != alt[0][1]:
                        outs = db._restale(rec, current)
                for out in outs:
                    out = _decorate(out, delimiter, rowid_in)
                    if pred is None or pred(out, rec[4]):
                        yield out if proj is None else proj(out, rec[4])

        return rows()


def _decorate(out: tuple[Any, ...], delimiter: bool, rowid_in: bool) -> tuple[Any, ...]:
    """Without NO_ROWID_IN_STMT / NO_SQL_DELIMITER LogMiner adds ``and ROWID = '...'`` and ``;``."""
    if out[I_CSF] or out[I_SQL_REDO] is None or out[I_OP] not in (1, 2, 3, 5):
        return out
    sql = out[I_SQL_REDO]
    if rowid_in and out[I_OP] in (2, 3):
        sql += f" and ROWID = '{out[I_ROW_ID]}'" if " where " in sql else f" where ROWID = '{out[I_ROW_ID]}'"
    if delimiter:
        sql += ";"
    o = list(out)
    o[I_SQL_REDO] = sql
    return tuple(o)


# ---- workload -------------------------------------------------------------------------------------------

_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.-_"
_SPICY = ["'", "''", "||", "\\", '"', "%", "\n", "\t"]
_UNICODE = ["é", "ß", "ü", "ñ", "Ω", "日本", "中文", "😀", "€", "ø", "Ä"]
_OFFSETS = ["+00:00", "+02:00", "-05:30", "+05:45", "-08:00", "+14:00"]


def _rand_text(rng: random.Random, n: int, unicode: bool) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        r = rng.random()
        if r < 0.08:
            piece = rng.choice(_SPICY)
        elif unicode and r < 0.3:
            piece = rng.choice(_UNICODE)
        else:
            piece = "".join(rng.choices(_ASCII, k=rng.randint(1, 12)))
        out.append(piece)
        size += len(piece)
    text = "".join(out)[:n]
    return text.strip("\n") or "x"


def random_value(rng: random.Random, t: OracleType, *, lob_long: bool = False) -> Any:
    """A random value valid for the type (quotes, ``||``, backslashes, non-ASCII, long strings...)."""
    k = t.kind
    if k == "NUMBER":
        if t.precision is not None and t.scale is not None:
            digits = min(t.precision, 15)
            n = rng.randint(-(10 ** digits - 1), 10 ** digits - 1)
            if rng.random() < 0.2:
                n = rng.randint(-99, 99)
            return Decimal(n).scaleb(-t.scale) if t.scale > 0 else n * 10 ** (-t.scale)
        return rng.choice([rng.randint(-10**20, 10**20), Decimal("0.000123"), Decimal("-12.5"), Decimal("0.5"),
                           Decimal(f"{rng.randint(0, 10**8)}.{rng.randint(0, 10**12):012d}"), 0, 10**30])
    if k == "FLOAT":
        return Decimal(f"{rng.uniform(-1e6, 1e6):.6f}")
    if k in ("BINARY_DOUBLE", "BINARY_FLOAT"):
        v = rng.choice([rng.uniform(-1e6, 1e6), 1.5, -2.25e-10, 1e21, 0.1, 0.0, 123456.789])
        return _float32(v) if k == "BINARY_FLOAT" else v
    if k in ("VARCHAR2", "NVARCHAR2"):
        n = t.length or 30
        size = rng.randint(1, min(n, 40))
        if n >= 1000 and rng.random() < 0.05:
            size = n
        return _rand_text(rng, size, unicode=(k == "NVARCHAR2" or rng.random() < 0.2))
    if k in ("CHAR", "NCHAR"):
        return "".join(rng.choice("ABCDEFGH") for _ in range(rng.randint(1, t.length or 1)))
    if k in ("CLOB", "NCLOB"):
        size = rng.randint(1200, 5000) if lob_long else rng.randint(1, 200)
        return _rand_text(rng, size, unicode=rng.random() < 0.3)
    if k == "BLOB":
        return rng.randbytes(rng.randint(1100, 4000) if lob_long else rng.randint(1, 100))
    if k == "RAW":
        return rng.randbytes(rng.randint(1, t.length or 16))
    if k == "DATE":
        return dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
    if k in ("TIMESTAMP", "TSLTZ"):
        base = dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
        p = t.precision if t.precision is not None else 6
        if p > 6:
            return f"{_fmt_date(base)}.{rng.randint(0, 10**9 - 1):09d}"
        return base.replace(microsecond=rng.choice([0, rng.randint(0, 999_999)]))
    if k == "TSTZ":
        base = dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
        return f"{_fmt_date(base)}.{rng.randint(0, 999_999):06d} {rng.choice(_OFFSETS)}"
    if k == "IYM":
        return f"{rng.choice('+-')}{rng.randint(0, 99):02d}-{rng.randint(0, 11):02d}"
    if k == "IDS":
        return (f"{rng.choice('+-')}{rng.randint(0, 99):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                f"{rng.randint(0, 59):02d}.{rng.choice([0, 500000, rng.randint(0, 999_999)]):06d}")
    return None


def create_typed_tables(db: SimulatedOracle, owner: str = "APP", *, lob: bool = True) -> list[tuple[str, str]]:
    """A few tables covering the interesting Oracle types; returns their ``(owner, table)``."""
    db.create_table(owner, "ACCOUNTS", [
        ("ID", "NUMBER(10)"), ("AMOUNT", "NUMBER(12,2)"), ("RATIO", "NUMBER"), ("NAME", "VARCHAR2(100)"),
        ("LABEL", "NVARCHAR2(50)"), ("CODE", "CHAR(5)"), ("NOTE", "VARCHAR2(4000)")], ["ID"])
    db.create_table(owner, "EVENTS", [
        ("ID", "NUMBER(10)"), ("HAPPENED", "DATE"), ("TS6", "TIMESTAMP(6)"), ("TS9", "TIMESTAMP(9)"),
        ("TSTZ", "TIMESTAMP(6) WITH TIME ZONE"), ("LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("HASH", "RAW(16)"),
        ("SCORE", "BINARY_DOUBLE"), ("YM", "INTERVAL YEAR(2) TO MONTH"), ("DS", "INTERVAL DAY(2) TO SECOND(6)")],
        ["ID"])
    db.create_table(owner, "ORDER_LINES", [
        ("ORDER_ID", "NUMBER(10)"), ("LINE_NO", "NUMBER(5)"), ("QTY", "NUMBER(10)"), ("PRICE", "NUMBER(12,2)"),
        ("SKU", "VARCHAR2(30)")], ["ORDER_ID", "LINE_NO"])
    tables = [(owner, "ACCOUNTS"), (owner, "EVENTS"), (owner, "ORDER_LINES")]
    if lob:
        db.create_table(owner, "DOCS", [("ID", "NUMBER(10)"), ("TITLE", "VARCHAR2(200)"), ("BODY", "CLOB"),
                                        ("DATA", "BLOB")], ["ID"])
        tables.append((owner, "DOCS"))
    return tables


@dataclass
class WorkloadStats:
    transactions: int = 0
    committed: int = 0
    rolled_back: int = 0
    partial_rollbacks: int = 0
    statement_rollbacks: int = 0
    changes: int = 0
    pk_updates: int = 0
    reinserts: int = 0
    lob_writes: int = 0
    long_transactions: int = 0
    log_switches: int = 0
    scn_jumps: int = 0
    same_scn_commits: int = 0
    ddl: int = 0
    lock_conflicts: int = 0
    commit_scns: list[int] = field(default_factory=list)


@dataclass
class _Work:
    tx: SimulatedTransaction
    budget: int
    long: bool


class _Keys:
    """Known keys per table, sampled at random (stale entries dropped lazily)."""

    def __init__(self, db: SimulatedOracle, tables: Sequence[tuple[str, str]]) -> None:
        self.keys: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self.next: dict[tuple[str, str], int] = {}
        for t in tables:
            state = db._state(*t)
            self.keys[t] = list(state.pk_index)
            ints = [k[0] for k in state.pk_index if k and isinstance(k[0], int)]
            self.next[t] = max(ints, default=0) + 1

    def pick(self, rng: random.Random, db: SimulatedOracle, t: tuple[str, str],
             tx: SimulatedTransaction) -> tuple[Any, ...] | None:
        keys = self.keys[t]
        state = db._state(*t)
        for _ in range(6):
            if not keys:
                return None
            i = rng.randrange(len(keys))
            k = keys[i]
            rid = state.pk_index.get(k)
            if rid is None:
                holder = state.key_locks.get(k)
                if holder is None:
                    keys[i] = keys[-1]
                    keys.pop()
                continue
            holder = state.locks.get(rid) or state.key_locks.get(k)
            if holder is None or holder is tx:
                return k
        return None


def random_workload(
    db: SimulatedOracle,
    rng: random.Random,
    tables: Sequence[tuple[str, str]],
    *,
    transactions: int = 200,
    max_open: int = 6,
    p_rollback: float = 0.1,
    p_partial_rollback: float = 0.1,
    long_txn_every: int = 50,
    lob: bool = True,
    ddl: bool = False,
    threads: Sequence[int] | None = None,
    changes_per_txn: tuple[int, int] = (1, 6),
    p_switch: float = 0.02,
    p_archive: float = 0.5,
    p_jump: float = 0.01,
    p_pk_update: float = 0.05,
    p_reinsert: float = 0.05,
    p_statement_rollback: float = 0.02,
    p_same_scn_commit: float = 0.05,
    p_ddl: float = 0.01,
    usernames: Sequence[str] = ("APP", "BATCH"),
) -> WorkloadStats:
    """Drive ``tables`` (primary keys whose first column is numeric) with interleaved transactions.

    Deterministic for a given ``rng`` state and database. Several transactions are open at once across
    ``threads`` (default: all); some roll back, some roll back to a savepoint, every
    ``long_txn_every``-th one stays open long; changes include primary-key updates, delete + re-insert of
    one key, statement-level rollbacks, LOB writes (``lob``), ``ADD COLUMN`` DDL (``ddl``); logs switch
    and get archived along the way; SCNs jump now and then; some commits share one SCN.
    """
    stats = WorkloadStats()
    thread_list = list(threads) if threads is not None else sorted(db._threads)
    keys = _Keys(db, tables)
    open_: list[_Work] = []
    started = 0
    extra_cols = 0
    while started < transactions or open_:
        if started < transactions and len(open_) < max_open and (not open_ or rng.random() < 0.35):
            tx = db.begin(thread=rng.choice(thread_list), username=rng.choice(list(usernames)))
            long = bool(long_txn_every) and started % long_txn_every == long_txn_every - 1
            budget = rng.randint(*changes_per_txn) * (6 if long else 1)
            open_.append(_Work(tx, budget, long))
            stats.transactions += 1
            stats.long_transactions += long
            started += 1
        else:
            w = rng.choice(open_)
            if w.long and rng.random() < 0.85 and (len(open_) > 1 or started < transactions):
                pass  # long transactions advance slowly
            elif w.budget > 0:
                w.budget -= 1
                _random_change(db, rng, w.tx, tables, keys, stats, lob, p_pk_update, p_reinsert,
                               p_partial_rollback, p_statement_rollback)
            else:
                ready = [o for o in open_ if o.budget <= 0 and not o.long and o is not w]
                if ready and rng.random() < p_same_scn_commit:
                    group = [w] + ready[: rng.randint(1, min(3, len(ready)))]
                    with db.hold_scn():
                        for o in group:
                            scn = o.tx.commit()
                            if scn is not None:
                                stats.commit_scns.append(scn)
                            stats.committed += 1
                            open_.remove(o)
                    stats.same_scn_commits += len(group)
                elif rng.random() < p_rollback:
                    w.tx.rollback()
                    stats.rolled_back += 1
                    open_.remove(w)
                else:
                    scn = w.tx.commit()
                    if scn is not None:
                        stats.commit_scns.append(scn)
                    stats.committed += 1
                    open_.remove(w)
        if rng.random() < p_switch:
            db.switch_log(rng.choice(thread_list))
            stats.log_switches += 1
            if rng.random() < p_archive:
                db.archive_logs()
        if rng.random() < p_jump:
            db.jump_scn(rng.randint(1_000_000, 3_000_000))
            stats.scn_jumps += 1
        if ddl and rng.random() < p_ddl:
            t = rng.choice(list(tables))
            state = db._state(*t)
            if not (state.locks or state.key_locks or state.table_locks):
                extra_cols += 1
                db.add_column(t[0], t[1], f"EXTRA_{extra_cols}", rng.choice(["VARCHAR2(20)", "NUMBER", "DATE"]))
                stats.ddl += 1
    return stats


def _new_row(rng: random.Random, defn: TableDef, keys: _Keys, t: tuple[str, str], lob: bool) -> dict[str, Any]:
    n = keys.next[t]
    keys.next[t] = n + 1
    row: dict[str, Any] = {}
    for i, c in enumerate(defn.columns):
        if c.name in defn.primary_key:
            row[c.name] = n if c.name == defn.primary_key[0] else (1 + n % 7 if c.type.kind == "NUMBER"
                                                                   else random_value(rng, c.type))
        elif (c.type.is_lob and not lob) or (rng.random() < 0.1 and i > 0):
            row[c.name] = None
        else:
            row[c.name] = random_value(rng, c.type, lob_long=lob and rng.random() < 0.3)
    return row


def _random_change(db: SimulatedOracle, rng: random.Random, tx: SimulatedTransaction, tables: Sequence[tuple[str, str]],
                   keys: _Keys, stats: WorkloadStats, lob: bool, p_pk_update: float, p_reinsert: float,
                   p_partial: float, p_stmt: float) -> None:
    t = rng.choice(list(tables))
    defn = db.table(*t)
    pk = defn.primary_key

    def key_dict(k: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(pk, k))

    def insert() -> None:
        row = _new_row(rng, defn, keys, t, lob)
        tx.insert(t[0], t[1], row)
        keys.keys[t].append(defn.key_of(store_row(defn, row)))
        stats.changes += 1

    def update() -> None:
        k = keys.pick(rng, db, t, tx)
        if k is None:
            return insert()
        cols = [c for c in defn.columns if c.name not in pk and (lob or not c.type.is_lob)]
        chosen = rng.sample(cols, k=min(len(cols), rng.randint(1, 3))) if cols else []
        tx.update(t[0], t[1], key_dict(k), {c.name: (None if rng.random() < 0.1 else random_value(
            rng, c.type, lob_long=lob and rng.random() < 0.3)) for c in chosen})
        stats.changes += 1

    try:
        r = rng.random()
        if r < p_partial:
            tx.savepoint("SP1")
            for _ in range(rng.randint(1, 3)):
                rng.choice([insert, update])()
            tx.rollback_to("SP1")
            stats.partial_rollbacks += 1
        elif r < p_partial + p_stmt:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                row = db._state(*t).rows[db._state(*t).pk_index[k]]
                tx.failed_insert(t[0], t[1], row)
                stats.statement_rollbacks += 1
        elif r < p_partial + p_stmt + p_pk_update:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                n = keys.next[t]
                keys.next[t] = n + 1
                tx.update(t[0], t[1], key_dict(k), {pk[0]: n})
                keys.keys[t].append((n,) + tuple(k[1:]))
                stats.pk_updates += 1
                stats.changes += 1
        elif r < p_partial + p_stmt + p_pk_update + p_reinsert:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                tx.delete(t[0], t[1], key_dict(k))
                row = _new_row(rng, defn, keys, t, lob)
                row.update(key_dict(k))
                tx.insert(t[0], t[1], row)
                stats.reinserts += 1
                stats.changes += 2
        elif lob and r < 0.45 and any(c.type.is_lob for c in defn.columns):
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                c = rng.choice([c for c in defn.columns if c.type.is_lob])
                tx.lob_write(t[0], t[1], key_dict(k), c.name, random_value(rng, c.type, lob_long=rng.random() < 0.6))
                stats.lob_writes += 1
                stats.changes += 1
        elif r < 0.6:
            insert()
        elif r < 0.9:
            update()
        else:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                tx.delete(t[0], t[1], key_dict(k))
                stats.changes += 1
    except RowLockedError:
        stats.lock_conflicts += 1


def store_row(defn: TableDef, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` normalised per column type (as the table stores it)."""
    return {c.name: store_value(c.type, row.get(c.name)) for c in defn.columns}
