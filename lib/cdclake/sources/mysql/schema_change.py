"""What a MySQL/MariaDB schema change did to the rows a table already had.

The binlog logs an ``ALTER TABLE`` as its statement text only: no row event says what the rows that
existed gave the new or changed columns. cdclake takes those values from where they are exact:

* an added column with a default (literal or expression): the server evaluates the default again
  in the statement's own session time zone (the QUERY event's ``time_zone``) and at its own instant
  (``SET timestamp`` to the event's time), through the snapshot's conversion to canonical values.
  The result is kept on the column (``attrs["fill"]``) in the schema history, so a rebuild from
  bronze does not need the server;
* an added column without a default: NULL, or the implicit default of a NOT NULL column
  (:meth:`~cdclake.sources.mysql.types.MySqlTypeMapper.initial_value_sql`);
* a type change the lake can make by a cast that gives the server's value (a widening, a number
  to text...): that cast;
* anything else (a generated column, a row-dependent or non-deterministic default, a sub-second
  ``CURRENT_TIMESTAMP(n)``, a lossy or reinterpreting type change): the table is marked to be read
  again (a backfill right after the mining run); changes after the statement are mined as usual.

>>> from cdclake.sources.mysql.types import column_from_definition as col
>>> conversion_is_exact(col("a", "int"), col("a", "bigint")), conversion_is_exact(col("a", "double"), col("a", "int"))
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper
from cdclake.spi import FILL

_INTS = ("tinyint", "smallint", "mediumint", "int", "bigint")
_TEXTS = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext")
# Defaults whose value differs per row or per call: only a re-read knows what each row got.
_PER_ROW = re.compile(r"\b(rand|uuid|uuid_short|sys_guid|sysdate|connection_id|last_insert_id|nextval|"
                      r"next\s+value|lastval|random_bytes)\b", re.I)
# CURRENT_TIMESTAMP(n)/NOW(n) with n > 0: the binlog's event time has whole seconds only.
_SUBSECOND_NOW = re.compile(r"\b(current_timestamp|now|localtime|localtimestamp|utc_timestamp|curtime|"
                            r"current_time|utc_time)\s*\(\s*[1-6]\s*\)", re.I)


class NotEvaluable(Exception):
    """The value existing rows got cannot be known from the log and the server now (the reason)."""


def conversion_is_exact(old: Column, new: Column) -> bool:
    """Whether casting the lake's values of ``old`` to ``new``'s lake type gives what the server's
    conversion gave (in strict mode, where a value that does not fit fails the ALTER).

    >>> from cdclake.sources.mysql.types import column_from_definition as col
    >>> conversion_is_exact(col("a", "int"), col("a", "varchar(20)")), conversion_is_exact(col("a", "date"),
    ...     col("a", "timestamp"))
    (True, False)
    """
    a, b = old.attrs.get("base"), new.attrs.get("base")
    if old.spark_type == new.spark_type and (a == b or {a, b} <= set(_INTS) or {a, b} <= set(_TEXTS) | {"enum", "set"}):
        if a in ("datetime", "timestamp", "time") and new.attrs.get("fsp", 0) < old.attrs.get("fsp", 0):
            return False  # the server rounds the fraction away
        return not (a == "decimal" and (new.attrs.get("scale", 0) < old.attrs.get("scale", 0)))
    if a in _INTS:
        return b in _INTS or b == "decimal" or b == "double" or b in _TEXTS
    if a == "decimal":
        return b == "decimal" or b in _TEXTS
    if a == "float":
        return b == "double"
    if a in _TEXTS or a in ("enum", "set"):
        return b in _TEXTS or b in ("enum", "set")
    if a == "date":
        return b == "datetime"
    if a == "datetime":
        return b == "datetime"
    return False


def existing_rows(old: TableSchema, new: TableSchema, column_renames: dict[str, str],
                  evaluate: Callable[[str, Column], Any]) -> tuple[TableSchema, str | None]:
    """``new`` with the value each added column gave the existing rows (``attrs["fill"]``) and why
    the table must be re-read (None: the change is exact without).

    ``evaluate(default, column)`` returns the canonical value of ``default`` for ``column`` as the
    server computed it for the statement, or raises :class:`NotEvaluable`.
    """
    renamed_back = {v.lower(): k.lower() for k, v in column_renames.items()}
    before = {c.name.lower(): c for c in old.columns}
    reasons: list[str] = []
    columns: list[Column] = []
    for col in new.columns:
        prior = before.get(renamed_back.get(col.name.lower(), col.name.lower()))
        if prior is None:
            col, why = _added(col, evaluate)
        else:
            why = _changed(prior, col)
        if why:
            reasons.append(why)
        columns.append(col)
    schema = new if columns == new.columns else new.with_columns(columns)
    return schema, "; ".join(reasons) or None


def _added(col: Column, evaluate: Callable[[str, Column], Any]) -> tuple[Column, str | None]:
    if col.attrs.get("generated"):
        return col, f"added generated column {col.name}: the server computed its values"
    if col.default is None or col.default.upper() == "NULL":
        return col, None  # NULL, or the implicit default of a NOT NULL column
    try:
        value = evaluate(col.default, col)
    except NotEvaluable as exc:
        return col, f"added column {col.name} DEFAULT {col.default}: {exc}"
    return replace(col, attrs={**col.attrs, FILL: value}), None


def _changed(prior: Column, col: Column) -> str | None:
    if bool(prior.attrs.get("generated")) != bool(col.attrs.get("generated")) or (
            col.attrs.get("generated") and prior.attrs.get("generation") != col.attrs.get("generation")):
        return f"column {col.name} is generated differently now: the server computed its values again"
    if prior.source_type != col.source_type and not conversion_is_exact(prior, col):
        return f"column {col.name} changed from {prior.source_type} to {col.source_type}: the server converted " \
               "its values in a way a cast in the lake does not repeat"
    return None


def evaluation_sql(default: str, column: Column, types: MySqlTypeMapper) -> str:
    """A SELECT giving the canonical value of ``default`` in ``column`` (the snapshot's conversion,
    applied to the default as the column would hold it).

    >>> from cdclake.sources.mysql.types import column_from_definition as col
    >>> evaluation_sql("'2021-06-01 12:00:00'", col("c", "timestamp"), MySqlTypeMapper()).split(" FROM ")[1]
    "(SELECT '2021-06-01 12:00:00' AS `c`) AS d"
    """
    if _PER_ROW.search(default):
        raise NotEvaluable("it gives each row its own value")
    if _SUBSECOND_NOW.search(default):
        raise NotEvaluable("the log has the statement's time in whole seconds only")
    name = "`" + column.name.replace("`", "``") + "`"
    return f"SELECT {types.snapshot_select_sql(column)} FROM (SELECT {default} AS {name}) AS d"


__all__ = ["NotEvaluable", "conversion_is_exact", "evaluation_sql", "existing_rows"]
