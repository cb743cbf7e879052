"""Source-agnostic table schemas: what the schema history stores and the apply step evolves to.

A :class:`TableSchema` is the table as the source defines it at one log position: ordered columns
with their source type text, the Delta (Spark SQL) type they map to, and the key. It round-trips
through JSON so the schema history can hold it.

>>> t = TableSchema("shop", "orders", [Column("id", "int", "INT", nullable=False)], ["id"])
>>> TableSchema.from_json(t.to_json()) == t
True
>>> t.qualified_name
'shop.orders'
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Column:
    """One source column.

    ``source_type`` is the full source type text (``bigint(20) unsigned``, ``enum('a','b')``);
    ``spark_type`` the Spark SQL DDL type of the Delta column; ``attrs`` holds source-specific
    decoding facts (unsigned, enum values, charset, fractional digits...).
    """

    name: str
    source_type: str
    spark_type: str
    nullable: bool = True
    default: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:  # attrs is a dict; hash on identity-defining fields
        return hash((self.name, self.source_type, self.spark_type, self.nullable))


@dataclass(frozen=True)
class TableSchema:
    """A source table at one log position."""

    database: str
    table: str
    columns: list[Column]
    primary_key: list[str] = field(default_factory=list)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        raise KeyError(f"{self.qualified_name} has no column {name!r}")

    def has_column(self, name: str) -> bool:
        return any(c.name.lower() == name.lower() for c in self.columns)

    def key_columns(self) -> list[str]:
        """Primary key, or every column when the table has none (rows are then matched whole)."""
        return list(self.primary_key) or self.column_names

    def with_columns(self, columns: list[Column], primary_key: list[str] | None = None) -> TableSchema:
        return replace(self, columns=columns, primary_key=self.primary_key if primary_key is None else primary_key)

    def renamed(self, database: str, table: str) -> TableSchema:
        return replace(self, database=database, table=table)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TableSchema:
        raw = json.loads(text)
        cols = [Column(**c) for c in raw["columns"]]
        return cls(raw["database"], raw["table"], cols, list(raw.get("primary_key") or []))
