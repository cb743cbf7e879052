"""Target Delta tables: create, evolve to a new source schema, MERGE change batches, truncate.

Apply rules (the same for every source):

* per key, the newest change of a batch by ``__seq`` wins (earlier ones are collapsed away);
* a change older than or equal to what the target row holds (``__seq``) is ignored;
* a primary-key update deletes the old key and upserts the new one;
* deletes remove the row (``hard``) or keep it flagged ``__deleted`` (``soft``, a tombstone that
  also stops a late, older snapshot row from resurrecting the key).

With ``lake.history_tables`` each target also gets ``<target>__history``, an SCD type 2 table: one
row per version of a key, valid from its ``__seq`` until ``__valid_to_seq`` (null while current);
a delete is a version with ``__deleted = true``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdclake.config import unreadable_properties
from cdclake.engine.columns import ColumnPolicy
from cdclake.engine.events import (
    META_COMMIT_TS,
    META_DELETED,
    META_OP,
    META_POSITION,
    META_SEQ,
    META_TXID,
    META_WINDOW,
    TARGET_META_DDL,
)
from cdclake.engine.faults import crash_point
from cdclake.engine.lake import (
    COMPATIBLE,
    FEATURE_PROPERTIES,
    SPARK,
    commit_metric,
    commit_tag,
    delta_ref,
    history_path,
    idempotent_write,
    is_delta_table,
    quote,
    set_field_metadata,
    sql_str,
    table_version,
)
from cdclake.engine.names import SOURCE_NAME, field_metadata, lake_keys, lake_names, source_name
from cdclake.engine.names import lake_schema as delta_named
from cdclake.errors import CdcError, command, table_regex
from cdclake.hadoopfs import hadoop_delete, hadoop_fs, hadoop_list
from cdclake.schema import Column, TableSchema
from cdclake.spi import UNAVAILABLE_KEY, TypeMapper

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

VALID_TO = "__valid_to_seq"
APPLIED_PROPERTY = "cdclake.applied"  # where earlier versions kept "<window>:<op index>" of the last step done
MARKER_DIR = "_cdclake"  # beside _delta_log: files of cdclake's own, which Delta readers and VACUUM skip
MARKER_PREFIX = "applied-"
_META = [META_OP, META_SEQ, META_POSITION, META_TXID, META_COMMIT_TS, META_WINDOW]
_BRONZE_META_PAIRS = [("op", META_OP), ("seq", META_SEQ), ("position", META_POSITION), ("txid", META_TXID),
                      ("commit_ts", META_COMMIT_TS), ("window_id", META_WINDOW)]
_BRONZE_TO_META = [f"{col} AS `{meta}`" for col, meta in _BRONZE_META_PAIRS]


def _canonical_ddl(types: TypeMapper, columns: list[Column]) -> str:
    """The canonical columns of a change image, by their source names (the image's keys)."""
    return ", ".join(f"{quote(source_name(c))} {types.canonical_type(c)}" for c in columns)


def _decoded(types: TypeMapper, json_col: str, columns: list[Column], extra: str = "") -> str:
    """SQL decoding a JSON image (keys: source names) into a struct whose fields are the Delta names of
    ``columns`` (``extra``: more fields, in DDL); a struct cast renames fields by position."""
    ddl = _canonical_ddl(types, columns) + extra
    decoded = f"from_json({json_col}, '{sql_str(ddl)}')"
    if all(SOURCE_NAME not in c.attrs for c in columns):
        return decoded
    fields = [f"{quote(c.name)}: {types.canonical_type(c)}" for c in columns]
    if extra:
        fields.append(f"{quote(UNAVAILABLE_KEY)}: ARRAY<STRING>")
    return f"CAST({decoded} AS STRUCT<{', '.join(fields)}>)"


def typed_select(types: TypeMapper, schema: TableSchema, struct: str | None = None) -> list[str]:
    """Spark SQL select list turning canonical values (top-level or in ``struct``) into Delta types.

    Top-level canonical columns are those the source read: named by source names (:func:`.names.source_name`);
    a decoded image's fields have the Delta names already (:func:`_decoded`)."""
    out = []
    for c in schema.columns:
        ref = f"{struct}.{quote(c.name)}" if struct else quote(source_name(c))
        out.append(f"{types.to_delta_sql(c, ref)} AS {quote(c.name)}")
    return out


UNDECODABLE_MARK = "cdclake: a change image does not decode"  # raised inside a MERGE; see parse_changes


@dataclass
class ParsedChanges:
    """A change batch with its images decoded (``b``, ``a``).

    ``frame`` stops any job that meets an undecodable image (``UNDECODABLE_MARK``), so nothing of it is
    committed; ``decoded`` is the same rows unguarded (dead letters); ``partial``: some image may list
    columns under __unavailable. ``rows``/``undecodable`` are counts when :meth:`TargetTables.parse_changes`
    measured them, else None (not asked: no Spark job).
    """

    frame: DataFrame
    table: str
    rows: int | None
    undecodable: int | None
    partial: bool
    decoded: DataFrame | None = None
    cached: bool = False

    def release(self) -> None:
        if self.cached:
            self.frame.unpersist()


def is_undecodable_error(exc: BaseException) -> bool:
    """Whether a failed Spark job stopped at an image the MERGE source refused (``UNDECODABLE_MARK``)."""
    return UNDECODABLE_MARK in str(exc)


RETYPE_PREFIX = "__cdclake_retype_"  # a column taking a type change's values (column mapping tables)


class TargetTables:
    def __init__(self, spark: SparkSession, types: TypeMapper, delete_mode: str = "hard",
                 extra_properties: dict[str, str] | None = None, history_tables: bool = False,
                 features: str | Callable[[], str] = COMPATIBLE, columns: ColumnPolicy | None = None) -> None:
        self.spark = spark
        self.columns = columns or ColumnPolicy({}, None, types)
        self.types = types
        self.soft = delete_mode == "soft"
        self.keep_history = history_tables
        self.extra_properties = dict(extra_properties or {})
        self._features = features  # lake.table_features of new tables (a callable: resolved when needed)

    # ---- DDL ---------------------------------------------------------------------------------

    def _columns_ddl(self, schema: TableSchema, history: bool = False) -> str:
        cols = ", ".join(f"{quote(c.name)} {c.spark_type}" for c in schema.columns)
        meta = TARGET_META_DDL + (f", `{META_DELETED}` BOOLEAN" if self.soft or history else "")
        if history:
            meta += f", `{VALID_TO}` DECIMAL(38,0)"
        return f"{cols}, {meta}" if cols else meta

    def lake_schema(self, schema: TableSchema) -> TableSchema:
        """``schema`` as its Delta table holds it: the columns the column rules land, under the names Delta
        can store in the lake's mode (:mod:`.names`: the one mapping of every path). Idempotent."""
        return delta_named(self.columns.lake_schema(schema), self.features == SPARK)

    def _keys(self, schema: TableSchema, key_columns: list[str]) -> list[str]:
        """Key columns (named by the source) as the Delta columns of ``schema`` (a lake schema)."""
        return lake_keys(schema, key_columns)

    def _label_columns(self, path: str, schema: TableSchema, stale: bool = False) -> None:
        """Keep each renamed column's source name in its Delta field metadata (:data:`.names.SOURCE_NAME`),
        and none on a column that lands under its own name: one metadata commit, only if something differs.
        A table none of whose columns is renamed is not looked at, unless a label may be ``stale`` (a rename)."""
        if stale or any(SOURCE_NAME in c.attrs for c in schema.columns):
            set_field_metadata(self.spark, path, lambda fields: field_metadata(fields, schema))

    @property
    def features(self) -> str:
        """The table-features mode new tables are made in (``compatible`` or ``spark``)."""
        return self._features() if callable(self._features) else self._features

    @property
    def properties(self) -> dict[str, str]:
        """The properties a new target or history table is made with."""
        features = self.features
        if features == COMPATIBLE and (bad := unreadable_properties(self.extra_properties)):
            raise CdcError(f"lake.table_properties {', '.join(bad)} would add a Delta reader feature that "
                           "delta-rs cannot read to a lake made with lake.table_features: compatible",
                           "remove them from lake.table_properties", permanent=True)
        return {**FEATURE_PROPERTIES[features], **self.extra_properties}

    def create(self, path: str, schema: TableSchema, replace: bool = False) -> None:
        """Make the target (and its history table); ``replace``: empty it with ``schema``, keeping the
        table features it was made with (a table is never converted to another mode behind the user's back)."""
        schema = self.lake_schema(schema)
        verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
        tables = [(path, False)] + ([(history_path(path), True)] if self.keep_history else [])
        props = ", ".join(f"'{k}' = '{v}'" for k, v in self.properties.items())
        for table, history in tables:
            # Delta refuses a REPLACE whose properties differ from the table's: an existing one keeps its own.
            keep = replace and is_delta_table(self.spark, table)
            if keep:
                self._reshape_for_replace(table, self._columns_ddl(schema, history))
                if not history:  # REPLACE of a path table keeps its rows; a history keeps its versions
                    self.spark.sql(f"DELETE FROM {delta_ref(table)}")
            self.spark.sql(
                f"{verb} {delta_ref(table)} ({self._columns_ddl(schema, history)}) USING delta"
                + ("" if keep else f" TBLPROPERTIES ({props})")
            )
            self._label_columns(table, schema, stale=keep)

    def _reshape_for_replace(self, path: str, columns_ddl: str) -> None:
        """Delta replaces a path table only with its own schema: one about to be emptied for other
        columns (a re-snapshot after a schema change) gets them first, emptied. With column mapping
        (where a schema overwrite may be refused) by metadata changes, else by an empty overwrite."""
        from pyspark.sql.types import _parse_datatype_string

        wanted = _parse_datatype_string(columns_ddl)
        have = self.spark.read.format("delta").load(path).schema
        if [(f.name, f.dataType) for f in have.fields] == [(f.name, f.dataType) for f in wanted.fields]:
            return
        ref = delta_ref(path)
        for f in wanted.fields:  # a type that needs a table feature the table lacks (timestamp_ntz)
            self._enable_features_for(ref, f.dataType.simpleString())
        if not self._column_mapping(path):
            (self.spark.createDataFrame([], wanted).write.format("delta").mode("overwrite")
             .option("overwriteSchema", "true").save(path))
            return
        self.spark.sql(f"DELETE FROM {ref}")
        types = {f.name: f.dataType for f in wanted.fields}
        gone = [f.name for f in have.fields if types.get(f.name) != f.dataType]
        if len(gone) == len(have.fields):  # Delta keeps at least one column
            self.spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(RETYPE_PREFIX)} INT)")
        if gone:
            self.spark.sql(f"ALTER TABLE {ref} DROP COLUMNS ({', '.join(quote(n) for n in gone)})")
        kept = {f.name for f in self.spark.read.format("delta").load(path).schema.fields}
        added = [f for f in wanted.fields if f.name not in kept]
        if added:
            self.spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ("
                           + ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in added) + ")")
        if RETYPE_PREFIX in kept:
            self.spark.sql(f"ALTER TABLE {ref} DROP COLUMN {quote(RETYPE_PREFIX)}")
        self._reorder(path, [f.name for f in wanted.fields])

    def _marks(self, path: str) -> list[tuple[str, tuple[int, int]]]:
        """The step marks in ``path``'s ``_cdclake`` directory: (file name, (window, step))."""
        found = [(name, _marker_of(name)) for name in hadoop_list(self.spark, f"{path}/{MARKER_DIR}")]
        return [(name, m) for name, m in found if m is not None]

    def applied_marker(self, path: str) -> tuple[int, int] | None:
        """(window, step) of the last schema/barrier step done on ``path`` (:meth:`set_marker`)."""
        marks = self._marks(path)
        if marks:
            return max(m for _, m in marks)
        from delta.tables import DeltaTable  # earlier versions marked the table's properties

        props = DeltaTable.forPath(self.spark, path).detail().select("properties").collect()[0][0] or {}
        raw = props.get(APPLIED_PROPERTY)
        if not raw:
            return None
        w, _, k = raw.partition(":")
        return int(w), int(k)

    def set_marker(self, path: str, window_id: int, op_index: int) -> None:
        """Record that step ``op_index`` of window ``window_id`` is done on ``path``: an empty file named so
        in the table's ``_cdclake`` directory (which Delta readers and VACUUM leave alone), because a file
        appears whole or not at all and costs no Delta commit. Older marks are removed after."""
        fs, mark = hadoop_fs(self.spark, f"{path}/{MARKER_DIR}/{MARKER_PREFIX}{window_id}-{op_index}")
        fs.create(mark, True).close()
        for name, m in self._marks(path):
            if m != (window_id, op_index):
                hadoop_delete(self.spark, f"{path}/{MARKER_DIR}/{name}")

    def target_columns(self, path: str) -> dict[str, str]:
        fields = self.spark.read.format("delta").load(path).schema.fields
        return {f.name: f.dataType.simpleString() for f in fields if not f.name.startswith("__")}

    def evolve(self, path: str, new: TableSchema, column_renames: dict[str, str], ddl_seq: int,
               resumed: bool = True) -> None:
        """Bring the target (and its history table) to ``new``; idempotent: each step checks the state.

        Added columns get, on rows older than the DDL (history: on current versions), the value the
        source gave existing rows. ``resumed``: a run may have been killed half-way through this change
        (else no rewrite can be pending, and its lookup in the table's history is saved).
        """
        new = self.lake_schema(new)
        if not is_delta_table(self.spark, path):
            self.create(path, new)
            return
        column_renames = self._lake_renames(path, new, column_renames)
        self._evolve_one(path, new, column_renames, f"{META_SEQ} < {ddl_seq}", resumed)
        self._label_columns(path, new, stale=bool(column_renames))
        if self.keep_history:
            self._evolve_one(history_path(path), new, column_renames, f"{META_SEQ} < {ddl_seq} AND {VALID_TO} IS NULL",
                             resumed)
            self._label_columns(history_path(path), new, stale=bool(column_renames))

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
        (compatible mode) they, with the type changes of the same DDL, rewrite the table (:meth:`_rewrite`)."""
        ref = delta_ref(path)
        pending = self._pending_rewrite(path) if resumed else None  # a rewrite killed half-way: finish it first
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        renames = {lower[old.lower()]: new_name for old, new_name in column_renames.items()
                   if old.lower() in lower and new_name.lower() not in lower}
        named = {renames.get(k, k).lower(): renames.get(k, k) for k in current}  # once renamed
        wanted = {c.name.lower(): c for c in new.columns}
        dropped = {k for k in named if k not in wanted}
        if pending is not None or ((renames or dropped) and not self._column_mapping(path)):
            select, new_types = [], []
            for f in self.spark.read.format("delta").load(path).schema.fields:
                name = renames.get(f.name, f.name) if f.name in current else f.name
                col = wanted.get(name.lower()) if f.name in current else None
                if f.name in current and col is None:
                    continue  # dropped
                if col is not None and f.dataType.simpleString() != _simple(col.spark_type):
                    select.append(f"try_cast({quote(f.name)} AS {col.spark_type}) AS {quote(name)}")
                    new_types.append(col.spark_type)
                else:
                    select.append(f"{quote(f.name)} AS {quote(name)}")
            if pending is None:  # (enabled before the delete already, when resuming)
                for spark_type in new_types:
                    self._enable_features_for(ref, spark_type)
            self._rewrite(path, select, pending, new.qualified_name)
        else:
            for old, new_name in renames.items():
                self.spark.sql(f"ALTER TABLE {ref} RENAME COLUMN {quote(old)} TO {quote(new_name)}")
            if dropped:
                self.spark.sql(f"ALTER TABLE {ref} DROP COLUMNS ({', '.join(quote(named[d]) for d in dropped)})")
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        for k, col in enumerate(new.columns):
            have = lower.get(col.name.lower())
            if have is None:
                self._enable_features_for(ref, col.spark_type)
                # at the source's place: the lake's columns keep the source's order
                where = "FIRST" if k == 0 else f"AFTER {quote(self._target_name(lower, new.columns[k - 1].name))}"
                self.spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(col.name)} {col.spark_type} {where})")
                lower[col.name.lower()] = col.name
                initial = self.columns.initial_value_sql(self.spark, new.qualified_name, col,
                                                         self.types.initial_value_sql(col))
                if initial is not None:
                    self.spark.sql(f"UPDATE {ref} SET {quote(col.name)} = {initial} WHERE {existing_rows}")
            elif current[have] != _simple(col.spark_type):
                self._change_type(path, have, col, new.qualified_name)
        self._reorder(path, [self._target_name(lower, c.name) for c in new.columns])

    @staticmethod
    def _target_name(lower: dict[str, str], name: str) -> str:
        return lower.get(name.lower(), name)

    def _reorder(self, path: str, wanted: list[str]) -> None:
        """Move columns (metadata only) until the source's columns stand in the source's order."""
        ref = delta_ref(path)
        have = [f.name for f in self.spark.read.format("delta").load(path).schema.fields if f.name in set(wanted)]
        for k, name in enumerate(wanted):
            if have[k] == name:
                continue
            where = "FIRST" if k == 0 else f"AFTER {quote(wanted[k - 1])}"
            self.spark.sql(f"ALTER TABLE {ref} ALTER COLUMN {quote(name)} {where}")
            have.remove(name)
            have.insert(k, name)

    def _enable_features_for(self, ref: str, spark_type: str) -> None:
        """A column type that needs a Delta table feature the table was created without: enable it first
        (Delta enables it by itself only at CREATE, and refuses the column otherwise)."""
        if "TIMESTAMP_NTZ" in spark_type.upper():
            self.spark.sql(f"ALTER TABLE {ref} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")

    def _change_type(self, path: str, name: str, col: Column, table: str) -> None:
        ref = delta_ref(path)
        self._enable_features_for(ref, col.spark_type)
        if self._table_properties(path).get("delta.enableTypeWidening", "").lower() == "true":
            try:  # Delta type widening (int -> bigint, decimal precision up, float -> double ...)
                self.spark.sql(f"ALTER TABLE {ref} ALTER COLUMN {quote(name)} TYPE {col.spark_type}")
                return
            except Exception:
                pass
        if self._column_mapping(path):
            self._retype_in_place(path, name, col.spark_type)
            return
        fields = self.spark.read.format("delta").load(path).schema.fields
        self._rewrite(path, [
            f"try_cast({quote(f.name)} AS {col.spark_type}) AS {quote(f.name)}" if f.name == name else quote(f.name)
            for f in fields
        ], None, table)

    def _retype_in_place(self, path: str, name: str, spark_type: str) -> None:
        """A type change on a table with column mapping, where Delta refuses a rewrite once a column was
        dropped or renamed under the change data feed: a new column beside it takes the cast values,
        then the old one is dropped and the new one takes its name. Each step looks at the table, so a
        run killed half-way finishes the change when it runs the DDL again; change-data-feed readers see
        an update of every row."""
        ref = delta_ref(path)
        temp = f"{RETYPE_PREFIX}{name}"
        names = {f.name for f in self.spark.read.format("delta").load(path).schema.fields}
        if temp not in names:
            self.spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(temp)} {spark_type} AFTER {quote(name)})")
        if name in names or temp not in names:
            self.spark.sql(f"UPDATE {ref} SET {quote(temp)} = try_cast({quote(name)} AS {spark_type})")
            crash_point("retype")
            self.spark.sql(f"ALTER TABLE {ref} DROP COLUMN {quote(name)}")
        self.spark.sql(f"ALTER TABLE {ref} RENAME COLUMN {quote(temp)} TO {quote(name)}")

    def _table_properties(self, path: str) -> dict[str, str]:
        return {r.key: r.value for r in self.spark.sql(f"SHOW TBLPROPERTIES {delta_ref(path)}").collect()}

    def _column_mapping(self, path: str) -> bool:
        """Whether the table renames and drops columns in its metadata (column mapping, the spark mode)."""
        return self._table_properties(path).get("delta.columnMapping.mode", "none").lower() != "none"

    def _last_commit(self, path: str) -> tuple[int, str, dict | None]:
        r = self.spark.sql(f"DESCRIBE HISTORY {delta_ref(path)} LIMIT 1").select(
            "version", "operation", "userMetadata").first()
        try:
            tag = json.loads(r.userMetadata) if r.userMetadata else None
        except ValueError:
            tag = None
        return int(r.version), r.operation, tag if isinstance(tag, dict) else None

    def _pending_rewrite(self, path: str) -> int | None:
        """The version a rewrite started from, if its first commit (the delete) is the table's last."""
        _, operation, tag = self._last_commit(path)
        return int(tag["rewrite_from"]) if operation == "DELETE" and tag and "rewrite_from" in tag else None

    def _rewrite(self, path: str, select: list[str], pending: int | None, table: str) -> None:
        """Rewrite the table as ``select`` (a select list over every column, ``__*`` ones included) of
        itself: a rename, drop or type change the table's features cannot do in its metadata
        (``pending``: the version a rewrite killed half-way started from).

        Two commits, so that the change data feed says what happened in order: version N deletes every
        row (as it was), version N+1 inserts every row in the new shape, the ``__*`` columns unchanged.
        The delete is tagged with the version it started from, so a run killed between the two commits
        finishes the rewrite from that version when it runs the same DDL again (idempotent).
        A reader of version N sees the table empty.
        """
        base = pending
        if base is None:
            base = self._last_commit(path)[0]
            with commit_tag(self.spark, rewrite_from=base):
                self.spark.sql(f"DELETE FROM {delta_ref(path)}")
            crash_point("rewrite")
        try:
            old = self.spark.read.format("delta").option("versionAsOf", base).load(path)
            old.limit(1).collect()  # missing files show here, not half-way through the write
        except Exception as exc:
            raise CdcError(f"the rewrite of {path} for a schema change needs its version {base}, which can no "
                           f"longer be read ({str(exc).splitlines()[0][:300]})",
                           f"re-snapshot the table: {command('snapshot', '--tables', table_regex(table), '--force')}",
                           permanent=True
                           ) from exc
        with commit_tag(self.spark, rewritten_from=base):
            (old.selectExpr(*select).write.format("delta").mode("overwrite").option("overwriteSchema", "true")
             .save(path))

    # ---- data --------------------------------------------------------------------------------

    def _read_rows(self, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> DataFrame:
        """Rows read from the source (canonical columns) as target rows: ``__op = 'r'`` at ``seq``."""
        return canonical.selectExpr(*typed_select(self.types, schema), *_read_meta("r", seq, position))

    def write_snapshot(self, path: str, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> int:
        """Replace the target with snapshot rows (``__op = 'r'``, all at the snapshot sequence); the number of
        rows written (from the commit's metrics: the rows are not read again to count them)."""
        schema = self.lake_schema(schema)
        self.create(path, schema, replace=True)
        typed = self._read_rows(schema, canonical, seq, position)
        if self.soft:
            typed = typed.selectExpr("*", f"false AS `{META_DELETED}`")
        typed.write.format("delta").mode("append").save(path)
        written = table_version(self.spark, path)
        rows = None if written is None else commit_metric(self.spark, path, written[1], "numOutputRows")
        if rows is None:  # a commit without metrics (e.g. written with them off)
            rows = self.spark.read.format("delta").load(path).count()
        if self.keep_history:  # from the written target, so the source is read once
            deleted = [] if self.soft else [f"false AS `{META_DELETED}`"]
            first = self.spark.read.format("delta").load(path).selectExpr(
                "*", *deleted, f"CAST(NULL AS DECIMAL(38,0)) AS `{VALID_TO}`")
            first.write.format("delta").mode("append").save(history_path(path))
        return rows

    def merge_reread(self, path: str, schema: TableSchema, key_columns: list[str], canonical: DataFrame, seq: int,
                     position: str, where: str | None, removed_later: DataFrame, truncated_later: bool,
                     app_id: str) -> None:
        """MERGE rows re-read from the source at ``seq`` (a backfill) into a target mining keeps changing.

        A row replaces a target row of a lower sequence only; keys in ``removed_later`` (deleted by a
        change after ``seq``), or every key if the table was truncated after it, are not inserted again; target
        rows matching ``where`` that the source no longer has are deleted if written before ``seq``.
        Idempotent per ``app_id``.
        """
        schema = self.lake_schema(schema)
        key_columns = self._keys(schema, key_columns)
        cols = schema.column_names + _META
        read = self._read_rows(schema, canonical, seq, position)
        upserts = read.limit(0) if truncated_later else read.join(removed_later, key_columns, "left_anti")
        current = self.spark.read.format("delta").load(path)
        target = current.where(f"NOT `{META_DELETED}`") if self.soft else current
        if where:
            target = target.where(where)
        gone = (target.where(f"`{META_SEQ}` < {seq}").join(read.select(*key_columns), key_columns, "left_anti")
                .select(*[quote(c) for c in cols]))
        source = upserts.selectExpr("*", "'u' AS `__action`").unionByName(gone.selectExpr("*", "'d' AS `__action`"))
        if self.keep_history:  # before the target MERGE: what changes is read from the target as it stands
            versions = self._reread_versions(current, schema, key_columns, upserts, gone, seq, position)
            self._record_versions(path, schema, key_columns, versions, app_id, 0)
        view = f"cdclake_reread_{abs(hash((path, app_id)))}"
        source.createOrReplaceTempView(view)
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        set_all = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in cols)
        ins = ", ".join(quote(c) for c in cols)
        vals = ", ".join(f"s.{quote(c)}" for c in cols)
        newer = f"s.`__action` = 'u' AND s.`{META_SEQ}` > t.`{META_SEQ}`"
        older = f"s.`__action` = 'd' AND t.`{META_SEQ}` < {seq}"
        if self.soft:
            sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                   f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all}, t.`{META_DELETED}` = false "
                   f"WHEN MATCHED AND {older} THEN UPDATE SET t.`{META_DELETED}` = true, t.`{META_OP}` = 'd', "
                   f"t.`{META_SEQ}` = {seq}, t.`{META_POSITION}` = '{sql_str(position)}' "
                   f"WHEN NOT MATCHED AND s.`__action` = 'u' THEN INSERT ({ins}, `{META_DELETED}`) "
                   f"VALUES ({vals}, false)")
        else:
            sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                   f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all} "
                   f"WHEN MATCHED AND {older} THEN DELETE "
                   f"WHEN NOT MATCHED AND s.`__action` = 'u' THEN INSERT ({ins}) VALUES ({vals})")
        with idempotent_write(self.spark, app_id, 1):
            self.spark.sql(sql)
        self.spark.catalog.dropTempView(view)

    def replace_multiset(self, path: str, schema: TableSchema, canonical: DataFrame, seq: int, position: str,
                         where: str | None, later: DataFrame, app_id: str) -> None:
        """Replace the rows matching ``where`` of a table without a row key with rows re-read at
        ``seq``, plus what the applied changes after ``seq`` (``later``: bronze rows up to the table's
        position) added to or took from that range. The caller has the pipeline lock and mining past
        ``seq``; one idempotent MERGE."""
        schema = self.lake_schema(schema)
        cols = schema.column_names + _META
        read = self._read_rows(schema, canonical, seq, position).withColumn("__n", F.lit(0))
        parsed = self._parsed(later, schema, [])
        truncate = parsed.where("op = 't'").agg(F.max("seq")).first()[0]
        if truncate is not None:  # the re-read rows and the changes before the truncate are gone
            read = read.limit(0)
            parsed = parsed.where(f"seq > {truncate}")
        changes = self._counted_images(parsed, schema)
        if where:
            changes = changes.where(where)
        desired = _surviving_copies(read.unionByName(changes.drop("__h")), schema.column_names, cols)
        # One MERGE that matches nothing: every desired row is inserted, every live target row of the
        # range deleted (a plain overwrite is refused on column-mapped tables with a change data feed).
        in_range = [f"({where})"] if where else []
        if self.soft:
            in_range.append(f"NOT t.`{META_DELETED}`")
        ins_cols = ", ".join(quote(c) for c in cols) + (f", `{META_DELETED}`" if self.soft else "")
        # source columns renamed: the range filter names the target's columns unqualified
        ins_vals = ", ".join(f"s.`__s{i}`" for i in range(len(cols))) + (", false" if self.soft else "")
        view = f"cdclake_bag_reread_{abs(hash((path, app_id)))}"
        desired.toDF(*[f"__s{i}" for i in range(len(cols))]).createOrReplaceTempView(view)
        cond = f" AND {' AND '.join(in_range)}" if in_range else ""
        with idempotent_write(self.spark, app_id, 1):
            self.spark.sql(f"MERGE INTO {delta_ref(path)} t USING {view} s ON false "
                           f"WHEN NOT MATCHED THEN INSERT ({ins_cols}) VALUES ({ins_vals}) "
                           f"WHEN NOT MATCHED BY SOURCE{cond} THEN DELETE")
        self.spark.catalog.dropTempView(view)

    def _reread_versions(self, target: DataFrame, schema: TableSchema, key_columns: list[str], upserts: DataFrame,
                         gone: DataFrame, seq: int, position: str) -> DataFrame:
        """History versions at ``seq`` for what a re-read really changes (``target``: every target row,
        tombstones too): rows new to the target, rows whose values differ from an older target row, and
        deletes; a row re-read unchanged adds none."""
        tcols = [F.col(quote(k)) for k in key_columns] + [F.col(META_SEQ).alias("__tseq")]
        tcols += [F.col(quote(n)).alias(f"__t{i}") for i, n in enumerate(schema.column_names)]
        tcols.append(F.col(f"`{META_DELETED}`").alias("__tdel") if self.soft else F.lit(False).alias("__tdel"))
        differs = " OR ".join(f"NOT ({quote(n)} <=> `__t{i}`)" for i, n in enumerate(schema.column_names))
        changed = (
            upserts.join(target.select(*tcols), key_columns, "left")
            .where(f"__tseq IS NULL OR (__tseq < {seq} AND (__tdel OR {differs}))")
            .selectExpr(*[quote(c) for c in schema.column_names + _META], "'u' AS `__action`")
        )
        deleted = gone.selectExpr(*[quote(c) for c in schema.column_names], *_read_meta("d", seq, position),
                                  "'d' AS `__action`")
        return changed.unionByName(deleted).selectExpr("*", "1 AS `__sub`")

    def removed_keys(self, events: DataFrame, schema: TableSchema, key_columns: list[str]) -> DataFrame:
        """Keys that bronze change rows take away: deletes, and the old key of key-changing updates."""
        schema = self.lake_schema(schema)
        key_columns = self._keys(schema, key_columns)
        moved = " OR ".join(f"NOT (a.{quote(k)} <=> b.{quote(k)})" for k in key_columns)
        return self._parsed(events, schema, key_columns, before_keys_only=True).where(
            f"op = 'd' OR (op = 'u' AND b IS NOT NULL AND ({moved}))").selectExpr(
            *[f"b.{quote(k)} AS {quote(k)}" for k in key_columns])

    @property
    def images_may_omit_columns(self) -> bool:
        """Whether the source's change images may leave columns out (listed under __unavailable)."""
        return bool(getattr(self.types, "images_may_omit_columns", False))

    def may_be_partial(self, image_json: SparkColumn) -> SparkColumn:
        """Whether a raw JSON image may list unavailable columns: never false when it does (a textual
        test for the key, without decoding; a value cannot hold it unescaped)."""
        if not self.images_may_omit_columns:
            return F.lit(False)
        # a quote inside a JSON string is escaped, so the quoted name only ever appears as a key
        return image_json.contains(f'"{UNAVAILABLE_KEY}"')

    def parse_changes(self, events: DataFrame, schema: TableSchema, key_columns: list[str],
                      measure: bool = True, partial: bool | None = None) -> ParsedChanges:
        """Decode a batch's images. ``measure``: count rows, undecodable rows and partial images first
        (one Spark job; the decoded rows are kept in memory/disk for the MERGE). Without it no job runs
        here: the caller knows the batch has rows (and, if the source's images may omit columns, whether
        any does: ``partial``), and the MERGE's source fails on an undecodable image instead
        (:func:`is_undecodable_error`), before anything commits."""
        from pyspark import StorageLevel

        schema = self.lake_schema(schema)
        key_columns = self._keys(schema, key_columns)
        # A hard delete and a key change take only the key from the before image: the rest is not decoded.
        decoded = self._parsed(events, schema, key_columns,
                               before_keys_only=bool(key_columns) and not self.soft and not self.keep_history)
        if not measure:
            # every use of an image of a bad row fails (a filter could be ordered after others that drop it)
            images = [f"CASE WHEN `__bad` THEN raise_error('{UNDECODABLE_MARK}') ELSE {i} END AS {i}" for i in "ba"]
            guarded = decoded.selectExpr(*[quote(c) for c in decoded.columns if c not in ("a", "b")], *images)
            return ParsedChanges(guarded, schema.qualified_name, None, None,
                                 bool(self.images_may_omit_columns and partial), decoded)
        frame = decoded.persist(StorageLevel.MEMORY_AND_DISK)
        stats = frame.agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("__bad").cast("int")).alias("bad"),
                          F.max(F.col("__partial").cast("int")).alias("partial")).first()
        return ParsedChanges(frame, schema.qualified_name, int(stats.n), int(stats.bad or 0), bool(stats.partial),
                             frame, cached=True)

    def _parsed(self, events: DataFrame, schema: TableSchema, key_columns: list[str],
                before_keys_only: bool = False) -> DataFrame:
        """The images decoded (``b``, ``a``) with ``__bad`` (does not decode, or a null key) and
        ``__partial`` (the after image lists unavailable columns). ``before_keys_only``: ``b`` holds the key
        columns only (so only they are checked)."""
        omit = self.images_may_omit_columns
        before_columns = [schema.column(k) for k in key_columns] if before_keys_only else schema.columns
        unavailable = f", `{UNAVAILABLE_KEY}` ARRAY<STRING>" if omit else ""
        parsed = events.selectExpr(
            "window_id", "source_table", "op", "seq", "position", "txid", "commit_ts", "before", "after",
            f"{_decoded(self.types, 'before', before_columns)} AS b",
            f"{_decoded(self.types, 'after', schema.columns, unavailable)} AS a",
        )
        broken = ["(after IS NOT NULL AND a IS NULL)", "(before IS NOT NULL AND b IS NULL)"]
        if schema.primary_key:  # a key that decodes to null cannot be merged
            for image in ("a", "b"):
                nulls = " OR ".join(f"{image}.{quote(k)} IS NULL" for k in key_columns)
                broken.append(f"({image} IS NOT NULL AND ({nulls}))")
        partial = f"a.`{UNAVAILABLE_KEY}` IS NOT NULL" if omit else "false"
        return parsed.selectExpr("*", f"({' OR '.join(broken)}) AS `__bad`", f"{partial} AS `__partial`")

    def undecodable(self, events: DataFrame | ParsedChanges, schema: TableSchema, key_columns: list[str]
                    ) -> DataFrame:
        """Bronze rows whose images do not decode with ``schema`` (dead-letter rows, with a reason)."""
        schema = self.lake_schema(schema)
        key_columns = self._keys(schema, key_columns)
        frame = (events.decoded or events.frame) if isinstance(events, ParsedChanges) else self._parsed(
            events, schema, key_columns)
        return frame.where("__bad").selectExpr(
            "window_id", "source_table", "seq", "position", "op",
            f"'images do not decode with schema of {sql_str(schema.qualified_name)} (or key is null)' AS reason",
            "before", "after", "current_timestamp() AS recorded_at",
        )

    def merge_changes(
        self,
        path: str,
        schema: TableSchema,
        key_columns: list[str],
        events: DataFrame | ParsedChanges,
        app_id: str,
        version: int,
    ) -> None:
        """MERGE bronze change rows (op, seq, position, txid, commit_ts, window_id, before, after), or
        the same rows already decoded by :meth:`parse_changes`."""
        schema = self.lake_schema(schema)
        key_columns = self._keys(schema, key_columns)
        parsed = events if isinstance(events, ParsedChanges) else self.parse_changes(events, schema, key_columns)
        if not key_columns:
            self._merge_multiset(path, schema, parsed, app_id, version)
            if parsed is not events:
                parsed.release()
            return
        # Images may leave out columns the log did not supply (listed under __unavailable).
        partial = parsed.partial
        # Every change becomes at least one action, so the guard against undecodable images sits in the action's
        # kind (evaluated once per row) rather than around each use of an image.
        ev = (parsed.decoded or parsed.frame).select(
            "op", "seq", "position", "txid", "commit_ts", "window_id", "b", "a", "`__bad`")
        keys_a = " AND ".join(f"a.{quote(k)} <=> b.{quote(k)}" for k in key_columns)
        names = schema.column_names
        before_fields = set(ev.schema["b"].dataType.names)  # parse_changes may have decoded only its key

        def image_value(image: str, name: str) -> str:
            if image == "b" and name not in before_fields:
                return f"CAST(NULL AS {self.types.canonical_type(schema.column(name))})"
            return f"{image}.{quote(name)}"

        late_typing = not partial and not self.keep_history

        def action(image: str, kind: str, sub: int) -> str:
            """One action of a change as a struct: the row as ``image`` holds it, with its metadata. Typed, or
            with ``late_typing`` only its key typed and the row kept canonical in ``__img``, typed once the
            newest action per key is chosen (most changes are superseded in a large window)."""
            if late_typing:
                fields = [(k, self.types.to_delta_sql(schema.column(k), f"{image}.{quote(k)}")) for k in key_columns]
                fields.append(("__img", _named_struct([(n, image_value(image, n)) for n in names])))
            else:
                fields = [(c.name, self.types.to_delta_sql(c, image_value(image, c.name))) for c in schema.columns]
            fields += [(meta, col) for col, meta in _BRONZE_META_PAIRS]
            guarded = f"CASE WHEN `__bad` THEN raise_error('{UNDECODABLE_MARK}') ELSE '{kind}' END"
            fields += [("__action", guarded), ("__sub", str(sub))]
            if partial:
                missing = f"coalesce(a.`{UNAVAILABLE_KEY}`, array())" if image == "a" else "array()"
                fields += [(f"__ua{i}", f"array_contains({missing}, '{sql_str(source_name(c))}')")
                           for i, c in enumerate(schema.columns)]
                # a key change moves the row: values the log left out are the old key's
                moved = f"(op = 'u' AND b IS NOT NULL AND NOT ({keys_a}))" if image == "a" else "false"
                fields += [("__moved", moved)] + [
                    (f"__old{j}", self.types.to_delta_sql(schema.column(k), "b." + quote(k)))
                    for j, k in enumerate(key_columns)]
            return _named_struct(fields)

        # One pass over the changes (each action a struct of the same type): an insert/update is its after
        # image, a delete its before image, and a primary-key update also deletes the old key, ordered just
        # before the new one.
        # (A CASE of arrays, not a filter with a lambda: higher-order functions are not compiled.)
        upsert, delete, old_key = action("a", "u", 1), action("b", "d", 1), action("b", "d", 0)
        actions = ev.selectExpr(
            f"inline(CASE WHEN op = 'u' AND b IS NOT NULL AND NOT ({keys_a}) THEN array({old_key}, {upsert}) "
            f"WHEN op IN ('c', 'u', 'r') THEN array({upsert}) WHEN op = 'd' THEN array({delete}) ELSE array() END)")
        if partial:
            actions = self._fill_unavailable(path, actions, names, key_columns)
        if self.keep_history:
            self._record_versions(path, schema, key_columns, actions.drop(*_flags(names, partial)), app_id, version)
        w = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
            F.col(META_SEQ).desc(), F.col("__sub").desc())
        latest = actions.withColumn("__rn", F.row_number().over(w)).where("__rn = 1").drop("__rn", "__sub")
        if late_typing:
            latest = latest.selectExpr(*typed_select(self.types, schema, "__img"), *[quote(m) for m in _META],
                                       "`__action`")
        view = f"cdclake_src_{abs(hash((path, version)))}"
        latest.createOrReplaceTempView(view)

        cols = schema.column_names + _META
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        newer = f"s.{META_SEQ} > t.{META_SEQ}"
        value = {n: (f"CASE WHEN s.`__ua{i}` THEN t.{quote(n)} ELSE s.{quote(n)} END" if partial else f"s.{quote(n)}")
                 for i, n in enumerate(names)}
        set_all = ", ".join(f"t.{quote(c)} = {value.get(c, 's.' + quote(c))}" for c in cols)
        ins_cols = ", ".join(quote(c) for c in cols)
        ins_vals = ", ".join(f"s.{quote(c)}" for c in cols)
        if self.soft:
            sql = (
                f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all}, t.`{META_DELETED}` = (s.`__action` = 'd') "
                f"WHEN NOT MATCHED THEN INSERT ({ins_cols}, `{META_DELETED}`) "
                f"VALUES ({ins_vals}, s.`__action` = 'd')"
            )
        else:
            sql = (
                f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} "
                f"WHEN MATCHED AND {newer} AND s.`__action` = 'd' THEN DELETE "
                f"WHEN MATCHED AND {newer} THEN UPDATE SET {set_all} "
                f"WHEN NOT MATCHED AND s.`__action` <> 'd' THEN INSERT ({ins_cols}) VALUES ({ins_vals})"
            )
        with idempotent_write(self.spark, app_id, version):
            self.spark.sql(sql)
        self.spark.catalog.dropTempView(view)
        if parsed is not events:
            parsed.release()

    def _merge_multiset(self, path: str, schema: TableSchema, parsed: ParsedChanges, app_id: str,
                        version: int) -> None:
        """MERGE a batch into a table without a row key, kept as a multiset of whole rows.

        Each after image adds a copy of that row, each before image takes one away. Rows the batch
        only adds are inserted; for a row some change removed, every live copy is replaced by the
        copies left (:func:`_surviving_copies`). One MERGE, idempotent per (``app_id``, ``version``).
        """
        if parsed.partial and (parsed.rows is not None or not parsed.frame.where("__partial").isEmpty()):
            raise CdcError(
                f"{schema.qualified_name} has no primary or NOT NULL unique key, and the log left columns out of "
                "its row images (LOB or extended columns), so a changed row cannot be matched whole",
                f"set tables.{schema.qualified_name}.key_columns in the pipeline file to columns that identify a "
                "row, then re-snapshot the table: "
                f"{command('snapshot', '--tables', table_regex(schema.qualified_name), '--force')}", permanent=True)
        from pyspark import StorageLevel

        names = schema.column_names
        cols = names + _META
        changes = self._counted_images(parsed.frame, schema).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            removed = changes.where("__n < 0").select("__h", *[quote(n) for n in names]).distinct()
            same = [F.col("c.__h") == F.col("x.__h")] + [F.col(f"c.{quote(n)}").eqNullSafe(F.col(f"x.{quote(n)}"))
                                                        for n in names]
            inserts = (changes.where("__n > 0").alias("c").join(removed.alias("x"), same, "left_anti")
                       .select(*[quote(c) for c in cols]))
            current = self.spark.read.format("delta").load(path)
            if self.soft:
                current = current.where(f"NOT `{META_DELETED}`")
            have = (current.select(*[quote(c) for c in cols]).withColumn("__h", self._row_hash(names))
                    .withColumn("__n", F.lit(0)).alias("c").join(removed.alias("x"), same, "left_semi"))
            touched = changes.alias("c").join(removed.alias("x"), same, "left_semi")
            survivors = _surviving_copies(have.unionByName(touched).drop("__h"), names, cols)
            source = (inserts.unionByName(survivors).withColumn("__h", F.lit(None).cast("bigint"))
                      .withColumn("__action", F.lit("i"))
                      .unionByName(removed.withColumn("__action", F.lit("d")), allowMissingColumns=True))
            if self.soft:  # a delete leaves a tombstone per removed copy
                tomb = changes.where(f"__n < 0 AND `{META_OP}` = 'd'").select(*[quote(c) for c in cols])
                source = source.unionByName(tomb.withColumn("__h", F.lit(None).cast("bigint"))
                                            .withColumn("__action", F.lit("t")))
            if self.keep_history:
                self._record_multiset_versions(path, changes, cols, app_id, version)
            view = f"cdclake_bag_{abs(hash((path, version)))}"
            source.createOrReplaceTempView(view)
            t_hash = f"xxhash64({', '.join('t.' + quote(n) for n in names)})"
            on = " AND ".join(["s.`__action` = 'd'", f"{t_hash} = s.`__h`",
                               *[f"t.{quote(n)} <=> s.{quote(n)}" for n in names]])
            ins_cols = ", ".join(quote(c) for c in cols)
            ins_vals = ", ".join(f"s.{quote(c)}" for c in cols)
            if self.soft:
                sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} AND NOT t.`{META_DELETED}` "
                       f"WHEN MATCHED THEN DELETE "
                       f"WHEN NOT MATCHED AND s.`__action` <> 'd' THEN INSERT ({ins_cols}, `{META_DELETED}`) "
                       f"VALUES ({ins_vals}, s.`__action` = 't')")
            else:
                sql = (f"MERGE INTO {delta_ref(path)} t USING {view} s ON {on} WHEN MATCHED THEN DELETE "
                       f"WHEN NOT MATCHED AND s.`__action` = 'i' THEN INSERT ({ins_cols}) VALUES ({ins_vals})")
            with idempotent_write(self.spark, app_id, version):
                self.spark.sql(sql)
            self.spark.catalog.dropTempView(view)
        finally:
            changes.unpersist()

    @staticmethod
    def _row_hash(names: list[str]) -> SparkColumn:
        return F.xxhash64(*[F.col(quote(n)) for n in names])

    def _counted_images(self, parsed: DataFrame, schema: TableSchema) -> DataFrame:
        """Decoded changes (:meth:`_parsed`) as row copies counted ``__n``: +1 per after image, -1
        per before image, typed, with their ``__*`` metadata and ``__h`` (a hash of the row)."""
        ev = parsed.select("op", "seq", "position", "txid", "commit_ts", "window_id", "b", "a")

        def image(where: str, img: str, sign: int) -> DataFrame:
            return ev.where(where).selectExpr(*typed_select(self.types, schema, img), *_BRONZE_TO_META,
                                              f"{sign} AS `__n`")

        return (image("op IN ('c', 'u', 'r') AND a IS NOT NULL", "a", 1)
                .unionByName(image("op IN ('u', 'd') AND b IS NOT NULL", "b", -1))
                .withColumn("__h", self._row_hash(schema.column_names)))

    def _record_multiset_versions(self, path: str, changes: DataFrame, cols: list[str], app_id: str,
                                  version: int) -> None:
        """History of a table without a row key: no key chains versions, so each change is a row of its
        own (a copy added, or a copy deleted with ``__deleted = true``); ``__valid_to_seq`` stays null."""
        rows = changes.where(f"__n > 0 OR `{META_OP}` = 'd'").select(
            *[quote(c) for c in cols], (F.col("__n") < 0).alias(META_DELETED),
            F.lit(None).cast("decimal(38,0)").alias(VALID_TO))
        (rows.write.format("delta").mode("append").option("txnAppId", f"{app_id}:history")
         .option("txnVersion", 2 * version + 1).save(history_path(path)))

    def _fill_unavailable(self, path: str, actions: DataFrame, names: list[str], key_columns: list[str]
                          ) -> DataFrame:
        """Values the log left out of an image: the key's newest earlier value in the batch, else, for a
        row whose key changed, the old key's value, else the target's (the flag stays set for the MERGE).

        A key changed again and again in one batch (A to B to C) is a chain: each pass fills one more link,
        and passes repeat while some moved row waits on a link that the pass before filled.
        """
        blocked: int | None = None
        while True:
            actions = _carry_unavailable(actions, names, key_columns)
            actions, waiting = self._fill_moved_rows(path, actions, names, key_columns)
            if not waiting or (blocked is not None and waiting >= blocked):  # done, or a chain with no start
                break
            blocked = waiting
        actions = _carry_unavailable(actions, names, key_columns)  # on from the moved rows' filled values
        return actions.drop("__moved", *[f"__old{j}" for j in range(len(key_columns))])

    def _fill_moved_rows(self, path: str, actions: DataFrame, names: list[str], key_columns: list[str]
                         ) -> tuple[DataFrame, int]:
        """A key change whose image lacks values: take them from the old key's state earlier in the batch,
        or, if the batch had none, from the target's row of the old key. Also returns how many moved rows
        still lack a value that the old key's earlier state lacks too (it may be filled by another pass).
        """
        old_cols = [f"__old{j}" for j in range(len(key_columns))]
        ua = [f"__ua{i}" for i in range(len(names))]
        still = " OR ".join(f"`{f}`" for f in ua) or "false"
        moved = actions.where(f"__moved AND ({still})")
        rest = actions.where(f"NOT (__moved AND ({still}))")
        # 1. the old key's state earlier in this batch (e.g. inserted, or moved in, then its key changed)
        prior = actions.select(
            *[F.col(quote(k)).alias(o) for k, o in zip(key_columns, old_cols, strict=True)],
            F.col(META_SEQ).alias("__pseq"), (F.col("__action") == "d").alias("__pdel"),
            ((F.col("__action") == "d") | (F.col(f"`{META_OP}`") == "c") | F.col("__moved")).alias("__pnew"),
            *[F.col(quote(n)).alias(f"__p{i}") for i, n in enumerate(names)],
            *[F.col(f).alias(f"__pua{i}") for i, f in enumerate(ua)])
        m = moved.withColumn("__mid", F.monotonically_increasing_id())
        # only earlier changes of the old key count; in the join, so a key without one keeps its row
        on = [m[o] == prior[o] for o in old_cols] + [prior["__pseq"] < m[META_SEQ]]
        cand = m.join(prior, on, "left").drop(*[prior[o] for o in old_cols])
        newest = Window.partitionBy("__mid").orderBy(F.col("__pseq").desc_nulls_last())
        out = cand.withColumn("__r", F.row_number().over(newest)).where("__r = 1").drop("__r")
        known = F.col("__pseq").isNotNull() & ~F.col("__pdel")
        waits = [F.col(f"__ua{i}") & F.col(f"__pua{i}") for i in range(len(names))]
        out = out.withColumn("__waits", known & reduce(lambda x, y: x | y, waits, F.lit(False)))
        for i, n in enumerate(names):
            fill = F.col(f"__ua{i}") & known & ~F.col(f"__pua{i}")
            out = out.withColumn(n, F.when(fill, F.col(f"__p{i}")).otherwise(F.col(quote(n))))
            out = out.withColumn(f"__ua{i}", F.col(f"__ua{i}") & ~fill)
        # the target's row is the old key's row unless the batch deleted, (re-)created or moved in that key first
        out = out.withColumn("__seen", F.coalesce(F.col("__pnew"), F.lit(False))).drop(
            "__mid", "__pseq", "__pdel", "__pnew", *[f"__p{i}" for i in range(len(names))],
            *[f"__pua{i}" for i in range(len(names))])
        # 2. otherwise the target's row of the old key
        if is_delta_table(self.spark, path):
            current = self.spark.read.format("delta").load(path)
            if self.soft:
                current = current.where(f"NOT `{META_DELETED}`")
            target = current.select(
                *[F.col(quote(k)).alias(o) for k, o in zip(key_columns, old_cols, strict=True)],
                *[F.col(quote(n)).alias(f"__t{i}") for i, n in enumerate(names)], F.lit(True).alias("__found"))
            out = out.join(target, old_cols, "left")
            for i, n in enumerate(names):
                fill = F.col(f"__ua{i}") & ~F.col("__seen") & F.col("__found").isNotNull()
                out = out.withColumn(n, F.when(fill, F.col(f"__t{i}")).otherwise(F.col(quote(n))))
                out = out.withColumn(f"__ua{i}", F.col(f"__ua{i}") & ~fill)
            out = out.drop("__found", *[f"__t{i}" for i in range(len(names))])
        # materialised: per-column projections make a plan deep enough to overflow Delta's MERGE planning
        filled = out.drop("__seen").localCheckpoint()
        waiting = filled.where("__waits").count()
        return rest.unionByName(filled.drop("__waits")).localCheckpoint(), waiting

    def _record_versions(self, path: str, schema: TableSchema, key_columns: list[str], actions: DataFrame,
                         app_id: str, version: int) -> None:
        """SCD type 2: close each key's open version, append every version of this batch."""
        keys = [F.col(quote(k)) for k in key_columns]
        order = Window.partitionBy(*keys).orderBy(F.col(META_SEQ), F.col("__sub"))
        versions = (
            actions.withColumn(VALID_TO, F.lead(META_SEQ).over(order))
            .withColumn(META_DELETED, F.col("__action") == "d")
            .drop("__action", "__sub")
        )
        firsts = actions.groupBy(*keys).agg(F.min(META_SEQ).alias("__first"))
        view = f"cdclake_hist_{abs(hash((path, version)))}"
        firsts.createOrReplaceTempView(view)
        on = " AND ".join(f"h.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        hist = history_path(path)
        # Two commits, each idempotent: (close, append) use versions 2v and 2v+1 of the history app id.
        with idempotent_write(self.spark, f"{app_id}:history", 2 * version):
            self.spark.sql(
                f"MERGE INTO {delta_ref(hist)} h USING {view} s ON {on} AND h.`{VALID_TO}` IS NULL "
                f"AND h.`{META_SEQ}` < s.`__first` WHEN MATCHED THEN UPDATE SET h.`{VALID_TO}` = s.`__first`"
            )
        self.spark.catalog.dropTempView(view)
        cols = [*schema.column_names, *_META, META_DELETED, VALID_TO]
        (
            versions.select(*[quote(c) for c in cols]).write.format("delta").mode("append")
            .option("txnAppId", f"{app_id}:history").option("txnVersion", 2 * version + 1).save(hist)
        )

    def close_history(self, path: str, seq: int) -> None:
        """Truncate or drop: every open version ends at ``seq`` (idempotent by state)."""
        if self.keep_history:
            self.spark.sql(
                f"UPDATE {delta_ref(history_path(path))} SET `{VALID_TO}` = {seq} "
                f"WHERE `{VALID_TO}` IS NULL AND `{META_SEQ}` < {seq}"
            )

    def truncate(self, path: str, seq: int, app_id: str, version: int) -> None:
        """Remove every row older than the truncate (newer ones came after it in the log)."""
        self.close_history(path, seq)
        with idempotent_write(self.spark, app_id, version):
            if self.soft:
                self.spark.sql(
                    f"UPDATE {delta_ref(path)} SET `{META_DELETED}` = true, `{META_OP}` = 't', "
                    f"`{META_SEQ}` = {seq} WHERE `{META_SEQ}` < {seq}"
                )
            else:
                self.spark.sql(f"DELETE FROM {delta_ref(path)} WHERE `{META_SEQ}` < {seq}")

    def version(self, path: str) -> int | None:
        """The table's current Delta version (None: no table there)."""
        return self._last_commit(path)[0] if is_delta_table(self.spark, path) else None

    def insert_version(self, source_path: str, version: int, dest_path: str) -> None:
        """Append every row of ``source_path`` as of ``version`` to ``dest_path`` (the columns both have): a
        table renamed onto another name takes its rows, read as they stood when the rename came."""
        src = self.spark.read.format("delta").option("versionAsOf", version).load(source_path)
        dest_cols = self.spark.read.format("delta").load(dest_path).columns
        cols = [c for c in dest_cols if c in set(src.columns)]
        src.select(*[quote(c) for c in cols]).write.format("delta").mode("append").save(dest_path)

def _read_meta(op: str, seq: int, position: str) -> list[str]:
    """The ``__*`` columns of a row a read at ``seq`` wrote (snapshot, backfill): no transaction, no window."""
    return [f"'{op}' AS `{META_OP}`", f"CAST({seq} AS DECIMAL(38,0)) AS `{META_SEQ}`",
            f"'{sql_str(position)}' AS `{META_POSITION}`", f"CAST(NULL AS STRING) AS `{META_TXID}`",
            f"current_timestamp() AS `{META_COMMIT_TS}`", f"CAST(NULL AS BIGINT) AS `{META_WINDOW}`"]


def _surviving_copies(rows: DataFrame, names: list[str], cols: list[str]) -> DataFrame:
    """Copies of each distinct row left after counted changes: ``rows`` has the copies there were
    (``__n = 0``) and the changes to them (``__n`` +1 or -1); there are as many left as were there
    plus added minus removed, and the newest of those there or added (by ``__seq``) keep their metadata."""
    per_row = Window.partitionBy(*[F.col(quote(n)) for n in names])
    newest = per_row.orderBy(F.col(META_SEQ).desc(), F.col(META_POSITION).desc())
    return (rows.withColumn("__keep", F.count(F.when(F.col("__n") == 0, 1)).over(per_row) + F.sum("__n").over(per_row))
            .where("__n >= 0").withColumn("__rank", F.row_number().over(newest))
            .where("__rank <= __keep").select(*[quote(c) for c in cols]))


def _named_struct(fields: list[tuple[str, str]]) -> str:
    """Spark SQL for a struct of ``(name, expression)`` fields."""
    return "named_struct(" + ", ".join(f"'{sql_str(name)}', {expr}" for name, expr in fields) + ")"


def _flags(names: list[str], partial: bool) -> list[str]:
    return [f"__ua{i}" for i in range(len(names))] if partial else []


def _carry_unavailable(actions: DataFrame, names: list[str], key_columns: list[str]) -> DataFrame:
    """A value the log left out takes the key's newest earlier value of the batch (none after a
    delete: then NULL); with no earlier value the flag stays set and the MERGE keeps the target's.
    A row moved in by a key change starts the key afresh: until its own gap is filled from the old key,
    neither it nor the key's later rows take a value from before it."""
    order = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
        F.col(META_SEQ), F.col("__sub")).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    out = actions
    for i, n in enumerate(names):
        col, flag = F.col(quote(n)), F.col(f"__ua{i}")
        nothing = F.lit(None).cast(actions.schema[n].dataType)
        known = (F.when(F.col("__action") == "d", F.struct(nothing.alias("v"), F.lit(True).alias("ok")))
                 .when(~flag, F.struct(col.alias("v"), F.lit(True).alias("ok")))
                 .when(F.col("__moved"), F.struct(nothing.alias("v"), F.lit(False).alias("ok"))))
        carried = F.last(known, ignorenulls=True).over(order)
        out = out.withColumn(f"__c{i}", carried)
        usable = flag & F.coalesce(F.col(f"__c{i}.ok"), F.lit(False))
        out = out.withColumn(n, F.when(usable, F.col(f"__c{i}.v")).otherwise(col))
        out = out.withColumn(f"__ua{i}", flag & ~usable).drop(f"__c{i}")
    return out.localCheckpoint()  # a shallow plan for the MERGE (see _fill_moved_rows)



def _marker_of(name: str) -> tuple[int, int] | None:
    """(window, step) of a marker file's name, None for any other file."""
    w, _, k = name.removeprefix(MARKER_PREFIX).partition("-")
    return (int(w), int(k)) if name.startswith(MARKER_PREFIX) and w.isdigit() and k.isdigit() else None


def _simple(ddl_type: str) -> str:
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl_type).simpleString()
