"""``cdclake status``'s lag against real sources: 0 when the lake holds every change the source
committed to the captured tables (an idle source, a rotated log, changes of other tables), else the
age of the oldest committed change not applied yet, growing with the (injected) clock; 0 again once
mined. MariaDB for the binlog, the LogMiner simulator for Oracle."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from cdclake.cli import cli
from cdclake.engine.lock import pipeline_lock
from cdclake.engine.status import status_report
from cdclake.testing.logminer_sim import SimulatedOracle
from click.testing import CliRunner

from tests.integration.oracle_helpers import drain, oracle_pipeline
from tests.integration.pipeline_helpers import make_pipeline, pipeline_yaml


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.rstrip("Z")).replace(tzinfo=timezone.utc).timestamp()


def _lags(report: dict[str, Any]) -> dict[str, Any]:
    return {t["source_table"]: t["lag_s"] for t in report["tables"]}


def _table(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in report["tables"] if t["source_table"] == name)


def _bronze_commit(spark, pipeline, table: str) -> float:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    row = (spark.read.format("delta").load(pipeline.layout.bronze).where(F.col("source_table") == table)
           .agg(F.max("commit_ts").alias("ts")).first())
    return row.ts.replace(tzinfo=timezone.utc).timestamp()


def test_mariadb_lag_zero_when_caught_up_and_the_age_of_the_oldest_change_waiting(  # type: ignore[no-untyped-def]
        spark, mariadb, fresh_database, tmp_path) -> None:
    db = fresh_database
    for t in ("a", "b", "other"):
        mariadb.execute(f"CREATE TABLE {db}.{t} (id INT PRIMARY KEY, v INT)")
        mariadb.execute(f"INSERT INTO {db}.{t} VALUES (1, 1), (2, 2)")
    exclude = f"  exclude_tables: ['{db}\\.other']\n"
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", name="lag", source_extra=exclude)
    pipeline.snapshot()
    pipeline.mine()
    a, b = f"{db}.a", f"{db}.b"
    now = time.time() + 3600.0  # "now", as the injected clock says

    # Caught up, on an idle source: 0 for every table and the pipeline.
    report = status_report(pipeline.ctx, clock=lambda: now)
    assert _lags(report) == {a: 0.0, b: 0.0}  # the table that is not captured has no position
    assert report["pipeline"]["lag_s"] == 0.0 and report["pipeline"]["caught_up"] is True

    # A table that is not captured changes, and the server rotates its binlog: still 0.
    mariadb.execute(f"INSERT INTO {db}.other VALUES (3, 3)")
    mariadb.execute(f"UPDATE {db}.other SET v = 9")
    mariadb.flush_logs()
    report = status_report(pipeline.ctx, clock=lambda: now)
    assert report["pipeline"]["lag_s"] == 0.0 and _table(report, a)["lag_s"] == 0.0
    assert _table(report, a)["distance"] > 0 and _table(report, a)["distance_unit"] == "bytes"

    # The command line, as an operator or orchestrator reads it.
    config = tmp_path / "lag.yaml"
    config.write_text(pipeline_yaml(mariadb, db, tmp_path / "lake", name="lag", source_extra=exclude))
    result = CliRunner().invoke(cli, ["status", "--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["pipeline"]["lag_s"] == 0 and printed["pipeline"]["caught_up"] is True
    assert {t["source_table"]: t["lag_s"] for t in printed["tables"]} == {a: 0, b: 0}
    text = CliRunner().invoke(cli, ["status", "--config", str(config)])
    assert text.exit_code == 0 and "pipeline lag: 0 s: the lake holds every committed change" in text.output

    # A change to a captured table that is not mined yet: the age of its commit, growing with the clock.
    before = time.time()
    mariadb.execute(f"INSERT INTO {db}.a VALUES (3, 3)")
    after = time.time()
    first = status_report(pipeline.ctx, clock=lambda: now)
    entry = _table(first, a)
    commit = _epoch(entry["pending_since"])
    assert int(before) <= commit <= after  # the binlog keeps whole seconds
    assert entry["lag_s"] == round(now - commit, 3) and entry["lag_s"] > 3500
    assert _table(first, b)["lag_s"] == 0.0  # the other captured table has nothing waiting
    assert first["pipeline"]["lag_s"] == entry["lag_s"] and first["pipeline"]["caught_up"] is False
    later = status_report(pipeline.ctx, clock=lambda: now + 90)
    assert _table(later, a)["lag_s"] == round(entry["lag_s"] + 90, 3) == later["pipeline"]["lag_s"]

    # A read stopped at its bound (the other table's changes come first) says the figure is a bound.
    bounded = status_report(pipeline.ctx, clock=lambda: now, max_events=2)
    assert _table(bounded, a)["lag_s"] is None and _table(bounded, a)["lag_at_most_s"] is not None
    assert "first 2 log events" in _table(bounded, a)["lag_note"]
    assert bounded["pipeline"]["lag_s"] is None and bounded["pipeline"]["lag_at_most_s"] is not None

    # A failed mining run reports the lag (the Airflow operator shows it): here, another run holds the lock.
    error_file = tmp_path / "error.json"
    with pipeline_lock(spark, pipeline.layout.lock, "someone-else"):
        failed = CliRunner().invoke(cli, ["mine", "--config", str(config)], env={"CDCLAKE_ERROR_FILE": str(error_file)})
    assert failed.exit_code == 2
    lag = json.loads(error_file.read_text())["lag"]
    assert lag["lag_s"] > 0 and lag["pending_since"] == entry["pending_since"]
    assert lag["summary"].startswith(f"{lag['lag_s']} s: the oldest change not applied was committed at")

    # Mined: 0 again, and the commit time status reported is the one bronze holds.
    pipeline.mine()
    assert _bronze_commit(spark, pipeline, a) == commit
    report = status_report(pipeline.ctx, clock=lambda: now + 90)
    assert report["pipeline"]["lag_s"] == 0.0 and _table(report, a)["lag_s"] == 0.0


def test_oracle_lag_zero_when_caught_up_and_the_age_of_the_oldest_change_waiting(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = SimulatedOracle(seed=11)
    for owner, name in (("APP", "T"), ("APP", "U"), ("OTHER", "X")):
        db.create_table(owner, name, [("ID", "NUMBER(10)"), ("V", "NUMBER(10)")], ["ID"])
        tx = db.begin()
        tx.insert(owner, name, {"ID": 1, "V": 1})
        tx.commit()
    pipeline = oracle_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()

    def clock(extra: float = 0.0):  # type: ignore[no-untyped-def]
        return lambda: db.now.replace(tzinfo=timezone.utc).timestamp() + extra

    # Caught up (at the snapshot); then the SCN moves (idle database, a log switch) and a table that is
    # not captured changes.
    report = status_report(pipeline.ctx, clock=clock())
    assert _lags(report) == {"APP.T": 0.0, "APP.U": 0.0} and report["pipeline"]["caught_up"] is True
    db.advance_time(timedelta(minutes=5), scns=5_000)
    db.switch_log(1)
    tx = db.begin()
    tx.insert("OTHER", "X", {"ID": 2, "V": 2})
    tx.commit()
    report = status_report(pipeline.ctx, clock=clock())
    assert _lags(report) == {"APP.T": 0.0, "APP.U": 0.0} and report["pipeline"]["lag_s"] == 0.0
    assert _table(report, "APP.T")["distance"] > 5_000 and _table(report, "APP.T")["distance_unit"] == "scn"

    # A transaction open across a mining run (its change is held in flight), committed later, and a
    # committed change of another table: each table's lag is the age of its oldest pending commit.
    open_tx = db.begin()
    open_tx.insert("APP", "U", {"ID": 2, "V": 2})
    pipeline.mine()  # mined to the end: caught up, the open transaction's change held in flight
    report = status_report(pipeline.ctx, clock=clock())
    assert _lags(report) == {"APP.T": 0.0, "APP.U": 0.0} and report["pipeline"]["caught_up"] is True
    db.advance_time(timedelta(seconds=30))
    tx = db.begin()
    tx.update("APP", "T", {"ID": 1}, {"V": 5})
    tx.commit()
    t_commit = db.now.replace(tzinfo=timezone.utc).timestamp()
    db.advance_time(timedelta(seconds=10))
    open_tx.commit()
    u_commit = db.now.replace(tzinfo=timezone.utc).timestamp()
    db.advance_time(timedelta(seconds=20))
    report = status_report(pipeline.ctx, clock=clock())
    t, u = _table(report, "APP.T"), _table(report, "APP.U")
    assert abs(_epoch(t["pending_since"]) - t_commit) < 0.001 and abs(_epoch(u["pending_since"]) - u_commit) < 0.001
    assert abs(t["lag_s"] - (clock()() - t_commit)) < 0.001 and t["lag_s"] > 30
    assert abs(u["lag_s"] - (clock()() - u_commit)) < 0.001
    assert report["pipeline"]["lag_s"] == t["lag_s"]  # the oldest change waiting
    later = status_report(pipeline.ctx, clock=clock(60))
    assert _table(later, "APP.T")["lag_s"] == round(t["lag_s"] + 60, 3)

    drain(pipeline)
    assert _bronze_commit(spark, pipeline, "APP.U") == u_commit
    report = status_report(pipeline.ctx, clock=clock(60))
    assert _lags(report) == {"APP.T": 0.0, "APP.U": 0.0} and report["pipeline"]["lag_s"] == 0.0
