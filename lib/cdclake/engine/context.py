"""What every part of the engine works with: one pipeline's configuration, source, session and tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.engine.bronze import BronzeLog
from cdclake.engine.control import ControlTables
from cdclake.engine.lake import LakeLayout
from cdclake.engine.runs import RunLog
from cdclake.engine.target import TargetTables
from cdclake.schema import RowKey

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.config import PipelineConfig
    from cdclake.schema import TableSchema
    from cdclake.spi import Position, Source


@dataclass
class PipelineContext:
    config: PipelineConfig
    source: Source
    spark: SparkSession
    layout: LakeLayout
    control: ControlTables
    bronze: BronzeLog
    targets: TargetTables
    runs: RunLog

    @classmethod
    def create(cls, config: PipelineConfig, source: Source, spark: SparkSession) -> PipelineContext:
        layout = LakeLayout(config.lake.root, config.pipeline)
        lake = config.lake
        control = ControlTables(spark, layout, lake.table_features)
        targets = TargetTables(spark, source.types, lake.delete_mode, lake.table_properties, lake.history_tables,
                               features=control.table_features)
        return cls(config, source, spark, layout, control, BronzeLog(spark, layout), targets,
                   RunLog(spark, layout, control))

    @property
    def name(self) -> str:
        return self.config.pipeline

    def row_key(self, schema: TableSchema) -> RowKey:
        """What identifies a row of ``schema``'s table: ``tables.<t>.key_columns`` from the pipeline
        file, else the primary key, else the first unique key on NOT NULL columns, else none (the
        table is kept as a multiset)."""
        override = self.config.tables.get(schema.qualified_name)
        if override and override.key_columns:
            return RowKey("key_columns", tuple(override.key_columns))
        return schema.row_key()

    def key_columns(self, schema: TableSchema) -> list[str]:
        """The columns of :meth:`row_key`; empty for a table kept as a multiset."""
        return list(self.row_key(schema).columns)

    def app_id(self, *parts: Any) -> str:
        """A Delta idempotency app id of this pipeline, e.g. ``cdclake:<pipeline>:<table>``."""
        return ":".join(["cdclake", self.config.pipeline, *map(str, parts)])

    def position(self, data: dict[str, Any]) -> Position:
        return self.source.position_from_dict(data)
