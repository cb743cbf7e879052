"""The Airflow DAGs (airflow_dags/, cdclake.dags), run by Airflow 3 in its own virtualenv."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_commands import record
from tests.integration.airflow_helpers import DAGBAG_SCRIPT, DAGS_FOLDER, ROOT, airflow_env, migrate, run_in_airflow
from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml
from tests.settings import short_jvm_env

ORACLE_EXPORT = """\
pipeline: audit
source:
  type: oracle
  mode: export
  export: {path: /data/exports/logminer, format: parquet}
  include_tables: ['APP\\\\..*']
lake:
  root: s3a://bucket/lake
airflow:
  schedule: null
  snapshot_schedule: null
  maintenance_schedule: "0 3 * * 0"
  tags: [audit]
"""


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("airflow-home")
    migrate(airflow_env(home, home))
    return home


def _dagbag(home: Path, pipelines: Path) -> dict:
    return run_in_airflow(DAGBAG_SCRIPT.format(folder=str(DAGS_FOLDER)), airflow_env(home, pipelines))


def test_dag_file_imports_cleanly_and_builds_each_pipelines_dags(airflow_home: Path, tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    shutil.copy(ROOT / "conf" / "pipelines" / "example-mariadb.yaml", pipelines / "shop.yaml")
    (pipelines / "audit.yml").write_text(ORACLE_EXPORT)
    shutil.copy(ROOT / "conf" / "example-postgresql.yaml", pipelines / "pg.yaml")
    (pipelines / "notes.txt").write_text("not a pipeline file")

    bag = _dagbag(airflow_home, pipelines)

    assert bag["import_errors"] == {}
    assert bag["warnings"] == [] and bag["captured"] == {}
    assert sorted(bag["dags"]) == [f"cdclake_{p}_{kind}" for p in ("audit", "example_shop", "shop")
                                   for kind in ("backfill", "maintenance", "mine", "snapshot")]
    pg_mine = bag["dags"]["cdclake_shop_mine"]["tasks"]["mine"]  # (PostgreSQL: its own jar among the task's)
    assert pg_mine["args"][:2] == ["--config", str(pipelines / "pg.yaml")] and "postgresql" in pg_mine["jars"]
    mine = bag["dags"]["cdclake_example_shop_mine"]
    assert mine["schedule"] == "*/10 * * * *"
    assert mine["max_active_runs"] == 1 and mine["catchup"] is False
    assert mine["params"] == ["max_events"]
    task = mine["tasks"]["mine"]
    assert task["type"] == "CdcSparkSubmitOperator"
    assert task["application"] == str(ROOT / "jobs" / "mine.py")
    assert task["args"][:3] == ["--config", str(pipelines / "shop.yaml"), "--snapshot-missing"]
    assert task["conn_id"] == "spark_default" and task["conf"] == {"spark.executor.memory": "4g"}
    assert "delta-spark" in task["jars"] and "cdclake-jvm.jar" in task["jars"]
    assert (task["retries"], task["backoff"], task["retry_delay_s"], task["max_retry_delay_s"]) == (3, True, 60, 1800)
    assert task["outlets"] == [
        ["cdclake.example_shop", "file:///data/lake/example_shop"],
        ["cdclake.example_shop.shop.customers", "file:///data/lake/example_shop/shop__customers"],
        ["cdclake.example_shop.shop.orders", "file:///data/lake/example_shop/shop__orders"],
    ]
    snapshot = bag["dags"]["cdclake_example_shop_snapshot"]
    assert snapshot["schedule"] == "@once" and snapshot["params"] == ["tables"]
    assert snapshot["tasks"]["snapshot"]["outlets"] == task["outlets"]
    backfill = bag["dags"]["cdclake_example_shop_backfill"]
    assert backfill["schedule"] == "None" and backfill["params"] == ["from_window", "mode", "table", "where", "window"]
    assert backfill["param_specs"]["table"]["enum"] == ["shop.customers", "shop.orders"]
    assert backfill["tasks"]["backfill"]["args"][2:6] == [
        "{{ '--table' if params.mode != 'remine' else '' }}", "{{ params.table if params.mode != 'remine' else '' }}",
        "--mode", "{{ params.mode }}"]
    assert backfill["param_specs"]["mode"]["enum"] == ["resnapshot", "rebuild", "remine"]
    maintenance = bag["dags"]["cdclake_example_shop_maintenance"]
    assert maintenance["schedule"] == "@daily"
    assert maintenance["tasks"]["maintain"]["application"] == str(ROOT / "jobs" / "maintain.py")

    # Wildcard includes name no table: only the pipeline-wide asset; null schedules: manual DAGs.
    audit = bag["dags"]["cdclake_audit_mine"]
    assert audit["schedule"] == "None" and "audit" in audit["tags"]
    assert audit["tasks"]["mine"]["outlets"] == [["cdclake.audit", "s3a://bucket/lake/audit"]]
    assert bag["dags"]["cdclake_audit_snapshot"]["schedule"] == "None"
    assert bag["dags"]["cdclake_audit_maintenance"]["schedule"] == "0 3 * * 0"


def test_invalid_pipeline_file_is_an_import_error_naming_file_and_key(airflow_home: Path, tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    (pipelines / "broken.yaml").write_text(ORACLE_EXPORT.replace("schedule: null", "shedule: null", 1))

    bag = _dagbag(airflow_home, pipelines)

    assert bag["dags"] == {}
    [error] = bag["import_errors"].values()
    assert "broken.yaml" in error and "airflow.shedule: unknown key" in error


OPERATOR_SCRIPT = """
import json
from airflow.sdk.exceptions import AirflowFailException
from cdclake.dags import pipeline_dags
task = pipeline_dags({config!r})[{dag!r}].get_task({task!r})
try:
    task.execute(context={{}})
    print(json.dumps({{"raised": None}}))
