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
class UniqueKey:
    """A unique index or constraint of the source table (its columns in index order)."""

    name: str
    columns: tuple[str, ...]
    prefix: bool = False  # a part indexes a prefix (``name(10)``): the source ranks it after full keys


@dataclass(frozen=True)
class RowKey:
    """What identifies a row of a table in the lake.

    ``kind`` is ``primary key``, ``unique key`` (``name`` says which), ``key_columns`` (the pipeline
    file's ``tables.<t>.key_columns``) or ``none``: the table is then kept as a multiset (two equal
    rows are two rows; a delete removes exactly one of them).
    """

    kind: str
    columns: tuple[str, ...] = ()
    name: str | None = None

    def describe(self) -> str:
        """E.g. ``primary key (id)``, ``unique key uk_email (email)``, ``none (rows kept as a multiset)``."""
        if self.kind == "none":
            return "none (rows kept as a multiset)"
        cols = ", ".join(self.columns)
        return f"{self.kind} {self.name} ({cols})" if self.name else f"{self.kind} ({cols})"


@dataclass(frozen=True)
class TableSchema:
    """A source table at one log position."""

    database: str
    table: str
    columns: list[Column]
    primary_key: list[str] = field(default_factory=list)
    unique_keys: list[UniqueKey] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)  # source-specific facts of the table (an object id...)

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

    def row_key(self) -> RowKey:
        """The primary key; else the first unique key whose columns are all NOT NULL (the index
        InnoDB itself would cluster on); else none.

        >>> cols = [Column("id", "int", "INT"), Column("email", "varchar(9)", "STRING", nullable=False)]
        >>> TableSchema("s", "t", cols, [], [UniqueKey("uk_id", ("id",)), UniqueKey("uk_e", ("email",))]).row_key()
        RowKey(kind='unique key', columns=('email',), name='uk_e')
        >>> TableSchema("s", "t", cols).row_key().describe()
        'none (rows kept as a multiset)'
        """
        if self.primary_key:
            return RowKey("primary key", tuple(self.primary_key))
        for key in sorted(self.unique_keys, key=lambda k: k.prefix):  # stable: full keys, then prefix ones
            if key.columns and all(self.has_column(c) and not self.column(c).nullable for c in key.columns):
                return RowKey("unique key", tuple(self.column(c).name for c in key.columns), key.name)
        return RowKey("none")

    def with_columns(self, columns: list[Column], primary_key: list[str] | None = None,
                     unique_keys: list[UniqueKey] | None = None) -> TableSchema:
        """The schema with other columns; unique keys lose columns that are gone (a key left with none
        is dropped), as the source drops a dropped column from its indexes."""
        names = {c.name.lower() for c in columns}
        keys = self.unique_keys if unique_keys is None else unique_keys
        kept = [replace(k, columns=tuple(c for c in k.columns if c.lower() in names)) for k in keys]
        return replace(self, columns=columns, primary_key=self.primary_key if primary_key is None else primary_key,
                       unique_keys=[k for k in kept if k.columns])

    def renamed(self, database: str, table: str) -> TableSchema:
        return replace(self, database=database, table=table)

    def to_json(self) -> str:
        raw = asdict(self)
        if not raw["attrs"]:
            del raw["attrs"]
        return json.dumps(raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TableSchema:
        raw = json.loads(text)
        cols = [Column(**c) for c in raw["columns"]]
        keys = [UniqueKey(k["name"], tuple(k["columns"]), bool(k.get("prefix"))) for k in raw.get("unique_keys") or []]
        return cls(raw["database"], raw["table"], cols, list(raw.get("primary_key") or []), keys,
                   dict(raw.get("attrs") or {}))
