"""cdclake's Airflow operator (cdclake.dags) stands on the Spark provider's public API only, and a failing
job's error reaches it through ``$CDCLAKE_ERROR_FILE`` (cdclake.cli._run writes it).

The Airflow part runs once, in the Airflow virtualenv (``.venv-airflow``): no Spark, no database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cdclake.cli import _run
from cdclake.errors import ERROR_TAG, ConfigError

from tests.integration.airflow_helpers import ROOT, airflow_env, run_in_airflow

DAGS_PY = ROOT / "lib" / "cdclake" / "dags.py"

PROBE_SCRIPT = r'''
import ast, json, os, subprocess, sys, textwrap
from importlib.metadata import version

import airflow.providers.apache.spark.operators.spark_submit as provider_operators
from airflow.exceptions import AirflowException
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseHook, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

import cdclake.dags as dags

out = {"provider": version("apache-airflow-providers-apache-spark"), "airflow": version("apache-airflow")}


def private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# --- The provider's private members: on its classes (and their bases), and set on instances.
class Probe(SparkSubmitOperator):  # what subclassing alone puts in a class (abc bookkeeping...)
    pass


automatic = set(vars(Probe))
provider_classes = [c for base in (SparkSubmitOperator, SparkSubmitHook) for c in base.__mro__ if c is not object]
provider_private = {n for c in provider_classes for n in dir(c) if private(n)}
provider_private |= {n for n in vars(SparkSubmitOperator(task_id="probe")) if private(n)}
provider_private |= {n for n in vars(SparkSubmitHook()) if private(n)}
out["provider_private_count"] = len(provider_private)

# --- Our classes: no private member (a private override, or one a later provider may add).
ours = [c for c in vars(dags).values()
        if isinstance(c, type) and c.__module__ == dags.__name__ and issubclass(c, (BaseOperator, BaseHook))]
out["our_classes"] = sorted(c.__name__ for c in ours)
out["class_violations"] = sorted(
    f"{c.__name__}.{n}" + (" overrides the provider's" if n in provider_private else " (own, may collide)")
    for c in ours for n in vars(c) if private(n) and n not in automatic)

# --- dags.py's source: no access to the provider's private members, to private members of
# self/cls/super(), no reflection on private names, no __class__ swap.
source = open(dags.__file__, encoding="utf-8").read()
violations = []
for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Attribute):
        base = node.value
        on_self = ((isinstance(base, ast.Name) and base.id in ("self", "cls"))
                   or (isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super"))
        if private(node.attr) and (node.attr in provider_private or on_self):
            violations.append(f"line {node.lineno}: {ast.unparse(node)}")
        if node.attr == "__class__" and isinstance(node.ctx, ast.Store):
            violations.append(f"line {node.lineno}: {ast.unparse(node)} = ...")
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) > 1
          and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
          and (private(node.args[1].value) or node.args[1].value == "__class__")):
        violations.append(f"line {node.lineno}: {ast.unparse(node)}")
out["source_violations"] = violations

# --- The error path: the provider's public execute replaced by a stand-in spark-submit.
CLI = textwrap.dedent("""
    import sys
    from cdclake.cli import _run
    from cdclake.errors import ConcurrentRunError, ConfigError
    error = {"permanent": ConfigError("source.password: secret/variable ${X} is not set", "export X=..."),
             "transient": ConcurrentRunError("another run holds the lock")}[sys.argv[1]]
    def fail():
        raise error
    _run(False, fail)
