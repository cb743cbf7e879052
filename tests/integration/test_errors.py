"""Purged binlogs, unparsable DDL and bad configuration fail with the problem and the fix."""

from __future__ import annotations

import json

import pytest
from cdclake.cli import cli
from cdclake.errors import ERROR_TAG
from click.testing import CliRunner

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml, printed_command


def test_purged_binlog_is_reported_with_range_and_remedy(spark, private_mariadb, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = private_mariadb
    db.execute("CREATE DATABASE shop")
    db.execute("CREATE TABLE shop.t (id INT PRIMARY KEY, pad VARCHAR(200))")
    pipeline = make_pipeline(spark, db, "shop", tmp_path / "lake", "purge")
    snap = pipeline.snapshot()
    for i in range(1000):  # 64 KiB binlogs rotate many times
        db.execute("INSERT INTO shop.t VALUES (%s, REPEAT('x', 200))", (i,))
    newest = db.flush_logs()
    db.purge_logs_to(newest)
    config = tmp_path / "purge.yaml"
    config.write_text(pipeline_yaml(db, "shop", tmp_path / "lake", "purge"))
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
    db.execute("DELETE FROM shop.t WHERE id < 10")
    fix = printed_command(error["fix"], config)
    assert "--force" in fix
    again = CliRunner().invoke(cli, fix)
    assert again.exit_code == 0, again.output
    assert again.output.startswith("snapshot shop.t: 990 rows at ")
    db.execute("UPDATE shop.t SET pad = 'after' WHERE id BETWEEN 10 AND 19")
    db.execute("INSERT INTO shop.t VALUES (5000, 'new')")
    report = pipeline.mine()
    assert report.events == 11
    assert_lake_equals_source(spark, db, pipeline, ["shop.t"])
    windows = {r.status for r in spark.read.format("delta").load(pipeline.layout.checkpoints)
               .where(f"kind = 'window' AND window_id = {report.window_id - 1}").collect()}
    assert windows == {"cancelled"}  # the failed run's window, planned, then given up by the re-snapshot

    # One table again, streaming as it is: --tables with --force (the README's re-snapshot of a table).
    one = CliRunner().invoke(cli, ["snapshot", "--config", str(config), "--tables", "shop\\.t", "--force"])
    assert one.exit_code == 0 and one.output.startswith("snapshot shop.t: 991 rows at "), one.output
    assert_lake_equals_source(spark, db, pipeline, ["shop.t"])


def test_unappliable_ddl_parks_its_table_or_is_skipped_by_config(spark, mariadb, fresh_database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.p (id INT PRIMARY KEY, v INT) PARTITION BY HASH(id) PARTITIONS 2")
    mariadb.execute(f"CREATE TABLE `{db}`.q (id INT PRIMARY KEY, v INT)")
    manual = "schema_changes:\n  reread: manual\n"  # rows a statement changes without row events: the operator's
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", "ddl", extra=manual)
    pipeline.snapshot()
    mariadb.execute(f"INSERT INTO `{db}`.p VALUES (1, 1), (2, 2)")
    mariadb.execute(f"ALTER TABLE `{db}`.p TRUNCATE PARTITION p0")
    mariadb.execute(f"INSERT INTO `{db}`.q VALUES (1, 1)")
    config = tmp_path / "ddl.yaml"
    config.write_text(pipeline_yaml(mariadb, db, tmp_path / "lake", "ddl", extra=manual))
    parked = CliRunner().invoke(cli, ["mine", "--config", str(config)])
    assert parked.exit_code == 2, parked.output
    error = json.loads(parked.output.split(ERROR_TAG)[1])
    assert (error["kind"], error["permanent"]) == ("TablesParkedError", True)
    assert "TRUNCATE PARTITION" in error["problem"] and f"{db}.p is parked since mysql-bin." in error["problem"]
    assert "schema_changes.reread: manual" in error["problem"]
    assert f"cdclake backfill --config {config} --table {db}.p" in error["fix"]
    assert pipeline.control.table_states()[f"{db}.q"].status == "streaming"
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.q"])  # the other table was mined
    status = CliRunner().invoke(cli, ["status", "--config", str(config)])
    assert "pipeline STOPPED: tables are parked" in status.output
    assert f"fix: cdclake backfill --config {config} --table {db}.p" in status.output

    # The table's fix, run as printed, brings it back.
    remedy = next(line for line in status.output.splitlines() if "fix: cdclake backfill" in line)
    fix = CliRunner().invoke(cli, printed_command(f"`{remedy.split('fix: ', 1)[1].split(' (')[0]}`", config))
    assert fix.exit_code == 0, fix.output
    assert pipeline.control.table_states()[f"{db}.p"].status == "streaming"
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.p", f"{db}.q"])

    # configured to skip: the run goes on and the statement is recorded in the schema history
    extra = "mining:\n  skip_unparsable_ddl: true\n"
    skipping = make_pipeline(spark, mariadb, db, tmp_path / "lake2", "ddl2", extra=extra)
    skipping.snapshot()
    mariadb.execute(f"ALTER TABLE `{db}`.p ADD COLUMN addr INET6")  # a type the parser does not know
    skipping.mine()
    skipped = [e for e in skipping.control.history() if e.kind == "skipped"]
    assert skipped and "INET6" in skipped[0].ddl
    assert skipping.control.table_states()[f"{db}.p"].status == "streaming"


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1, colour: red}\n"
         "lake: {root: /tmp/l}\n", "source.colour: unknown key"),
        ("pipeline: p\nsource: {type: mariadb, host: h, port: abc, user: u, password: x, server_id: 1}\n"
         "lake: {root: /tmp/l}\n", "source.port"),
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: '${NOT_SET_ANYWHERE}', server_id: 1}\n"
         "lake: {root: /tmp/l}\n", "source.password: secret/variable ${NOT_SET_ANYWHERE} is not set"),
        ("pipeline: p\nsource: {type: oracle9, host: h, user: u, password: x, server_id: 1}\nlake: {root: /tmp/l}\n",
         "source.type"),
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1}\nlake: {root: rel/path}\n",
         "lake.root"),
    ],
)
def test_bad_config_names_the_key_without_a_traceback(tmp_path, yaml_text: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    result = CliRunner().invoke(cli, ["mine", "--config", str(config)])
    assert result.exit_code == 2
    assert expected in result.output
    assert "fix:" in result.output
    assert "Traceback" not in result.output


def test_debug_adds_the_stack_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "bad.yaml"
    config.write_text("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1, colour: red}\n"
                      "lake: {root: /tmp/l}\n")
    result = CliRunner().invoke(cli, ["--debug", "mine", "--config", str(config)])
    assert result.exit_code == 2
    assert "Traceback" in result.output and "error: " in result.output and "source.colour: unknown key" in result.output
