"""Reads without Spark (delta-rs, cdclake.engine.lakeview) answer as Spark's do. (A mining run with nothing to do
writes nothing, and the command line's idle ``mine`` and ``status`` start no JVM: tests/engine/test_lake_view.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cdclake.engine.control import ControlTables, WindowState
from cdclake.engine.history import HistoryEntry
from cdclake.engine.lake import LakeLayout, table_version
from cdclake.engine.lakeview import LakeView, NotReadable
from cdclake.engine.runs import RunLog
from cdclake.engine.states import STREAMING, TableState
from cdclake.schema import TableSchema

CLI = str(Path(sys.executable).with_name("cdclake"))


def _state(table: str, ordinal: int, detail: dict | None = None) -> TableState:
    return TableState(table, STREAMING, {"n": ordinal}, ordinal, None, None, detail or {})


def test_the_view_reads_the_control_tables_as_spark_does(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    layout = LakeLayout(str(tmp_path / "lake"), "view")
    by_spark = ControlTables(spark, layout)
    by_spark.view = None
    by_view = ControlTables(None, layout)  # type: ignore[arg-type]
    assert not by_view.exists()
    by_spark.ensure()
    assert by_view.exists() and by_view.table_features() == by_spark.table_features()
    for n in range(2):
        window = WindowState(n + 1, "planned", {"n": n}, {"n": n + 1}, None, None, None)
        by_spark.plan_window(window, f"r{n}")
        assert by_view.last_window() == by_spark.last_window()  # the open plan, a file
        by_spark.complete_window(window, {"n": n + 1}, n + 1, {"db.a": _state("db.a", n + 1, {"k": [n]}),
                                                               "db.b": _state("db.b", n)}, f"r{n}")
    by_spark.append_history([HistoryEntry(1, "db.a", 5, "p5", "CREATE TABLE a (id INT)", "snapshot",
                                          TableSchema.from_json(json.dumps({
                                              "database": "db", "table": "a", "primary_key": ["id"],
                                              "columns": [{"name": "id", "source_type": "int", "spark_type": "INT",
                                                           "nullable": False}]})),
                                          None, {}, None),
                             HistoryEntry(2, "db.a", 7, "p7", "ALTER TABLE a RENAME x", "ddl", None, "db.z",
                                          {"q": "r"}, 2)])
    RunLog(spark, layout, by_spark).record(_report(), "ok", None)

    assert by_view.table_states() == by_spark.table_states()
    assert by_view.last_window() == by_spark.last_window()
    assert by_view.history() == by_spark.history()
    ours, theirs = by_view.last_runs(5), by_spark.last_runs(5)
    assert [r.run_id for r in ours] == [r.run_id for r in theirs] and ours[0].ended_at == theirs[0].ended_at
    assert ours[0].rows_by_table == dict(theirs[0].rows_by_table)
    assert by_view._version(layout.checkpoints) == table_version(spark, layout.checkpoints)


def _report():  # type: ignore[no-untyped-def]
    from cdclake.engine.runs import RunReport

    report = RunReport("run1", "mine", window_id=3, events=2, rows_by_table={"db.a": 2})
    return report


def test_the_view_counts_rows_as_spark_does_and_refuses_what_it_cannot_read(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    view = LakeView()
    path = str(tmp_path / "soft")
    spark.createDataFrame([(1, False), (2, True), (3, None), (4, False)], "id INT, __deleted BOOLEAN") \
        .write.format("delta").save(path)
    spark.createDataFrame([(5, False)], "id INT, __deleted BOOLEAN").write.format("delta").mode("append").save(path)
    df = spark.read.format("delta").load(path)
    assert view.rows(path) == df.count() == 5
    assert view.rows(path, "__deleted") == df.where("NOT `__deleted`").count() == 3
    assert view.rows(str(tmp_path / "none")) is None
    assert sorted(view.read(path, ["id"], "id > 3").column("id").to_pylist()) == [4, 5]

    mapped = str(tmp_path / "mapped")
    spark.sql(f"CREATE TABLE delta.`{mapped}` (id INT) USING delta TBLPROPERTIES ("
              "'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    dv = str(tmp_path / "dv")
    spark.sql(f"CREATE TABLE delta.`{dv}` (id INT) USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    for unreadable in (mapped, dv):
        with pytest.raises(NotReadable):
            view.rows(unreadable)
    assert LakeView.for_root("s3a://bucket/lake") is None
