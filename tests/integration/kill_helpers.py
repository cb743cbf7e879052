"""Kills at a random instant of a mining run: before the n-th Delta/Parquet write or SQL statement."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from cdclake.engine.faults import SimulatedKill


@contextlib.contextmanager
def kill_at_write(spark: Any, monkeypatch: pytest.MonkeyPatch, kill_at: int) -> Iterator[None]:
    """Inside the block, the ``kill_at``-th ``DataFrameWriter.save`` or ``SparkSession.sql`` raises
    :class:`SimulatedKill` (a write or statement the block does not reach kills nothing)."""
    writer_type, session_type = type(spark.range(1).write), type(spark)
    save, sql = writer_type.save, session_type.sql
    calls = {"n": 0}

    def counted(original: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise SimulatedKill(f"random kill at write/statement {kill_at}")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(writer_type, "save", lambda self, *a, **k: counted(save, self, *a, **k))
    monkeypatch.setattr(session_type, "sql", lambda self, *a, **k: counted(sql, self, *a, **k))
    try:
        yield
    finally:
        monkeypatch.setattr(writer_type, "save", save)
        monkeypatch.setattr(session_type, "sql", sql)