""")
FAILED = "Cannot execute: spark-submit ... Error code is: 2."
ENV = "CDCLAKE_ERROR_FILE"  # the name cdclake.cli._run reads
seen = []


def stand_in(self, context):
    path = os.environ.get(ENV)
    seen.append(path)
    kind = self.application
    if kind == "ok":
        return None
    if kind in ("permanent", "transient"):  # the real CLI, in a child process as the driver would be
        done = subprocess.run([sys.executable, "-c", CLI, kind], capture_output=True, text=True)
        assert done.returncode == 2, done.stderr
    elif kind == "garbage":
        with open(path, "w") as f:
            f.write("{not json")
    raise AirflowException(FAILED)


provider_operators.SparkSubmitOperator.execute = stand_in
cases = {}
for kind in ("permanent", "transient", "no-report", "garbage", "ok", "ok"):
    task = dags.CdcSparkSubmitOperator(task_id="t", application=kind, env_vars={"PYSPARK_PYTHON": "python3"})
    try:
        task.execute(context={})
        raised = None
    except Exception as exc:
        raised = {"type": type(exc).__name__, "permanent": isinstance(exc, AirflowFailException),
                  "message": str(exc), "cause": type(exc.__cause__).__name__ if exc.__cause__ else None}
    cases.setdefault(kind, []).append({
        "raised": raised, "file": seen[-1], "file_left": bool(seen[-1]) and os.path.exists(seen[-1]),
        "env_after": os.environ.get(ENV), "env_vars_after": task.env_vars})

# A variable set before execute is restored after it.
os.environ[ENV] = "/somewhere/else.json"
dags.CdcSparkSubmitOperator(task_id="t", application="ok").execute(context={})
out["preset"] = {"during": seen[-1], "after": os.environ.get(ENV)}
out["cases"] = cases
out["failed"] = FAILED

# --- The DAG factory's docstring examples (they need Airflow, so they run here).
import doctest  # noqa: E402

examples = doctest.testmod(dags, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
out["doctest"] = {"attempted": examples.attempted, "failed": examples.failed}
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("airflow-probe")
    env = airflow_env(home, home)
    env.pop("CDCLAKE_ERROR_FILE", None)
    return run_in_airflow(PROBE_SCRIPT, env, timeout=300)


def _versions(probe: dict[str, Any]) -> str:
    return f"apache-airflow-providers-apache-spark {probe['provider']} (Airflow {probe['airflow']})"


def test_our_operator_classes_define_no_private_member(probe: dict[str, Any]) -> None:
    assert probe["our_classes"] == ["CdcSparkSubmitOperator"]
    assert probe["provider_private_count"] > 20  # the probe did see the provider's private members
    assert probe["class_violations"] == [], (
        f"cdclake.dags' Airflow classes define private (_-prefixed) members; with {_versions(probe)} these "
        f"override or may collide with the provider's internals: {probe['class_violations']}")


def test_dags_module_uses_no_private_member_of_the_provider(probe: dict[str, Any]) -> None:
    assert probe["source_violations"] == [], (
        f"{DAGS_PY} reaches into private members of the provider's operator/hook ({_versions(probe)}): "
        f"{probe['source_violations']}")


def test_operator_turns_the_error_file_into_cdclakes_failure(probe: dict[str, Any]) -> None:
    cases = probe["cases"]
    [permanent], [transient] = cases["permanent"], cases["transient"]
    assert permanent["raised"] == {
        "type": "AirflowFailException", "permanent": True, "cause": None,  # the hook's (masked) error not chained
        "message": "cdclake: source.password: secret/variable ${X} is not set -- fix: export X=..."}, _versions(probe)
    assert transient["raised"] == {"type": "AirflowException", "permanent": False, "cause": None,
                                   "message": "cdclake: another run holds the lock"}, _versions(probe)
    # No report, or an unreadable one: the provider's own exception stands.
    for kind in ("no-report", "garbage"):
        [case] = cases[kind]
        assert case["raised"] == {"type": "AirflowException", "permanent": False, "message": probe["failed"],
                                  "cause": None}, (kind, _versions(probe))
    assert [c["raised"] for c in cases["ok"]] == [None, None]
    every = [c for runs in cases.values() for c in runs]
    files = [c["file"] for c in every]
    assert all(files) and len(set(files)) == len(files)  # a fresh file for every try...
    assert not any(c["file_left"] for c in every)  # ...removed afterwards
    assert {c["env_after"] for c in every} == {None}  # the process's environment as it was
    assert all(c["env_vars_after"] == {"PYSPARK_PYTHON": "python3"} for c in every)  # env_vars untouched
    assert probe["preset"]["after"] == "/somewhere/else.json" != probe["preset"]["during"]


def test_dag_factory_examples_run(probe: dict[str, Any]) -> None:
    assert probe["doctest"]["attempted"] > 0 and probe["doctest"]["failed"] == 0, probe["doctest"]


def test_cli_writes_its_error_to_the_error_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def fail() -> None:
        raise ConfigError("source.password: secret/variable ${X} is not set", "export X=...")

    expected = {"kind": "ConfigError", "permanent": True,
                "problem": "source.password: secret/variable ${X} is not set", "fix": "export X=..."}
    report = tmp_path / "error.json"
    monkeypatch.setenv("CDCLAKE_ERROR_FILE", str(report))
    with pytest.raises(SystemExit) as exit_:
        _run(False, fail)
    assert exit_.value.code == 2
    assert json.loads(report.read_text()) == expected
    assert ERROR_TAG + json.dumps(expected) in capsys.readouterr().err.splitlines()

    # Best effort: a file that cannot be written does not hide the error.
    monkeypatch.setenv("CDCLAKE_ERROR_FILE", str(tmp_path))  # a directory
    with pytest.raises(SystemExit) as exit_:
        _run(False, fail)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "error: source.password: secret/variable ${X} is not set" in err
    assert ERROR_TAG + json.dumps(expected) in err.splitlines()
    assert f"could not write the error report to {tmp_path}" in err

    # Unset: only stderr.
    monkeypatch.delenv("CDCLAKE_ERROR_FILE")
    with pytest.raises(SystemExit):
        _run(False, fail)
    assert ERROR_TAG + json.dumps(expected) in capsys.readouterr().err.splitlines()
