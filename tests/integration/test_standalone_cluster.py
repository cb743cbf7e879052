"""jobs/*.py unchanged under spark-submit on a Spark standalone cluster (a master and a worker on
localhost, from the pyspark distribution), with cdclake shipped to the executors as a zip; and the
README's spark-submit line as written, on local[*] and on the cluster.

One worker of two cores: each job's executor is a JVM of its own on it, as on a real cluster; more
workers would only add JVMs to start on a 2-core test machine."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdclake.spark import cached_jars
from cdclake.testing.mariadb import free_port

from tests.doc_commands import record
from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml
from tests.settings import short_jvm_env

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(sys.executable).parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" \
    / "site-packages" / "pyspark"
VENV_BIN = Path(sys.executable).parent


def _wait_for(log: Path, text: str, count: int, proc: subprocess.Popen, deadline_s: float = 120) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if log.exists() and log.read_text(errors="replace").count(text) >= count:
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)  # polling for readiness, not timing anything
    raise AssertionError(f"'{text}' x{count} not seen in {log}:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("standalone")
    # The worker's PATH finds the venv's python3 first, as a node with cdclake's environment would.
    env = short_jvm_env({**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                         "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(base),
                         "SPARK_WORKER_DIR": str(base), "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
                         "SPARK_LOCAL_IP": "127.0.0.1"})
    port = free_port()
    master_log = base / "master.log"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(free_port())]
    record(master)  # docs/deploy.md, "A standalone cluster from this install"
    procs = [subprocess.Popen(master, stdout=master_log.open("w"), stderr=subprocess.STDOUT, env=env)]
    try:
        _wait_for(master_log, "I have been elected leader", 1, procs[0])
        url = f"spark://127.0.0.1:{port}"
        worker = [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--cores", "2", "--memory", "2g",
                  "--webui-port", str(free_port()), "--work-dir", str(base / "work")]
        record(worker)
        procs.append(subprocess.Popen(worker, stdout=(base / "worker.log").open("w"), stderr=subprocess.STDOUT,
                                      env=env))
        _wait_for(master_log, "Registering worker", 1, procs[0])
        yield url, base
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _package(dest: Path) -> Path:
    """cdclake as a zip for --py-files (what `cd lib && zip -r cdclake.zip cdclake` makes)."""
    zpath = dest / "cdclake.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for f in (ROOT / "lib" / "cdclake").rglob("*.py"):
            z.write(f, f.relative_to(ROOT / "lib"))
    return zpath


def _submit(url: str, job: str, config: Path, package: Path, *args: str) -> str:
    cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", url, "--deploy-mode", "client",
           "--py-files", str(package), "--jars", ",".join(cached_jars()),
           "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=1g",
           "--conf", "spark.cores.max=2", str(ROOT / "jobs" / f"{job}.py"), "--config", str(config), *args]
    env = short_jvm_env({k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "CDCLAKE_SPARK_MASTER")})
    env.update(SPARK_HOME=str(SPARK_HOME), PYSPARK_DRIVER_PYTHON=sys.executable)
    record(["spark-submit", *cmd[1:]])
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"spark-submit {job} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def readme_spark_submit(job: str, config: Path, *spark_args: str, **paths: Path) -> list[str]:
    """The README's ``spark-submit jobs/<job>.py --config sbtest.yaml ...`` line as written, for ``config`` (and
    each other path it names, e.g. ``{"/reports/sbtest.html": out}`` as ``paths``), with ``spark_args`` after
    ``spark-submit``."""
    line = next(line for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith(f"spark-submit jobs/{job}.py "))
    words = shlex.split(line, comments=True)
    assert words[:3] == ["spark-submit", f"jobs/{job}.py", "--config"], line
    given = {"sbtest.yaml": str(config), **{k: str(v) for k, v in paths.items()}}
    return [words[0], *spark_args, *[given.get(w, w) for w in words[1:]]]


def _as_a_user(cmd: list[str], **extra: str) -> subprocess.CompletedProcess[str]:
    """``cmd`` from the checkout in a shell whose venv is active: nothing of the test process's Spark settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "CDCLAKE_SPARK"))}
    env = short_jvm_env({**env, "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
                         "VIRTUAL_ENV": str(VENV_BIN.parent), **extra})
    record(cmd)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)


