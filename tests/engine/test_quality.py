"""Data-quality gates (Great Expectations): results land in ``_cdclake/quality``; ``warn`` records and goes on;
``fail`` stops before the window's checkpoint until the operator decides; a key duplicated in the lake is found by
joining the changed keys back to the target (moved from integration/test_quality.py, issue 44)."""

from __future__ import annotations

import pytest
from cdclake.cli import cli
from cdclake.engine.control import WINDOW_APPLIED, WINDOW_PLANNED
from cdclake.engine.quality import QualityGateError
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner

from tests.engine.helpers import make_pipeline, pipeline_yaml

BETWEEN = "expect_column_values_to_be_between"
UNIQUE = "expect_column_values_to_be_unique"


def _extra(quality: str, lake: str) -> str:
    return (f"{lake}quality:\n  enabled: true\n{quality}tables:\n  shop.acct:\n    expectations:\n"
            f"      - {{type: {BETWEEN}, kwargs: {{column: balance, min_value: 0}}}}\n")


def _pipeline(spark, db: FakeDatabase, tmp_path, quality: str, lake: str = ""):  # type: ignore[no-untyped-def]
    return make_pipeline(spark, db, tmp_path / "lake", name="qa", extra=_extra(quality, lake))


def _config(db: FakeDatabase, tmp_path, quality: str, lake: str = ""):  # type: ignore[no-untyped-def]
    """The same pipeline as a file, for the command line."""
    path = tmp_path / f"qa-{len(quality)}.yaml"
    path.write_text(pipeline_yaml(db, tmp_path / "lake", name="qa", extra=_extra(quality, lake)))
    return str(path)


def _create(tmp_path) -> FakeDatabase:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.acct", [("id", "int", False), ("owner", "text", False), ("balance", "decimal(10,2)")],
                    key=["id"])
    db.insert("shop.acct", *({"id": i, "owner": f"o{i}", "balance": i} for i in range(1, 51)))
    return db


def _results(spark, pipeline, where: str) -> dict[tuple[str, str | None], tuple]:  # type: ignore[no-untyped-def]
    rows = spark.read.format("delta").load(pipeline.layout.quality).where(where).collect()
    return {(r.expectation, r.column): (r.success, r.unexpected_count, r.element_count, r.severity, r.observed)
            for r in rows}


