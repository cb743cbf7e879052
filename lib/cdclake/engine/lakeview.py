"""Reads of the lake without Spark: the control tables, plan files and target row counts through delta-rs.

What a run or ``cdclake status`` reads of its own small tables needs no JVM: delta-rs opens a Delta table
from its log in milliseconds, where a Spark read plans a query and runs jobs (seconds in a new process).
So a mining run with nothing to do, and ``status``, answer without starting Spark at all.

A :class:`LakeView` covers a lake on the local file system (a path or a ``file:`` URI). Any table it
cannot read exactly as Spark would (a reader feature delta-rs lacks, column mapping) raises
:class:`NotReadable`, and the caller reads that table through Spark instead: never a wrong answer,
at worst a slower one.

>>> LakeView.for_root("s3a://bucket/lake") is None      # object stores: read through Spark
True
>>> LakeView.for_root("/tmp/lake") is not None
True
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    import pyarrow as pa

# Reader features delta-rs 1.x reads as Spark does (lake.COMPATIBLE_READER_FEATURES and no more).
READABLE_FEATURES = frozenset({"timestampNtz"})


class NotReadable(Exception):
    """delta-rs cannot read this table as Spark would: read it through Spark."""


def local_path(uri: str) -> str | None:
    """The local file-system path of ``uri``, None for any other file system.

    >>> local_path("file:///tmp/x"), local_path("/tmp/x"), local_path("hdfs://nn/x")
    ('/tmp/x', '/tmp/x', None)
    """
    parsed = urlparse(uri)
    if parsed.scheme == "" or (parsed.scheme == "file" and parsed.netloc in ("", "localhost")):
        return parsed.path if parsed.scheme else uri
    return None


class LakeView:
    """Spark-free reads under one lake root (see the module docstring)."""

    def __init__(self) -> None:
        from deltalake import DeltaTable

        self._open = DeltaTable

    @classmethod
    def for_root(cls, root: str) -> LakeView | None:
        """A view of the lake at ``root``, None where it is not on the local file system or delta-rs is missing."""
        if local_path(root) is None:
            return None
        try:
            return cls()
        except ImportError:
            return None

    def _table(self, path: str) -> Any:
        local = local_path(path)
        if local is None:
            raise NotReadable(f"{path} is not on the local file system")
        if not os.path.isdir(os.path.join(local, "_delta_log")):
            return None
        try:
            table = self._open(local)
        except Exception as exc:  # e.g. a protocol delta-rs refuses: Spark reads it
            raise NotReadable(f"delta-rs cannot open {path}: {exc}") from exc
        protocol = table.protocol()
        features = set(protocol.reader_features or ())
        config = table.metadata().configuration
        if features - READABLE_FEATURES or config.get("delta.columnMapping.mode", "none") != "none":
            raise NotReadable(f"{path} has reader features {sorted(features)} or column mapping")
        return table

    def exists(self, path: str) -> bool:
        """Whether a Delta table is at ``path``."""
        return self._table(path) is not None

    def version(self, path: str) -> tuple[str, int] | None:
        """``(table id, version)`` of the table at ``path`` now, None if there is none."""
        table = self._table(path)
        return None if table is None else (str(table.metadata().id), int(table.version()))

    def configuration(self, path: str) -> dict[str, str]:
        """The table properties of the table at ``path`` (empty if there is none)."""
        table = self._table(path)
        return {} if table is None else dict(table.metadata().configuration)

    def query(self, sql: str, **tables: str) -> pa.Table:
        """The result of ``sql`` (DataFusion's SQL dialect) over the Delta tables ``tables`` (name -> path;
        each must exist)."""
        opened = {}
        for name, path in tables.items():
            opened[name] = self._table(path)
            if opened[name] is None:
                raise NotReadable(f"no Delta table at {path}")
        return self._query(sql, opened)

    @staticmethod
    def _query(sql: str, tables: dict[str, Any]) -> pa.Table:
        import pyarrow as pa
        from deltalake import QueryBuilder

        builder = QueryBuilder()
        for name, table in tables.items():
            builder = builder.register(name, table)
        # pa.table() of delta-rs's result would import pandas (1.6 s): a stream reader does not
        return pa.RecordBatchReader.from_stream(builder.execute(sql)).read_all()

    def read(self, path: str, columns: list[str] | None = None, where: str | None = None) -> pa.Table | None:
        """The rows of the table at ``path`` (only ``columns``; only those matching the SQL ``where``), None if
        there is none. Through delta-rs's query engine: no pyarrow dataset (whose import alone takes 1.6 s)."""
        table = self._table(path)
        if table is None:
            return None
        select = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        return self._query(f"SELECT {select} FROM t" + (f" WHERE {where}" if where else ""), {"t": table})

    def rows(self, path: str, live_only: str | None = None) -> int | None:
        """How many rows the table at ``path`` holds (those whose boolean column ``live_only`` is false, when
        given, as Spark's ``WHERE NOT live_only`` counts them), None if there is none."""
        table = self._table(path)
        if table is None:
            return None
        where = f' WHERE NOT "{live_only}"' if live_only else ""
        return int(self._query(f"SELECT count(*) AS n FROM t{where}", {"t": table}).column("n")[0].as_py())

    @staticmethod
    def read_text(path: str) -> str | None:
        """The whole text file at ``path``, None if there is none."""
        local = local_path(path)
        if local is None:
            raise NotReadable(f"{path} is not on the local file system")
        try:
            with open(local, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None


def rows_of(table: pa.Table) -> list[Any]:
    """The rows of ``table`` as objects with attributes (as Spark's ``Row``), timestamps naive UTC as Spark
    collects them in a UTC session."""
    from types import SimpleNamespace

    import pyarrow as pa

    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.tz is not None:
            # the same instant without its zone: converting zoned values to Python would import pytz (1.7 s)
            table = table.set_column(i, f.name, table.column(i).cast(pa.timestamp(f.type.unit)))
    maps = [f.name for f in table.schema if pa.types.is_map(f.type)]  # pyarrow gives pairs, Spark a dict
    rows = table.to_pylist()
    for row in rows:
        for name in maps:
            if row[name] is not None:
                row[name] = dict(row[name])
    return [SimpleNamespace(**row) for row in rows]