def test_jobs_run_as_documented_locally_and_on_the_cluster(
        spark, mariadb, fresh_database: str, cluster: tuple[str, Path], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """docs/deploy.md's spark-submit on the cluster; the README's lines as written (no --jars: the job finds
    cdclake's jars itself), locally and on the cluster; spark-submit's master wins over the pipeline file's."""
    url, logs = cluster
    db = fresh_database
    mariadb.execute(f"CREATE TABLE {db}.notes (id INT PRIMARY KEY, body VARCHAR(40))")
    mariadb.execute(f"INSERT INTO {db}.notes SELECT seq, CONCAT('note ', seq) FROM {db}.seq_1_to_50")
    lake = tmp_path / "lake"
    config = tmp_path / "sbtest.yaml"
    # A master of the pipeline file's own: spark-submit's (its default local[*], or --master) must win.
    text = pipeline_yaml(mariadb, db, lake, name="readme")
    config.write_text(text.replace("spark:\n", "spark:\n  master: local[1]\n"))
    pipeline = make_pipeline(spark, mariadb, db, lake, name="readme")
    pipeline.snapshot()

    # docs/deploy.md's form: cdclake shipped as a zip, the jars named, on the cluster.
    mariadb.execute(f"UPDATE {db}.notes SET body = CONCAT(body, '!') WHERE id BETWEEN 20 AND 24")
    mariadb.execute(f"INSERT INTO {db}.notes VALUES (51, 'fifty-one')")
    assert f"{db}.notes: 6 changes" in _submit(url, "mine", config, _package(tmp_path))
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.notes"])

    # The README's line as written: no --jars, no --master (spark-submit's local[*]: 2 cores here).
    mariadb.execute(f"UPDATE {db}.notes SET body = 'changed' WHERE id <= 10")

    local = _as_a_user(readme_spark_submit("mine", config))
    assert local.returncode == 0, f"{local.stdout[-3000:]}\n{local.stderr[-5000:]}"
    assert f"{db}.notes: 10 changes" in local.stdout
    # (spark-submit passes the Python driver's stderr on to its own stdout)
    assert "spark.master local[*] (the pipeline file's local[1] applies to 'cdclake' commands only)" in local.stdout

    mariadb.execute(f"DELETE FROM {db}.notes WHERE id BETWEEN 46 AND 50")
    on_cluster = _as_a_user(readme_spark_submit("mine", config, "--master", url))
    assert on_cluster.returncode == 0, f"{on_cluster.stdout[-3000:]}\n{on_cluster.stderr[-5000:]}"
    assert f"{db}.notes: 5 changes" in on_cluster.stdout
    # Both cluster runs were applications of the cluster, each with an executor of its own on the worker.
    assert (logs / "master.log").read_text().count("Registered app cdclake-readme") == 2
    assert (logs / "worker.log").read_text().count("Asked to launch executor") == 2
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.notes"])

    # The README's other jobs, as written: reconcile (its JDBC reads need the driver jar cdclake added), report.
    spark.sql(f"DELETE FROM delta.`{pipeline.layout.target(f'{db}.notes')}` WHERE id = 7")
    reconciled = _as_a_user(readme_spark_submit("reconcile", config))
    assert reconciled.returncode == 0, f"{reconciled.stdout[-3000:]}\n{reconciled.stderr[-3000:]}"
    assert "only in source (lost):" in reconciled.stdout and "all 1 table(s) equal after repair" in reconciled.stdout
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.notes"])
    page = tmp_path / "reports" / "sbtest.html"
    page.parent.mkdir()
    reported = _as_a_user(readme_spark_submit("report", config, **{"/reports/sbtest.html": page}))
    assert reported.returncode == 0, f"{reported.stdout[-3000:]}\n{reported.stderr[-3000:]}"
    assert str(page) in reported.stdout and f"{db}.notes" in page.read_text()

    # Without cdclake's jars installed: cdclake's error and its fix, no Java stack trace.
    empty = tmp_path / "no-jars"
    empty.mkdir()
    mariadb.execute(f"INSERT INTO {db}.notes VALUES (100, 'new')")  # work that needs Spark
    bare = _as_a_user(readme_spark_submit("mine", config), CDCLAKE_JARS=str(empty))
    assert bare.returncode == 2, bare.stdout[-3000:]
    assert "error: this spark-submit has no Delta jars on its classpath" in bare.stdout
    assert "fix: run 'make setup'" in bare.stdout and '"permanent": true' in bare.stdout
    assert "Traceback" not in bare.stdout + bare.stderr and "ClassNotFoundException" not in bare.stdout + bare.stderr