except Exception as exc:
    print(json.dumps({{"raised": type(exc).__name__, "permanent": isinstance(exc, AirflowFailException),
                      "message": str(exc)}}))
"""


def _readme_airflow_commands() -> list[list[str]]:
    """The README's Airflow lines as written (after its two ``export`` lines)."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("export AIRFLOW_HOME="):]
    block = block[:block.index("```")].replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in block.splitlines()
            if line.startswith(".venv-airflow/bin/airflow ")]


def test_readme_airflow_commands_run_as_written_and_a_permanent_error_says_its_fix_unmasked(
        tmp_path: Path) -> None:
    """The README's commands against the example pipeline (conf/pipelines/), whose secret is not set: the mining
    task fails at once (no retry) with cdclake's problem and fix, which Airflow's masking leaves whole."""
    commands = _readme_airflow_commands()
    assert [c[1:3] for c in commands] == [["db", "migrate"], ["dags", "list"], ["dags", "test"], ["dags", "trigger"]]
    env = {k: v for k, v in os.environ.items() if k not in ("SHOP_CDC_PASSWORD", "CDCLAKE_PIPELINES_DIR")}
    env.update({"AIRFLOW_HOME": str(tmp_path / ".airflow"), "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False"})
    outputs = []
    for command in commands[:3]:  # (trigger needs a running scheduler: an illustration, tests/doc_commands.py)
        record(["airflow", *command[1:]])
        done = subprocess.run(command, cwd=ROOT, env=short_jvm_env(env), capture_output=True, text=True, timeout=600)
        outputs.append(done)
    migrated, listed, tested = outputs
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    assert listed.returncode == 0 and all(f"cdclake_example_shop_{kind}" in listed.stdout
                                          for kind in ("snapshot", "mine", "backfill", "maintenance")), listed.stdout
    log = tested.stdout + tested.stderr
    problem = "source.password: secret/variable ${SHOP_CDC_PASSWORD} is not set"
    fix = "export SHOP_CDC_PASSWORD=... in the environment, or put SHOP_CDC_PASSWORD=... in the secrets file"
    assert f"AirflowFailException: cdclake: {problem} -- fix: {fix}\n" in log, log[-6000:]  # the failure, whole
    assert f"error: {problem}" in log and f"fix: {fix}" in log, log[-6000:]  # the job's lines, logged as printed
    assert "up_for_retry" not in log.lower()
    # The Spark provider masks the word after any word containing "password" or "secret" in its own error (the
    # tail of spark-submit's output): that error must not reach the log (source.password: ****** ${...} ******).
    assert "******" not in log and "Last spark-submit output" not in log, log[-6000:]


