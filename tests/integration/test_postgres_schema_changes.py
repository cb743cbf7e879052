"""PostgreSQL's schema changes of issue 43, mined in the compatible table mode (``lake.table_features``; the
spark mode's ways of changing a target are the same for every source: engine/test_schema_changes.py): partitioned tables
(captured once, through their root; partitions created, attached and detached), a table renamed, a column renamed,
columns retyped (widened, and reinterpreted with ``USING``). One throwaway cluster and one workload for the module;
each mode has its pipeline (its own slot and publication) reading the same WAL. Every statement runs amid DML in
its window, and more DML follows in the next; after each window the lake is compared with the source, row by row
and column by column, and one test per (mode, change) checks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cdclake.cli import cli
from cdclake.engine.pipeline import Pipeline
from cdclake.errors import PreflightError, TablesParkedError
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer
from click.testing import CliRunner

from tests.integration.postgres_helpers import postgres_pipeline, postgres_yaml

pytestmark = pytest.mark.integration

MODES = ("compatible",)  # the spark mode's ways of changing a target are the engine's: engine/test_schema_changes.py
SETUP = [
    # 146 rows in parted_low, 154 in parted_high: the report's table
    "CREATE TABLE parted (id int PRIMARY KEY, k int NOT NULL, v text) PARTITION BY RANGE (id)",
    "CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (1000)",
    "CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (1000) TO (2000)",
    "INSERT INTO parted SELECT g, g % 7, 'v' || g FROM generate_series(854, 1153) g",
    # a table of its own, captured as such, until it is attached to parted (window 1)
    "CREATE TABLE loose (id int PRIMARY KEY, k int NOT NULL, v text)",
    "INSERT INTO loose SELECT g, 0, 'loose' || g FROM generate_series(2000, 2009) g",
    "CREATE TABLE ren (id int PRIMARY KEY, v text)",
    "INSERT INTO ren SELECT g, 'r' || g FROM generate_series(1, 5) g",
    # a column renamed, columns widened (int -> text, int -> bigint, a longer varchar: no rewrite) and reinterpreted
    # (text -> int with USING, numeric -> int rounds)
    "CREATE TABLE cols (id int PRIMARY KEY, a int, b int, c int, d varchar(10), s text, n numeric(10,2))",
    "INSERT INTO cols SELECT g, g, g * 10, g * 100, 'd' || g, (g * 3)::text, g + 0.5 FROM generate_series(1, 5) g",
]
WINDOW_1 = [
    "UPDATE parted SET v = 'w1' WHERE id IN (900, 1100)",
    "INSERT INTO loose VALUES (2010, 1, 'before attach')",
    "UPDATE ren SET v = 'before rename' WHERE id = 1",
    "UPDATE cols SET a = -1, b = -1, d = 'before', s = '99' WHERE id = 1",
    # a partition created mid-stream, with rows: they land in parted
    "CREATE TABLE parted_mid PARTITION OF parted FOR VALUES FROM (3000) TO (4000)",
    "INSERT INTO parted VALUES (3000, 3, 'mid'), (3001, 3, 'mid')",
    # a table with rows attached: its rows join parted without a row event
    "ALTER TABLE parted ATTACH PARTITION loose FOR VALUES FROM (2000) TO (3000)",
    "ALTER TABLE ren RENAME TO ren2",
    "ALTER TABLE cols RENAME COLUMN a TO a2",
    "ALTER TABLE cols ALTER COLUMN b TYPE text, ALTER COLUMN c TYPE bigint, ALTER COLUMN d TYPE varchar(40)",
    "ALTER TABLE cols ALTER COLUMN s TYPE int USING s::int * 10, ALTER COLUMN n TYPE int",
    # after the statements, in the same window
    "INSERT INTO parted VALUES (2011, 1, 'after attach'), (500, 5, 'after')",
    "UPDATE parted SET v = 'moved' WHERE id = 2001",
    "DELETE FROM parted WHERE id IN (855, 1001)",
    "INSERT INTO ren2 VALUES (6, 'after rename')",
    "UPDATE ren2 SET v = 'renamed' WHERE id = 2",
    "UPDATE cols SET a2 = 20, b = 'text now', c = 9000000000, d = repeat('x', 40), s = 7, n = 8 WHERE id = 2",
    "INSERT INTO cols VALUES (6, 6, 'six', 6000000000, 'six', 60, 61)",
]
WINDOW_2 = [
    "UPDATE parted SET v = 'w2' WHERE id IN (2002, 3000, 1002)",
    "INSERT INTO parted VALUES (1500, 1, 'to be detached')",
    # its rows leave parted without a row event; it is a table of its own then (not in cdclake's publication)
    "ALTER TABLE parted DETACH PARTITION parted_high",
    "UPDATE parted_high SET v = 'detached' WHERE id = 1003",
    "INSERT INTO parted VALUES (501, 5, 'after detach')",
    "UPDATE ren2 SET v = 'w2' WHERE id = 3",
    "UPDATE cols SET a2 = 30, b = 'w2', c = c + 1, s = s + 1 WHERE id = 3",
]
COMPARED = ["public.parted", "public.ren2", "public.cols"]


@dataclass
class Outcome:
    pipeline: Pipeline
    compared: dict[str, list[str]] = field(default_factory=dict)  # table -> each window's difference ('' if equal)
    parked: list[str] = field(default_factory=list)  # the runs' TablesParkedError messages
    status_after_1: dict[str, dict[str, Any]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # public.cols's Delta column types at the end
    status_text: str = ""  # what `cdclake status` prints at the end


def _config(pg: PostgresServer, lake: Path, mode: str) -> str:
    return postgres_yaml(pg, lake, name=f"pg{mode[:4]}", extra=f"  table_features: {mode}\n")


def _mine(pipeline: Pipeline, outcome: Outcome) -> None:
    try:
        pipeline.mine()
    except TablesParkedError as exc:
        outcome.parked.append(str(exc))


def _compare(spark: Any, outcome: Outcome, tables: list[str]) -> None:
    for table in tables:
        result = compare_table(spark, outcome.pipeline, table)
        lake = [c for c in spark.read.format("delta").load(outcome.pipeline.layout.target(table)).columns
                if not c.startswith("__")]
        source = outcome.pipeline.source.snapshot.start([table]).schemas[table].column_names
        outcome.pipeline.source.snapshot.end()
        problem = "" if result.equal else result.summary()
        if lake != source:
            problem += f" lake columns {lake}, source {source}"
        outcome.compared.setdefault(table, []).append(problem)


@pytest.fixture(scope="module")
def mined(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both modes' pipelines through the workload: a snapshot, window 1, window 2, then a snapshot of the table
    the detach made."""
    lakes = tmp_path_factory.mktemp("pgschema")
    with PostgresServer() as pg, pg.connect() as conn:
        for sql in SETUP:
            conn.execute(sql)
        configs = {mode: lakes / f"{mode}.yaml" for mode in MODES}
        for mode, path in configs.items():
            path.write_text(_config(pg, lakes / mode, mode))
        outcomes = {mode: Outcome(Pipeline.from_config(str(configs[mode]), spark)) for mode in MODES}
        for out in outcomes.values():
            out.pipeline.snapshot()
        for sql in WINDOW_1:
            conn.execute(sql)
        for out in outcomes.values():
            _mine(out.pipeline, out)
            _compare(spark, out, COMPARED)
            out.status_after_1 = {t["source_table"]: t for t in out.pipeline.status()}
        for sql in WINDOW_2:
            conn.execute(sql)
        for out in outcomes.values():
            _mine(out.pipeline, out)
            out.pipeline.snapshot()  # parted_high, a table of its own now (`mine --snapshot-missing`)
            _compare(spark, out, [*COMPARED, "public.parted_high"])
            lake = spark.read.format("delta").load(out.pipeline.layout.target("public.cols"))
            out.types = {f.name: f.dataType.simpleString() for f in lake.schema.fields}
        for mode, out in outcomes.items():
            out.status_text = CliRunner().invoke(cli, ["status", "--config", str(configs[mode])]).output
        yield {**outcomes, "pg": pg}


