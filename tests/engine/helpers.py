"""Pipelines on the fake source (``cdclake.testing.fake``), and the lake compared with its rows."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from cdclake.cli import cli
from cdclake.config import load_config_text
from cdclake.engine.control import ControlTables
from cdclake.engine.lake import LakeLayout
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
    """The pipeline of :func:`pipeline_yaml` on the test's Spark session; a new lake starts from a copy of empty
    control tables made once per worker (:func:`_seed`)."""
    config = load_config_text(pipeline_yaml(db, lake, name, shape, extra, include, source_extra))
    pipeline = Pipeline.from_config(config, spark)
    _seed(spark, pipeline.layout, config.lake.table_features or "compatible")
    return pipeline


_EMPTY_CONTROL: dict[str, Path] = {}  # table-features mode -> the control tables of an empty lake of that mode


def _seed(spark, layout: LakeLayout, features: str) -> None:  # type: ignore[no-untyped-def]
    """Give a lake that has none the control tables (bronze, checkpoints, schema history, run log, dead letters)
    as ``ControlTables.ensure`` makes them, copied from an empty lake this worker made once per mode: making them
    is five Delta tables (seconds) per test, and the engine finds them made as a lake made by an earlier run
    (every server-backed test still makes its own)."""
    control = Path(layout.control)
    if control.exists():
        return
    if features not in _EMPTY_CONTROL:
        root = tempfile.mkdtemp(prefix="cdclake-engine-lake-")
        atexit.register(shutil.rmtree, root, True)
        made = LakeLayout(root, "empty")
        ControlTables(spark, made, features).ensure()
        _EMPTY_CONTROL[features] = Path(made.control)
    shutil.copytree(_EMPTY_CONTROL[features], control)


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
