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

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

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
from cdclake.engine.lake import (
    TARGET_PROPERTIES,
    delta_ref,
    history_path,
    idempotent_write,
    is_delta_table,
    quote,
    sql_str,
)
from cdclake.schema import Column, TableSchema
from cdclake.spi import UNAVAILABLE_KEY, TypeMapper

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

VALID_TO = "__valid_to_seq"
APPLIED_PROPERTY = "cdclake.applied"  # "<window>:<op index>" of the last schema/barrier step done
_META = [META_OP, META_SEQ, META_POSITION, META_TXID, META_COMMIT_TS, META_WINDOW]
_BRONZE_TO_META = [
    f"op AS `{META_OP}`", f"seq AS `{META_SEQ}`", f"position AS `{META_POSITION}`", f"txid AS `{META_TXID}`",
    f"commit_ts AS `{META_COMMIT_TS}`", f"window_id AS `{META_WINDOW}`",
]


def _canonical_ddl(types: TypeMapper, schema: TableSchema) -> str:
    return ", ".join(f"{quote(c.name)} {types.canonical_type(c)}" for c in schema.columns)


def typed_select(types: TypeMapper, schema: TableSchema, struct: str | None = None) -> list[str]:
    """Spark SQL select list turning canonical values (top-level or in ``struct``) into Delta types."""
    out = []
    for c in schema.columns:
        ref = f"{struct}.{quote(c.name)}" if struct else quote(c.name)
        out.append(f"{types.to_delta_sql(c, ref)} AS {quote(c.name)}")
    return out


@dataclass
class ParsedChanges:
    """A change batch with its images decoded (``b``, ``a``), cached until :meth:`release`."""

    frame: DataFrame
    table: str
    rows: int
    undecodable: int
    partial: bool  # some image lists columns under __unavailable

    def release(self) -> None:
        self.frame.unpersist()


