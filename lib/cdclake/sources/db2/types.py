"""How Db2 column values reach Delta: one Spark JDBC read shape for the snapshot and the CD tables alike.

A CD table that ``ASNCDC.ADDTABLE`` made has the source table's columns with the same types, so a
snapshot read of the source table and a window read of its CD table select the same expressions
(:meth:`Db2TypeMapper.read_sql`), get the same Spark types (:meth:`Db2TypeMapper.read_type`, passed to
the reads as ``customSchema``) and turn them into the canonical value by the same Spark SQL
(:meth:`Db2TypeMapper.canonical_sql`): one value, whatever path brought it. ``docs/types-db2.md`` has
the table.

>>> c = column_from_catalog("PRICE", "DECIMAL", 10, 2, "Y", 0, None, 0)
>>> c.source_type, c.spark_type
('DECIMAL(10,2)', 'DECIMAL(10,2)')
>>> column_from_catalog("B", "VARCHAR", 16, 0, "N", 0, None, 0).source_type
'VARCHAR(16) FOR BIT DATA'
>>> Db2TypeMapper().read_sql(column_from_catalog("TS", "TIMESTAMP", 10, 9, "Y", 0, None, 0))
'CAST("TS" AS VARCHAR(32))'
"""

from __future__ import annotations

from typing import Any

from cdclake.schema import Column
from cdclake.spi.types import TypeMapper

_INTEGERS = {"SMALLINT": "SMALLINT", "INTEGER": "INT", "BIGINT": "BIGINT"}
_TEXT = {"CHARACTER", "CHAR", "VARCHAR", "LONG VARCHAR", "GRAPHIC", "VARGRAPHIC", "LONG VARGRAPHIC", "CLOB",
         "DBCLOB", "XML", "NCHAR", "NVARCHAR", "NCLOB"}
_BINARY = {"BINARY", "VARBINARY", "BLOB"}
_LOBS = {"CLOB", "DBCLOB", "BLOB", "XML", "NCLOB"}
# types ASN Capture cannot capture (the registration is refused or the column never reaches the CD table)
NOT_CAPTURED = {"BOOLEAN"}


def quote_identifier(name: str) -> str:
    """A Db2 delimited identifier."""
    return '"' + name.replace('"', '""') + '"'


def _source_type(typename: str, length: int, scale: int, bit_data: bool) -> str:
    t = typename.upper()
    if t in ("DECIMAL", "NUMERIC"):
        return f"DECIMAL({length},{scale})"
    if t == "DECFLOAT":
        return f"DECFLOAT({34 if length >= 16 else 16})"
    if t == "TIMESTAMP":
        return f"TIMESTAMP({scale})"
    if t in ("CHARACTER", "CHAR", "VARCHAR", "GRAPHIC", "VARGRAPHIC", "BINARY", "VARBINARY", "NCHAR", "NVARCHAR"):
        base = "CHAR" if t == "CHARACTER" else t
        return f"{base}({length})" + (" FOR BIT DATA" if bit_data else "")
    if t in ("CLOB", "DBCLOB", "BLOB", "NCLOB"):
        return f"{t}({length})"
    if t == "DOUBLE" or t == "FLOAT":
        return "DOUBLE"
    return t


def column_from_catalog(name: str, typename: str, length: Any, scale: Any, nulls: Any, codepage: Any,
                        default: Any, keyseq: Any) -> Column:
    """A column from its ``SYSCAT.COLUMNS`` row (``CODEPAGE`` 0 on a character type: ``FOR BIT DATA``)."""
    t = str(typename).strip().upper()
    length, scale = int(length or 0), int(scale or 0)
    bit_data = t in ("CHARACTER", "CHAR", "VARCHAR", "LONG VARCHAR") and int(codepage or 0) == 0
    attrs: dict[str, Any] = {"base": t, "length": length, "scale": scale}
    if bit_data:
        attrs["bit_data"] = True
    if t in _LOBS:
        attrs["lob"] = True
    if keyseq:
        attrs["keyseq"] = int(keyseq)
    return Column(name, _source_type(t, length, scale, bit_data), _delta_type(attrs), str(nulls).upper() != "N",
                  None if default is None else str(default), attrs)


