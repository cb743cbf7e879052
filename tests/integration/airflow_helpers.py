"""Run code in the Airflow virtualenv (``.venv-airflow``, made by ``make setup``) and read its answer.

Airflow lives in its own virtualenv, so the tests drive it through a subprocess: each script prints
one JSON document on its last stdout line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.doc_commands import record
from tests.settings import short_jvm_env

ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_PYTHON = ROOT / ".venv-airflow" / "bin" / "python"
DAGS_FOLDER = ROOT / "airflow_dags"


def airflow_env(home: Path, pipelines: Path, **extra: str) -> dict[str, str]:
    """Environment of an Airflow process: its own home (SQLite metadata DB), the pipelines folder, a
    local Spark master for ``spark_default``, and this project's ``spark-submit`` first on PATH."""
    env = dict(os.environ)
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "CDCLAKE_PIPELINES_DIR": str(pipelines),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    })
    env.update(extra)
    return short_jvm_env(env)


def run_in_airflow(code: str, env: dict[str, str], timeout: float = 900) -> Any:
    """Run ``code`` with the Airflow virtualenv's Python; the JSON its last stdout line holds."""
    assert AIRFLOW_PYTHON.exists(), f"{AIRFLOW_PYTHON} is missing: run 'make setup'"
    done = subprocess.run([str(AIRFLOW_PYTHON), "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=str(env["AIRFLOW_HOME"]))
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert done.returncode == 0 and lines, (
        f"Airflow script failed (exit {done.returncode})\n--- stdout ---\n{done.stdout[-3000:]}\n"
        f"--- stderr ---\n{done.stderr[-6000:]}")
    return json.loads(lines[-1])


def migrate(env: dict[str, str]) -> None:
    """Create the Airflow metadata database (SQLite under AIRFLOW_HOME): ``airflow db migrate``."""
    record(["airflow", "db", "migrate"])
    done = subprocess.run([str(AIRFLOW_PYTHON), "-m", "airflow", "db", "migrate"], env=env, capture_output=True,
                          text=True, timeout=300, cwd=str(env["AIRFLOW_HOME"]))
    assert done.returncode == 0, f"airflow db migrate failed:\n{done.stderr[-3000:]}"


DAGBAG_SCRIPT = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(dag_folder={folder!r})
out = {{"import_errors": {{k: str(v) for k, v in bag.import_errors.items()}},
       "warnings": [f"{{w.category.__name__}}: {{w.message}}" for w in caught],
       "captured": {{k: [str(x) for x in v] for k, v in getattr(bag, "captured_warnings", {{}}).items()}},
       "dags": {{}}}}
for dag_id, dag in sorted(bag.dags.items()):
    tasks = {{}}
    for t in dag.tasks:
        tasks[t.task_id] = {{
            "type": type(t).__name__, "application": t.application, "args": list(t.application_args or []),
            "conn_id": t._conn_id, "conf": t.conf, "jars": t.jars, "env_vars": t.env_vars,
            "retries": t.retries, "backoff": t.retry_exponential_backoff,
            "retry_delay_s": t.retry_delay.total_seconds(),
            "max_retry_delay_s": t.max_retry_delay.total_seconds() if t.max_retry_delay else None,
            "outlets": sorted([a.name, a.uri] for a in t.outlets),
        }}
    out["dags"][dag_id] = {{
        "schedule": str(dag.schedule), "max_active_runs": dag.max_active_runs, "catchup": dag.catchup,
        "tags": sorted(dag.tags), "params": sorted(dag.params.keys()), "tasks": tasks,
        "param_specs": {{k: dag.params.get_param(k).schema for k in dag.params.keys()}},
    }}
print(json.dumps(out))
"""