def _assert_equal(out: Outcome, table: str) -> None:
    assert out.compared[table] and not any(out.compared[table]), f"{table}: {out.compared[table]}"


@pytest.mark.parametrize("mode", MODES)
def test_a_partitioned_table_lands_once_through_its_root(mined: dict[str, Any], mode: str) -> None:
    out = mined[mode]
    _assert_equal(out, "public.parted")  # with the attached table's rows, without the detached partition's
    states = out.pipeline.control.table_states()
    for partition in ("public.parted_low", "public.parted_mid"):  # never tables of their own: no state, no target
        assert partition not in states, states[partition]
        assert not Path(out.pipeline.layout.target(partition)).exists(), partition
    # status names the partitions each root covers
    parted = out.status_after_1["public.parted"]
    assert parted["covers"] == ["public.loose", "public.parted_high", "public.parted_low", "public.parted_mid"], parted
    assert not {"public.parted_low", "public.parted_high", "public.parted_mid"} & set(out.status_after_1)
    now = {t["source_table"]: t for t in out.pipeline.status()}
    assert sorted(now["public.parted"]["covers"]) == ["public.loose", "public.parted_low", "public.parted_mid"]
    assert now["public.ren2"]["covers"] == []
    assert "covers: public.loose, public.parted_low, public.parted_mid" in out.status_text, out.status_text


