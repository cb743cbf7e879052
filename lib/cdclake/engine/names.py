"""Names the lake can store: the one mapping of source table and column names to Delta names.

**Columns.** A Delta table without column mapping (``lake.table_features: compatible``) refuses a column
name with one of `` ,;{}()\\n\\t=``; with column mapping (``spark``) it takes any name. Names that start
with ``__`` are cdclake's own (``__op``, ``__seq``... and the work columns of a MERGE) in both modes. So a
source column lands under:

* its own name, when the mode can store it and it does not start with ``__`` (every name that landed
  before keeps its column);
* else a *mapped name*: each character Delta refuses becomes ``_``, leading underscores are dropped, and
  ``_`` plus the first 8 hex digits of the SHA-256 of the exact source name (UTF-8) is appended:
  ``my col`` lands as ``my_col_<8 hex>``. Should that equal another column's Delta name (compared
  without case, as Delta compares), 16, then 64 digits are used.

The Delta column keeps the source name in its field metadata (:data:`SOURCE_NAME`), ``cdclake status``
shows it, and everything that names a column by its source name (column rules, quality expectations,
reconcile, the comparison in :mod:`cdclake.testing.compare`) is translated here.

>>> lake_column("my col", column_mapping=False)
'my_col_7a28819e'
>>> lake_column("my col", column_mapping=True), lake_column("amount", column_mapping=False)
('my col', 'amount')
>>> lake_column("__op", column_mapping=True)
'op_d89ccfcb'
>>> sorted(column_map(["a b", "a_b", "id"], column_mapping=False).items())
[('a b', 'a_b_c8687a08'), ('a_b', 'a_b'), ('id', 'id')]

Two source columns whose names differ only by case cannot both land (Delta compares names without
case): :func:`column_map` raises :class:`UnstorableNames`, which parks that table only.

**Tables** land in ``<database>__<table>`` under the pipeline's root, exactly as before, when both
names are made of ``A-Za-z0-9_-`` and the directory is unambiguous: the database name has no ``__`` and
does not end with ``_``, and the table name ends neither with ``__history`` (the SCD type-2 table beside a
target) nor with ``__`` and 8 hex digits (a mapped directory). Any other table lands in
``<database>__<table>__<8 hex>``: each other character becomes ``_`` and the hex digits are those of the
SHA-256 of ``<database>.<table>``. A directory of the first form never has the shape of the second, so
no two tables share one.

>>> target_dir("shop", "orders"), target_dir("shop", "order-lines")
('shop__orders', 'shop__order-lines')
>>> target_dir("shop", "a b"), target_dir("shop", "a_b")
('shop__a_b__0dc85a64', 'shop__a_b')
>>> target_dir("a__b", "c"), target_dir("a", "b__c")
('a__b__c__57a76311', 'a__b__c')
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from cdclake.errors import CdcError, command, table_regex

if TYPE_CHECKING:
    from cdclake.schema import Column, TableSchema

SOURCE_NAME = "cdclake.source_name"  # field metadata of a Delta column (and Column.attrs): the source's name
DELTA_REFUSED = " ,;{}()\n\t="  # what Delta refuses in a column name without column mapping
_REFUSED = re.compile("[" + re.escape(DELTA_REFUSED) + "]")
_PLAIN_DIR = re.compile(r"[A-Za-z0-9_\-]+")
_UNSAFE_DIR = re.compile(r"[^A-Za-z0-9_\-]")
_MAPPED_DIR = re.compile(r"__[0-9a-fA-F]{8}$")
_HASH_DIGITS = (8, 16, 64)


class UnstorableNames(CdcError):
    """A table whose column names no Delta table can hold side by side (they differ only by case)."""

    def __init__(self, table: str, names: list[str]) -> None:
        super().__init__(
            f"{table} has columns whose names differ only by case ({', '.join(repr(n) for n in names)}), and Delta "
            "compares column names without case, so they cannot land side by side",
            f"rename one of them at the source, then re-read the table: "
            f"{command('snapshot', '--tables', table_regex(table), '--force')}", permanent=True)


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def needs_mapping(name: str, column_mapping: bool) -> bool:
    """Whether source column ``name`` cannot land under its own name (see the module docstring)."""
    return name.startswith("__") or (not column_mapping and _REFUSED.search(name) is not None)


def lake_column(name: str, column_mapping: bool, digits: int = 8) -> str:
    """The Delta name of source column ``name`` on its own (:func:`column_map` settles collisions)."""
    if not needs_mapping(name, column_mapping):
        return name
    base = _REFUSED.sub("_", name).lstrip("_") or "column"
    return f"{base}_{_digest(name, digits)}"


def column_map(names: Iterable[str], column_mapping: bool, table: str = "") -> dict[str, str]:
    """Source name -> Delta name for the columns of one table (deterministic, collision-free)."""
    names = list(names)
    out = {n: n for n in names if not needs_mapping(n, column_mapping)}
    by_case: dict[str, list[str]] = {}
    for n in names:
        by_case.setdefault(n.lower(), []).append(n)
    twins = sorted(n for group in by_case.values() if len(group) > 1 for n in group)
    if twins:
        raise UnstorableNames(table, twins)
    taken = {n.lower() for n in out}
    for n in sorted(n for n in names if n not in out):
        for digits in _HASH_DIGITS:
            mapped = lake_column(n, column_mapping, digits)
            if mapped.lower() not in taken:
                break
        taken.add(mapped.lower())
        out[n] = mapped
    return {n: out[n] for n in names}


def source_name(column: Column) -> str:
    """The source's name of a column of a lake schema (:func:`lake_schema`), or of a source schema."""
    return str(column.attrs.get(SOURCE_NAME, column.name))


