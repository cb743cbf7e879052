"""Column types and values of the emulated Db2: how a value is stored so that the JDBC reads return what
Db2 and JCC return for the source's read expressions, and Db2's errors."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

EPOCH = dt.datetime(1970, 1, 1)
JDBC_DRIVER = "cdclake.testing.SchemaFilesDriver"

class EmulatorError(Exception):
    """A Db2 error as ``ibm_db_dbi`` raises it: the CLI message with its SQLSTATE and SQLCODE."""

    def __init__(self, sqlcode: int, sqlstate: str, text: str) -> None:
        self.sqlcode, self.sqlstate = sqlcode, sqlstate
        code = f"SQL{abs(sqlcode):04d}N"
        super().__init__(f"[IBM][CLI Driver][DB2/LINUXX8664] {code}  {text}  SQLSTATE={sqlstate} SQLCODE={sqlcode}")


# ---- column types -----------------------------------------------------------------------------------------

_TYPE = re.compile(r"^\s*([A-Z ]+?)\s*(?:\(\s*(\d+)([KMG]?)\s*(?:,\s*(\d+)\s*)?\))?\s*(FOR BIT DATA)?\s*$",
                   re.I)


@dataclass(frozen=True)
class ColumnType:
    """A column as ``SYSCAT.COLUMNS`` describes it."""

    typename: str  # SYSCAT.COLUMNS.TYPENAME: INTEGER, DECIMAL, VARCHAR, TIMESTAMP, ...
    length: int
    scale: int
    bit_data: bool = False

    @property
    def codepage(self) -> int:
        text = self.typename in ("CHARACTER", "VARCHAR", "LONG VARCHAR", "CLOB")
        graphic = self.typename in ("GRAPHIC", "VARGRAPHIC", "DBCLOB")
        return 0 if self.bit_data or not (text or graphic) else (1200 if graphic else 1208)

    def ddl(self) -> str:
        t = self.typename
        if t in ("DECIMAL",):
            return f"DECIMAL({self.length},{self.scale})"
        if t == "DECFLOAT":
            return f"DECFLOAT({34 if self.length >= 16 else 16})"
        if t == "TIMESTAMP":
            return f"TIMESTAMP({self.scale})"
        if t in ("CHARACTER", "VARCHAR", "GRAPHIC", "VARGRAPHIC", "BINARY", "VARBINARY", "CLOB", "DBCLOB", "BLOB"):
            name = "CHAR" if t == "CHARACTER" else t
            return f"{name}({self.length})" + (" FOR BIT DATA" if self.bit_data else "")
        return t


def parse_type(text: str) -> ColumnType:
    """``VARCHAR(20)``, ``DECIMAL(10,2)``, ``TIMESTAMP(9)``, ``CHAR(16) FOR BIT DATA``, ``DECFLOAT(16)``..."""
    m = _TYPE.match(text.upper())
    if not m:
        raise ValueError(f"not a Db2 column type: {text!r}")
    name, a, unit, b, bits = m.group(1).strip(), m.group(2), (m.group(3) or "").upper(), m.group(4), bool(m.group(5))
    if unit:
        a = str(int(a) * {"K": 1024, "M": 1024**2, "G": 1024**3}[unit])
    name = {"CHAR": "CHARACTER", "INT": "INTEGER", "NUMERIC": "DECIMAL", "DEC": "DECIMAL", "FLOAT": "DOUBLE",
            "DOUBLE PRECISION": "DOUBLE"}.get(name, name)
    if name == "DECIMAL":
        return ColumnType(name, int(a or 5), int(b or 0))
    if name == "DECFLOAT":
        return ColumnType(name, 8 if a == "16" else 16, 0)
    if name == "TIMESTAMP":
        return ColumnType(name, 10 if a == "0" else 11 + int(a or 6) if a else 26, int(6 if a is None else a))
    if name in ("CHARACTER", "GRAPHIC", "BINARY"):
        return ColumnType(name, int(a or 1), 0, bits)
    if name in ("VARCHAR", "VARGRAPHIC", "VARBINARY"):
        if a is None:
            raise ValueError(f"{name} needs a length: {text!r}")
        return ColumnType(name, int(a), 0, bits)
    if name in ("CLOB", "DBCLOB", "BLOB"):
        return ColumnType(name, int(a or 1048576), 0)
    sizes = {"SMALLINT": 2, "INTEGER": 4, "BIGINT": 8, "REAL": 4, "DOUBLE": 8, "DATE": 4, "TIME": 3, "XML": 0,
             "BOOLEAN": 1}
    if name not in sizes:
        raise ValueError(f"the emulator does not know type {text!r}")
    return ColumnType(name, sizes[name], 0)


def store(ctype: ColumnType, value: Any) -> Any:
    """A Python value as the emulator's SQLite keeps it (what the JDBC read of the column must return)."""
    if value is None:
        return None
    t = ctype.typename
    if t in ("SMALLINT", "INTEGER", "BIGINT"):
        return int(value)
    if t == "DECIMAL":
        q = Decimal(value).quantize(Decimal(1).scaleb(-ctype.scale), context=Context(prec=40))
        return f"{q:f}"
    if t == "DECFLOAT":
        return str(value)
    if t in ("REAL", "DOUBLE"):
        return float(value)
    if ctype.bit_data or t in ("BINARY", "VARBINARY", "BLOB"):
        raw = bytes(value)
        return raw.ljust(ctype.length, b"\x00") if t == "BINARY" else (
            raw.ljust(ctype.length, b" ") if t == "CHARACTER" else raw)
    if t in ("CHARACTER", "GRAPHIC"):
        return str(value).ljust(ctype.length)
    if t == "DATE":
        return hybrid_days(value) * 86_400_000
    if t == "TIME":
        return int((dt.datetime.combine(EPOCH.date(), value) - EPOCH).total_seconds() * 1000)
    if t == "TIMESTAMP":
        return db2_timestamp_text(value, ctype.scale)
    return str(value)


