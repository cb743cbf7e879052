"""How PostgreSQL column values reach Delta: one canonical value, the type's output text, on both paths.

pgoutput sends each value as the text of its type's output function; the snapshot reads ``"col"::text``
inside the exported snapshot. Both run under the same session settings
(:data:`cdclake.sources.postgresql.config.SESSION_SETTINGS`: UTC, ISO dates, ISO 8601 intervals, hex bytea,
shortest-exact floats), so the canonical value is the same string whatever path brought it, and one Spark SQL
expression (:meth:`PostgresTypeMapper.to_delta_sql`) turns it into the Delta value. ``docs/postgresql-design.md``
(section 7) has the table.

>>> m = PostgresTypeMapper()
>>> c = column_from_catalog("price", "numeric", 1700, "numeric(12,2)", "b", 12 * 65536 + 2 + 4, False, None, "", 0)
>>> c.spark_type, m.to_delta_sql(c, "v")
('DECIMAL(12,2)', "CASE WHEN v = 'NaN' THEN NULL ELSE CAST(v AS DECIMAL(12,2)) END")
"""

from __future__ import annotations

from typing import Any

from cdclake.schema import Column
from cdclake.spi.types import FILL, UNLOGGED, TypeMapper

#: a relation's columns: name, type (the domain's base type for a domain), typmod (the domain's for a
#: domain), the declared type's text, its kind (b base, d domain, e enum, r range, ...), array dimensions,
#: NOT NULL, default, generated, primary-key position
COLUMNS = (
    "SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END::int, "
    "CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END, format_type(a.atttypid, a.atttypmod), "
    "t.typtype, a.atttypid::int, a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attgenerated, "
    "(SELECT k.n FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n) WHERE k.attnum = a.attnum), "
    "bt.typname, bt.typcategory, a.attnum "
    "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
    "JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary "
    "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
)

_INTEGERS = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT"}
_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_ISO_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?"


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _numeric(typmod: int) -> tuple[int, int] | None:
    """(precision, scale) of a ``numeric`` typmod; None without one."""
    if typmod < 4:
        return None
    return ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF


def _delta_type(base: str, typmod: int, category: str, array: bool) -> str:
    if array:
        return "STRING"  # PostgreSQL's array literal, exact (multi-dimensional arrays included)
    if base in _INTEGERS:
        return _INTEGERS[base]
    if base == "numeric":
        ps = _numeric(typmod)
        return f"DECIMAL({ps[0]},{ps[1]})" if ps and ps[0] <= 38 else "STRING"
    return {"float4": "FLOAT", "float8": "DOUBLE", "bool": "BOOLEAN", "bytea": "BINARY", "date": "DATE",
            "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP", "time": "BIGINT", "money": "DECIMAL(19,2)",
            "oid": "BIGINT"}.get(base, "STRING")


def column_from_catalog(name: str, base: str, type_oid: int, declared: str, kind: str, typmod: int,
                        not_null: bool, default: Any, generated: str, keyseq: Any, category: str = "",
                        attnum: int | None = None) -> Column:
    """A column from its :data:`COLUMNS` row (``base``: the base type's name, e.g. ``numeric``, ``_int4``
    for an array; ``attnum``: its number in the table, which a rename keeps)."""
    array = base.startswith("_") or category == "A"
    attrs: dict[str, Any] = {"base": base, "oid": int(type_oid), "typmod": int(typmod), "kind": kind}
    if attnum is not None:
        attrs["attnum"] = int(attnum)
    if array:
        attrs["array"] = True
    if keyseq:
        attrs["keyseq"] = int(keyseq)
    if generated:
        attrs[UNLOGGED] = True  # pgoutput never sends generated columns: the lake cannot keep them exact
    return Column(name, declared, _delta_type(base, int(typmod), category, array), not not_null,
                  None if default is None else str(default), attrs)


