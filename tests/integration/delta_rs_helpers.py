"""delta-rs (``deltalake``: what Polars, DuckDB and pandas read Delta with) against Spark, row by row."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
from cdclake.engine.lake import COMPATIBLE_READER_FEATURES


def delta_tables(root: Path) -> list[Path]:
    """Every Delta table under ``root`` (a directory holding a ``_delta_log``)."""
    return sorted(Path(d) for d, dirs, _ in os.walk(root) if "_delta_log" in dirs)


def _norm(value: Any) -> Any:
    if isinstance(value, dt.datetime):  # Spark: session time zone (UTC); delta-rs: UTC
        return (value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value).isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        items = [_norm(v) for v in value]
        if all(isinstance(v, tuple) and len(v) == 2 for v in items):  # a map as a list of pairs
            return tuple(sorted(items, key=repr))
        return tuple(items)
    return value


def _rows(table: Any) -> list[tuple]:  # type: ignore[type-arg]
    return sorted((tuple(_norm(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def assert_delta_rs_reads_as_spark(spark, path: Path) -> int:  # type: ignore[no-untyped-def]
    """delta-rs opens ``path`` (no reader feature it lacks) and reads what Spark reads, row by row."""
    table = deltalake.DeltaTable(str(path))
    protocol = table.protocol()
    unreadable = set(protocol.reader_features or []) - COMPATIBLE_READER_FEATURES
    assert not unreadable and protocol.min_reader_version in (1, 3), f"{path}: {protocol}"
    ours = table.to_pyarrow_table()
    theirs = spark.read.format("delta").load(str(path)).toArrow()
    assert ours.column_names == theirs.column_names, path
    assert _rows(ours) == _rows(theirs), path
    return ours.num_rows
