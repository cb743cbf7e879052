"""A lost log position and a table whose rows changed without row events fail with the problem and the fix, which
runs as printed (moved from integration/test_errors.py, issue 44: how MySQL finds its binlogs purged is
integration/test_mariadb_preflight.py; its statements that change rows without row events, test_mysql_ddl.py)."""

from __future__ import annotations

import json

from cdclake.cli import cli
from cdclake.errors import ERROR_TAG
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner

from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline
from tests.integration.pipeline_helpers import printed_command


def test_a_lost_position_is_reported_with_the_remedy(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.t", [("id", "int", False), ("pad", "text")], key=["id"])
    pipeline = make_pipeline(spark, db, tmp_path / "lake", "purge")
    snap = pipeline.snapshot()
    db.insert("shop.t", *({"id": i, "pad": "x" * 20} for i in range(50)))
    db.purge(db.end)
    config = config_file(db, tmp_path / "lake", "purge")
    failed = CliRunner().invoke(cli, ["mine", "--config", str(config)])
    assert failed.exit_code == 2, failed.output
    text = failed.output
    assert snap.start.split(" ")[0] in text  # the stored position
    assert "purged" in text and "cdclake snapshot" in text
    error = json.loads(text.split(ERROR_TAG)[1])
    assert error["kind"] == "PositionLostError" and error["permanent"] is True
    # nothing was applied: the lake still holds the snapshot only
    assert spark.read.format("delta").load(pipeline.layout.target("shop.t")).count() == 0
    status = CliRunner().invoke(cli, ["status", "--config", str(config)])
    assert "pipeline STOPPED: a gap: the source no longer has the log the position needs" in status.output
    assert f"cdclake snapshot --config {config} --force" in status.output

    # The remedy the error names, run as printed: a forced re-snapshot moves the positions past the gap.
    db.delete("shop.t", lambda r: r["id"] < 10)
    fix = printed_command(error["fix"], config)
    assert "--force" in fix
    again = CliRunner().invoke(cli, fix)
    assert again.exit_code == 0, again.output
    assert again.output.startswith("snapshot shop.t: 40 rows at ")
    db.update("shop.t", lambda r: 10 <= r["id"] <= 19, {"pad": "after"})
    db.insert("shop.t", {"id": 5000, "pad": "new"})
    report = pipeline.mine()
    assert report.events == 11
    assert_lake_equals_source(spark, pipeline, ["shop.t"])
    windows = {r.status for r in spark.read.format("delta").load(pipeline.layout.checkpoints)
               .where(f"kind = 'window' AND window_id = {report.window_id - 1}").collect()}
    assert windows == {"cancelled"}  # the failed run's window, planned, then given up by the re-snapshot

    # One table again, streaming as it is: --tables with --force (the README's re-snapshot of a table).
    one = CliRunner().invoke(cli, ["snapshot", "--config", str(config), "--tables", "shop\\.t", "--force"])
    assert one.exit_code == 0 and one.output.startswith("snapshot shop.t: 41 rows at "), one.output
    assert_lake_equals_source(spark, pipeline, ["shop.t"])


def test_rows_changed_without_row_events_park_the_table_when_reread_is_manual(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table("shop.p", [("id", "int", False), ("v", "int")], key=["id"])
    db.create_table("shop.q", [("id", "int", False), ("v", "int")], key=["id"])
    manual = "schema_changes:\n  reread: manual\n"  # rows a statement changes without row events: the operator's
    pipeline = make_pipeline(spark, db, tmp_path / "lake", "ddl", extra=manual)
    pipeline.snapshot()
    db.insert("shop.p", {"id": 1, "v": 1}, {"id": 2, "v": 2})
    db.change_rows_silently("shop.p", "TRUNCATE PARTITION p0", where={"id": 2}, delete=True)
    db.insert("shop.q", {"id": 1, "v": 1})
    config = config_file(db, tmp_path / "lake", "ddl", extra=manual)
    parked = CliRunner().invoke(cli, ["mine", "--config", str(config)])
    assert parked.exit_code == 2, parked.output
    error = json.loads(parked.output.split(ERROR_TAG)[1])
    assert (error["kind"], error["permanent"]) == ("TablesParkedError", True)
    assert "TRUNCATE PARTITION" in error["problem"] and "shop.p is parked since fake:" in error["problem"]
    assert "schema_changes.reread: manual" in error["problem"]
    assert f"cdclake backfill --config {config} --table shop.p" in error["fix"]
    assert pipeline.control.table_states()["shop.q"].status == "streaming"
    assert_lake_equals_source(spark, pipeline, ["shop.q"])  # the other table was mined
    status = CliRunner().invoke(cli, ["status", "--config", str(config)])
    assert "pipeline STOPPED: tables are parked" in status.output
    assert f"fix: cdclake backfill --config {config} --table shop.p" in status.output

    # The table's fix, run as printed, brings it back.
    remedy = next(line for line in status.output.splitlines() if "fix: cdclake backfill" in line)
    fix = CliRunner().invoke(cli, printed_command(f"`{remedy.split('fix: ', 1)[1].split(' (')[0]}`", config))
    assert fix.exit_code == 0, fix.output
    assert pipeline.control.table_states()["shop.p"].status == "streaming"
    assert_lake_equals_source(spark, pipeline, ["shop.p", "shop.q"])
