"""What every part of the targets works with: the session, the source's types and the lake's settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cdclake.config import unreadable_properties
from cdclake.engine.columns import ColumnPolicy
from cdclake.engine.lake import COMPATIBLE, FEATURE_PROPERTIES, SPARK
from cdclake.engine.names import lake_keys
from cdclake.engine.names import lake_schema as delta_named
from cdclake.errors import CdcError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.schema import TableSchema
    from cdclake.spi import TypeMapper


class TargetOptions:
    """``lake.delete_mode`` (``soft``), ``lake.history_tables`` (``type2_tables``: an SCD type-2 table beside
    each target), ``lake.table_properties`` and ``lake.table_features`` (``features``: a callable is resolved
    when a table is made, since the lake's mode is read from the lake), and the column rules."""

    def __init__(self, spark: SparkSession, types: TypeMapper, delete_mode: str = "hard",
                 extra_properties: dict[str, str] | None = None, type2_tables: bool = False,
                 features: str | Callable[[], str] = COMPATIBLE, columns: ColumnPolicy | None = None) -> None:
        self.spark = spark
        self.types = types
        self.columns = columns or ColumnPolicy({}, None, types)
        self.soft = delete_mode == "soft"
        self.type2_tables = type2_tables
        self.extra_properties = dict(extra_properties or {})
        self._features = features

    @property
    def features(self) -> str:
        """The table-features mode new tables are made in (``compatible`` or ``spark``)."""
        return self._features() if callable(self._features) else self._features

    @property
    def properties(self) -> dict[str, str]:
        """The properties a new target or type-2 table is made with."""
        features = self.features
        if features == COMPATIBLE and (bad := unreadable_properties(self.extra_properties)):
            raise CdcError(f"lake.table_properties {', '.join(bad)} would add a Delta reader feature that "
                           "delta-rs cannot read to a lake made with lake.table_features: compatible",
                           "remove them from lake.table_properties", permanent=True)
        return {**FEATURE_PROPERTIES[features], **self.extra_properties}

    def lake_schema(self, schema: TableSchema) -> TableSchema:
        """``schema`` as its Delta table holds it: the columns the column rules land, under the names Delta
        can store in the lake's mode (:mod:`..names`: the one mapping of every path). Idempotent."""
        return delta_named(self.columns.lake_schema(schema), self.features == SPARK)

    @staticmethod
    def lake_keys(schema: TableSchema, key_columns: list[str]) -> list[str]:
        """Key columns (named by the source) as the Delta columns of ``schema`` (a lake schema)."""
        return lake_keys(schema, key_columns)

    @property
    def images_may_omit_columns(self) -> bool:
        """Whether the source's change images may leave columns out (listed under __unavailable)."""
        return bool(getattr(self.types, "images_may_omit_columns", False))
