"""Pipelines over the LogMiner simulator: the miner's code path is the one that runs against Oracle;
only the DB-API connection (and the flashback reader the snapshot uses) come from the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.schema import TableSchema
from cdclake.sources.oracle.source import OracleSource
from cdclake.spi import SourceContext
from cdclake.testing.logminer_sim import SimulatedOracle


def flashback_reader(db: SimulatedOracle):  # type: ignore[no-untyped-def]
    """What ``SELECT ... AS OF SCN`` returns, as canonical strings, from the simulated history."""

    def read(spark: Any, schema: TableSchema, scn: int) -> Any:
        rows = db.canonical(schema.database, schema.table, scn)
        ddl = ", ".join(f"`{c.name}` STRING" for c in schema.columns)
        return spark.createDataFrame([tuple(r.get(c.name) for c in schema.columns) for r in rows], ddl)

    return read


def oracle_yaml(lake: Path, name: str = "ora", include: str = r"APP\..*", mining: str = "",
                extra: str = "", source_extra: str = "") -> str:
    return (
        f"pipeline: {name}\n"
        "source:\n  type: oracle\n  dsn: sim:1521/ORCL\n  user: C##CDC\n  password: unused\n"
        f"  include_tables: ['{include}']\n"
        "  mining:\n    retry_backoff_s: 0\n" + "".join(f"    {line}\n" for line in mining.splitlines() if line)
        + source_extra
        + f"lake:\n  root: {lake}\n{extra}"
    )


def oracle_pipeline(spark: Any, db: SimulatedOracle, lake: Path, **kw: Any) -> Pipeline:
    config = load_config_text(oracle_yaml(lake, **kw))
    context = SourceContext(config.pipeline, config.lake.root, config.mining.skip_unparsable_ddl)
    source = OracleSource(config.source, context, connect=db.connect,  # type: ignore[arg-type]
                          snapshot_reader=flashback_reader(db))
    return Pipeline(config, source, spark)


def assert_lake_equals_simulated(spark: Any, pipeline: Pipeline, db: SimulatedOracle,
                                 tables: list[str] | None = None, scn: int | None = None) -> None:
    """Every captured table in the lake equals the simulated source's committed state (now, or as of
    ``scn``), row by row.

    The expected rows are the simulator's own values (its canonical text), converted with the
    lake's type mapping; the schema is the one the pipeline's schema history holds now.
    """
    from cdclake.engine.target.changes import typed_select
    from pyspark.sql import functions as F

    latest = pipeline.control.latest_entries()
    names = tables if tables is not None else sorted(t for t, e in latest.items() if e.schema is not None)
    read = flashback_reader(db)
    for table in names:
        schema = latest[table].schema
        assert schema is not None, f"{table} is dropped in the schema history"
        schema = pipeline.ctx.columns.lake_schema(schema)  # what lands (no virtual columns)
        cols = [f"`{c}`" for c in schema.column_names]
        expected = read(spark, schema, db.current_scn if scn is None else scn).selectExpr(
            *typed_select(pipeline.source.types, schema))
        lake = spark.read.format("delta").load(pipeline.layout.target(table))
        if "__deleted" in lake.columns:
            lake = lake.where("NOT `__deleted`")
        lake, expected = lake.select(*cols), expected.select(*cols)
        # the rows as multisets, in one job: what exceptAll both ways tells (Spark plans exceptAll so itself)
        tagged = lake.withColumn("__side", F.lit(1)).unionByName(expected.withColumn("__side", F.lit(-1)))
        differ = tagged.groupBy(*cols).agg(F.sum("__side").alias("__n")).where("__n <> 0").limit(10).collect()
        if differ:
            only_lake = [{k: v for k, v in r.asDict().items() if k != "__n"} for r in differ if r["__n"] > 0][:5]
            only_src = [{k: v for k, v in r.asDict().items() if k != "__n"} for r in differ if r["__n"] < 0][:5]
            raise AssertionError(f"{table}: lake {lake.count()} rows, source {expected.count()} rows; only in lake: "
                                 f"{only_lake}; only in source: {only_src}")


def bronze_markers(spark: Any, pipeline: Pipeline) -> list[dict[str, Any]]:
    import json

    rows = spark.read.format("delta").load(pipeline.layout.bronze).where("op = 'w'").orderBy("window_id").collect()
    return [{"window_id": r.window_id, **json.loads(r.after)} for r in rows]


def drain(pipeline: Pipeline, max_events: int | None = None, limit: int = 40) -> int:
    """Mine until a window reaches the SCN planned when it started (all redo so far is applied)."""
    for n in range(1, limit + 1):
        report = pipeline.mine(max_events)
        markers = bronze_markers(pipeline.spark, pipeline)
        last = markers[-1] if markers else {}
        if max_events is None or int(last.get("mined_to_scn", -1)) >= int(_planned_end(pipeline, report)):
            return n
    raise AssertionError(f"not caught up after {limit} windows")


def _planned_end(pipeline: Pipeline, report: Any) -> int:
    window = pipeline.control.last_window()
    assert window is not None
    return int(window.end_limit["scn"])


def switch_twice(db: SimulatedOracle) -> None:
    """With two groups per thread, the log that was CURRENT is archived and its group overwritten."""
    db.switch_log(1)
    db.switch_log(1)


def spy_added(db: SimulatedOracle) -> list[str]:
    """Every file name ADD_LOGFILE is given, in order."""
    added: list[str] = []
    resolve = db._file_by_name

    def spy(name: str) -> Any:
        added.append(name)
        return resolve(name)

    db._file_by_name = spy  # type: ignore[method-assign]
    return added
