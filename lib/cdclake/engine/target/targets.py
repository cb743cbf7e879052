"""The parts of the targets, made once per pipeline and wired to each other: no logic of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdclake.engine.lake import COMPATIBLE
from cdclake.engine.target.bulk import BulkWrites
from cdclake.engine.target.changes import ChangeDecoder
from cdclake.engine.target.keyless import KeylessTables
from cdclake.engine.target.merge import ChangeMerge
from cdclake.engine.target.options import TargetOptions
from cdclake.engine.target.shape import TableShapes
from cdclake.engine.target.type2 import Type2Tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.engine.columns import ColumnPolicy
    from cdclake.spi import TypeMapper


@dataclass
class Targets:
    options: TargetOptions
    changes: ChangeDecoder
    shapes: TableShapes
    type2: Type2Tables
    keyless: KeylessTables
    merge: ChangeMerge
    bulk: BulkWrites

    @classmethod
    def build(cls, spark: SparkSession, types: TypeMapper, delete_mode: str = "hard",
              extra_properties: dict[str, str] | None = None, type2_tables: bool = False,
              features: str | Callable[[], str] = COMPATIBLE, columns: ColumnPolicy | None = None) -> Targets:
        """The parts for ``lake.*`` settings (:class:`.options.TargetOptions`)."""
        options = TargetOptions(spark, types, delete_mode, extra_properties, type2_tables, features, columns)
        changes, shapes, type2 = ChangeDecoder(options), TableShapes(options), Type2Tables(options)
        keyless = KeylessTables(options, changes, type2)
        return cls(options, changes, shapes, type2, keyless, ChangeMerge(options, changes, keyless, type2),
                   BulkWrites(options, changes, shapes, type2))
