"""What every part of the engine works with: one pipeline's configuration, source, session and tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.engine.bronze import BronzeLog
from cdclake.engine.columns import ColumnPolicy
from cdclake.engine.control import ControlTables
from cdclake.engine.lake import LakeLayout
from cdclake.engine.runs import RunLog
from cdclake.engine.target.targets import Targets
from cdclake.schema import RowKey

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
    targets: Targets
    runs: RunLog
    columns: ColumnPolicy

    @classmethod
    def create(cls, config: PipelineConfig, source: Source, spark: SparkSession) -> PipelineContext:
        layout = LakeLayout(config.lake.root, config.pipeline)
        lake = config.lake
        control = ControlTables(spark, layout, lake.table_features)
        columns = ColumnPolicy.from_config(config, source.types)
        targets = Targets.build(spark, source.types, lake.delete_mode, lake.table_properties, lake.history_tables,
                                features=control.table_features, columns=columns)
        return cls(config, source, spark, layout, control, BronzeLog(spark, layout), targets,
                   RunLog(spark, layout, control), columns)

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

    def lake_schema(self, schema: TableSchema) -> TableSchema:
        """``schema`` as the lake holds it (``tables.<t>.include_columns/exclude_columns``), after
        checking that the table's column rules can be honoured on it."""
        self.columns.check_table(schema, self.row_key(schema))
        return self.columns.lake_schema(schema)

    def read_source(self, schema: TableSchema, where: str | None = None) -> DataFrame:
        """The source's rows of ``schema``'s table (matching ``where``) as canonical columns, with the
        column rules applied: the one read of snapshots, backfills and reconcile."""
        rows = self.source.snapshot.read(self.spark, self.lake_schema(schema), where)
        return self.columns.mask_frame(schema.qualified_name, rows)

    def key_columns(self, schema: TableSchema) -> list[str]:
        """The columns of :meth:`row_key`; empty for a table kept as a multiset."""
        return list(self.row_key(schema).columns)

    def app_id(self, *parts: Any) -> str:
        """A Delta idempotency app id of this pipeline, e.g. ``cdclake:<pipeline>:<table>``."""
        return ":".join(["cdclake", self.config.pipeline, *map(str, parts)])

    def position(self, data: dict[str, Any]) -> Position:
        return self.source.position_type.from_dict(data)

    def tell_positions(self, states: Mapping[str, Any]) -> None:
        """Tell the source where the lake's tables stand (``states``: table -> its ``TableState``)."""
        self.source.log.lake_positions({t: self.position(s.position) for t, s in states.items() if s.position})
