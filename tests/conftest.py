"""Shared fixtures: throwaway MariaDB servers (never a system-wide instance).

* ``mariadb`` — one server for the whole session (default ``max_binlog_size``); tests must not
  purge its binlogs or change its global variables (use ``private_mariadb`` for that).
* ``fresh_database`` — a uniquely named database on ``mariadb``, dropped afterwards.
* ``private_mariadb`` — a server of the test's own (about a second to start).

Tests using them are marked ``mariadb`` automatically (deselect with ``-m "not mariadb"``).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cdclake.testing.mariadb import MariaDBServer, ensure_installed
from click.testing import CliRunner

from tests import doc_commands
from tests.settings import TEST_SPARK_CONF

_MARIADB_FIXTURES = {"mariadb", "fresh_database", "private_mariadb"}


# ---- the documented commands (tests/doc_commands.py) ------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """The controller makes the folder every worker (and every process they start) records commands into."""
    if not hasattr(config, "workerinput") and not os.environ.get(doc_commands.RECORD_DIR_ENV):
        os.environ[doc_commands.RECORD_DIR_ENV] = tempfile.mkdtemp(prefix="cdclake-test-commands-")


_invoke = CliRunner.invoke


def _recording_invoke(self: CliRunner, cli, args=None, *more, **kwargs):  # type: ignore[no-untyped-def]
    if getattr(cli, "name", None) == "cli" and isinstance(args, (list, tuple)):  # cdclake's command line
        doc_commands.record(["cdclake", *args])
    return _invoke(self, cli, args, *more, **kwargs)


CliRunner.invoke = _recording_invoke  # type: ignore[method-assign]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After a run of the whole suite (the controller's view), every documented command must have been run
    by a test or be an illustration with a reason: else the session fails, naming each."""
    config = session.config
    if hasattr(config, "workerinput") or not _whole_suite(config):
        return
    missing = doc_commands.uncovered(doc_commands.documentation(),
                                     doc_commands.recorded(os.environ[doc_commands.RECORD_DIR_ENV]))
    if missing:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        lines = ["documented commands that no test runs (run them in a test, or add them to "
                 "tests/doc_commands.py ILLUSTRATIONS with the reason):", *[f"  {m}" for m in missing]]
        if reporter is not None:
            reporter.section("documented commands", sep="=", red=True)
            for line in lines:
                reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _whole_suite(config: pytest.Config) -> bool:
    """The run collected all of tests/ (no file, -k or -m selection): only then is the record complete."""
    tests = Path(__file__).parent.resolve()
    args = [Path(a.split("::")[0]).resolve() for a in config.args]
    return args == [tests] and not config.getoption("keyword") and not config.getoption("markexpr") \
        and not config.getoption("lf", False) and not config.getoption("deselect", None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _MARIADB_FIXTURES or item.get_closest_marker("mariadb"):
            item.add_marker(pytest.mark.mariadb)
            item.add_marker(pytest.mark.integration)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        items[:] = balanced_order(items, workers)


# ---- sharing the work between `make test`'s workers (pytest-xdist, --dist worksteal) --------------------
#
# worksteal hands each worker an equal-sized contiguous share of the collected tests, then lets an idle
# worker take half of another's queue. So the tests are ordered into one share per worker, each with
# as much estimated work as the others and its heaviest tests first; the light tests even out the counts.
# The estimates are seconds measured on the 2-core CI machine (BENCHMARKS.md, test suite); a test not
# listed costs DEFAULT_COST by kind. They only steer the order: a wrong one costs time, never a result.
DEFAULT_COST = {"integration": 20.0, "engine": 30.0, "conformance": 90.0, "unit": 0.05}
HEAVY_TESTS = {  # a clean-clone `make test` of 2026-11-26 (issue 21); tests/engine/: issue 44, alone x 2
    "test_oracle_crash.py::test_killed_at_every_step": 380, "engine/test_mining_crash.py::": 140,
    "test_oracle_crash.py::test_killed_at_random_writes": 235, "test_oracle_sim.py::test_interleaved_rac": 260,
    "engine/test_rebuild.py::test_rebuild_from_snapshot": 130, "test_maintenance.py::": 210,
    "test_standalone_cluster.py::": 230, "test_airflow_dags.py::test_snapshot_and_mining_dags": 370,
    "engine/test_delta_readers.py::test_compatible_lake": 180, "engine/test_row_keys.py::": 100,
    "test_status_lag.py::test_mariadb": 60, "test_status_lag.py::test_oracle": 64,
    "test_value_paths.py::test_oracle": 180, "engine/test_column_rules.py::test_left_out": 70,
    "test_column_rules.py::test_oracle": 65, "equals_source[oracle]": 430,
    "equals_source[mysql]": 210, "equals_source[postgresql]": 120, "test_value_paths.py::test_mysql": 113,
    "equals_source[db2]": 60,
    "test_db2_crash.py::": 66, "test_db2_emulator.py::test_reconcile": 45, "test_db2_emulator.py::test_the_offline": 15,
    "test_db2_preflight.py::": 0.2, "test_postgres_pipeline.py::": 90, "test_postgres_types.py::": 12,
    "test_postgres_snapshot.py::": 10, "test_postgres_crash.py::": 100,
    "test_postgres_tasks.py::": 70, "test_postgres_schema_changes.py::test_a_partitioned": 70,
    "test_postgres_schema_changes.py::": 0.5, "test_demo.py::": 50,
    "test_mining_equality.py::": 160, "test_oracle_sim.py::test_lob_writes": 80,
    "test_oracle_sim.py::test_connection_lost": 85, "test_oracle_sim.py::test_export_mode": 60,
    "test_oracle_checklist.py::": 60, "engine/test_quality.py::test_gates": 70,
    "test_oracle_sim.py::test_abandoned": 55,
    "engine/test_reconcile.py::test_reconcile_reports": 90, "test_reconcile.py::": 50,
    "test_backfill.py::test_backfill_refuses": 2, "engine/test_backfill.py::": 30,
    "test_oracle_lobs_xml.py::": 45, "engine/test_report.py::": 40, "engine/test_frame_windows.py::": 70,
    "engine/test_errors.py::test_a_lost": 60, "engine/test_delete_modes.py::": 40, "engine/test_lake_view.py::": 25,
    "test_inflight.py::": 12, "test_errors.py::test_bad_config": 0.5, "test_airflow_dags.py::": 2,
    "test_mariadb_preflight.py::": 0.3, "test_mysql_types_spark.py::": 0.3, "test_oracle_fast_path.py::": 1.5,
    "test_target_decoding.py::": 0.5, "engine/test_target_partial.py::": 25, "test_oracle_types_spark.py::": 1,
    # per test; a mode's first test runs the shared workload (MariaDB compatible ~400 s; the fake's spark ~160 s)
    "engine/test_schema_changes.py::": 25,
    "integration/test_schema_changes.py::": 8,
    "test_oracle_schema_changes.py::": 138,
    "test_odd_names.py::test_every_name_lands[compatible]": 80,
}
# Tests of these files (and of one parameter of a file: "file[param") share an expensive module-scoped
# fixture: they stay on one worker.
TOGETHER = ("test_airflow_dags.py", "test_mariadb_preflight.py", "test_standalone_cluster.py",
            "integration/test_schema_changes.py[compatible", "engine/test_schema_changes.py",
            "test_postgres_schema_changes.py")


def _together(nodeid: str) -> str | None:
    for group in TOGETHER:
        file, _, param = group.partition("[")
        if file in nodeid and (not param or f"[{param}" in nodeid):
            return group
    return None


def _cost(item: pytest.Item) -> float:
    nodeid = item.nodeid
    for prefix, seconds in HEAVY_TESTS.items():
        if prefix in nodeid:
            return float(seconds)
    kind = next((k for k in DEFAULT_COST if f"tests/{k}/" in nodeid), "unit")
    return DEFAULT_COST[kind]


def balanced_order(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """Items in ``workers`` consecutive shares of (nearly) equal count and estimated time, heaviest first."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        together = _together(item.nodeid)
        groups.setdefault(together or item.nodeid, []).append(item)
    heavy = sorted((g for g in groups.values() if sum(map(_cost, g)) >= 1.0),
                   key=lambda g: (-sum(map(_cost, g)), g[0].nodeid))
    light = [g[0] for g in groups.values() if sum(map(_cost, g)) < 1.0 and len(g) == 1]
    light += [i for g in groups.values() if sum(map(_cost, g)) < 1.0 and len(g) > 1 for i in g]
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for group in heavy:  # longest first, each to the least loaded share
        k = min(range(workers), key=lambda w: (load[w], len(shares[w])))
        shares[k].extend(group)
        load[k] += sum(map(_cost, group))
    target = (len(items) + workers - 1) // workers
    for item in light:  # fill the counts up to equal shares
        k = min(range(workers), key=lambda w: (len(shares[w]) >= target, load[w], len(shares[w])))
        shares[k].append(item)
        load[k] += _cost(item)
    return [item for share in shares for item in share]


@pytest.fixture(scope="session")
def mariadb() -> Iterator[MariaDBServer]:
    ensure_installed()  # a missing server is a set-up error (names `make setup`), not a skip
    with MariaDBServer() as server:
        yield server


@pytest.fixture
def fresh_database(mariadb: MariaDBServer) -> Iterator[str]:
    """Name of a new empty database on the session server (the cdc user can read it)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    mariadb.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    try:
        yield name
    finally:
        mariadb.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def private_mariadb() -> Iterator[MariaDBServer]:
    """A server for this test alone: free to purge binlogs, SET GLOBAL, or stop it."""
    ensure_installed()
    with MariaDBServer(max_binlog_size=64 * 1024) as server:
        yield server


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local Spark session (Delta, cached jars) for the whole test session."""
    from cdclake.spark import build_spark

    session = build_spark("cdclake-tests", conf=TEST_SPARK_CONF)
    yield session
    session.stop()
