"""Pipelines over the Db2 capture emulator: the source's code path is the one that runs against Db2; only the
driver connection comes from the emulator, and Spark reads its tables through a real JDBC driver (SQLite's)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.sources.db2.source import Db2Source
from cdclake.spi import SourceContext
from cdclake.testing.db2_emulator import EmulatedDb2
from cdclake.testing.db2_emulator.values import EPOCH, JDBC_DRIVER, date_from_hybrid_days


def db2_yaml(lake: Path, db: EmulatedDb2, name: str = "db2", include: str = r"APP\..*", extra: str = "",
             source_extra: str = "") -> str:
    return (
        f"pipeline: {name}\n"
        "source:\n  type: db2\n  host: emulated\n  database: TESTDB\n  user: db2inst1\n  password: unused\n"
        f"  control_schema: {db.control_schema}\n"
        f"  jdbc_url: '{db.jdbc_url}'\n  jdbc_driver: {JDBC_DRIVER}\n"
        f"  include_tables: ['{include}']\n" + source_extra
        + f"lake:\n  root: {lake}\n{extra}"
    )


def db2_pipeline(spark: Any, db: EmulatedDb2, lake: Path, **kw: Any) -> Pipeline:
    config = load_config_text(db2_yaml(lake, db, **kw))
    context = SourceContext(config.pipeline, config.lake.root, config.mining.skip_unparsable_ddl)
    source = Db2Source(config.source, context, connect=db.connect)  # type: ignore[arg-type]
    return Pipeline(config, source, spark)


def expected_value(typename: str, scale: int, stored: Any) -> Any:
    """The Delta value of a value the emulator stores (its own rules, not the source's conversions)."""
    if stored is None:
        return None
    if typename == "DECIMAL":
        return Decimal(stored)
    if typename == "DATE":
        return date_from_hybrid_days(stored // 86_400_000)
    if typename == "TIME":
        return (EPOCH + dt.timedelta(milliseconds=stored)).time().isoformat()
    if typename == "TIMESTAMP":
        date, clock, frac = stored[:10], stored[11:19].replace(".", ":"), stored[20:]
        if scale > 6:
            return f"{date}T{clock}.{frac}"
        return dt.datetime.fromisoformat(f"{date}T{clock}" + (f".{(frac + '000000')[:6]}" if frac else ""))
    if isinstance(stored, (bytes, bytearray)):
        return bytes(stored)
    return stored


def assert_lake_equals_emulated(spark: Any, pipeline: Pipeline, db: EmulatedDb2,
                                tables: list[str] | None = None) -> None:
    """Every captured table in the lake equals the emulated source table now, row by row."""
    latest = pipeline.control.latest_entries()
    names = tables if tables is not None else sorted(t for t, e in latest.items() if e.schema is not None)
    for table in names:
        schema, name = table.split(".")
        src = db.table(schema, name)
        cols = src.names
        expected = sorted((tuple(expected_value(src.ctype(c).typename, src.ctype(c).scale, r[c]) for c in cols)
                           for r in db.rows(schema, name)), key=repr)
        lake = spark.read.format("delta").load(pipeline.layout.target(table))
        got = sorted((tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in r)
                      for r in lake.select(*[f"`{c}`" for c in cols]).collect()), key=repr)
        missing = [r for r in expected if r not in got][:5]
        extra = [r for r in got if r not in expected][:5]
        assert not missing and not extra, (f"{table}: lake {len(got)} rows, source {len(expected)}; only in the "
                                           f"source: {missing}; only in the lake: {extra}")