@pytest.mark.parametrize("mode", MODES)
def test_attached_table_empties_and_detached_partition_is_a_table_of_its_own(
        mined: dict[str, Any], mode: str) -> None:
    out = mined[mode]
    states = out.pipeline.control.table_states()
    assert states["public.loose"].status == "dropped", states["public.loose"]
    loose = out.pipeline.spark.read.format("delta").load(out.pipeline.layout.target("public.loose"))
    assert loose.where("NOT coalesce(`__deleted`, false)" if "__deleted" in loose.columns else "true").count() == 0
    _assert_equal(out, "public.parted_high")  # a snapshot of it after the detach
    assert states["public.parted_high"].status == "streaming"


@pytest.mark.parametrize("mode", MODES)
def test_table_rename(mined: dict[str, Any], mode: str) -> None:
    out = mined[mode]
    states = out.pipeline.control.table_states()
    assert states["public.ren"].status == "dropped" and states["public.ren2"].status == "streaming"
    _assert_equal(out, "public.ren2")


@pytest.mark.parametrize("mode", MODES)
def test_column_rename(mined: dict[str, Any], mode: str) -> None:
    _assert_equal(mined[mode], "public.cols")
    assert mined[mode].types["a2"] == "int"


@pytest.mark.parametrize("mode", MODES)
def test_widening_retypes(mined: dict[str, Any], mode: str) -> None:
    _assert_equal(mined[mode], "public.cols")
    types = mined[mode].types
    assert (types["b"], types["c"], types["d"]) == ("string", "bigint", "string"), types


@pytest.mark.parametrize("mode", MODES)
def test_reinterpreting_retypes(mined: dict[str, Any], mode: str) -> None:
    _assert_equal(mined[mode], "public.cols")  # the values USING computed, read again
    types = mined[mode].types
    assert (types["s"], types["n"]) == ("int", "int"), types


def test_no_table_is_parked(mined: dict[str, Any]) -> None:
    assert all(not mined[m].parked for m in MODES), {m: mined[m].parked for m in MODES}


def test_a_partition_named_without_its_root_is_a_preflight_error(spark: Any, tmp_path: Path,
                                                                 mined: dict[str, Any]) -> None:
    pipeline = postgres_pipeline(spark, mined["pg"], tmp_path / "lake", name="pgpart", include=r"public\.parted_l.*")
    with pytest.raises(PreflightError) as err:
        pipeline.snapshot()
    message = str(err.value)
    assert "public.parted_low" in message and "partition of public.parted" in message, message
    assert r"public\.parted" in message, message
