"""Pipelines over the LogMiner simulator: the miner's code path is the one that runs against Oracle;
only the DB-API connection (and the flashback reader the snapshot uses) come from the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.schema import TableSchema
from cdclake.sources.oracle.source import OracleSource
from cdclake.testing.compare import compare_table
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
    source = OracleSource(config.source, config.mining, connect=db.connect,  # type: ignore[arg-type]
                          snapshot_reader=flashback_reader(db))
    return Pipeline(config, source, spark)


def assert_lake_equals_simulated(spark: Any, pipeline: Pipeline, tables: list[str]) -> None:
    for table in tables:
        result = compare_table(spark, pipeline, table)
        assert result.equal, f"{table}: {result.summary()}"


def mine_until_caught_up(pipeline: Pipeline, max_runs: int = 50, max_events: int | None = None) -> int:
    """Run mining windows until one ends at the planned end (the simulator is quiet)."""
    runs = 0
    while runs < max_runs:
        report = pipeline.mine(max_events)
        runs += 1
        if report.events == 0 and report.transactions == 0 and max_events is None:
            return runs
        if max_events is None:
            continue
    return runs