def _native_type(a: dict[str, Any]) -> str | None:
    """The Spark type of a column (by its ``attrs``) that JDBC reads exactly as it is (and Delta keeps), else None."""
    t = a.get("base", "")
    if a.get("bit_data") or t in _BINARY:
        return "BINARY"
    if t in _INTEGERS:
        return _INTEGERS[t]
    if t in ("DECIMAL", "NUMERIC"):
        return f"DECIMAL({a['length']},{a['scale']})"
    return {"REAL": "FLOAT", "DOUBLE": "DOUBLE", "FLOAT": "DOUBLE", "DATE": "DATE"}.get(t)


def _delta_type(a: dict[str, Any]) -> str:
    if a.get("base") == "TIMESTAMP":
        return "TIMESTAMP_NTZ" if a["scale"] <= 6 else "STRING"
    return _native_type(a) or "STRING"  # text, XML, TIME, DECFLOAT, and what cdclake does not read


class Db2TypeMapper(TypeMapper):
    """Db2 column -> JDBC read expression and type -> canonical value -> Delta value."""

    def supported(self, column: Column) -> bool:
        t = column.attrs.get("base", "")
        return bool(t in _INTEGERS or t in _TEXT or t in _BINARY or column.attrs.get("bit_data")
                    or t in ("DECIMAL", "NUMERIC", "DECFLOAT", "REAL", "DOUBLE", "FLOAT", "DATE", "TIME",
                             "TIMESTAMP"))

    def read_sql(self, column: Column, name: str | None = None) -> str:
        """The expression Spark's JDBC read selects for ``column`` (stored under ``name``, default its own)."""
        q = quote_identifier(name or column.name)
        t = column.attrs.get("base", "")
        if not self.supported(column):
            return f"CAST(NULL AS VARCHAR(1)) AS {q}"
        if t == "DECFLOAT":  # Spark's Db2 dialect reads DECFLOAT as DECIMAL(38,18): rounded
            return f"CAST({q} AS VARCHAR(42))"
        if t == "TIMESTAMP":  # JDBC timestamps stop at microseconds; Db2's text has every digit
            return f"CAST({q} AS VARCHAR(32))"
        return q

    def read_type(self, column: Column) -> str:
        """The Spark type the JDBC read returns for :meth:`read_sql` (its ``customSchema`` entry)."""
        if not self.supported(column):
            return "STRING"
        if column.attrs.get("base") == "TIME":
            return "TIMESTAMP"
        return _native_type(column.attrs) or "STRING"

    def canonical_type(self, column: Column) -> str:
        a = column.attrs
        t = a.get("base", "")
        if not self.supported(column):
            return "STRING"
        if t in _INTEGERS:
            return _INTEGERS[t]
        if t == "REAL":
            return "FLOAT"
        if t in ("DOUBLE", "FLOAT"):
            return "DOUBLE"
        if t == "DATE":
            return "DATE"
        return "STRING"

    def canonical_sql(self, column: Column, expr: str) -> str:
        """Spark SQL from the value the JDBC read returned (``expr``, of :meth:`read_type`) to the canonical one."""
        a = column.attrs
        t = a.get("base", "")
        if not self.supported(column):
            return "CAST(NULL AS STRING)"
        if a.get("bit_data") or t in _BINARY:
            return f"lower(hex({expr}))"
        if t in ("DECIMAL", "NUMERIC"):
            return f"CAST({expr} AS STRING)"
        if t == "TIME":
            return f"date_format({expr}, 'HH:mm:ss')"
        if t == "TIMESTAMP":
            # Db2's text: yyyy-mm-dd-hh.mm.ss[.f...] -> yyyy-mm-ddThh:mm:ss[.f...]
            return (f"CASE WHEN {expr} IS NULL THEN NULL ELSE concat(substr({expr}, 1, 10), 'T', "
                    f"translate(substr({expr}, 12, 8), '.', ':'), substr({expr}, 20)) END")
        if t == "DECFLOAT":
            return f"trim({expr})"
        return expr

    def to_delta_sql(self, column: Column, expr: str) -> str:
        spark_type = column.spark_type
        if spark_type == "BINARY":
            return f"unhex({expr})"
        if spark_type.startswith("DECIMAL") or spark_type == "TIMESTAMP_NTZ":
            return f"CAST({expr} AS {spark_type})"
        return expr

    def filter_literal_kind(self, column: Column) -> str | None:
        t = column.attrs.get("base", "")
        if t in _INTEGERS or t in ("DECIMAL", "NUMERIC"):
            return "number"
        if t in ("CHAR", "CHARACTER", "VARCHAR") and not column.attrs.get("bit_data"):
            return "string"
        if t == "DATE":
            return "date"
        return None
