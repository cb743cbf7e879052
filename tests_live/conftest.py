"""The live Oracle suite: run with `make test-oracle-live` against a real database (docs/oracle.md).

It is not collected by `make test`. Without the connection variables it fails, naming them.
"""

from __future__ import annotations

import os

import pytest

REQUIRED = ("CDCLAKE_ORACLE_DSN", "CDCLAKE_ORACLE_USER", "CDCLAKE_ORACLE_PASSWORD", "CDCLAKE_ORACLE_APP_USER",
            "CDCLAKE_ORACLE_APP_PASSWORD")


@pytest.fixture(scope="session")
def oracle_env() -> dict[str, str]:
    missing = [v for v in REQUIRED if not os.environ.get(v)]
    if missing:
        pytest.fail(f"set {', '.join(missing)} (see docs/oracle.md, 'The live suite')")
    return {v: os.environ[v] for v in os.environ if v.startswith("CDCLAKE_ORACLE")}


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    from cdclake.spark import build_spark

    session = build_spark("cdclake-live-tests")
    yield session
    session.stop()
