"""Oracle column types, and values: stored (as Oracle keeps them), rendered into SQL_REDO, canonical, internal bytes."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from cdclake.testing.logminer_sim.errors import _db_error

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


# ---- statement text -------------------------------------------------------------------------------

def _normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()
