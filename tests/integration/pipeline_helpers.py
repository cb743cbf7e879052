"""Build pipelines against the throwaway MariaDB and check the lake equals the source."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from cdclake.cli import cli
from cdclake.config import PipelineConfig, load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.compare import compare_table
from cdclake.testing.mariadb import MariaDBServer
from click.testing import CliRunner, Result

from tests.settings import spark_conf_yaml


def pipeline_yaml(db: MariaDBServer, database: str, lake: Path, name: str = "t", extra: str = "",
                  source_extra: str = "") -> str:
    os.environ["CDCLAKE_TEST_PASSWORD"] = db.cdc_password
    return (
        f"pipeline: {name}\n"
        f"source:\n  type: mariadb\n  host: 127.0.0.1\n  port: {db.port}\n  user: {db.cdc_user}\n"
        f"  password: ${{CDCLAKE_TEST_PASSWORD}}\n  server_id: {4000 + abs(hash(name)) % 1000}\n"
        f"  include_tables: ['{database}\\..*']\n{source_extra}"
        + spark_conf_yaml() +
        f"lake:\n  root: {lake}\n{extra}"
    )


def config_file(db: MariaDBServer, database: str, lake: Path, name: str = "t", extra: str = "",
                source_extra: str = "") -> Path:
    """:func:`pipeline_yaml` as a file beside the lake (``<name>.yaml``), for the command line."""
    path = lake.parent / f"{name}.yaml"
    path.write_text(pipeline_yaml(db, database, lake, name, extra, source_extra))
    return path


def run_cli(*args: str | Path, exit_code: int = 0) -> Result:
    """``cdclake <args>`` in this process (the test's Spark session), its exit code checked."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == exit_code, result.output
    return result


def make_pipeline(spark, db: MariaDBServer, database: str, lake: Path, name: str = "t",  # type: ignore[no-untyped-def]
                  extra: str = "", source_extra: str = "") -> Pipeline:
    config: PipelineConfig = load_config_text(pipeline_yaml(db, database, lake, name, extra, source_extra))
    return Pipeline.from_config(config, spark)


def assert_lake_equals_source(spark, db: MariaDBServer, pipeline: Pipeline, tables: list[str]) -> None:  # type: ignore[no-untyped-def]
    for table in tables:
        result = compare_table(spark, pipeline, table)
        assert result.equal, f"{table}: {result.summary()}"


def break_three_rows_and_reconcile(spark, pipeline: Pipeline, table: str, key: str, lost: int, stale: int,  # type: ignore[no-untyped-def]
                                   stale_set: str, extra: int) -> None:
    """Delete row ``lost`` from the lake, change row ``stale`` (``SET stale_set``), add row ``extra`` the source
    lacks; a reconcile with repair must name exactly those keys and repair them."""
    path = pipeline.layout.target(table)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE {key} = {lost}")
    spark.sql(f"UPDATE delta.`{path}` SET {stale_set} WHERE {key} = {stale}")
    spark.sql(f"INSERT INTO delta.`{path}` ({key}, `__op`, `__seq`, `__position`) VALUES ({extra}, 'c', 1, 'x')")
    fixed = pipeline.reconcile(chunks=4, repair=True).tables[0]
    assert {k: [r[key] for r in v] for k, v in fixed.keys.items()} == {
        "only_in_source": [lost], "only_in_lake": [extra], "different": [stale]}
    assert fixed.repaired and fixed.ok


def printed_command(text: str, config: Path | str) -> list[str]:
    """The arguments of the first ``cdclake ...`` command ``text`` suggests (in backticks or single quotes,
    its own arguments possibly single-quoted), checked to name ``config``: what an operator would paste."""
    at = text.index("cdclake ")
    opening = text[at - 1]
    rest = text[at + len("cdclake "):]
    if opening == "`":
        command = rest[:rest.index("`")]
    else:  # a quote ends the command unless it opens or closes one of its words
        inner, end = False, len(rest)
        for i, char in enumerate(rest):
            if char == "'" and (inner or rest[i - 1] == " "):
                inner = not inner
            elif char == "'":
                end = i
                break
        command = rest[:end]
    args = shlex.split(command)
    assert args[1:3] == ["--config", str(config)], f"not runnable as printed: cdclake {command}"
    return args
