"""A mining run with nothing to do writes nothing, and the command line's idle ``mine`` and ``status`` start no JVM
(moved from integration/test_lake_view.py, issue 44)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from cdclake.engine.lake import table_version
from cdclake.testing.fake import FakeDatabase, process_env

from tests.doc_commands import record
from tests.engine.helpers import assert_lake_equals_source, config_file, make_pipeline

CLI = str(Path(sys.executable).with_name("cdclake"))


def test_an_idle_mine_writes_nothing_and_the_command_line_starts_no_spark(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = FakeDatabase(tmp_path / "db.log")
    db = "shop"
    src.create_table(f"{db}.items", [("id", "int", False), ("qty", "int")], key=["id"])
    src.insert(f"{db}.items", {"id": 1, "qty": 1}, {"id": 2, "qty": 2})
    pipeline = make_pipeline(spark, src, tmp_path / "lake", name="idle")
    pipeline.snapshot()
    src.update(f"{db}.items", {"id": 1}, {"qty": 5})
    first = pipeline.mine()
    assert first.events == 1 and not first.idle
    layout = pipeline.layout
    tables = (layout.checkpoints, layout.runs, layout.bronze, layout.schema_history, layout.target(f"{db}.items"))
    versions = {t: table_version(spark, t) for t in tables}

    idle = pipeline.mine()
    assert idle.idle and idle.events == 0 and idle.window_id == first.window_id and idle.end == first.end
    assert {t: table_version(spark, t) for t in tables} == versions, "an idle run wrote to the lake"

    config = config_file(src, tmp_path / "lake", name="idle")
    env = process_env({**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "PATH": "/usr/bin:/bin"})  # no JVM
    record(["cdclake", "mine", "--config", str(config), "--snapshot-missing"])
    done = subprocess.run([CLI, "mine", "--config", str(config), "--snapshot-missing"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0 and f"nothing new: every table stands at the log end {first.end}" in done.stdout, \
        done.stdout + done.stderr
    record(["cdclake", "status", "--config", str(config), "--json"])
    done = subprocess.run([CLI, "status", "--config", str(config), "--json"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    (entry,) = status["tables"]
    assert (entry["rows"], entry["lag_s"], entry["position"]) == (2, 0.0, first.end)
    assert entry["last_run"]["run_id"] == pipeline.control.last_runs(1)[0].run_id
    assert {t: table_version(spark, t) for t in tables} == versions

    src.insert(f"{db}.items", {"id": 3, "qty": 3})  # something to do again: a window, as before
    again = pipeline.mine()
    assert not again.idle and again.window_id == first.window_id + 1 and again.events == 1
    assert_lake_equals_source(spark, pipeline, [f"{db}.items"])
    assert pipeline.control.table_states()[f"{db}.items"].ordinal == Decimal(
        pipeline.source.log.current_position().ordinal)