def columns(conn: Any, qualified: str) -> list[Column]:
    """``qualified``'s columns (``"schema"."table"``) from the catalog."""
    out = []
    for (name, type_oid, typmod, declared, kind, _, not_null, default, generated, keyseq, base,
         category, attnum) in conn.execute(COLUMNS, (qualified,)).fetchall():
        out.append(column_from_catalog(name, base, type_oid, declared, kind, typmod, not_null, default, generated,
                                       keyseq, category, attnum))
    return out


class PostgresTypeMapper(TypeMapper):
    """PostgreSQL column -> its output text (canonical, both paths) -> Delta value."""

    #: an update's image lacks an unchanged TOASTed value (listed as unavailable): the lake keeps its own
    images_may_omit_columns = True

    def read_sql(self, column: Column) -> str:
        """What the snapshot selects for ``column``: its type's output text under the source's session settings,
        as pgoutput sends it. ``format('%s', ...)`` calls the output function; a cast to text does not always
        (``boolean`` casts to true/false, not t/f; ``char(n)`` loses its padding)."""
        q = quote_identifier(column.name)
        return f"CASE WHEN {q} IS NULL THEN NULL ELSE format('%s', {q}) END"

    def canonical_type(self, column: Column) -> str:
        return "STRING"

    def to_delta_sql(self, column: Column, expr: str) -> str:
        a = column.attrs
        base, spark_type = a.get("base", ""), column.spark_type
        if a.get("array") or spark_type == "STRING":
            return expr
        if base in _INTEGERS or base in ("float4", "float8", "oid"):
            return f"CAST({expr} AS {spark_type})"  # NaN and ±Infinity of floats cast as such
        if base == "numeric":
            return f"CASE WHEN {expr} = 'NaN' THEN NULL ELSE CAST({expr} AS {spark_type}) END"
        if base == "money":  # lc_monetary = C: $1,234.56 and -$0.50
            return f"CAST(regexp_replace({expr}, '[^0-9.-]', '') AS DECIMAL(19,2))"
        if base == "bool":
            return f"({expr} = 't')"
        if base == "bytea":
            return f"unhex(substr({expr}, 3))"
        if base == "date":  # infinity, -infinity and BC dates have no Delta value: NULL
            return f"CASE WHEN {expr} RLIKE '{_ISO_DATE}' THEN CAST({expr} AS DATE) END"
        if base == "timestamp":
            return (f"CASE WHEN {expr} RLIKE '{_ISO_TIMESTAMP}$' THEN CAST({expr} AS TIMESTAMP_NTZ) END")
        if base == "timestamptz":  # the session's zone is UTC: the text ends in +00
            return (f"CASE WHEN {expr} RLIKE '{_ISO_TIMESTAMP}[+]00$' THEN "
                    f"CAST(concat(substr({expr}, 1, length({expr}) - 3), 'Z') AS TIMESTAMP) END")
        if base == "time":  # microseconds of the day (24:00:00 included)
            parts = f"split({expr}, ':')"
            return (f"CAST({parts}[0] AS BIGINT) * 3600000000 + CAST({parts}[1] AS BIGINT) * 60000000 + "
                    f"CAST(CAST({parts}[2] AS DECIMAL(9,6)) * 1000000 AS BIGINT)")
        return expr

    def initial_value_sql(self, column: Column) -> str | None:
        """Rows older than an added column hold the value PostgreSQL stored for them (``attmissingval``, put in
        the column's :data:`~cdclake.spi.types.FILL` by the decoder); else NULL."""
        fill = column.attrs.get(FILL)
        if fill is None:
            return None
        return self.to_delta_sql(column, "'" + str(fill).replace("\\", "\\\\").replace("'", "\\'") + "'")

    def filter_literal_kind(self, column: Column) -> str | None:
        base = column.attrs.get("base", "")
        if column.attrs.get("array"):
            return None
        if base in _INTEGERS or (base == "numeric" and column.spark_type.startswith("DECIMAL")):
            return "number"
        if base in ("text", "varchar"):
            return "string"
        if base == "date":
            return "date"
        return None
