"""Pipelines on the fake source (``cdclake.testing.fake``), and the lake compared with its rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from cdclake.cli import cli
from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.compare import compare_table
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner, Result

from tests.settings import spark_conf_yaml

SHAPES = ("records", "frame", "committed")
SALT = "s4lt-for-tests"  # of masked columns


def pipeline_yaml(db: FakeDatabase, lake: Path, name: str = "t", shape: str = "records", extra: str = "",
                  include: str = r"shop\..*", source_extra: str = "") -> str:
    return (f"pipeline: {name}\nsource:\n  type: fake\n  store: {db.path}\n  shape: {shape}\n"
            f"  include_tables: ['{include}']\n{source_extra}" + spark_conf_yaml() + f"lake:\n  root: {lake}\n{extra}")


def config_file(db: FakeDatabase, lake: Path, name: str = "t", shape: str = "records", extra: str = "",
                include: str = r"shop\..*", source_extra: str = "") -> Path:
    """:func:`pipeline_yaml` as a file beside the lake (``<name>.yaml``), for the command line."""
    path = lake.parent / f"{name}.yaml"
    path.write_text(pipeline_yaml(db, lake, name, shape, extra, include, source_extra))
    return path


def make_pipeline(spark, db: FakeDatabase, lake: Path, name: str = "t", shape: str = "records",  # type: ignore[no-untyped-def]
                  extra: str = "", include: str = r"shop\..*", source_extra: str = "") -> Pipeline:
    config = load_config_text(pipeline_yaml(db, lake, name, shape, extra, include, source_extra))
    return Pipeline.from_config(config, spark)


def assert_lake_equals_source(spark, pipeline: Pipeline, tables: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Each table's target holds exactly the fake database's rows now (a multiset compare, value by value)."""
    for table in tables:
        result = compare_table(spark, pipeline, table)
        assert result.equal, f"{table}: {result.summary()}"


def run_cli(*args: str | Path, exit_code: int = 0) -> Result:
    """``cdclake <args>`` in this process (the test's Spark session), its exit code checked."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == exit_code, result.output
    return result


def raw_values_in(root: Path, needles: list[str]) -> dict[str, list[str]]:
    """needle -> files under ``root`` holding it: in the bytes of any file, or in a value of a Parquet
    file (pages may be compressed, so Parquet files are read too)."""
    found: dict[str, list[str]] = {n: [] for n in needles}
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        texts = [path.read_bytes().decode("latin-1")]
        if path.suffix == ".parquet":
            texts.append(str(pq.read_table(path).to_pylist()))
        for needle in needles:
            if any(needle in t for t in texts):
                found[needle].append(str(path.relative_to(root)))
    return found
