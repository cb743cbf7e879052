"""``python -m cdclake.jars``: the Maven coordinates ``make setup`` fetches (Delta's, then each source's)."""

from __future__ import annotations

import subprocess
import sys

from cdclake.jars import maven_coordinates

from tests.doc_commands import record


def test_python_m_cdclake_jars_lists_deltas_and_every_sources_jars() -> None:
    command = [sys.executable, "-m", "cdclake.jars"]
    record(["python", *command[1:]])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.split()
    assert lines == maven_coordinates()
    assert lines[:2] == ["io.delta:delta-spark_4.1_2.13:4.1.0", "io.delta:delta-storage:4.1.0"]
    assert any(c.startswith("org.mariadb.jdbc:") for c in lines) and any("ojdbc11" in c for c in lines)
    assert "org.xerial:sqlite-jdbc:3.54.1.0" not in lines  # the tests' own jar only with --testing