def test_gates_record_results_warn_goes_on_and_fail_stops_before_the_checkpoint_until_accepted(
        spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = _create(tmp_path)
    soft = "  delete_mode: soft\n"
    pipeline = _pipeline(spark, db, tmp_path, "  on_failure: fail\n", lake=soft)
    pipeline.snapshot()
    snapshot = _results(spark, pipeline, "window_id IS NULL")
    assert set(snapshot) == {
        ("expect_column_values_to_not_be_null", "id"), (UNIQUE, "id"), ("expect_column_values_to_not_be_null", "owner"),
        ("expect_column_values_to_be_of_type", "id"), ("expect_column_values_to_be_of_type", "owner"),
        ("expect_column_values_to_be_of_type", "balance"), (BETWEEN, "balance"),
    }
    assert all(r[0] for r in snapshot.values()) and snapshot[(UNIQUE, "id")][2] == 50  # the whole table

    # A clean window passes.
    db.update("shop.acct", lambda r: r["id"] <= 4, {"balance": lambda r: float(r["balance"]) + 1})
    db.delete("shop.acct", {"id": 3})  # a tombstone: not a changed live row
    first = pipeline.mine()
    window1 = _results(spark, pipeline, f"window_id = {first.window_id}")
    assert all(r[0] for r in window1.values()) and len(window1) == 7
    assert window1[("expect_column_values_to_not_be_null", "id")][2] == 3  # ids 1, 2, 4
    assert window1[(UNIQUE, "id")][2] == 4  # every target row of a changed key, the tombstone too

    # A broken lake: a second row for key 5 that the next change does not touch (its __seq is higher), so
    # only joining the changed keys back to the whole table finds it. And bad source data: balance < 0.
    path = pipeline.layout.target("shop.acct")
    spark.sql(f"INSERT INTO delta.`{path}` (id, owner, balance, `__op`, `__seq`, `__position`, `__deleted`) "
              f"VALUES (5, 'ghost', 1, 'c', {10**37}, 'x', false)")
    db.update("shop.acct", lambda r: r["id"] in (5, 6), {"balance": lambda r: float(r["balance"]) + 1})
    db.update("shop.acct", {"id": 9}, {"balance": -3})
    with pytest.raises(QualityGateError) as caught:
        pipeline.mine()
    problem = caught.value.problem
    assert f"shop.acct: {BETWEEN} on column balance (tables.shop.acct.expectations[0]): 1 of 3 rows unexpected, " \
           "e.g. -3.00" in problem
    assert f"shop.acct: {UNIQUE} on column id (generated): 2 of 4 rows unexpected, e.g. 5" in problem
    assert "not checkpointed" in problem and "tables.shop.acct.expectations[0].on_failure: warn" in caught.value.fix
    assert pipeline.control.last_window().status == WINDOW_PLANNED  # merged, not checkpointed
    failed = f"NOT success AND window_id = {first.window_id + 1}"
    severity, observed = _results(spark, pipeline, failed)[(BETWEEN, "balance")][3:]
    assert severity == "fail" and '"sample": ["-3.00"]' in observed
    assert set(_results(spark, pipeline, failed)) == {(BETWEEN, "balance"), (UNIQUE, "id")}

    with pytest.raises(QualityGateError):  # the pipeline stays stopped: the same rows fail again
        pipeline.mine()
    assert spark.read.format("delta").load(pipeline.layout.quality).where(failed).count() == 2  # not doubled
    assert pipeline.control.last_window().status == WINDOW_PLANNED

    # status: stopped on the gate, why, and the fix, as runnable commands.
    stopped_at = first.window_id + 1
    config = _config(db, tmp_path, "  on_failure: fail\n", lake=soft)
    status = CliRunner().invoke(cli, ["status", "--config", config])
    assert status.exit_code == 0, status.output
    assert f"pipeline STOPPED: a data-quality gate failed at window {stopped_at} (since 20" in status.output
    assert f"  data-quality gate failed in window {stopped_at}: shop.acct: {BETWEEN} on column balance" in status.output
    assert "  fix: " in status.output and "tables.shop.acct.expectations[0].on_failure: warn" in status.output
    assert f"cdclake backfill --config {config} --table" in status.output
    assert "last run: mine failed 20" in status.output and f"(window {stopped_at}, run " in status.output

    # The operator accepts the data (warn): the same window completes, its failures recorded as warnings,
    # and the run goes on to what the source committed since.
    db.update("shop.acct", {"id": 20}, {"balance": 77})
    accepted = _pipeline(spark, db, tmp_path, "  on_failure: warn\n", lake=soft)
    mined = CliRunner().invoke(cli, ["mine", "--config", _config(db, tmp_path, "  on_failure: warn\n", lake=soft)])
    assert mined.exit_code == 0, mined.output
    assert mined.output.startswith(f"windows {stopped_at}-{stopped_at + 1}: ")
    assert f"  window {stopped_at} was planned by an earlier run that stopped before its checkpoint" in mined.output
    assert "then mined on to the log end" in mined.output and "  shop.acct: 4 changes" in mined.output
    assert accepted.control.last_window().window_id == stopped_at + 1
    assert accepted.control.last_window().status == WINDOW_APPLIED
    assert spark.read.format("delta").load(path).where("id = 20").first().balance == 77
    report = next(r for r in accepted.control.last_runs(2) if r.window_id == stopped_at)
    assert report.status == "ok"
    last = _results(spark, accepted, f"run_id = '{report.run_id}'")
    assert last[(BETWEEN, "balance")][:4] == (False, 1, 3, "warn") and last[(UNIQUE, "id")][:4] == (False, 2, 4, "warn")
    assert all(r[0] for k, r in last.items() if k not in ((BETWEEN, "balance"), (UNIQUE, "id")))


def test_a_backfill_is_checked_on_the_rows_it_rewrote(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = _create(tmp_path)
    pipeline = _pipeline(spark, db, tmp_path, "  on_failure: fail\n")
    pipeline.snapshot()
    db.update("shop.acct", {"id": 15}, {"balance": -5})

    with pytest.raises(QualityGateError) as caught:
        pipeline.backfill("shop.acct", "id BETWEEN 10 AND 20")

    assert "after the backfill of shop.acct" in caught.value.problem and "backfill is applied" in caught.value.problem
    assert f"{BETWEEN} on column balance (tables.shop.acct.expectations[0]): 1 of 11 rows unexpected" \
           in caught.value.problem
    runs = spark.read.format("delta").load(pipeline.layout.runs).where("command = 'backfill'").collect()
    assert [r.status for r in runs] == ["failed"]
    checked = _results(spark, pipeline, f"run_id = '{runs[0].run_id}'")
    assert checked[(BETWEEN, "balance")][:3] == (False, 1, 11)
    assert checked[(UNIQUE, "id")][:3] == (True, 0, 50)  # keys: across the whole table
    lake = spark.read.format("delta").load(pipeline.layout.target("shop.acct")).where("id = 15").first()
    assert str(lake.balance) == "-5.00"  # applied: the gate reports, it does not undo
