"""Oracle column types: Delta type, canonical value, snapshot SELECT and SQL_REDO value decoding.

Every Oracle column travels as a *canonical string* (``canonical_type`` is ``STRING`` for all of
them) that both capture paths produce:

* the snapshot reads ``snapshot_select_sql(column)`` from a flashback query over JDBC; for the few
  types JDBC returns as binary or floating point, ``snapshot_fixup_sql(column, expr)`` finishes the
  canonical string in Spark (hex of bytes, text of IEEE floats, ISO form of intervals);
* the LogMiner path turns what ``redo.parse_redo`` produced (``None``, ``str`` or
  ``redo.UNAVAILABLE``; see ``docs/oracle-design.md``) into the canonical string with
  ``canonical_from_redo`` — per value, in Spark executors, so :meth:`OracleTypeMapper.converter`
  builds one small function per column up front.

``to_delta_sql`` then converts the canonical string to the Delta type in Spark (ANSI mode). The
mapping and every policy behind it are in ``docs/types-oracle.md``.

>>> c = column_from_oracle("AMOUNT", "number(10, 2)", nullable=False)
>>> c.source_type, c.spark_type, OracleTypeMapper().canonical_type(c)
('NUMBER(10,2)', 'DECIMAL(10,2)', 'STRING')
>>> column_from_oracle("N", "NUMBER", data_precision=None, data_scale=0).spark_type  # INTEGER
'DECIMAL(38,0)'
>>> OracleTypeMapper().to_delta_sql(c, "v")
'CAST(v AS DECIMAL(10,2))'
>>> print(OracleTypeMapper().snapshot_select_sql(column_from_oracle("D", "DATE")))
LTRIM(TO_CHAR("D", 'SYYYY-MM-DD"T"HH24:MI:SS'), ' +')
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from decimal import Context, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from cdclake.schema import Column
from cdclake.spi.types import TypeMapper

# Delta type of NUMBER without precision (and FLOAT(p), REAL, DOUBLE PRECISION): variable scale has
# no Spark equivalent, so a fixed DECIMAL(38, s) is the policy (values round to 10 decimals).
VARIABLE_NUMBER_SCALE = 10
# Variable-scale NUMBER/FLOAT values (any scale, up to 40 digits) fit no Spark decimal: exact text.
VARIABLE_NUMBER_SPARK = "STRING"

_LOBS = {"CLOB", "NCLOB", "BLOB", "XMLTYPE"}
_TEXTS = {"CHAR", "NCHAR", "VARCHAR2", "NVARCHAR2", "CLOB", "NCLOB", "LONG", "XMLTYPE", "ROWID", "UROWID"}
_BINARIES = {"RAW", "LONG RAW", "BLOB"}
# Types LogMiner never supplies a value for ("Unsupported Type" in SQL_REDO): always unavailable.
_UNSUPPORTED = {"BFILE", "JSON", "VECTOR", "OBJECT"}
_INTEGER_SPARK = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
_NUMBER_NLS = "'NLS_NUMERIC_CHARACTERS=''.,'''"

# Type spellings -> (base, implied args). Aliases resolve to what the data dictionary stores.
_CHAR_ALIASES = {
    "CHAR": "CHAR",
    "CHARACTER": "CHAR",
    "NCHAR": "NCHAR",
    "NATIONAL CHAR": "NCHAR",
    "NATIONAL CHARACTER": "NCHAR",
    "VARCHAR2": "VARCHAR2",
    "VARCHAR": "VARCHAR2",
    "CHAR VARYING": "VARCHAR2",
    "CHARACTER VARYING": "VARCHAR2",
    "NVARCHAR2": "NVARCHAR2",
    "NCHAR VARYING": "NVARCHAR2",
    "NATIONAL CHAR VARYING": "NVARCHAR2",
    "NATIONAL CHARACTER VARYING": "NVARCHAR2",
}
_PLAIN = {
    "BINARY_FLOAT": "BINARY_FLOAT",
    "BINARY_DOUBLE": "BINARY_DOUBLE",
    "DATE": "DATE",
    "CLOB": "CLOB",
    "NCLOB": "NCLOB",
    "BLOB": "BLOB",
    "BFILE": "BFILE",
    "LONG": "LONG",
    "LONG RAW": "LONG RAW",
    "ROWID": "ROWID",
    "XMLTYPE": "XMLTYPE",
    "SYS.XMLTYPE": "XMLTYPE",
    "PUBLIC.XMLTYPE": "XMLTYPE",
    "JSON": "JSON",
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
}

_RE_NUMBER = re.compile(r"(NUMBER|DECIMAL|NUMERIC|DEC)(?:\((\*|\d+)(?:,(-?\d+))?\))?")
_RE_FLOAT = re.compile(r"FLOAT(?:\((\d+)\))?")
_RE_TIMESTAMP = re.compile(r"TIMESTAMP(?:\((\d)\))?( WITH TIME ZONE| WITH LOCAL TIME ZONE)?")
_RE_YM = re.compile(r"INTERVAL YEAR(?:\((\d)\))? TO MONTH")
_RE_DS = re.compile(r"INTERVAL DAY(?:\((\d)\))? TO SECOND(?:\((\d)\))?")
_RE_CHARS = re.compile(
    r"(CHAR|CHARACTER|NCHAR|NATIONAL CHAR|NATIONAL CHARACTER|VARCHAR2|VARCHAR|CHAR VARYING|CHARACTER VARYING|"
    r"NVARCHAR2|NCHAR VARYING|NATIONAL CHAR VARYING|NATIONAL CHARACTER VARYING)(?:\((\d+)(?: (BYTE|CHAR))?\))?"
)
_RE_RAW = re.compile(r"RAW\((\d+)\)")
_RE_UROWID = re.compile(r"UROWID(?:\((\d+)\))?")
_RE_VECTOR = re.compile(r"VECTOR(?:\(.*\))?")
_RE_NAME = re.compile(r"(?:[A-Z0-9_$#]+\.)?([A-Z][A-Z0-9_$#]*)")
_RE_QUOTED_NAME = re.compile(r"(?:[^.()]+\.)?([^.()]+)")  # "OWNER"."My Type": any characters


def _normalise_type_text(type_text: str) -> str:
    """Upper-case (outside double quotes), drop quotes, single spaces, no spaces around ( , )."""
    out: list[str] = []
    i, n = 0, len(type_text)
    while i < n:
        ch = type_text[i]
        if ch == '"':
            end = type_text.find('"', i + 1)
            if end < 0:
                raise ValueError(f"unterminated quoted name in type {type_text!r}")
            out.append(type_text[i + 1 : end])
            i = end + 1
        else:
            out.append(ch.upper())
            i += 1
    text = re.sub(r"\s+", " ", "".join(out)).strip()
    text = re.sub(r"\s*([(),])\s*", r"\1", text)
    return re.sub(r"\)(?=[A-Z])", ") ", text)


def column_from_oracle(
    name: str,
    type_text: str,
    nullable: bool = True,
    default: str | None = None,
    *,
    data_length: int | None = None,
    data_precision: int | None = None,
    data_scale: int | None = None,
    char_used: str | None = None,
) -> Column:
    """Build a :class:`Column` from an Oracle type: DDL text or data-dictionary columns.

    ``type_text`` is the type as DDL spells it (``NUMBER(10,2)``, ``VARCHAR2(20 CHAR)``,
    ``TIMESTAMP(9) WITH LOCAL TIME ZONE``, ``"SYS"."XMLTYPE"``) or ``ALL_TAB_COLUMNS.DATA_TYPE``
    with the dictionary facts in the keywords: ``data_precision``/``data_scale`` for NUMBER and
    FLOAT, ``data_length`` for character and RAW types (pass ``CHAR_LENGTH`` when ``CHAR_USED`` is
    ``'C'``, else ``DATA_LENGTH``), ``char_used`` (``'B'``/``'C'``). Arguments written in the text
    win over the keywords. Both routes give equal columns: ``source_type`` is normalised to the
    ``DBMS_METADATA`` spelling (``INTEGER`` -> ``NUMBER(*,0)``, ``NUMBER(5)`` -> ``NUMBER(5,0)``,
    ``TIMESTAMP`` -> ``TIMESTAMP(6)``, ``VARCHAR`` -> ``VARCHAR2``, owner prefixes dropped).

    An unknown type name is a user-defined (object, REF, VARRAY, nested table) or Oracle-supplied
    (``SDO_GEOMETRY``, ``ANYDATA``) type: it maps to an *unsupported* ``STRING`` column whose value is
    never available. Malformed text raises :class:`ValueError`.

    >>> column_from_oracle("T", "timestamp (9) with local time zone").source_type
    'TIMESTAMP(9) WITH LOCAL TIME ZONE'
    >>> column_from_oracle("S", "VARCHAR2", data_length=20, char_used="C").source_type
    'VARCHAR2(20 CHAR)'
    """
    text = _normalise_type_text(type_text)
    if not text:
        raise ValueError(f"column {name!r} has an empty type")
    attrs: dict[str, Any] = {}
    m: re.Match[str] | None

    def number(p: int | None, s: int | None) -> tuple[str, str]:
        if p is not None and not 1 <= p <= 38:
            raise ValueError(f"NUMBER precision {p} out of range 1..38 in {type_text!r}")
        if s is not None and not -84 <= s <= 127:
            raise ValueError(f"NUMBER scale {s} out of range -84..127 in {type_text!r}")
        attrs.update(precision=p, scale=s)
        if p is None and s is None:
            return "NUMBER", VARIABLE_NUMBER_SPARK
        source = f"NUMBER({'*' if p is None else p},{s})"
        return source, _number_spark(38 if p is None else p, s or 0)

    if m := _RE_NUMBER.fullmatch(text):
        spelled, p_text, s_text = m.groups()
        if p_text is not None:  # NUMBER(p[,s]) / NUMBER(*[,s]): NUMBER(p) is NUMBER(p,0), NUMBER(*) variable
            p = None if p_text == "*" else int(p_text)
            s = int(s_text) if s_text is not None else (None if p is None else 0)
        elif spelled == "NUMBER":  # bare NUMBER, or the dictionary's precision/scale
            p, s = data_precision, data_scale
            if p is not None and s is None:
                s = 0
        else:  # DECIMAL/NUMERIC/DEC without arguments are NUMBER(*,0)
            p, s = None, 0
        base = "NUMBER"
        source, spark = number(p, s)
    elif text in ("INTEGER", "INT", "SMALLINT"):
        base = "NUMBER"
        source, spark = number(None, 0)
    elif (m := _RE_FLOAT.fullmatch(text)) or text in ("REAL", "DOUBLE PRECISION"):
        if text == "REAL":
            bits = 63
        elif text == "DOUBLE PRECISION":
            bits = 126
        else:
            assert m is not None
            bits = int(m.group(1)) if m.group(1) else (data_precision or 126)
        if not 1 <= bits <= 126:
            raise ValueError(f"FLOAT precision {bits} out of range 1..126 in {type_text!r}")
        base, source, spark = "FLOAT", f"FLOAT({bits})", VARIABLE_NUMBER_SPARK
        attrs.update(precision=bits, scale=None)
    elif m := _RE_TIMESTAMP.fullmatch(text):
        fsp = int(m.group(1)) if m.group(1) else 6
        tz = {None: "none", " WITH TIME ZONE": "tz", " WITH LOCAL TIME ZONE": "ltz"}[m.group(2)]
        base = "TIMESTAMP"
        source = f"TIMESTAMP({fsp})" + (m.group(2) or "")
        if tz == "ltz":
            spark = "TIMESTAMP"
        elif tz == "tz" or fsp > 6:
            spark = "STRING"  # offsets/regions and nanoseconds have no exact Spark type
        else:
            spark = "TIMESTAMP_NTZ"
        attrs.update(fsp=fsp, tz=tz)
    elif m := _RE_YM.fullmatch(text):
        precision = int(m.group(1)) if m.group(1) else 2
        base, source, spark = "INTERVAL YEAR TO MONTH", f"INTERVAL YEAR({precision}) TO MONTH", "STRING"
        attrs.update(precision=precision)
    elif m := _RE_DS.fullmatch(text):
        precision = int(m.group(1)) if m.group(1) else 2
        fsp = int(m.group(2)) if m.group(2) else 6
        base, source, spark = "INTERVAL DAY TO SECOND", f"INTERVAL DAY({precision}) TO SECOND({fsp})", "STRING"
        attrs.update(precision=precision, fsp=fsp)
    elif m := _RE_CHARS.fullmatch(text):
        base = _CHAR_ALIASES[m.group(1)]
        national = base in ("NCHAR", "NVARCHAR2")
        if m.group(2) is not None:
            length = int(m.group(2))
            char_sem = m.group(3) == "CHAR"
        elif data_length is not None:
            length = int(data_length)
            char_sem = (char_used or "B").upper().startswith("C")
        elif base in ("CHAR", "NCHAR"):
            length, char_sem = 1, False
        else:
            raise ValueError(f"{base} needs a length: {type_text!r}")
        char_sem = char_sem or national  # national types always count characters
        source = f"{base}({length}{' CHAR' if char_sem and not national else ''})"
        spark = "STRING"
        attrs.update(length=length, char_semantics=char_sem)
    elif (m := _RE_RAW.fullmatch(text)) or (text == "RAW" and data_length is not None):
        length = int(m.group(1)) if m else int(data_length or 0)
        base, source, spark = "RAW", f"RAW({length})", "BINARY"
        attrs.update(length=length)
    elif text == "RAW":
        raise ValueError(f"RAW needs a length: {type_text!r}")
    elif _RE_UROWID.fullmatch(text):
        base, source, spark = "UROWID", "UROWID", "STRING"
    elif _RE_VECTOR.fullmatch(text):
        base, source, spark = "VECTOR", "VECTOR", "STRING"
    elif text in _PLAIN:
        base = _PLAIN[text]
        source = base
        spark = {
            "BINARY_FLOAT": "FLOAT",
            "BINARY_DOUBLE": "DOUBLE",
            "DATE": "TIMESTAMP_NTZ",
            "BLOB": "BINARY",
            "LONG RAW": "BINARY",
            "BOOLEAN": "BOOLEAN",
        }.get(base, "STRING")
    elif text.startswith("REF "):
        base, source, spark = "OBJECT", text, "STRING"
    elif (m := (_RE_QUOTED_NAME if '"' in type_text else _RE_NAME).fullmatch(text)) is not None:
        # A user-defined or Oracle-supplied object type (SDO_GEOMETRY, ANYDATA, ...): owner dropped,
        # like ALL_TAB_COLUMNS.DATA_TYPE.
        base, source, spark = "OBJECT", m.group(1), "STRING"
    else:
        raise ValueError(f"unrecognised Oracle type {type_text!r} for column {name!r}")
    attrs["base"] = base
    attrs["lob"] = base in _LOBS
    attrs["unsupported"] = base in _UNSUPPORTED
    return Column(name, source, spark, nullable=nullable, default=default, attrs=attrs)


def _number_spark(p: int, s: int) -> str:
    """Delta type of NUMBER(p,s) (p known)."""
    if s > 0:
        if s > 38:
            return "STRING"  # NUMBER(p, s>38): no Spark decimal has that scale; exact text
        return f"DECIMAL({s},{s})" if s > p else f"DECIMAL({p},{s})"
    digits = p - s  # a negative scale rounds to 10**-s: an integer with p - s digits
    if digits < 3:
        return "TINYINT"
    if digits < 5:
        return "SMALLINT"
    if digits < 10:
        return "INT"
    if digits < 19:
        return "BIGINT"
    return f"DECIMAL({digits},0)" if digits <= 38 else "STRING"


# ---- canonical value helpers ---------------------------------------------------------------------

_RE_DATETIME = re.compile(
    r"\s*([+-]?)(\d{1,5})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:[.,](\d*))?)?)?\s*(.*?)\s*"
)
_RE_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?")
_RE_ISO_DURATION = re.compile(
    r"\s*([+-])?P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?"
    r"(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:[.,](\d*))?S)?)?\s*"
)
_RE_ORACLE_YM = re.compile(r"\s*([+-])?(\d+)-(\d+)\s*")
_RE_ORACLE_DS = re.compile(r"\s*([+-])?(\d+) (\d+):(\d+):(\d+)(?:[.,](\d*))?\s*")
_INF = {"inf", "+inf", "infinity", "+infinity", "binary_float_infinity", "binary_double_infinity"}
_NEG_INF = {"-inf", "-infinity", "-binary_float_infinity", "-binary_double_infinity"}
_NAN = {"nan", "+nan", "-nan", "binary_float_nan", "binary_double_nan"}
_TRUE = {"1", "true", "t", "y", "yes"}
_FALSE = {"0", "false", "f", "n", "no"}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _number_text(value: Any) -> str:
    text = _text(value).strip()
    if text[:1] == "+":
        text = text[1:]
    if "," in text:  # a session with NLS_NUMERIC_CHARACTERS=',.'
        text = text.replace(",", ".")
    return text


def _plain_number_text(value: Any) -> str:
    """Exact decimal text with no exponent, leading zero or trailing zeros (``.50`` -> ``0.5``)."""
    text = _number_text(value)
    try:
        d = Decimal(text)
    except InvalidOperation as exc:
        raise ValueError(f"not a number: {text!r}") from exc
    if d.is_zero():
        return "0"
    # The default context (28 digits) would round: Oracle NUMBER holds up to 40 significant digits.
    out = format(d.normalize(Context(prec=max(40, len(d.as_tuple().digits)))), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def _integer_text(value: Any) -> str:
    text = _number_text(value)
    if "." in text or "e" in text or "E" in text:
        try:
            d = Decimal(text)
        except InvalidOperation as exc:
            raise ValueError(f"not a number: {text!r}") from exc
        text = str(int(d)) if d == d.to_integral_value() else format(d, "f")
    return text


def _float_text(value: Any) -> str:
    text = _number_text(value)
    low = text.lower()
    if low in _INF:
        return "Infinity"
    if low in _NEG_INF:
        return "-Infinity"
    if low in _NAN:
        return "NaN"
    return text


def _split_datetime(text: str) -> tuple[str, str, str, str]:
    """``(date 'SYYYY-MM-DD', time 'HH:MM:SS', fraction digits, zone text)`` of a datetime text."""
    m = _RE_DATETIME.fullmatch(text)
    if m is None:
        raise ValueError(f"not an Oracle datetime: {text!r}")
    sign, y, mo, d, h, mi, s, frac, zone = m.groups()
    date = f"{'-' if sign == '-' else ''}{int(y):04d}-{int(mo):02d}-{int(d):02d}"
    time = f"{int(h or 0):02d}:{int(mi or 0):02d}:{int(s or 0):02d}"
    return date, time, frac or "", zone


def _fraction(frac: str, digits: int) -> str:
    return (frac[:digits]).ljust(digits, "0")


def _offset(zone: str) -> str | None:
    """``+HH:MM`` for an offset zone text (``Z``/``UTC`` -> ``+00:00``), None for a region."""
    if zone in ("Z", "z"):
        return "+00:00"
    m = _RE_OFFSET.fullmatch(zone)
    if m is None:
        return None
    sign, hh, mm = m.groups()
    return f"{sign}{int(hh):02d}:{mm or '00'}"


@lru_cache(maxsize=512)
def _zone(region: str) -> dt.tzinfo:
    from zoneinfo import ZoneInfo, available_timezones

    name = region.split()[0]  # 'US/Pacific PDT': the region, without the TZD abbreviation
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError):
        by_upper = {z.upper(): z for z in available_timezones()}
        if name.upper() in by_upper:
            return ZoneInfo(by_upper[name.upper()])
        if name.upper() in ("UTC", "GMT"):
            return dt.timezone.utc
        raise ValueError(f"unknown time zone region {region!r}") from None


def _interval_ym(value: Any) -> str:
    text = _text(value)
    m = _RE_ISO_DURATION.fullmatch(text)
    if m is not None and text.strip() not in ("P", "-P", "+P"):
        sign, y, mo, w, d, h, mi, s, _frac = m.groups()
        if any(x for x in (w, d, h, mi, s)):
            raise ValueError(f"not a year-to-month interval: {text!r}")
        months = int(y or 0) * 12 + int(mo or 0)
    elif (o := _RE_ORACLE_YM.fullmatch(text)) is not None:
        sign, y, mo = o.groups()
        months = int(y) * 12 + int(mo)
    else:
        raise ValueError(f"not a year-to-month interval: {text!r}")
    return f"{'-' if sign == '-' and months else ''}P{months // 12}Y{months % 12}M"


def _interval_ds(value: Any) -> str:
    text = _text(value)
    m = _RE_ISO_DURATION.fullmatch(text)
    if m is not None and text.strip() not in ("P", "-P", "+P"):
        sign, y, mo, w, d, h, mi, s, frac = m.groups()
        if y or mo:
            raise ValueError(f"not a day-to-second interval: {text!r}")
        days = int(w or 0) * 7 + int(d or 0)
    elif (o := _RE_ORACLE_DS.fullmatch(text)) is not None:
        sign, d, h, mi, s, frac = o.groups()
        days = int(d)
    else:
        raise ValueError(f"not a day-to-second interval: {text!r}")
    frac = (frac or "")[:9].ljust(9, "0")
    nanos = (((days * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9 + int(frac)
    secs, ns = divmod(nanos, 10**9)
    mins, sec = divmod(secs, 60)
    hours, minute = divmod(mins, 60)
    day, hour = divmod(hours, 24)
    frac_text = f"{ns:09d}".rstrip("0")
    return (
        f"{'-' if sign == '-' and nanos else ''}P{day}DT{hour}H{minute}M{sec}"
        f"{'.' + frac_text if frac_text else ''}S"
    )


def _spark_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _oq(name: str) -> str:
    """Oracle quoted identifier (names cannot contain a double quote)."""
    return '"' + name + '"'


_UNAVAILABLE_CACHE: list[Any] = []


def _unavailable() -> Any:
    """``redo.UNAVAILABLE``, imported on first use (redo.py imports nothing from here)."""
    if not _UNAVAILABLE_CACHE:
        from cdclake.sources.oracle.redo import UNAVAILABLE

        _UNAVAILABLE_CACHE.append(UNAVAILABLE)
    return _UNAVAILABLE_CACHE[0]


# ---- the mapper ----------------------------------------------------------------------------------


class OracleTypeMapper(TypeMapper):
    """Canonical values per Oracle type (see the module docstring and ``docs/types-oracle.md``).

    Canonical forms (all strings): numbers as Oracle prints them (``TM9`` text: ``.5``, ``-12``);
    BINARY_FLOAT/DOUBLE as decimal or ``Infinity``/``-Infinity``/``NaN``; DATE as
    ``YYYY-MM-DDTHH:MM:SS``; TIMESTAMP with 6 fraction digits (9 when the precision is 7-9), plus
    ``+HH:MM`` or `` Region`` for WITH TIME ZONE; WITH LOCAL TIME ZONE as the UTC instant with a
    ``Z``; intervals as ISO-8601 durations (``P1Y2M``, ``-P1DT2H3M4.5S``, every component written);
    RAW/BLOB/LONG RAW as lowercase hex; BOOLEAN as ``true``/``false``; text as stored (CHAR keeps
    its blank padding).
    """

    # LogMiner leaves out unchanged LOBs and unsupported values: the MERGE keeps the lake's value.
    images_may_omit_columns = True

    def __init__(self) -> None:
        self._converters: dict[Column, Callable[[Any], Any]] = {}

    def __getstate__(self) -> dict[str, Any]:  # shipped to executors: converters are rebuilt there
        return {"converters": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._converters = {}

    # ---- metadata

    def canonical_type(self, column: Column) -> str:
        return "STRING"

    def to_delta_sql(self, column: Column, expr: str) -> str:
        """Spark SQL turning the canonical string ``expr`` into ``column.spark_type``.

        Plain ANSI ``CAST`` throughout: canonical values are always valid for their type (Oracle has
        no zero or invalid dates), so a value that does not convert — e.g. a variable-scale NUMBER
        beyond ``DECIMAL(38,10)`` — stops the run with Spark's error instead of becoming NULL.
        """
        spark = column.spark_type
        if spark == "STRING":
            return expr
        if spark in _INTEGER_SPARK:
            # Through DECIMAL: Spark's string->int cast rejects '1E+2' and '.0'; overflow still throws.
            return f"CAST(CAST({expr} AS DECIMAL(38,0)) AS {spark})"
        if spark == "BINARY":
            return f"unhex({expr})"
        return f"CAST({expr} AS {spark})"  # DECIMAL, FLOAT, DOUBLE, TIMESTAMP(_NTZ), BOOLEAN

    def filter_literal_kind(self, column: Column) -> str | None:
        """NUMBER/FLOAT held as an integer or DECIMAL compare as bare numbers (exact in both), VARCHAR2
        and CHAR as quoted strings (CHAR's blank padding is kept in Delta, and Oracle compares CHAR
        blank-padded). NCHAR/NVARCHAR2 (a plain literal passes through the database character set),
        DATE and TIMESTAMPs (a time of day; zones), variable-scale numbers held as text, binaries and
        floats have no literal both sides read the same way."""
        base, spark = column.attrs.get("base"), column.spark_type
        if base in ("NUMBER", "FLOAT") and (spark in _INTEGER_SPARK or spark.startswith("DECIMAL")):
            return "number"
        if base in ("VARCHAR2", "CHAR") and spark == "STRING":
            return "string"
        return None

    def initial_value_sql(self, column: Column) -> str | None:
        """Value of rows that existed before ``ALTER TABLE ... ADD column DEFAULT x``.

        Oracle gives existing rows the default (a metadata-only change since 11g/12c: no row changes
        reach the redo). Literal defaults only — numbers, strings, ``DATE '...'``,
        ``TIMESTAMP '...'``, ``TRUE``/``FALSE``, ``EMPTY_CLOB()``; expressions such as ``SYSDATE``
        or a sequence give None (NULL).
        """
        a = column.attrs
        if column.default is None or a.get("unsupported") or a.get("virtual"):
            return None
        literal = _default_literal(column.default)
        if literal is None:
            return None
        if a.get("tz") == "ltz":
            try:
                if not _split_datetime(literal)[3]:
                    return None  # a zone-less literal is in the (unknown) session time zone
            except ValueError:
                return None
        try:
            canonical = self.converter(column)(literal)
        except (ValueError, ArithmeticError):
            return None
        if canonical is None or canonical is _unavailable():
            return None
        if a.get("base") in ("CHAR", "NCHAR") and isinstance(canonical, str):
            canonical = canonical.ljust(int(a.get("length", 1)))
        return self.to_delta_sql(column, _spark_literal(canonical))

    # ---- redo values

    def converter(self, column: Column) -> Callable[[Any], Any]:
        """The function mapping a parsed SQL_REDO value of ``column`` to its canonical value.

        Built once per column (cached); every function maps ``None`` to ``None`` and
        ``redo.UNAVAILABLE`` to itself. Malformed values raise :class:`ValueError`.
        """
        found = self._converters.get(column)
        if found is None:
            found = self._converters[column] = _build_converter(column, _unavailable())
        return found

    def fast_path_kind(self, column: Column) -> str | None:
        """The kind the JVM decoder (``jvm/src/cdclake/oracle/RedoFastPath.java``) converts ``column``
        as, giving what :meth:`converter` gives for the literal forms it takes; None when only the
        Python converters handle the column (LOBs, binary, floats, zoned timestamps, intervals...)."""
        return _fast_path_kind(column)

    def canonical_from_redo(self, column: Column, value: Any) -> Any:
        """Canonical value of ``value`` as ``redo.parse_redo`` produced it for ``column``."""
        return self.converter(column)(value)

    # ---- snapshot

    def snapshot_select_sql(self, column: Column) -> str:
        """Oracle SQL expression (no alias) giving the canonical value of ``column`` in a flashback query.

        Independent of the session's NLS settings (explicit formats and NLS parameter), except
        that the calendar must be Gregorian (the default). Columns listed by
        :meth:`needs_snapshot_fixup` return bytes, floats or Oracle interval text over JDBC: pass
        them through :meth:`snapshot_fixup_sql` in Spark.
        """
        c = _oq(column.name)
        a = column.attrs
        base = a.get("base")
        if a.get("unsupported"):
            sql = "CAST(NULL AS VARCHAR2(1))"
        elif base in ("NUMBER", "FLOAT"):
            sql = f"TO_CHAR({c}, 'TM9', {_NUMBER_NLS})"
        elif base == "DATE":
            sql = f"LTRIM(TO_CHAR({c}, 'SYYYY-MM-DD\"T\"HH24:MI:SS'), ' +')"
        elif base == "TIMESTAMP":
            ff = "FF9" if int(a.get("fsp", 6)) > 6 else "FF6"
            tz = a.get("tz", "none")
            if tz == "none":
                sql = f"LTRIM(TO_CHAR({c}, 'SYYYY-MM-DD\"T\"HH24:MI:SS.{ff}'), ' +')"
            elif tz == "ltz":
                sql = f"LTRIM(TO_CHAR(SYS_EXTRACT_UTC({c}), 'SYYYY-MM-DD\"T\"HH24:MI:SS.FF6\"Z\"'), ' +')"
            else:
                # Offset values: '...+02:00'; region values: '... Europe/Paris' (TZR names the region).
                sql = (
                    f"CASE WHEN {c} IS NULL THEN NULL "
                    f"WHEN SUBSTR(TO_CHAR({c}, 'TZR'), 1, 1) IN ('+', '-') "
                    f"THEN LTRIM(TO_CHAR({c}, 'SYYYY-MM-DD\"T\"HH24:MI:SS.{ff}TZH:TZM'), ' +') "
                    f"ELSE LTRIM(TO_CHAR({c}, 'SYYYY-MM-DD\"T\"HH24:MI:SS.{ff}'), ' +') || ' ' || "
                    f"TO_CHAR({c}, 'TZR') END"
                )
        elif base in ("INTERVAL YEAR TO MONTH", "INTERVAL DAY TO SECOND"):
            sql = f"TO_CHAR({c})"  # '+01-02' / '+01 02:03:04.500000'; ISO form made in Spark
        elif base == "XMLTYPE":
            sql = f"XMLSERIALIZE(CONTENT {c} AS CLOB)"
        elif base == "ROWID":
            sql = f"ROWIDTOCHAR({c})"
        elif base == "UROWID":
            sql = f"CAST({c} AS VARCHAR2(4000))"
        elif base == "BOOLEAN":
            sql = f"CASE WHEN {c} THEN 'true' WHEN NOT {c} THEN 'false' END"
        else:
            # Text (CLOB/NCLOB/LONG read as strings by JDBC, CHAR padded); RAW/BLOB/LONG RAW and
            # BINARY_FLOAT/DOUBLE natively (bytes, IEEE floats): finished by snapshot_fixup_sql.
            sql = c
        return sql

    def needs_snapshot_fixup(self, column: Column) -> bool:
        """True when :meth:`snapshot_fixup_sql` changes the JDBC value of ``column``."""
        a = column.attrs
        if a.get("base") in ("NUMBER", "FLOAT") and column.spark_type == "STRING":
            return True
        return not a.get("unsupported") and a.get("base") in (
            _BINARIES | {"BINARY_FLOAT", "BINARY_DOUBLE", "INTERVAL YEAR TO MONTH", "INTERVAL DAY TO SECOND"}
        )

    def snapshot_fixup_sql(self, column: Column, expr: str) -> str:
        """Spark SQL finishing the canonical string from the JDBC value ``expr`` of the snapshot.

        Bytes -> lowercase hex; IEEE floats -> Spark's exact decimal text (``Infinity``, ``NaN``);
        Oracle interval text -> ISO-8601 duration. Other columns: ``expr`` unchanged.
        """
        base = column.attrs.get("base")
        if column.attrs.get("unsupported"):
            return expr
        if base in _BINARIES:
            return f"lower(hex({expr}))"
        if base in ("NUMBER", "FLOAT") and column.spark_type == "STRING":
            # TM9 text (.5, -1.25) -> plain text with a leading zero (0.5); TM9 never pads zeros.
            return f"regexp_replace({expr}, '^(-?)[.]', '$10.')"
        if base in ("BINARY_FLOAT", "BINARY_DOUBLE"):
            return f"CAST({expr} AS STRING)"
        if base == "INTERVAL YEAR TO MONTH":
            g = f"regexp_extract({expr}, '^ *([+-]?)([0-9]+)-([0-9]+) *$', %d)"
            months = f"(CAST({g % 2} AS BIGINT) * 12 + CAST({g % 3} AS BIGINT))"
            return (
                f"CASE WHEN {expr} IS NULL THEN NULL ELSE concat("
                f"CASE WHEN {g % 1} = '-' AND {months} <> 0 THEN '-' ELSE '' END, 'P', "
                f"CAST(div({months}, 12) AS STRING), 'Y', CAST({months} % 12 AS STRING), 'M') END"
            )
        if base == "INTERVAL DAY TO SECOND":
            g = f"regexp_extract({expr}, '^ *([+-]?)([0-9]+) ([0-9]+):([0-9]+):([0-9]+)([.,]([0-9]*))? *$', %d)"
            frac = f"regexp_replace({g % 7}, '0+$', '')"
            nonzero = (
                f"(CAST({g % 2} AS BIGINT) + CAST({g % 3} AS BIGINT) + CAST({g % 4} AS BIGINT) + "
                f"CAST({g % 5} AS BIGINT) <> 0 OR {frac} <> '')"
            )
            return (
                f"CASE WHEN {expr} IS NULL THEN NULL ELSE concat("
                f"CASE WHEN {g % 1} = '-' AND {nonzero} THEN '-' ELSE '' END, 'P', "
                f"CAST(CAST({g % 2} AS BIGINT) AS STRING), 'DT', CAST(CAST({g % 3} AS BIGINT) AS STRING), 'H', "
                f"CAST(CAST({g % 4} AS BIGINT) AS STRING), 'M', CAST(CAST({g % 5} AS BIGINT) AS STRING), "
                f"CASE WHEN {frac} = '' THEN '' ELSE concat('.', {frac}) END, 'S') END"
            )
        return expr


def _build_converter(column: Column, unavailable: Any, fast_paths: bool = True) -> Callable[[Any], Any]:
    a = column.attrs
    base = a.get("base")
    name = column.name

    def wrap(fn: Callable[[Any], Any], empty_is_null: bool = True,
             fast: Callable[[str], Any] | None = None) -> Callable[[Any], Any]:
        # ``fast`` answers the common literal forms (or None) without the general parse: decoding
        # runs once per value of every change, so this is the hot loop of mining.
        if not fast_paths:
            fast = None

        def convert(value: Any) -> Any:
            if value is None or value is unavailable:
                return value
            if fast is not None and value.__class__ is str:
                done = fast(value)
                if done is not None:
                    return done
            if empty_is_null and value == "":
                return None  # Oracle stores '' as NULL outside LOBs
            try:
                return fn(value)
            except ValueError as exc:
                raise ValueError(f"column {name!r} ({column.source_type}): {exc}") from None

        return convert

    if a.get("unsupported"):
        return lambda value: unavailable
    if base in ("NUMBER", "FLOAT"):
        if column.spark_type == "STRING":
            return wrap(_plain_number_text)
        return wrap(_integer_text if column.spark_type in _INTEGER_SPARK else _number_text, fast=_fast_number)
    if base in ("BINARY_FLOAT", "BINARY_DOUBLE"):
        return wrap(_float_text)
    if base == "DATE":

        def date(value: Any) -> str:
            d, t, _frac, zone = _split_datetime(_text(value))
            if zone:
                raise ValueError(f"unexpected time zone in a DATE value: {value!r}")
            return f"{d}T{t}"  # a TO_TIMESTAMP value for a DATE column: truncated to seconds

        return wrap(date, fast=_fast_date)
    if base == "TIMESTAMP":
        fsp = int(a.get("fsp", 6))
        digits = 9 if fsp > 6 else 6
        tz = a.get("tz", "none")
        if tz == "none":

            def ntz(value: Any) -> str:
                d, t, frac, zone = _split_datetime(_text(value))
                if zone:
                    raise ValueError(f"unexpected time zone in a TIMESTAMP value: {value!r}")
                return f"{d}T{t}.{_fraction(frac, digits)}"

            def fast_ntz(value: str) -> str | None:
                m = _RE_PLAIN_TIMESTAMP.fullmatch(value)
                return None if m is None else f"{m.group(1)}.{_fraction(m.group(2) or '', digits)}"

            return wrap(ntz, fast=fast_ntz)
        if tz == "tz":

            def tstz(value: Any) -> str:
                d, t, frac, zone = _split_datetime(_text(value))
                stem = f"{d}T{t}.{_fraction(frac, digits)}"
                if not zone:
                    return stem
                off = _offset(zone)
                return stem + off if off is not None else f"{stem} {zone}"

            return wrap(tstz)

        def ltz(value: Any) -> str:
            d, t, frac, zone = _split_datetime(_text(value))
            frac6 = _fraction(frac, 6)
            off = _offset(zone) if zone else "+00:00"
            if off != "+00:00":
                local = dt.datetime.fromisoformat(f"{d}T{t}")
                if off is not None:
                    sign = -1 if off[0] == "-" else 1
                    delta = dt.timedelta(hours=int(off[1:3]), minutes=int(off[4:6])) * sign
                    utc = local - delta
                else:
                    utc = local.replace(tzinfo=_zone(zone)).astimezone(dt.timezone.utc).replace(tzinfo=None)
                d = f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
                t = f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
            return f"{d}T{t}.{frac6}Z"

        return wrap(ltz)
    if base == "INTERVAL YEAR TO MONTH":
        return wrap(_interval_ym)
    if base == "INTERVAL DAY TO SECOND":
        return wrap(_interval_ds)
    if base in _BINARIES:

        def binary(value: Any) -> str:
            if isinstance(value, (bytes, bytearray)):
                return bytes(value).hex()
            return _text(value).strip().lower()

        return wrap(binary, empty_is_null=base != "BLOB")
    if base == "BOOLEAN":

        def boolean(value: Any) -> str:
            low = _text(value).strip().lower()
            if low in _TRUE:
                return "true"
            if low in _FALSE:
                return "false"
            raise ValueError(f"not a boolean: {value!r}")

        return wrap(boolean)
    # text: CHAR/VARCHAR2/N*/LONG/ROWID/UROWID as stored; CLOB/NCLOB/XMLTYPE keep '' (EMPTY_CLOB())
    return wrap(_text, empty_is_null=base not in _LOBS, fast=_fast_text if base not in _LOBS else None)


_FAST_PATH_TEXT = {"CHAR", "NCHAR", "VARCHAR2", "NVARCHAR2", "VARCHAR"}


def _fast_path_kind(column: Column) -> str | None:
    """Keep in step with :func:`_build_converter`: each kind names one of its branches."""
    a = column.attrs
    if a.get("unsupported") or a.get("virtual") or a.get("lob"):
        return None
    base = a.get("base")
    if base in ("NUMBER", "FLOAT"):
        if column.spark_type == "STRING":
            return "plain"
        return "int" if column.spark_type in _INTEGER_SPARK else "num"
    if base == "DATE":
        return "date"
    if base == "TIMESTAMP" and a.get("tz", "none") == "none":
        return "ts9" if int(a.get("fsp", 6)) > 6 else "ts6"
    return "text" if base in _FAST_PATH_TEXT else None


# Fast paths: each returns exactly what the general converter would, or None to defer to it.
_RE_PLAIN_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_RE_PLAIN_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]*))?")
_RE_PLAIN_NUMBER = re.compile(r"-?[0-9]+")


def _fast_number(value: str) -> str | None:
    """An integer literal as LogMiner prints it is its own canonical text (integer or decimal column)."""
    return value if _RE_PLAIN_NUMBER.fullmatch(value) else None


def _fast_date(value: str) -> str | None:
    return value if _RE_PLAIN_DATE.fullmatch(value) else None


def _fast_text(value: str) -> str | None:
    return value or None  # '' is NULL outside LOBs


_RE_DEFAULT_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_RE_DEFAULT_STRING = re.compile(r"(?:(?:DATE|TIMESTAMP)\s+|N)?'((?:[^']|'')*)'", re.IGNORECASE)


def _default_literal(default: str) -> str | None:
    """The literal value of a DEFAULT text, or None for an expression (SYSDATE, seq.NEXTVAL...)."""
    text = default.strip()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if _RE_DEFAULT_NUMBER.fullmatch(text):
        return text
    m = _RE_DEFAULT_STRING.fullmatch(text)
    if m:
        return m.group(1).replace("''", "'")
    upper = text.upper()
    if upper in ("TRUE", "FALSE"):
        return upper.lower()
    if upper in ("EMPTY_CLOB()", "EMPTY_BLOB()"):
        return ""
    return None