class TargetTables:
    def __init__(self, spark: SparkSession, types: TypeMapper, delete_mode: str = "hard",
                 extra_properties: dict[str, str] | None = None, history_tables: bool = False) -> None:
        self.spark = spark
        self.types = types
        self.soft = delete_mode == "soft"
        self.keep_history = history_tables
        self.properties = {**TARGET_PROPERTIES, **(extra_properties or {})}

    # ---- DDL ---------------------------------------------------------------------------------

    def _columns_ddl(self, schema: TableSchema, history: bool = False) -> str:
        cols = ", ".join(f"{quote(c.name)} {c.spark_type}" for c in schema.columns)
        meta = TARGET_META_DDL + (f", `{META_DELETED}` BOOLEAN" if self.soft or history else "")
        if history:
            meta += f", `{VALID_TO}` DECIMAL(38,0)"
        return f"{cols}, {meta}" if cols else meta

    def _props(self) -> str:
        return ", ".join(f"'{k}' = '{v}'" for k, v in self.properties.items())

    def create(self, path: str, schema: TableSchema, replace: bool = False) -> None:
        verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
        tables = [(path, False)] + ([(history_path(path), True)] if self.keep_history else [])
        for table, history in tables:
            self.spark.sql(
                f"{verb} {delta_ref(table)} ({self._columns_ddl(schema, history)}) USING delta "
                f"TBLPROPERTIES ({self._props()})"
            )

    def applied_marker(self, path: str) -> tuple[int, int] | None:
        from delta.tables import DeltaTable

        props = DeltaTable.forPath(self.spark, path).detail().select("properties").collect()[0][0] or {}
        raw = props.get(APPLIED_PROPERTY)
        if not raw:
            return None
        w, _, k = raw.partition(":")
        return int(w), int(k)

    def set_marker(self, path: str, window_id: int, op_index: int) -> None:
        self.spark.sql(
            f"ALTER TABLE {delta_ref(path)} SET TBLPROPERTIES ('{APPLIED_PROPERTY}' = '{window_id}:{op_index}')"
        )

    def target_columns(self, path: str) -> dict[str, str]:
        fields = self.spark.read.format("delta").load(path).schema.fields
        return {f.name: f.dataType.simpleString() for f in fields if not f.name.startswith("__")}

    def evolve(self, path: str, new: TableSchema, column_renames: dict[str, str], ddl_seq: int) -> None:
        """Bring the target (and its history table) to ``new``; idempotent: each step checks the state.

        Added columns get, on rows older than the DDL (history: on current versions), the value the
        source gave existing rows.
        """
        if not is_delta_table(self.spark, path):
            self.create(path, new)
            return
        self._evolve_one(path, new, column_renames, f"{META_SEQ} < {ddl_seq}")
        if self.keep_history:
            self._evolve_one(history_path(path), new, column_renames, f"{META_SEQ} < {ddl_seq} AND {VALID_TO} IS NULL")

    def _evolve_one(self, path: str, new: TableSchema, column_renames: dict[str, str], existing_rows: str) -> None:
        ref = delta_ref(path)
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        for old, new_name in column_renames.items():
            if old.lower() in lower and new_name.lower() not in lower:
                self.spark.sql(f"ALTER TABLE {ref} RENAME COLUMN {quote(lower[old.lower()])} TO {quote(new_name)}")
        current = self.target_columns(path)
        lower = {k.lower(): k for k in current}
        wanted = {c.name.lower() for c in new.columns}
        drops = [lower[k] for k in lower if k not in wanted]
        if drops:
            self.spark.sql(f"ALTER TABLE {ref} DROP COLUMNS ({', '.join(quote(d) for d in drops)})")
        for col in new.columns:
            have = lower.get(col.name.lower())
            if have is None:
                self._enable_features_for(ref, col.spark_type)
                self.spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(col.name)} {col.spark_type})")
                initial = self.types.initial_value_sql(col)
                if initial is not None:
                    self.spark.sql(f"UPDATE {ref} SET {quote(col.name)} = {initial} WHERE {existing_rows}")
            elif current[have] != _simple(col.spark_type):
                self._change_type(path, have, col)

    def _enable_features_for(self, ref: str, spark_type: str) -> None:
        """A column type that needs a Delta table feature the table was created without: enable it first
        (Delta enables it by itself only at CREATE, and refuses the column otherwise)."""
        if "TIMESTAMP_NTZ" in spark_type.upper():
            self.spark.sql(f"ALTER TABLE {ref} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")

    def _change_type(self, path: str, name: str, col: Column) -> None:
        ref = delta_ref(path)
        self._enable_features_for(ref, col.spark_type)
        try:  # Delta type widening (int -> bigint, decimal precision up, float -> double ...)
            self.spark.sql(f"ALTER TABLE {ref} ALTER COLUMN {quote(name)} TYPE {col.spark_type}")
            return
        except Exception:
            pass
        df = self.spark.read.format("delta").load(path)
        cols = [
            f"try_cast({quote(f.name)} AS {col.spark_type}) AS {quote(f.name)}" if f.name == name else quote(f.name)
            for f in df.schema.fields
        ]
        (
            df.selectExpr(*cols).write.format("delta").mode("overwrite").option("overwriteSchema", "true")
            .save(path)
        )

    # ---- data --------------------------------------------------------------------------------

    def _read_rows(self, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> DataFrame:
        """Rows read from the source (canonical columns) as target rows: ``__op = 'r'`` at ``seq``."""
        return canonical.selectExpr(*typed_select(self.types, schema), *_read_meta("r", seq, position))

    def write_snapshot(self, path: str, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> None:
        """Replace the target with snapshot rows (``__op = 'r'``, all at the snapshot sequence)."""
        self.create(path, schema, replace=True)
        typed = self._read_rows(schema, canonical, seq, position)
        if self.soft:
            typed = typed.selectExpr("*", f"false AS `{META_DELETED}`")
        typed.write.format("delta").mode("append").save(path)
        if self.keep_history:  # from the written target, so the source is read once
            deleted = [] if self.soft else [f"false AS `{META_DELETED}`"]
            first = self.spark.read.format("delta").load(path).selectExpr(
                "*", *deleted, f"CAST(NULL AS DECIMAL(38,0)) AS `{VALID_TO}`")
            first.write.format("delta").mode("append").save(history_path(path))

    def merge_reread(self, path: str, schema: TableSchema, key_columns: list[str], canonical: DataFrame, seq: int,
                     position: str, where: str | None, removed_later: DataFrame, truncated_later: bool,
                     app_id: str) -> None:
        """MERGE rows re-read from the source at ``seq`` (a backfill) into a target mining keeps changing.

        A row replaces a target row of a lower sequence only; keys in ``removed_later`` (deleted by a
        change after ``seq``), or every key if the table was truncated after it, are not inserted again; target
        rows matching ``where`` that the source no longer has are deleted if written before ``seq``.
        Idempotent per ``app_id``.
        """
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
        moved = " OR ".join(f"NOT (a.{quote(k)} <=> b.{quote(k)})" for k in key_columns)
        return self._parsed(events, schema, key_columns).where(
            f"op = 'd' OR (op = 'u' AND b IS NOT NULL AND ({moved}))").selectExpr(
            *[f"b.{quote(k)} AS {quote(k)}" for k in key_columns])

    def parse_changes(self, events: DataFrame, schema: TableSchema, key_columns: list[str]) -> ParsedChanges:
        """Decode a batch's images once (kept in memory/disk) with what the MERGE and the dead-letter
        check both need: row count, undecodable count, and whether any image left columns out."""
        from pyspark import StorageLevel

        frame = self._parsed(events, schema, key_columns).persist(StorageLevel.MEMORY_AND_DISK)
        stats = frame.agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("__bad").cast("int")).alias("bad"),
                          F.max(F.col("__partial").cast("int")).alias("partial")).first()
        return ParsedChanges(frame, schema.qualified_name, int(stats.n), int(stats.bad or 0), bool(stats.partial))

    def _parsed(self, events: DataFrame, schema: TableSchema, key_columns: list[str]) -> DataFrame:
        """The images decoded (``b``, ``a``) with ``__bad`` (does not decode, or a null key) and
        ``__partial`` (the after image lists unavailable columns)."""
        canon = _canonical_ddl(self.types, schema)
        omit = getattr(self.types, "images_may_omit_columns", False)
        canon_a = canon + (f", `{UNAVAILABLE_KEY}` ARRAY<STRING>" if omit else "")
        parsed = events.selectExpr(
            "window_id", "source_table", "op", "seq", "position", "txid", "commit_ts", "before", "after",
            f"from_json(before, '{sql_str(canon)}') AS b", f"from_json(after, '{sql_str(canon_a)}') AS a",
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
        frame = events.frame if isinstance(events, ParsedChanges) else self._parsed(events, schema, key_columns)
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
        parsed = events if isinstance(events, ParsedChanges) else self.parse_changes(events, schema, key_columns)
        # Images may leave out columns the log did not supply (listed under __unavailable).
        partial = parsed.partial
        ev = parsed.frame.select("op", "seq", "position", "txid", "commit_ts", "window_id", "b", "a")
        keys_a = " AND ".join(f"a.{quote(k)} <=> b.{quote(k)}" for k in key_columns)
        names = schema.column_names

        def action(where: str, image: str, kind: str, sub: int) -> DataFrame:
            flags = []
            if partial:
                missing = f"coalesce(a.`{UNAVAILABLE_KEY}`, array())" if image == "a" else "array()"
                flags = [f"array_contains({missing}, '{sql_str(n)}') AS `__ua{i}`" for i, n in enumerate(names)]
                # a key change moves the row: values the log left out are the old key's
                moved = f"(op = 'u' AND b IS NOT NULL AND NOT ({keys_a}))" if image == "a" else "false"
                old = {c.name: f"{self.types.to_delta_sql(c, 'b.' + quote(c.name))}" for c in schema.columns}
                flags += [f"{moved} AS `__moved`"] + [f"{old[k]} AS `__old{j}`" for j, k in enumerate(key_columns)]
            return ev.where(where).selectExpr(*typed_select(self.types, schema, image), *_BRONZE_TO_META,
                                              f"'{kind}' AS `__action`", f"{sub} AS `__sub`", *flags)

        actions = (
            action("op IN ('c', 'u', 'r')", "a", "u", 1)
            .unionByName(action("op = 'd'", "b", "d", 1))
            # a primary-key update also deletes the old key, ordered just before the new one
            .unionByName(action(f"op = 'u' AND b IS NOT NULL AND NOT ({keys_a})", "b", "d", 0))
        )
        if partial:
            actions = _carry_unavailable(actions, names, key_columns)
            actions = self._fill_moved_rows(path, actions, names, key_columns)
            actions = _carry_unavailable(actions, names, key_columns)  # on from the moved rows' filled values
        if self.keep_history:
            self._record_versions(path, schema, key_columns, actions.drop(*_flags(names, partial)), app_id, version)
        w = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
            F.col(META_SEQ).desc(), F.col("__sub").desc())
        latest = actions.withColumn("__rn", F.row_number().over(w)).where("__rn = 1").drop("__rn", "__sub")
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

    def _fill_moved_rows(self, path: str, actions: DataFrame, names: list[str], key_columns: list[str]) -> DataFrame:
        """A key change whose image lacks values: take them from the target's row of the old key.

        (A key changed twice within one batch, or a row changed earlier in the batch under its old
        key, keeps the gap: the column stays unavailable, i.e. the target keeps its value.)
        """
        old_cols = [f"__old{j}" for j in range(len(key_columns))]
        ua = [f"__ua{i}" for i in range(len(names))]
        still = " OR ".join(f"`{f}`" for f in ua) or "false"
        moved = actions.where(f"__moved AND ({still})")
        rest = actions.where(f"NOT (__moved AND ({still}))").drop("__moved", *old_cols)
        # 1. the old key's state earlier in this batch (e.g. inserted, then its key changed)
        prior = actions.select(
            *[F.col(quote(k)).alias(o) for k, o in zip(key_columns, old_cols, strict=True)],
            F.col(META_SEQ).alias("__pseq"), (F.col("__action") == "d").alias("__pdel"),
            ((F.col("__action") == "d") | (F.col(f"`{META_OP}`") == "c")).alias("__pnew"),
            *[F.col(quote(n)).alias(f"__p{i}") for i, n in enumerate(names)],
            *[F.col(f).alias(f"__pua{i}") for i, f in enumerate(ua)])
        m = moved.withColumn("__mid", F.monotonically_increasing_id())
        cand = m.join(prior, old_cols, "left").where(F.col("__pseq").isNull() | (F.col("__pseq") < F.col(META_SEQ)))
        newest = Window.partitionBy("__mid").orderBy(F.col("__pseq").desc_nulls_last())
        out = cand.withColumn("__r", F.row_number().over(newest)).where("__r = 1").drop("__r")
        for i, n in enumerate(names):
            fill = F.col(f"__ua{i}") & F.col("__pseq").isNotNull() & ~F.col("__pdel") & ~F.col(f"__pua{i}")
            out = out.withColumn(n, F.when(fill, F.col(f"__p{i}")).otherwise(F.col(quote(n))))
            out = out.withColumn(f"__ua{i}", F.col(f"__ua{i}") & ~fill)
        # the target's row is the old key's row unless the batch deleted or (re-)created that key first
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
        return rest.unionByName(out.drop("__moved", "__seen", *old_cols))

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

    def copy_rows(self, source_path: str, dest_path: str, before_seq: int, key_columns: list[str]) -> None:
        """Move rows older than ``before_seq`` from a renamed table's target into the new one.

        Insert-if-absent then delete, so a re-run after a kill between the two does not double rows.
        """
        src = self.spark.read.format("delta").load(source_path).where(f"`{META_SEQ}` < {before_seq}")
        dest_cols = self.spark.read.format("delta").load(dest_path).columns
        view = f"cdclake_rename_{abs(hash((source_path, dest_path)))}"
        src.select(*[quote(c) for c in src.columns if c in dest_cols]).createOrReplaceTempView(view)
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        cols = [c for c in dest_cols if c in src.columns]
        self.spark.sql(
            f"MERGE INTO {delta_ref(dest_path)} t USING {view} s ON {on} WHEN NOT MATCHED THEN INSERT "
            f"({', '.join(quote(c) for c in cols)}) VALUES ({', '.join('s.' + quote(c) for c in cols)})"
        )
        self.spark.catalog.dropTempView(view)
        self.spark.sql(f"DELETE FROM {delta_ref(source_path)} WHERE `{META_SEQ}` < {before_seq}")

