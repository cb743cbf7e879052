"""The live suites: the emulator and simulator scenarios against real databases, opt-in.

* Oracle: `make test-oracle-live` (CDCLAKE_ORACLE_* variables, docs/oracle.md, 'The live suite').
* Db2 with ASN Capture: `make test-db2-live` (CDCLAKE_DB2_* variables, docs/db2.md, 'The live suite').

Neither is collected by `make test`. Without its connection variables a suite fails, naming them.
"""

from __future__ import annotations

import os

import pytest

REQUIRED = ("CDCLAKE_ORACLE_DSN", "CDCLAKE_ORACLE_USER", "CDCLAKE_ORACLE_PASSWORD", "CDCLAKE_ORACLE_APP_USER",
            "CDCLAKE_ORACLE_APP_PASSWORD")

#: optional: CDCLAKE_DB2_PORT (50000), CDCLAKE_DB2_SCHEMA (the user's name), CDCLAKE_DB2_CONTROL_SCHEMA (ASNCDC)
DB2_REQUIRED = ("CDCLAKE_DB2_HOST", "CDCLAKE_DB2_DATABASE", "CDCLAKE_DB2_USER", "CDCLAKE_DB2_PASSWORD")


@pytest.fixture(scope="session")
def oracle_env() -> dict[str, str]:
    missing = [v for v in REQUIRED if not os.environ.get(v)]
    if missing:
        pytest.fail(f"set {', '.join(missing)} (see docs/oracle.md, 'The live suite')")
    return {v: os.environ[v] for v in os.environ if v.startswith("CDCLAKE_ORACLE")}


@pytest.fixture(scope="session")
def db2_env() -> dict[str, str]:
    missing = [v for v in DB2_REQUIRED if not os.environ.get(v)]
    if missing:
        pytest.fail(f"set {', '.join(missing)} (see docs/db2.md, 'The live suite')")
    env = {v: os.environ[v] for v in os.environ if v.startswith("CDCLAKE_DB2_") and os.environ[v]}
    env.setdefault("CDCLAKE_DB2_PORT", "50000")
    env["CDCLAKE_DB2_SCHEMA"] = env.get("CDCLAKE_DB2_SCHEMA", env["CDCLAKE_DB2_USER"]).upper()
    env["CDCLAKE_DB2_CONTROL_SCHEMA"] = env.get("CDCLAKE_DB2_CONTROL_SCHEMA", "ASNCDC").upper()
    return env


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    from cdclake.spark import build_spark

    session = build_spark("cdclake-live-tests")
    yield session
    session.stop()
