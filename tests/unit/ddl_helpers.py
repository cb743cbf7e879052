"""Helpers shared by the DDL parser tests (MySQL and Oracle): build schemas, read outcomes."""

from __future__ import annotations

from collections.abc import Callable

from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql.ddl import DdlOutcome

ColumnFactory = Callable[..., Column]  # column_from_definition / column_from_oracle: (name, type, nullable=)


def make_table(key: str, cols: str, pk: tuple[str, ...], column: ColumnFactory) -> TableSchema:
    """``make_table("shop.t", "id int, a varchar(10)", ("id",), column_from_definition)``.

    ``cols`` is ``"name type, name type"``; key columns are NOT NULL, the others nullable.
    """
    owner, name = key.split(".")
    columns = []
    for part in cols.split(", "):
        cname, ctype = part.split(" ", 1)
        columns.append(column(cname, ctype, nullable=cname not in pk))
    return TableSchema(owner, name, columns, list(pk))


def reg(*schemas: TableSchema) -> dict[str, TableSchema]:
    """The schemas keyed as ``apply_ddl`` takes them."""
    return {s.qualified_name: s for s in schemas}


def changed(out: DdlOutcome, key: str) -> TableSchema:
    """The schema ``key`` has after the statement (it must not have been dropped)."""
    schema = out.changes[key]
    assert schema is not None
    return schema
