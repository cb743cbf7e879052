"""Shared fixtures: throwaway MariaDB servers (never a system-wide instance).

* ``mariadb`` — one server for the whole session (default ``max_binlog_size``); tests must not
  purge its binlogs or change its global variables (use ``private_mariadb`` for that).
* ``fresh_database`` — a uniquely named database on ``mariadb``, dropped afterwards.
* ``private_mariadb`` — a server of the test's own (about a second to start).

Tests using them are marked ``mariadb`` automatically (deselect with ``-m "not mariadb"``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from cdclake.testing.mariadb import MariaDBServer, ensure_installed

_MARIADB_FIXTURES = {"mariadb", "fresh_database", "private_mariadb"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _MARIADB_FIXTURES or item.get_closest_marker("mariadb"):
            item.add_marker(pytest.mark.mariadb)
            item.add_marker(pytest.mark.integration)


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

    session = build_spark("cdclake-tests")
    yield session
    session.stop()
