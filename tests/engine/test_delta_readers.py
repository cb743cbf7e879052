"""A compatible lake opens in delta-rs (``deltalake``: Polars, DuckDB, pandas) after every kind of schema change,
a kill between a rewrite's two commits and maintenance, and reads there exactly as in Spark (moved from
integration/test_delta_readers.py, issue 44)."""

from __future__ import annotations

from pathlib import Path

import deltalake
import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.testing.fake import FakeDatabase

from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline, run_cli
from tests.integration.delta_rs_helpers import assert_delta_rs_reads_as_spark, delta_tables


def _check_lake(spark, pipeline, tables: list[str], expect: set[str] | None = None) -> None:  # type: ignore[no-untyped-def]
    """The targets equal the source; delta-rs reads them and their history tables as Spark does, and
    with ``expect`` (names of the tables that must be there) every Delta table under the lake's root."""
    assert_lake_equals_source(spark, pipeline, tables)
    root = Path(pipeline.layout.root)
    if expect is None:
        paths = [Path(p) for t in tables for p in (pipeline.layout.target(t), pipeline.layout.type2(t))]
    else:
        paths = delta_tables(root)
        found = {str(p.relative_to(root)) for p in paths}
        assert expect <= found, expect - found
    for path in paths:
        assert_delta_rs_reads_as_spark(spark, path)


def _rewrites(spark, path: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Versions of the rewrites' first commits (the delete tagged with the version it started from)."""
    log = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return sorted(r.version for r in log if r.userMetadata and "rewrite_from" in r.userMetadata)


def test_compatible_lake_opens_in_delta_rs_after_every_kind_of_ddl(  # type: ignore[no-untyped-def]
        spark, tmp_path, monkeypatch) -> None:
    src = FakeDatabase(tmp_path / "db.log")
    db, t, side = "shop", "shop.t", "shop.side"
    src.create_table(t, [("id", "int", False), ("a", "varchar(20)"), ("b", "int"), ("c", "varchar(10)"),
                         ("d", "datetime"), ("gone", "varchar(5)")], key=["id"])
    src.create_table(side, [("id", "int", False), ("note", "text")], key=["id"])
    src.insert(t, {"id": 1, "a": "one", "b": 10, "c": "11", "d": "2024-01-02 03:04:05.123456", "gone": "x"},
               {"id": 2}, {"id": 3, "a": "three", "b": -3, "c": "-33", "d": "1999-12-31 23:59:59", "gone": "z"})
    src.insert(side, {"id": 1, "note": "a"}, {"id": 2, "note": "b"})
    extra = "  history_tables: true\n  table_features: compatible\n"
    pipeline = make_pipeline(spark, src, tmp_path / "lake", "readers", extra=extra)
    pipeline.snapshot()
    target, control = f"{db}__t", "_cdclake"
    expect = {target, f"{target}__history", f"{db}__side", f"{control}/bronze", f"{control}/checkpoints",
              f"{control}/schema_history", f"{control}/runs", f"{control}/dead_letters"}
    _check_lake(spark, pipeline, [t, side], expect)
    path = pipeline.layout.target(t)

    # One window: DML, ADD COLUMN (metadata only), then DROP, RENAME COLUMN, int -> bigint (Delta type
    # widening in the spark mode) and VARCHAR -> INT, which rewrite the table once each, with rows between
    # them. The run is killed between the first rewrite's two commits, then run again: exact.
    src.insert(t, {"id": 4, "a": "four", "b": 40, "c": "44", "d": "2030-01-01 00:00:00.000001", "gone": "w"})
    src.update(t, {"id": 1}, {"a": "uno", "b": lambda r: r["b"] + 1})
    src.delete(t, {"id": 3})
    src.insert(t, {"id": 10})
    src.add_column(t, "e", "int", False, default=5)
    src.insert(t, {"id": 11, "e": 6})
    src.drop_column(t, "gone")
    src.update(t, {"id": 1}, {"d": "2030-01-02 00:00:00.000002", "e": 7})
    src.insert(t, {"id": 20})
    src.rename_column(t, "a", "a2")
    src.update(t, {"id": 2}, {"a2": "renamed"})
    src.retype_column(t, "b", "bigint")
    src.update(t, {"id": 4}, {"b": 5000000000})
    src.retype_column(t, "c", "int")
    src.update(t, {"id": 1}, {"c": lambda r: r["c"] + 1})
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    monkeypatch.setenv(CRASH_ENV, "rewrite")
    with pytest.raises(SimulatedKill):
        make_pipeline(spark, src, tmp_path / "lake", "readers", extra=extra).mine()
    monkeypatch.delenv(CRASH_ENV)
    monkeypatch.delenv(CRASH_MODE_ENV)
    assert spark.read.format("delta").load(path).isEmpty()  # between the two commits
    assert len(_rewrites(spark, path)) == 1
    assert pipeline.mine().resumed
    _check_lake(spark, pipeline, [t])
    rewrites = _rewrites(spark, path)
    assert len(rewrites) == 4  # no rewrite for DML or ADD COLUMN; the killed one finished, not started again

    # the change data feed of a rewrite: every row deleted (version N), then inserted in the new shape (N+1)
    import pyarrow as pa

    n = rewrites[-1]
    changes = deltalake.DeltaTable(path).load_cdf(starting_version=n, ending_version=n + 1,
                                                  columns=["id", "_change_type", "_commit_version"])
    feed = pa.RecordBatchReader.from_stream(changes).read_all().to_pylist()
    assert {r["_change_type"] for r in feed if r["_commit_version"] == n} == {"delete"}
    assert {r["_change_type"] for r in feed if r["_commit_version"] == n + 1} == {"insert"}
    deleted = sorted(r["id"] for r in feed if r["_commit_version"] == n)
    inserted = sorted(r["id"] for r in feed if r["_commit_version"] == n + 1)
    assert deleted == inserted == sorted(r.id for r in spark.read.format("delta").load(path).collect())

    # maintenance (OPTIMIZE, VACUUM) adds no feature either (RENAME TABLE and TRUNCATE in this mode:
    # test_schema_changes.py)
    maintained = run_cli("maintain", "--config", config_file(src, tmp_path / "lake", "readers", extra=extra))
    assert maintained.output.startswith("optimized ")
    _check_lake(spark, pipeline, [t, side], expect)


