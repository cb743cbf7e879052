"""Unparsable DDL and bad configuration fail with the problem and the fix, or are skipped by configuration. (A lost
log position and a table parked for a manual re-read, with the printed fixes run: tests/engine/test_errors.py.)"""

from __future__ import annotations

import pytest
from cdclake.cli import cli
from click.testing import CliRunner

from tests.integration.pipeline_helpers import make_pipeline


def test_unparsable_ddl_is_skipped_by_config(spark, mariadb, fresh_database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Configured to skip a statement the MySQL parser does not know, the run goes on and the statement is recorded
    in the schema history. (A statement that changes rows without row events parks its table under
    ``schema_changes.reread: manual``, and the printed fix brings it back: tests/engine/test_errors.py.)"""
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.p (id INT PRIMARY KEY, v INT) PARTITION BY HASH(id) PARTITIONS 2")
    extra = "mining:\n  skip_unparsable_ddl: true\n"
    skipping = make_pipeline(spark, mariadb, db, tmp_path / "lake2", "ddl2", extra=extra)
    skipping.snapshot()
    mariadb.execute(f"ALTER TABLE `{db}`.p ADD COLUMN addr INET6")  # a type the parser does not know
    skipping.mine()
    skipped = [e for e in skipping.control.history() if e.kind == "skipped"]
    assert skipped and "INET6" in skipped[0].ddl
    assert skipping.control.table_states()[f"{db}.p"].status == "streaming"


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1, colour: red}\n"
         "lake: {root: /tmp/l}\n", "source.colour: unknown key"),
        ("pipeline: p\nsource: {type: mariadb, host: h, port: abc, user: u, password: x, server_id: 1}\n"
         "lake: {root: /tmp/l}\n", "source.port"),
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: '${NOT_SET_ANYWHERE}', server_id: 1}\n"
         "lake: {root: /tmp/l}\n", "source.password: secret/variable ${NOT_SET_ANYWHERE} is not set"),
        ("pipeline: p\nsource: {type: oracle9, host: h, user: u, password: x, server_id: 1}\nlake: {root: /tmp/l}\n",
         "source.type"),
        ("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1}\nlake: {root: rel/path}\n",
         "lake.root"),
    ],
)
def test_bad_config_names_the_key_without_a_traceback(tmp_path, yaml_text: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "bad.yaml"
    config.write_text(yaml_text)
    result = CliRunner().invoke(cli, ["mine", "--config", str(config)])
    assert result.exit_code == 2
    assert expected in result.output
    assert "fix:" in result.output
    assert "Traceback" not in result.output


def test_debug_adds_the_stack_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "bad.yaml"
    config.write_text("pipeline: p\nsource: {type: mariadb, host: h, user: u, password: x, server_id: 1, colour: red}\n"
                      "lake: {root: /tmp/l}\n")
    result = CliRunner().invoke(cli, ["--debug", "mine", "--config", str(config)])
    assert result.exit_code == 2
    assert "Traceback" in result.output and "error: " in result.output and "source.colour: unknown key" in result.output