def _read_meta(op: str, seq: int, position: str) -> list[str]:
    """The ``__*`` columns of a row a read at ``seq`` wrote (snapshot, backfill): no transaction, no window."""
    return [f"'{op}' AS `{META_OP}`", f"CAST({seq} AS DECIMAL(38,0)) AS `{META_SEQ}`",
            f"'{sql_str(position)}' AS `{META_POSITION}`", f"CAST(NULL AS STRING) AS `{META_TXID}`",
            f"current_timestamp() AS `{META_COMMIT_TS}`", f"CAST(NULL AS BIGINT) AS `{META_WINDOW}`"]


def _flags(names: list[str], partial: bool) -> list[str]:
    return [f"__ua{i}" for i in range(len(names))] if partial else []


def _carry_unavailable(actions: DataFrame, names: list[str], key_columns: list[str]) -> DataFrame:
    """A value the log left out takes the key's newest earlier value of the batch (none after a
    delete: then NULL); with no earlier value the flag stays set and the MERGE keeps the target's."""
    order = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
        F.col(META_SEQ), F.col("__sub")).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    out = actions
    for i, n in enumerate(names):
        col, flag = F.col(quote(n)), F.col(f"__ua{i}")
        known = (F.when(F.col("__action") == "d", F.struct(F.lit(None).cast(actions.schema[n].dataType).alias("v")))
                 .when(~flag, F.struct(col.alias("v"))))
        carried = F.last(known, ignorenulls=True).over(order)
        out = out.withColumn(f"__c{i}", carried)
        out = out.withColumn(n, F.when(flag & F.col(f"__c{i}").isNotNull(), F.col(f"__c{i}.v")).otherwise(col))
        out = out.withColumn(f"__ua{i}", flag & F.col(f"__c{i}").isNull()).drop(f"__c{i}")
    return out



def _simple(ddl_type: str) -> str:
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl_type).simpleString()
