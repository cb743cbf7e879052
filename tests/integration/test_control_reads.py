"""The control tables' reads that a run keeps for the next one: taken only while the Delta table is unchanged."""

from __future__ import annotations

import shutil

import pytest
from cdclake.engine.control import ControlTables
from cdclake.engine.lake import LakeLayout, commit_metric, table_version
from cdclake.engine.states import STREAMING, TableState


def _state(table: str, ordinal: int) -> TableState:
    return TableState(table, STREAMING, {"n": ordinal}, ordinal, None, None)


def test_a_run_takes_the_last_runs_reads_only_while_the_table_is_unchanged(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    layout = LakeLayout(str(tmp_path / "lake"), "reads")
    control = ControlTables(spark, layout)
    reads = []
    read_latest = control._read_latest
    control._read_latest = lambda: reads.append(1) or read_latest()  # type: ignore[method-assign]
    with control.run_cache():
        control.ensure()
        control.set_tables([_state("db.a", 1)], "r1")
        assert control.table_states()["db.a"].ordinal == 1
    with control.run_cache():  # nothing changed the table since: the last run's reads, no Spark job
        assert control.table_states()["db.a"].ordinal == 1
        control.set_tables([_state("db.a", 2)], "r2")
    assert reads == []

    other = ControlTables(spark, layout)  # another process moves the table on
    other.set_tables([_state("db.a", 3), _state("db.b", 1)], "r3")
    with control.run_cache():
        states = control.table_states()
    assert reads == [1] and states["db.a"].ordinal == 3 and states["db.b"].ordinal == 1

    with pytest.raises(RuntimeError), control.run_cache():  # a run that fails keeps nothing for the next
        control.table_states()
        raise RuntimeError("the run failed")
    with control.run_cache():
        assert control.table_states()["db.a"].ordinal == 3
    assert reads == [1, 1]

    shutil.rmtree(tmp_path / "lake")  # a lake made again at the same path, up to the same version (3)
    other.ensure()
    for n in range(3):
        other.set_tables([_state("db.c", n)], "r4")
    with control.run_cache():
        assert set(control.table_states()) == {"db.c"}
    assert reads == [1, 1, 1]


def test_table_version_and_commit_metrics_come_from_the_log(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    assert table_version(spark, path) is None
    spark.range(5).write.format("delta").save(path)
    first = table_version(spark, path)
    assert first is not None and first[1] == 0
    assert commit_metric(spark, path, 0, "numOutputRows") == 5
    spark.range(3).write.format("delta").mode("append").save(path)
    assert table_version(spark, path) == (first[0], 1)
    assert commit_metric(spark, path, 1, "numOutputRows") == 3
    assert commit_metric(spark, path, 1, "noSuchMetric") is None
    assert commit_metric(spark, path, 7, "numOutputRows") is None
    spark.range(1).write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
    replaced = table_version(spark, path)
    assert replaced is not None and replaced[0] == first[0] and replaced[1] == 2  # same table, a new version
