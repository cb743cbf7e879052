"""A target's shape: make it (and its type-2 table) for a schema, empty it for another, evolve it to a
schema change. Added columns are done here; renames, drops, type changes and column moves by
:mod:`.rewrite`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.engine.events import META_DELETED, META_SEQ, TARGET_META_DDL
from cdclake.engine.lake import delta_ref, is_delta_table, quote, set_field_metadata, type2_path
from cdclake.engine.names import SOURCE_NAME, field_metadata, lake_names
from cdclake.engine.target.rewrite import (
    RETYPE_PREFIX,
    change_type,
    column_mapping,
    enable_features_for,
    pending_rewrite,
    reorder,
    rewrite,
    simple_type,
)
from cdclake.engine.target.type2 import VALID_TO

if TYPE_CHECKING:
    from cdclake.engine.target.options import TargetOptions
    from cdclake.schema import TableSchema


class TableShapes:
    """Creates targets and their type-2 tables, and brings both to each new source schema."""

    def __init__(self, options: TargetOptions) -> None:
        self.options = options
        self.spark = options.spark

    def columns_ddl(self, schema: TableSchema, type2: bool = False) -> str:
        """The columns of a target (``type2``: of its type-2 table) for ``schema``, a lake schema."""
        cols = ", ".join(f"{quote(c.name)} {c.spark_type}" for c in schema.columns)
        meta = TARGET_META_DDL + (f", `{META_DELETED}` BOOLEAN" if self.options.soft or type2 else "")
        if type2:
            meta += f", `{VALID_TO}` DECIMAL(38,0)"
        return f"{cols}, {meta}" if cols else meta

    def _label_columns(self, path: str, schema: TableSchema, stale: bool = False) -> None:
        """Keep each renamed column's source name in its Delta field metadata (:data:`..names.SOURCE_NAME`),
        and none on a column that lands under its own name: one metadata commit, only if something differs.
        A table none of whose columns is renamed is not looked at, unless a label may be ``stale`` (a rename)."""
        if stale or any(SOURCE_NAME in c.attrs for c in schema.columns):
            set_field_metadata(self.spark, path, lambda fields: field_metadata(fields, schema))

    def create(self, path: str, schema: TableSchema, replace: bool = False) -> None:
        """Make the target (and its type-2 table); ``replace``: empty it with ``schema``, keeping the
        table features it was made with (a table is never converted to another mode behind the user's back)."""
        schema = self.options.lake_schema(schema)
        verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
        tables = [(path, False)] + ([(type2_path(path), True)] if self.options.type2_tables else [])
        props = ", ".join(f"'{k}' = '{v}'" for k, v in self.options.properties.items())
        for table, type2 in tables:
            # Delta refuses a REPLACE whose properties differ from the table's: an existing one keeps its own.
            keep = replace and is_delta_table(self.spark, table)
            if keep:
                self._reshape_for_replace(table, self.columns_ddl(schema, type2))
                if not type2:  # REPLACE of a path table keeps its rows; a type-2 table keeps its versions
                    self.spark.sql(f"DELETE FROM {delta_ref(table)}")
            self.spark.sql(
                f"{verb} {delta_ref(table)} ({self.columns_ddl(schema, type2)}) USING delta"
                + ("" if keep else f" TBLPROPERTIES ({props})")
            )
            self._label_columns(table, schema, stale=keep)

    def _reshape_for_replace(self, path: str, columns_ddl: str) -> None:
        """Delta replaces a path table only with its own schema: one about to be emptied for other
        columns (a re-snapshot after a schema change) gets them first, emptied. With column mapping
        (where a schema overwrite may be refused) by metadata changes, else by an empty overwrite."""
        from pyspark.sql.types import _parse_datatype_string

        spark = self.spark
        wanted = _parse_datatype_string(columns_ddl)
        have = spark.read.format("delta").load(path).schema
        if [(f.name, f.dataType) for f in have.fields] == [(f.name, f.dataType) for f in wanted.fields]:
            return
        ref = delta_ref(path)
        for f in wanted.fields:  # a type that needs a table feature the table lacks (timestamp_ntz)
            enable_features_for(spark, ref, f.dataType.simpleString())
        if not column_mapping(spark, path):
            (spark.createDataFrame([], wanted).write.format("delta").mode("overwrite")
             .option("overwriteSchema", "true").save(path))
            return
        spark.sql(f"DELETE FROM {ref}")
        types = {f.name: f.dataType for f in wanted.fields}
        gone = [f.name for f in have.fields if types.get(f.name) != f.dataType]
        if len(gone) == len(have.fields):  # Delta keeps at least one column
            spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(RETYPE_PREFIX)} INT)")
        if gone:
            spark.sql(f"ALTER TABLE {ref} DROP COLUMNS ({', '.join(quote(n) for n in gone)})")
        kept = {f.name for f in spark.read.format("delta").load(path).schema.fields}
        added = [f for f in wanted.fields if f.name not in kept]
        if added:
            spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ("
                      + ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in added) + ")")
        if RETYPE_PREFIX in kept:
            spark.sql(f"ALTER TABLE {ref} DROP COLUMN {quote(RETYPE_PREFIX)}")
        reorder(spark, path, [f.name for f in wanted.fields])

    def target_columns(self, path: str) -> dict[str, str]:
        """The table's own columns (not ``__*``) and their types as Spark prints them."""
        fields = self.spark.read.format("delta").load(path).schema.fields
        return {f.name: f.dataType.simpleString() for f in fields if not f.name.startswith("__")}

    def evolve(self, path: str, new: TableSchema, column_renames: dict[str, str], ddl_seq: int,
               resumed: bool = True) -> None:
        """Bring the target (and its type-2 table) to ``new``; idempotent: each step checks the state.

        Added columns get, on rows older than the DDL (type-2 table: on current versions), the value the
        source gave existing rows. ``resumed``: a run may have been killed half-way through this change
        (else no rewrite can be pending, and its lookup in the table's history is saved).
        """
        new = self.options.lake_schema(new)
        if not is_delta_table(self.spark, path):
            self.create(path, new)
            return
        column_renames = self._lake_renames(path, new, column_renames)
        self._evolve_one(path, new, column_renames, f"{META_SEQ} < {ddl_seq}", resumed)
        self._label_columns(path, new, stale=bool(column_renames))
        if self.options.type2_tables:
            self._evolve_one(type2_path(path), new, column_renames,
                             f"{META_SEQ} < {ddl_seq} AND {VALID_TO} IS NULL", resumed)
            self._label_columns(type2_path(path), new, stale=bool(column_renames))

    def _lake_renames(self, path: str, new: TableSchema, column_renames: dict[str, str]) -> dict[str, str]:
        """A DDL's column renames (source names) as renames of the target's Delta columns: the old column
        as the target holds it (its field metadata names its source column), the new one as ``new`` has it."""
        if not column_renames:
            return column_renames
        fields = self.spark.read.format("delta").load(path).schema.fields
        held = {str(f.metadata.get(SOURCE_NAME, f.name)).lower(): f.name for f in fields}
        wanted = {k.lower(): v for k, v in lake_names(new).items()}
        return {held.get(old.lower(), old): wanted.get(new_name.lower(), new_name)
                for old, new_name in column_renames.items()}

    def _evolve_one(self, path: str, new: TableSchema, column_renames: dict[str, str], existing_rows: str,
                    resumed: bool) -> None:
        """Renames and drops are metadata-only on a table with column mapping (spark mode); on any other
        (compatible mode) they, with the type changes of the same DDL, rewrite the table (:func:`.rewrite.rewrite`)."""
        spark = self.spark
        ref = delta_ref(path)
        pending = pending_rewrite(spark, path) if resumed else None  # a rewrite killed half-way: finish it first
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        renames = {lower[old.lower()]: new_name for old, new_name in column_renames.items()
                   if old.lower() in lower and new_name.lower() not in lower}
        named = {renames.get(k, k).lower(): renames.get(k, k) for k in current}  # once renamed
        wanted = {c.name.lower(): c for c in new.columns}
        dropped = {k for k in named if k not in wanted}
        if pending is not None or ((renames or dropped) and not column_mapping(spark, path)):
            select, new_types = [], []
            for f in spark.read.format("delta").load(path).schema.fields:
                name = renames.get(f.name, f.name) if f.name in current else f.name
                col = wanted.get(name.lower()) if f.name in current else None
                if f.name in current and col is None:
                    continue  # dropped
                if col is not None and f.dataType.simpleString() != simple_type(col.spark_type):
                    select.append(f"try_cast({quote(f.name)} AS {col.spark_type}) AS {quote(name)}")
                    new_types.append(col.spark_type)
                else:
                    select.append(f"{quote(f.name)} AS {quote(name)}")
            if pending is None:  # (enabled before the delete already, when resuming)
                for spark_type in new_types:
                    enable_features_for(spark, ref, spark_type)
            rewrite(spark, path, select, pending, new.qualified_name)
        else:
            for old, new_name in renames.items():
                spark.sql(f"ALTER TABLE {ref} RENAME COLUMN {quote(old)} TO {quote(new_name)}")
            if dropped:
                spark.sql(f"ALTER TABLE {ref} DROP COLUMNS ({', '.join(quote(named[d]) for d in dropped)})")
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        for k, col in enumerate(new.columns):
            have = lower.get(col.name.lower())
            if have is None:
                enable_features_for(spark, ref, col.spark_type)
                # at the source's place: the lake's columns keep the source's order
                where = "FIRST" if k == 0 else f"AFTER {quote(_target_name(lower, new.columns[k - 1].name))}"
                spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(col.name)} {col.spark_type} {where})")
                lower[col.name.lower()] = col.name
                initial = self.options.columns.initial_value_sql(spark, new.qualified_name, col,
                                                                 self.options.types.initial_value_sql(col))
                if initial is not None:
                    spark.sql(f"UPDATE {ref} SET {quote(col.name)} = {initial} WHERE {existing_rows}")
            elif current[have] != simple_type(col.spark_type):
                change_type(spark, path, have, col, new.qualified_name)
        reorder(spark, path, [_target_name(lower, c.name) for c in new.columns])


def _target_name(lower: dict[str, str], name: str) -> str:
    """``name`` as the table spells it (``lower``: its columns by lower-cased name), if it has it."""
    return lower.get(name.lower(), name)
