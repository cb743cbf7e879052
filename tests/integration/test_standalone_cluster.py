"""jobs/*.py unchanged under spark-submit on a Spark standalone cluster (a master and a worker on
localhost, from the pyspark distribution), with cdclake shipped to the executors as a zip.

One worker of two cores: each job's executor is a JVM of its own on it, as on a real cluster; more
workers would only add JVMs to start on a 2-core test machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdclake.spark import cached_jars
from cdclake.testing.mariadb import free_port

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml
from tests.settings import short_jvm_env

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(sys.executable).parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" \
    / "site-packages" / "pyspark"


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
    env = short_jvm_env({**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(base),
                         "SPARK_WORKER_DIR": str(base), "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
                         "SPARK_LOCAL_IP": "127.0.0.1"})
    port = free_port()
    master_log = base / "master.log"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(free_port())],
                              stdout=master_log.open("w"), stderr=subprocess.STDOUT, env=env)]
    try:
        _wait_for(master_log, "I have been elected leader", 1, procs[0])
        url = f"spark://127.0.0.1:{port}"
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--cores", "2", "--memory", "2g",
             "--webui-port", str(free_port()), "--work-dir", str(base / "work")],
            stdout=(base / "worker.log").open("w"), stderr=subprocess.STDOUT, env=env))
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
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, f"spark-submit {job} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def test_snapshot_and_mining_jobs_run_on_a_standalone_cluster(
        spark, mariadb, fresh_database: str, cluster: tuple[str, Path], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, logs = cluster
    db = fresh_database
    mariadb.execute(f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(30), qty INT)")
    mariadb.execute(f"INSERT INTO {db}.items SELECT seq, CONCAT('item ', seq), seq % 7 FROM {db}.seq_1_to_500")
    lake = tmp_path / "lake"
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(mariadb, db, lake, name="cluster"))
    package = _package(tmp_path)

    out = _submit(url, "snapshot", config, package)
    assert f"snapshot {db}.items: 500 rows" in out
    mariadb.execute(f"UPDATE {db}.items SET qty = qty + 100 WHERE id % 5 = 0")
    mariadb.execute(f"DELETE FROM {db}.items WHERE id > 450")
    mariadb.execute(f"INSERT INTO {db}.items VALUES (1000, 'new', 1)")
    out = _submit(url, "mine", config, package)
    assert f"{db}.items: 151 changes" in out

    pipeline = make_pipeline(spark, mariadb, db, lake, name="cluster")
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.items"])
    runs = spark.read.format("delta").load(pipeline.layout.runs).collect()
    assert sorted(r.command for r in runs) == ["mine", "snapshot"]
    # Both jobs ran as applications of the cluster, each with an executor of its own on the worker.
    assert (logs / "master.log").read_text().count("Registered app cdclake-cluster") == 2
    assert (logs / "worker.log").read_text().count("Asked to launch executor") == 2