_GREGORIAN_START = dt.date(1582, 10, 15)
_EPOCH_JDN = 2_440_588


def hybrid_days(value: dt.date) -> int:
    """Days since 1970-01-01 of ``value``'s year-month-day in the calendar ``java.sql.Date`` uses (Julian before
    1582-10-15): what JCC's ``getDate`` returns for a Db2 DATE, which Spark then rebases to the same fields."""
    if value >= _GREGORIAN_START:
        return (value - EPOCH.date()).days
    a = (14 - value.month) // 12
    y, m = value.year + 4800 - a, value.month + 12 * a - 3
    return value.day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - _EPOCH_JDN


def date_from_hybrid_days(days: int) -> dt.date:
    """Inverse of :func:`hybrid_days`."""
    gregorian = EPOCH.date() + dt.timedelta(days=days)
    if gregorian >= _GREGORIAN_START:
        return gregorian
    c = days + _EPOCH_JDN + 32082
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return dt.date(d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1)


def db2_timestamp_text(value: Any, scale: int) -> str:
    """Db2's ``CAST(ts AS VARCHAR)`` text: ``yyyy-mm-dd-hh.mm.ss[.f...]`` with ``scale`` fraction digits.
    ``value``: a datetime, or ISO text with up to 12 fraction digits."""
    if isinstance(value, dt.datetime):
        head, frac = value.strftime("%Y-%m-%d-%H.%M.%S"), f"{value.microsecond:06d}"
    else:
        m = re.fullmatch(r"(\d{4}-\d\d-\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,12}))?", str(value))
        if not m:
            raise ValueError(f"not a timestamp: {value!r}")
        head, frac = f"{m.group(1)}-{m.group(2)}.{m.group(3)}.{m.group(4)}", m.group(5) or ""
    frac = (frac + "0" * 12)[:scale]
    return head + (f".{frac}" if scale else "")


def sqlite_type(ctype: ColumnType) -> str:
    t = ctype.typename
    if t in ("SMALLINT", "INTEGER", "BIGINT", "DATE", "TIME"):
        return "INTEGER"
    if t in ("REAL", "DOUBLE"):
        return "REAL"
    if ctype.bit_data or t in ("BINARY", "VARBINARY", "BLOB"):
        return "BLOB"
    return "TEXT"
