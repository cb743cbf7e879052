"""Wire a pipeline file to its source plug-in, a Spark session and the engine."""

from __future__ import annotations

from cdclake.config import PipelineConfig
from cdclake.engine.pipeline import Pipeline
from cdclake.errors import ConfigError
from cdclake.sources.base import Source
from cdclake.spark import build_spark


def make_source(config: PipelineConfig) -> Source:
    if config.source.type in ("mysql", "mariadb"):
        from cdclake.sources.mysql.source import MySqlSource

        return MySqlSource(config.source, skip_unparsable_ddl=config.mining.skip_unparsable_ddl)  # type: ignore[arg-type]
    if config.source.type == "oracle":
        from cdclake.sources.oracle.source import OracleSource

        return OracleSource(config.source, config.mining, pipeline_id=f"{config.pipeline}@{config.lake.root}")
    raise ConfigError(f"source.type: {config.source.type!r} is not supported", "use mysql, mariadb or oracle")


def open_pipeline(config: PipelineConfig, app_name: str | None = None) -> Pipeline:
    spark = build_spark(app_name or f"cdclake-{config.pipeline}", config.spark.master, config.spark.conf)
    return Pipeline(config, make_source(config), spark)