def lake_schema(schema: TableSchema, column_mapping: bool) -> TableSchema:
    """``schema`` with its columns (and key columns) under their Delta names; a renamed column keeps its
    source name in ``attrs[SOURCE_NAME]``. Idempotent: a schema mapped already comes back as it is."""
    if any(SOURCE_NAME in c.attrs for c in schema.columns):
        return schema
    names = column_map(schema.column_names, column_mapping, schema.qualified_name)
    if all(k == v for k, v in names.items()):
        return schema
    lower = {k.lower(): v for k, v in names.items()}
    columns = [c if names[c.name] == c.name else replace(c, name=names[c.name], attrs={**c.attrs, SOURCE_NAME: c.name})
               for c in schema.columns]
    keys = [replace(k, columns=tuple(lower.get(c.lower(), c) for c in k.columns)) for k in schema.unique_keys]
    return replace(schema, columns=columns, primary_key=[lower.get(c.lower(), c) for c in schema.primary_key],
                   unique_keys=keys)


def lake_names(schema: TableSchema) -> dict[str, str]:
    """Source name -> Delta name of the columns of a lake schema (:func:`lake_schema`)."""
    return {source_name(c): c.name for c in schema.columns}


def lake_keys(schema: TableSchema, key_columns: Iterable[str]) -> list[str]:
    """Key columns named by their source names (or already by their Delta names) as Delta names."""
    by_source = {source_name(c).lower(): c.name for c in schema.columns}
    by_lake = {c.name.lower(): c.name for c in schema.columns}
    return [by_source.get(k.lower()) or by_lake.get(k.lower(), k) for k in key_columns]


def renamed_columns(schema: TableSchema) -> dict[str, str]:
    """Source name -> Delta name of the columns of a lake schema that land under another name."""
    return {source_name(c): c.name for c in schema.columns if SOURCE_NAME in c.attrs}


def field_metadata(fields: Iterable[tuple[str, Mapping[str, object]]], schema: TableSchema
                   ) -> dict[str, dict[str, object]]:
    """The field metadata a Delta table's columns (``(name, metadata)``) should have for ``schema``:
    only the fields whose metadata changes, by name."""
    wanted = {c.name: source_name(c) for c in schema.columns if SOURCE_NAME in c.attrs}
    out: dict[str, dict[str, object]] = {}
    for name, metadata in fields:
        have = metadata.get(SOURCE_NAME)
        want = wanted.get(name)
        if have != want:
            new = {k: v for k, v in metadata.items() if k != SOURCE_NAME}
            if want is not None:
                new[SOURCE_NAME] = want
            out[name] = new
    return out


def target_dir(database: str, table: str) -> str:
    """The directory of a source table's target under the pipeline's root (see the module docstring)."""
    plain = (_PLAIN_DIR.fullmatch(database) is not None and _PLAIN_DIR.fullmatch(table) is not None
             and "__" not in database and not database.endswith("_")
             and not table.lower().endswith("__history") and _MAPPED_DIR.search(table) is None)
    if plain:
        return f"{database}__{table}"
    return f"{_UNSAFE_DIR.sub('_', database)}__{_UNSAFE_DIR.sub('_', table)}__{_digest(f'{database}.{table}', 8)}"


def legacy_target_dir(database: str, table: str) -> str | None:
    """Where a lake made before this rule kept the table's target, when that is not :func:`target_dir`.

    >>> legacy_target_dir("shop", "a b"), legacy_target_dir("shop", "orders")
    ('shop__a_b', None)
    """
    old = f"{_UNSAFE_DIR.sub('_', database)}__{_UNSAFE_DIR.sub('_', table)}"
    return None if old == target_dir(database, table) else old


__all__ = ["DELTA_REFUSED", "SOURCE_NAME", "UnstorableNames", "column_map", "field_metadata", "lake_column",
           "lake_keys", "lake_names", "lake_schema", "legacy_target_dir", "needs_mapping", "renamed_columns",
           "source_name", "target_dir"]
