"""MySQL / MariaDB column types: Delta type, canonical value, snapshot SELECT and binlog decoding.

Every column travels as a *canonical* value (JSON-friendly) that both paths produce identically:

* the snapshot reads ``snapshot_select_sql(column)`` over JDBC, which already returns the canonical
  value (so the JDBC driver's type quirks — TINYINT(1) as BIT, YEAR as DATE, FLOAT printed with 6
  digits, zero dates — never come into play);
* the binlog path turns what python-mysql-replication 1.0.17 decodes into the same value with
  ``canonical_from_binlog``.

``to_delta_sql`` then converts the canonical value to the Delta column type in Spark (ANSI mode).
The mapping and its policies are documented in ``docs/types-mysql.md``.

>>> c = column_from_definition("id", "BIGINT UNSIGNED", nullable=False)
>>> c.source_type, c.spark_type, MySqlTypeMapper().canonical_type(c)
('bigint(20) unsigned', 'DECIMAL(20,0)', 'STRING')
>>> MySqlTypeMapper().canonical_from_binlog(c, 18446744073709551615)
'18446744073709551615'
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from typing import Any

from cdclake.schema import Column
from cdclake.spi.types import FILL, TypeMapper

# ---- type families -----------------------------------------------------------------------------

# Integer types: (signed Delta type, unsigned Delta type, MariaDB default display width signed/unsigned)
_INTEGERS: dict[str, tuple[str, str, int, int]] = {
    "tinyint": ("TINYINT", "SMALLINT", 4, 3),
    "smallint": ("SMALLINT", "INT", 6, 5),
    "mediumint": ("INT", "INT", 9, 8),
    "int": ("INT", "BIGINT", 11, 10),
    "bigint": ("BIGINT", "DECIMAL(20,0)", 20, 20),
}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
# A text type declared with CHARACTER SET binary is the binary type (MariaDB/MySQL convert it).
_TEXT_TO_BINARY = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}
_SPATIAL = {
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
}
_TEMPORAL_FSP = {"time", "datetime", "timestamp"}
# Spatial values keep their SRID, like Debezium's geometry type: standard WKB and the SRID.
SPATIAL_SPARK = "STRUCT<wkb: BINARY, srid: INT>"

# Alternative spellings -> the base type MariaDB's SHOW CREATE TABLE prints.
_ALIASES: dict[str, str] = {
    "integer": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "int4": "int",
    "int8": "bigint",
    "middleint": "mediumint",
    "bool": "tinyint",
    "boolean": "tinyint",
    "dec": "decimal",
    "numeric": "decimal",
    "fixed": "decimal",
    "real": "double",  # REAL is DOUBLE unless sql_mode REAL_AS_FLOAT (not supported: rare)
    "double precision": "double",
    "float8": "double",
    "float4": "float",
    "character": "char",
    "nchar": "char",
    "national char": "char",
    "national character": "char",
    "character varying": "varchar",
    "char varying": "varchar",
    "nvarchar": "varchar",
    "national varchar": "varchar",
    "national character varying": "varchar",
    "national char varying": "varchar",
    "nchar varchar": "varchar",
    "nchar varying": "varchar",
    "long varchar": "mediumtext",
    "long char varying": "mediumtext",
    "long": "mediumtext",
    "long varbinary": "mediumblob",
    "geomcollection": "geometrycollection",
}
_NATIONAL = {k for k in _ALIASES if k.startswith(("national", "nchar", "nvarchar"))}

_KNOWN_BASES = (
    set(_INTEGERS)
    | _TEXTS
    | _BINARIES
    | _SPATIAL
    | {"decimal", "float", "double", "date", "datetime", "timestamp", "time", "year", "bit"}
    | {"enum", "set", "json"}
)

_EPOCH = dt.datetime(1970, 1, 1)
_MICROS = dt.timedelta(microseconds=1)


# ---- type text parsing -------------------------------------------------------------------------


def _scan_args(text: str, i: int) -> tuple[list[str], int]:
    """Parse ``(a, 'b''c', 3)`` starting at ``text[i] == '('``; quoted items are unescaped."""
    args: list[str] = []
    i += 1
    cur = ""
    quoted = False
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            quote, i, value = ch, i + 1, ""
            while i < len(text):
                c = text[i]
                if c == "\\" and i + 1 < len(text):
                    value += {"n": "\n", "t": "\t", "0": "\0", "r": "\r", "Z": "\x1a"}.get(
                        text[i + 1], text[i + 1]
                    )
                    i += 2
                    continue
                if c == quote:
                    if i + 1 < len(text) and text[i + 1] == quote:  # doubled quote
                        value += quote
                        i += 2
                        continue
                    break
                value += c
                i += 1
            else:
                raise ValueError(f"unterminated string in type {text!r}")
            cur, quoted = value, True
            i += 1
        elif ch == ",":
            args.append(cur if quoted else cur.strip())
            cur, quoted = "", False
            i += 1
        elif ch == ")":
            if quoted or cur.strip():
                args.append(cur if quoted else cur.strip())
            return args, i + 1
        else:
            if not quoted:
                cur += ch
            i += 1
    raise ValueError(f"unbalanced parentheses in type {text!r}")


def _quote_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


_WORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")


def _parse_type_text(type_text: str) -> tuple[str, list[str], list[str], str | None, str | None]:
    """Split type text into (base spelling, args, modifier words, charset, collation)."""
    text = type_text.strip()
    # Base type: the longest run of leading words that names a type (``double precision``,
    # ``national char varying``) — modifiers such as ``unsigned`` follow it.
    leading: list[tuple[str, int]] = []
    i = 0
    while len(leading) < 4:
        m = _WORD.match(text, i)
        if not m:
            break
        i = m.end()
        leading.append((m.group(1).lower(), i))
    words: list[str] = []
    for n in range(len(leading), 0, -1):
        candidate = " ".join(w for w, _ in leading[:n])
        if candidate in _ALIASES or candidate in _KNOWN_BASES:
            words, i = candidate.split(), leading[n - 1][1]
            break
    if not words:
        raise ValueError(f"unknown MySQL type {type_text!r}")
    base = " ".join(words)
    args: list[str] = []
    rest = text[i:].lstrip()
    if rest.startswith("("):
        args, j = _scan_args(rest, 0)
        rest = rest[j:]
    mods: list[str] = []
    charset: str | None = None
    collation: str | None = None
    tokens = rest.split()
    k = 0
    while k < len(tokens):
        tok = tokens[k].lower()
        if tok in ("character", "char") and k + 1 < len(tokens) and tokens[k + 1].lower() == "set":
            charset = tokens[k + 2].strip("`'\"").lower() if k + 2 < len(tokens) else None
            k += 3
        elif tok == "charset":
            charset = tokens[k + 1].strip("`'\"").lower() if k + 1 < len(tokens) else None
            k += 2
        elif tok == "collate":
            collation = tokens[k + 1].strip("`'\"").lower() if k + 1 < len(tokens) else None
            k += 2
        elif tok == "ascii":
            charset = "latin1"
            k += 1
        elif tok == "unicode":
            charset = "ucs2"
            k += 1
        else:
            mods.append(tok)
            k += 1
    return base, args, mods, charset, collation


def _charset_of_collation(collation: str) -> str:
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def column_from_definition(name: str, type_text: str, nullable: bool = True, default: str | None = None,
                           charset: str | None = None) -> Column:
    """Build a :class:`Column` from a MySQL/MariaDB column type.

    ``source_type`` is normalised to what MariaDB's ``SHOW CREATE TABLE`` prints (lowercase, default
    display widths, aliases resolved: ``BOOLEAN`` -> ``tinyint(1)``, ``INTEGER UNSIGNED`` ->
    ``int(10) unsigned``), so a binlog ``CREATE TABLE`` and the snapshot's ``SHOW CREATE TABLE``
    give equal columns.

    >>> column_from_definition("b", "BOOLEAN").source_type
    'tinyint(1)'
    >>> column_from_definition("d", "numeric(70, 30)").spark_type
    'STRING'
    """
    spelled, args, mods, type_charset, collation = _parse_type_text(type_text)
    base = _ALIASES.get(spelled, spelled)
    if base not in _KNOWN_BASES:
        raise ValueError(f"unknown MySQL type {spelled!r} for column {name!r} ({type_text!r})")
    # The column's own CHARACTER SET / COLLATE wins over the caller's (table default) charset.
    cs = type_charset or (_charset_of_collation(collation) if collation else None)
    cs = cs or (charset.lower() if charset else None)
    if spelled in _NATIONAL:
        cs = cs or "utf8mb3"
    zerofill = "zerofill" in mods
    unsigned = "unsigned" in mods or zerofill
    attrs: dict[str, Any] = {"base": base, "unsigned": False}

    def ints(i: int) -> int:
        return int(args[i])

    if spelled in ("bool", "boolean"):
        # One rule whatever the spelling: SHOW CREATE TABLE prints tinyint(1) for BOOLEAN.
        args = ["1"]
    if base in _TEXTS and cs == "binary":
        base = _TEXT_TO_BINARY[base]
        attrs["base"] = base
    if base in _INTEGERS:
        signed_t, unsigned_t, w_signed, w_unsigned = _INTEGERS[base]
        width = args[0] if args else str(w_unsigned if unsigned else w_signed)
        source = f"{base}({width})" + (" unsigned" if unsigned else "") + (" zerofill" if zerofill else "")
        spark = unsigned_t if unsigned else signed_t
        attrs["unsigned"] = unsigned
    elif base == "decimal":
        precision = ints(0) if args else 10
        scale = ints(1) if len(args) > 1 else 0
        source = f"decimal({precision},{scale})" + (" unsigned" if unsigned else "")
        # Spark decimals stop at 38 digits; wider values travel as exact text (never rounded).
        spark = f"DECIMAL({precision},{scale})" if precision <= 38 else "STRING"
        attrs.update(precision=precision, scale=scale)
    elif base in ("float", "double"):
        if base == "float" and len(args) == 1 and int(args[0]) > 24:
            base = "double"  # FLOAT(p) with p in 25..53 is an 8-byte double
            args = []
            attrs["base"] = base
        source = base + (f"({','.join(args)})" if args else "") + (" unsigned" if unsigned else "")
        spark = "FLOAT" if base == "float" else "DOUBLE"
    elif base == "date":
        source, spark = "date", "DATE"
    elif base in _TEMPORAL_FSP:
        fsp = ints(0) if args else 0
        if not 0 <= fsp <= 6:
            raise ValueError(f"bad fractional seconds precision in {type_text!r}")
        source = base + (f"({fsp})" if fsp else "")
        spark = {"time": "BIGINT", "datetime": "TIMESTAMP_NTZ", "timestamp": "TIMESTAMP"}[base]
        attrs["fsp"] = fsp
    elif base == "year":
        source, spark = "year(4)", "SMALLINT"
    elif base == "bit":
        length = ints(0) if args else 1
        source = f"bit({length})"
        spark = "BOOLEAN" if length == 1 else "BINARY"
        attrs["length"] = length
        cs = "binary"
    elif base in _TEXTS or base in _BINARIES:
        if base in ("char", "binary"):
            length = ints(0) if args else 1
        elif base in ("varchar", "varbinary"):
            if not args:
                raise ValueError(f"{base} needs a length: {type_text!r}")
            length = ints(0)
        else:
            length = ints(0) if args else None
        source = base + (f"({length})" if length is not None else "")
        if length is not None:
            attrs["length"] = length
        if base in _BINARIES:
            spark, cs = "BINARY", "binary"
        else:
            spark = "STRING"
    elif base in ("enum", "set"):
        source = f"{base}({','.join(_quote_literal(a) for a in args)})"
        spark = "STRING"
        attrs["enum_values" if base == "enum" else "set_values"] = list(args)
    elif base == "json":
        source, spark = "json", "STRING"
        cs = cs or "utf8mb4"
    else:  # spatial
        source, spark, cs = base, SPATIAL_SPARK, "binary"
    attrs["charset"] = cs or "utf8mb4"
    return Column(name, source, spark, nullable=nullable, default=default, attrs=attrs)


def table_map_overrides(column: Column) -> dict[str, Any]:
    """Attributes to set on a python-mysql-replication TableMap column before rows are decoded.

    The library's ENUM decoding indexes ``enum_values`` with the stored 1-based index, so the list
    needs the error value ``''`` at position 0 (as the library itself builds it from metadata).
    """
    a = column.attrs
    out: dict[str, Any] = {
        "name": column.name,
        "unsigned": bool(a.get("unsigned")),
        "character_set_name": a.get("charset", "utf8mb4"),
    }
    if "enum_values" in a:
        out["enum_values"] = ["", *a["enum_values"]]
    if "set_values" in a:
        out["set_values"] = list(a["set_values"])
    return out


# ---- the mapper --------------------------------------------------------------------------------


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _charset_encoding(charset: str | None) -> str:
    from pymysql.charset import charset_by_name

    found = charset_by_name(charset or "utf8mb4")
    return found.encoding if found else "utf8"


class MySqlTypeMapper(TypeMapper):
    """Canonical values per MySQL/MariaDB type (see the module docstring and docs/types-mysql.md).

    Canonical forms: integers (all but BIGINT UNSIGNED), YEAR, BIT(1), TIME (µs) and TIMESTAMP
    (epoch µs) are ``BIGINT``; FLOAT and DOUBLE are ``DOUBLE`` (FLOAT as its exact 32-bit value);
    everything else is ``STRING``: decimals and BIGINT UNSIGNED as exact decimal text, DATE as
    ``YYYY-MM-DD``, DATETIME as ``YYYY-MM-DD HH:MM:SS.ffffff``, binary/BIT(n>1) as lowercase hex,
    spatial as the lowercase hex of the stored value (SRID then WKB), ENUM/SET/JSON/text as text.
    """

    # ---- metadata

    def canonical_type(self, column: Column) -> str:
        base = column.attrs.get("base") or self._base(column)
        if base in _INTEGERS:
            return "STRING" if base == "bigint" and column.attrs.get("unsigned") else "BIGINT"
        if base in ("year", "time", "timestamp"):
            return "BIGINT"
        if base == "bit":
            return "BIGINT" if column.attrs.get("length", 1) == 1 else "STRING"
        if base in ("float", "double"):
            return "DOUBLE"
        return "STRING"

    def to_delta_sql(self, column: Column, expr: str) -> str:
        base = column.attrs.get("base") or self._base(column)
        spark = column.spark_type
        if base in _INTEGERS or base == "year":
            return f"CAST({expr} AS {spark})"
        if base == "decimal":
            return expr if spark == "STRING" else f"CAST({expr} AS {spark})"
        if base in ("float", "double"):
            return f"CAST({expr} AS {spark})"  # FLOAT: exact, the value is a widened float32
        if base in ("date", "datetime"):
            # Zero/invalid dates are NULL already; guard anyway, without ANSI casts that throw.
            target = "DATE" if base == "date" else "TIMESTAMP_NTZ"
            return (
                f"CASE WHEN {expr} IS NULL OR {expr} LIKE '0000-%' THEN NULL "
                f"ELSE try_cast({expr} AS {target}) END"
            )
        if base == "timestamp":
            return f"timestamp_micros({expr})"
        if base == "time":
            return f"CAST({expr} AS BIGINT)"
        if base == "bit":
            return f"({expr} <> 0)" if spark == "BOOLEAN" else f"unhex({expr})"
        if base in _SPATIAL:
            return _spatial_sql(expr)
        if spark == "BINARY":  # binary strings
            return f"unhex({expr})"
        return expr

    def filter_literal_kind(self, column: Column) -> str | None:
        """Integers, YEAR and DECIMAL compare as bare numbers, text/ENUM/SET as quoted strings (a
        case- or pad-insensitive collation may select more rows: harmless for a re-read), DATE as
        ``DATE '...'``. TIME (µs in Delta), BIT, binaries, floats and DATETIME/TIMESTAMP (zone and
        fraction rules) have no literal both sides read the same way."""
        base = column.attrs.get("base") or self._base(column)
        if base in _INTEGERS or base == "year" or (base == "decimal" and column.spark_type.startswith("DECIMAL")):
            return "number"
        if (base in _TEXTS or base in ("enum", "set")) and column.spark_type == "STRING":
            return "string"
        if base == "date":
            return "date"
        return None

    def initial_value_sql(self, column: Column) -> str | None:
        """Value rows existing before ``ALTER TABLE ... ADD column`` hold: the column default, else
        MySQL's implicit default for NOT NULL columns (0, '', first ENUM member; zero dates -> NULL).

        ``CURRENT_TIMESTAMP`` defaults take the apply time (the ALTER's own instant is not logged).
        """
        base = column.attrs.get("base") or self._base(column)
        if FILL in column.attrs:  # the canonical value the server gave them (.schema_change)
            fill = column.attrs[FILL]
            if fill is None:
                return None
            canonical = f"'{_sql_quote(str(fill))}'"
            if self.canonical_type(column) != "STRING":
                canonical = f"try_cast({canonical} AS {self.canonical_type(column)})"
            return self.to_delta_sql(column, canonical)
        default = column.default
        if default is None or default.upper() == "NULL":
            if column.nullable:
                return None
            if base in _INTEGERS or base in ("year", "decimal", "float", "double", "time", "bit"):
                default = "0"
            elif base == "enum":
                default = "'" + column.attrs.get("enum_values", [""])[0].replace("'", "''") + "'"
            elif base in ("date", "datetime", "timestamp"):
                return None  # the zero date, which maps to NULL
            else:
                default = "''"
        if base in _SPATIAL:
            # NOT NULL without a default: MariaDB gives existing rows its empty value. A default is an
            # expression (ST_GeomFromText(...)), which is not evaluable here.
            return self.to_delta_sql(column, "''") if default == "''" else None
        if default.lower().startswith(("current_timestamp", "now(", "localtime")):
            return "current_timestamp()" if base == "timestamp" else "CAST(current_timestamp() AS TIMESTAMP_NTZ)"
        if default.startswith("'") and default.endswith("'"):
            text = default[1:-1].replace("''", "'").replace("\\'", "'")
            if base == "timestamp":
                return f"try_cast('{_sql_quote(text)}' AS TIMESTAMP)"
            if column.spark_type == "BINARY":
                return f"CAST('{_sql_quote(text)}' AS BINARY)"
            canonical = f"'{_sql_quote(text)}'"
            if self.canonical_type(column) != "STRING":
                canonical = f"try_cast({canonical} AS {self.canonical_type(column)})"
            return self.to_delta_sql(column, canonical)
        if re.fullmatch(r"[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?", default):
            return self.to_delta_sql(column, f"CAST('{default}' AS {self.canonical_type(column)})")
        return None  # an expression default (MariaDB 10.2+): not evaluable here

    @staticmethod
    def _base(column: Column) -> str:
        return str(column_from_definition(column.name, column.source_type).attrs["base"])

    # ---- snapshot

    def snapshot_select_sql(self, column: Column) -> str:
        """SELECT expression returning the canonical value over JDBC, aliased as the column.

        Every expression has a JDBC result type that maps to :meth:`canonical_type` (BIGINT via
        ``CAST(... AS SIGNED)``, DOUBLE, or character text), whatever the driver's type options.
        """
        c = _bq(column.name)
        base = column.attrs.get("base") or self._base(column)
        a = column.attrs
        if base in _INTEGERS or base == "year":
            # BIGINT UNSIGNED > 2**63-1 does not fit a signed long: text. Others: CAST AS SIGNED gives
            # BIGINT for every integer, so the driver never reads TINYINT(1) as BIT or YEAR as DATE.
            unsigned_bigint = base == "bigint" and a.get("unsigned")
            sql = f"CAST({c} AS CHAR)" if unsigned_bigint else f"CAST({c} AS SIGNED)"
        elif base == "decimal":
            sql = f"CAST({c} AS CHAR)"  # exact text, full scale
        elif base == "float":
            # The text protocol prints FLOAT with ~6 digits (lossy); DOUBLE gives the exact value.
            sql = f"CAST({c} AS DOUBLE)"
        elif base == "double":
            sql = c  # printed with round-trip precision
        elif base == "date":
            # `+ INTERVAL 0 DAY` is NULL for zero and invalid dates; year 0 is checked explicitly.
            sql = f"CASE WHEN YEAR({c}) = 0 THEN NULL ELSE DATE_FORMAT({c} + INTERVAL 0 DAY, '%Y-%m-%d') END"
        elif base == "datetime":
            sql = (
                f"CASE WHEN YEAR({c}) = 0 THEN NULL "
                f"ELSE DATE_FORMAT({c} + INTERVAL 0 DAY, '%Y-%m-%d %H:%i:%s.%f') END"
            )
        elif base == "timestamp":
            # UNIX_TIMESTAMP of a TIMESTAMP column returns the stored UTC epoch directly: independent
            # of the session time_zone. The zero timestamp gives 0 (no valid TIMESTAMP is at 0).
            sql = f"CAST(NULLIF(UNIX_TIMESTAMP({c}), 0) * 1000000 AS SIGNED)"
        elif base == "time":
            sql = f"CAST(TIME_TO_SEC({c}) * 1000000 AS SIGNED)"  # exact decimal arithmetic, signed
        elif base == "bit":
            if a.get("length", 1) == 1:
                sql = f"CAST({c} AS SIGNED)"
            else:
                nbytes = (int(a["length"]) + 7) // 8
                sql = f"LOWER(LPAD(HEX({c}), {2 * nbytes}, '0'))"
        elif base in _BINARIES:
            sql = f"LOWER(HEX({c}))"
        elif base in _SPATIAL:
            # The stored bytes exactly: a 4-byte SRID then WKB (MySQL 8's ST_AsWKB would swap the axes
            # for geographic SRIDs); to_delta_sql splits them.
            sql = f"LOWER(HEX({c}))"
        else:  # text, enum, set, json
            sql = c
        return f"{sql} AS {c}"

    # ---- binlog

    def canonical_from_binlog(self, column: Column, value: Any, none_source: str | None = None) -> Any:
        """Canonical value of what python-mysql-replication 1.0.17 decoded for ``column``.

        ``none_source`` is the row's ``none_sources[name]``: the library reports an empty SET as
        ``None`` with none_source ``'empty set'``, which must become ``''`` (not NULL).
        """
        a = column.attrs
        base = a.get("base") or self._base(column)
        if value is None:
            if base == "set" and none_source == "empty set":
                return ""
            return None  # NULL, zero/invalid dates
        if base in _INTEGERS:
            if base == "bigint" and a.get("unsigned"):
                return str(int(value))
            return int(value)
        if base == "year":
            # The binlog stores YEAR as year-1900 with 0 meaning the zero year 0000; the library
            # adds 1900 unconditionally.
            year = int(value)
            return 0 if year == 1900 else year
        if base == "decimal":
            if isinstance(value, decimal.Decimal):
                return format(value, "f")  # never exponent notation ('0E-30')
            return str(value)
        if base in ("float", "double"):
            return float(value)
        if base == "date":
            return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
        if base == "datetime":
            return (
                f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
                f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
            )
        if base == "timestamp":
            if value.tzinfo is not None:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            micros = (value - _EPOCH) // _MICROS
            return None if micros == 0 else micros  # the zero timestamp is stored as epoch 0
        if base == "time":
            return self._time_micros(value, int(a.get("fsp", 0)))
        if base == "bit":
            length = int(a.get("length", 1))
            bits = int(value, 2) if isinstance(value, str) else (
                int.from_bytes(value, "big") if isinstance(value, (bytes, bytearray)) else int(value)
            )
            if length == 1:
                return bits
            return format(bits, f"0{2 * ((length + 7) // 8)}x")
        if base in _BINARIES:
            raw = value if isinstance(value, (bytes, bytearray)) else str(value).encode("latin-1")
            if base == "binary" and a.get("length"):
                # The binlog drops BINARY(n)'s trailing 0x00 padding; SELECT returns all n bytes.
                raw = bytes(raw).ljust(int(a["length"]), b"\0")
            return bytes(raw).hex()
        if base in _SPATIAL:
            return bytes(value).hex()  # as stored: the SRID (4 bytes, little-endian), then WKB
        if base == "enum":
            if isinstance(value, int):  # index, when the decoder did not know the values
                return "" if value == 0 else a["enum_values"][value - 1]
            return self._text(value, a)
        if base == "set":
            if isinstance(value, (set, frozenset, list, tuple)):
                members = {self._text(v, a) for v in value}
                return ",".join(v for v in a.get("set_values", sorted(members)) if v in members)
            if isinstance(value, int):
                return ",".join(v for i, v in enumerate(a["set_values"]) if value & (1 << i))
            return self._text(value, a)
        if base == "json":
            if isinstance(value, (str, bytes, bytearray)):
                return self._text(value, a)
            # MySQL 8 binary JSON decoded to Python objects: re-serialise like MySQL prints it.
            return json.dumps(_json_keys_to_str(value), ensure_ascii=False, separators=(", ", ": "))
        return self._text(value, a)  # char/varchar/text

    @staticmethod
    def _text(value: Any, attrs: dict[str, Any]) -> str:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode(_charset_encoding(attrs.get("charset")))
        return str(value)

    @staticmethod
    def _time_micros(value: dt.timedelta, fsp: int) -> int:
        micros = value // _MICROS
        if micros < 0 and fsp > 0:
            # python-mysql-replication 1.0.17 decodes a negative TIME2 with a fraction f as
            # -(seconds + 1 - f) (e.g. '-00:00:00.1' as -0.9 s): the stored fraction is the
            # complement. Undo it; a whole-second value (fraction 0) is decoded correctly.
            mag = -micros
            frac = mag % 1_000_000
            if frac:
                micros = -((mag // 1_000_000) * 1_000_000 + (1_000_000 - frac))
        return micros


def _spatial_sql(expr: str) -> str:
    """``STRUCT<wkb, srid>`` from the canonical hex of a stored spatial value: a 4-byte little-endian
    SRID, then standard WKB. The SRID's 32 bits are read as a signed INT (as Debezium does: SRIDs
    above 2147483647 come out negative). MariaDB's empty value (rows that existed before ``ADD c
    GEOMETRY NOT NULL``) has neither: empty WKB, SRID 0.

    >>> _spatial_sql("h")[:60]
    "CASE WHEN h IS NULL THEN NULL ELSE named_struct('wkb', unhex"
    """
    unsigned = "CAST(conv(" + " || ".join(f"substring({expr}, {i}, 2)" for i in (7, 5, 3, 1)) + ", 16, 10) AS BIGINT)"
    srid = (f"CAST(CASE WHEN length({expr}) < 8 THEN 0 WHEN {unsigned} >= 2147483648 "
            f"THEN {unsigned} - 4294967296 ELSE {unsigned} END AS INT)")
    wkb = f"unhex(substring({expr}, 9))"
    return f"CASE WHEN {expr} IS NULL THEN NULL ELSE named_struct('wkb', {wkb}, 'srid', {srid}) END"


def _json_keys_to_str(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            (k.decode() if isinstance(k, bytes) else str(k)): _json_keys_to_str(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_json_keys_to_str(v) for v in value]
    if isinstance(value, bytes):
        return value.decode()
    return value


def _sql_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")