def test_transient_error_is_left_to_retries_with_cdclakes_message(airflow_home: Path, tmp_path: Path) -> None:
    # spark-submit stand-in: does what the CLI does for a retryable error (another run holds the lock):
    # prints it, and writes the report to the file the operator named in $CDCLAKE_ERROR_FILE.
    fake = tmp_path / "bin"
    fake.mkdir()
    tag = json.dumps({"kind": "ConcurrentRunError", "permanent": False, "problem": "another run holds the lock",
                      "fix": "wait for it"})
    (fake / "spark-submit").write_text(f"#!/bin/sh\necho 'error: another run holds the lock' >&2\n"
                                       f"echo 'cdclake-error: {tag}' >&2\n"
                                       f"echo '{tag}' > \"$CDCLAKE_ERROR_FILE\"\nexit 2\n")
    (fake / "spark-submit").chmod(0o755)
    config = tmp_path / "p.yaml"
    config.write_text(f"pipeline: p\nsource: {{type: mariadb, host: h, user: u, password: x, server_id: 9}}\n"
                      f"lake: {{root: {tmp_path}/lake}}\n")
    env = airflow_env(airflow_home, tmp_path)
    env["PATH"] = f"{fake}:{env['PATH']}"

    out = run_in_airflow(OPERATOR_SCRIPT.format(config=str(config), dag="cdclake_p_maintenance", task="maintain"),
                         env)

    assert out["raised"] == "AirflowException" and not out["permanent"]
    assert out["message"] == "cdclake: another run holds the lock -- fix: wait for it"


DAG_TEST_SCRIPT = """
import json
from cdclake.dags import pipeline_dags
dag = pipeline_dags({config!r})[{dag!r}]
run = dag.test({conf})
print(json.dumps({{"state": str(run.state)}}))
"""


def test_snapshot_and_mining_dags_end_with_the_lake_equal_to_mariadb(
        spark, mariadb, fresh_database: str, airflow_home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    mariadb.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, status VARCHAR(20), amount DECIMAL(10,2))")
    mariadb.execute(f"CREATE TABLE {db}.notes (id BIGINT PRIMARY KEY, body TEXT)")
    for i in range(1, 201):
        mariadb.execute(f"INSERT INTO {db}.orders VALUES ({i}, 'new', {i}.25)")
    lake = tmp_path / "lake"
    pipelines = tmp_path / "pipelines"
    pipelines.mkdir()
    config = pipelines / "shop.yaml"
    config.write_text(pipeline_yaml(mariadb, db, lake, name="af_shop")
                      + f"airflow:\n  env_vars: {{PYSPARK_PYTHON: {sys.executable}}}\n")
    env = airflow_env(airflow_home, pipelines)

    snap = run_in_airflow(DAG_TEST_SCRIPT.format(config=str(config), dag="cdclake_af_shop_snapshot", conf=""), env)
    assert snap["state"] == "success"

    with mariadb.connect(autocommit=False) as conn, conn.cursor() as cur:
        cur.execute(f"UPDATE {db}.orders SET status = 'paid', amount = amount * 2 WHERE id % 3 = 0")
        cur.execute(f"DELETE FROM {db}.orders WHERE id % 7 = 0")
        cur.execute(f"INSERT INTO {db}.notes VALUES (1, 'first'), (2, NULL), (3, 'third')")
        conn.commit()
        cur.execute(f"INSERT INTO {db}.orders VALUES (1000, 'rolled back', 1)")
        conn.rollback()
        cur.execute(f"UPDATE {db}.notes SET body = 'changed' WHERE id = 1")
        cur.execute(f"DELETE FROM {db}.notes WHERE id = 3")
        conn.commit()

    mine = run_in_airflow(DAG_TEST_SCRIPT.format(config=str(config), dag="cdclake_af_shop_mine", conf=""), env)
    assert mine["state"] == "success"

    pipeline = make_pipeline(spark, mariadb, db, lake, name="af_shop")
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.orders", f"{db}.notes"])

    # A repair through the backfill DAG's typed params: rows lost from the lake in a key range.
    spark.sql(f"DELETE FROM delta.`{pipeline.layout.target(f'{db}.orders')}` WHERE id BETWEEN 10 AND 20")
    conf = json.dumps({"table": f"{db}.orders", "where": "id BETWEEN 1 AND 50", "mode": "resnapshot"})
    fix = run_in_airflow(DAG_TEST_SCRIPT.format(config=str(config), dag="cdclake_af_shop_backfill",
                                                conf=f"run_conf={conf}"), env)
    assert fix["state"] == "success"
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.orders", f"{db}.notes"])
    runs = spark.read.format("delta").load(pipeline.layout.runs).where("status = 'ok'")
    assert sorted(r.command for r in runs.collect()) == ["backfill", "mine", "snapshot", "snapshot"]
