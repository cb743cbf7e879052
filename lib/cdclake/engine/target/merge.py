"""The MERGE of change batches into targets, and of rows a backfill re-read.

Apply rules (the same for every source):

* per key, the newest change of a batch by ``__seq`` wins (earlier ones are collapsed away);
* a change older than or equal to what the target row holds (``__seq``) is ignored;
* a primary-key update deletes the old key and upserts the new one;
* deletes remove the row (``hard``) or keep it flagged ``__deleted`` (``soft``, a tombstone that
  also stops a late, older snapshot row from resurrecting the key).

A table without a row key is a multiset instead (:mod:`.keyless`); with type-2 tables every change
also becomes a version there (:mod:`.type2`), before the target's MERGE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdclake.engine.events import META_DELETED, META_OP, META_POSITION, META_SEQ
from cdclake.engine.lake import delta_ref, idempotent_write, quote, sql_str
from cdclake.engine.names import source_name
from cdclake.engine.target.changes import (
    BRONZE_META_PAIRS,
    META_COLUMNS,
    UNDECODABLE_MARK,
    ParsedChanges,
    typed_select,
)
from cdclake.engine.target.partial import fill_unavailable, flags
from cdclake.spi import UNAVAILABLE_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.target.changes import ChangeDecoder
    from cdclake.engine.target.keyless import KeylessTables
    from cdclake.engine.target.options import TargetOptions
    from cdclake.engine.target.type2 import Type2Tables
    from cdclake.schema import TableSchema


class ChangeMerge:
    """MERGEs change batches (and re-read rows) into targets under the apply rules."""

    def __init__(self, options: TargetOptions, decoder: ChangeDecoder, keyless: KeylessTables,
                 type2: Type2Tables) -> None:
        self.options = options
        self.spark = options.spark
        self.types = options.types
        self.decoder = decoder
        self.keyless = keyless
        self.type2 = type2

    def changes(self, path: str, schema: TableSchema, key_columns: list[str], events: DataFrame | ParsedChanges,
                app_id: str, version: int) -> None:
        """MERGE bronze change rows (op, seq, position, txid, commit_ts, window_id, before, after), or
        the same rows already decoded by :meth:`.changes.ChangeDecoder.parse`; idempotent per (``app_id``,
        ``version``)."""
        opts = self.options
        schema = opts.lake_schema(schema)
        key_columns = opts.lake_keys(schema, key_columns)
        parsed = events if isinstance(events, ParsedChanges) else self.decoder.parse(events, schema, key_columns)
        if not key_columns:
            self.keyless.merge(path, schema, parsed, app_id, version)
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
        before_fields = set(ev.schema["b"].dataType.names)  # parse may have decoded only its key

        def image_value(image: str, name: str) -> str:
            if image == "b" and name not in before_fields:
                return f"CAST(NULL AS {self.types.canonical_type(schema.column(name))})"
            return f"{image}.{quote(name)}"

        late_typing = not partial and not self.type2.enabled

        def action(image: str, kind: str, sub: int) -> str:
            """One action of a change as a struct: the row as ``image`` holds it, with its metadata. Typed, or
            with ``late_typing`` only its key typed and the row kept canonical in ``__img``, typed once the
            newest action per key is chosen (most changes are superseded in a large window)."""
            if late_typing:
                fields = [(k, self.types.to_delta_sql(schema.column(k), f"{image}.{quote(k)}")) for k in key_columns]
                fields.append(("__img", _named_struct([(n, image_value(image, n)) for n in names])))
            else:
                fields = [(c.name, self.types.to_delta_sql(c, image_value(image, c.name))) for c in schema.columns]
            fields += [(meta, col) for col, meta in BRONZE_META_PAIRS]
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
            actions = fill_unavailable(self.spark, opts.soft, path, actions, names, key_columns)
        if self.type2.enabled:
            self.type2.record(path, schema, key_columns, actions.drop(*flags(names, partial)), app_id, version)
        w = Window.partitionBy(*[F.col(quote(k)) for k in key_columns]).orderBy(
            F.col(META_SEQ).desc(), F.col("__sub").desc())
        latest = actions.withColumn("__rn", F.row_number().over(w)).where("__rn = 1").drop("__rn", "__sub")
        if late_typing:
            latest = latest.selectExpr(*typed_select(self.types, schema, "__img"), *[quote(m) for m in META_COLUMNS],
                                       "`__action`")
        view = f"cdclake_src_{abs(hash((path, version)))}"
        latest.createOrReplaceTempView(view)

        cols = schema.column_names + META_COLUMNS
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        newer = f"s.{META_SEQ} > t.{META_SEQ}"
        value = {n: (f"CASE WHEN s.`__ua{i}` THEN t.{quote(n)} ELSE s.{quote(n)} END" if partial else f"s.{quote(n)}")
                 for i, n in enumerate(names)}
        set_all = ", ".join(f"t.{quote(c)} = {value.get(c, 's.' + quote(c))}" for c in cols)
        ins_cols = ", ".join(quote(c) for c in cols)
        ins_vals = ", ".join(f"s.{quote(c)}" for c in cols)
        if opts.soft:
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

    def reread(self, path: str, schema: TableSchema, key_columns: list[str], canonical: DataFrame, seq: int,
               position: str, where: str | None, removed_later: DataFrame, truncated_later: bool,
               app_id: str) -> None:
        """MERGE rows re-read from the source at ``seq`` (a backfill) into a target mining keeps changing.

        A row replaces a target row of a lower sequence only; keys in ``removed_later`` (deleted by a
        change after ``seq``), or every key if the table was truncated after it, are not inserted again; target
        rows matching ``where`` that the source no longer has are deleted if written before ``seq``.
        Idempotent per ``app_id``.
        """
        opts = self.options
        schema = opts.lake_schema(schema)
        key_columns = opts.lake_keys(schema, key_columns)
        cols = schema.column_names + META_COLUMNS
        read = self.decoder.read_rows(schema, canonical, seq, position)
        upserts = read.limit(0) if truncated_later else read.join(removed_later, key_columns, "left_anti")
        current = self.spark.read.format("delta").load(path)
        target = current.where(f"NOT `{META_DELETED}`") if opts.soft else current
        if where:
            target = target.where(where)
        gone = (target.where(f"`{META_SEQ}` < {seq}").join(read.select(*key_columns), key_columns, "left_anti")
                .select(*[quote(c) for c in cols]))
        source = upserts.selectExpr("*", "'u' AS `__action`").unionByName(gone.selectExpr("*", "'d' AS `__action`"))
        if self.type2.enabled:  # before the target MERGE: what changes is read from the target as it stands
            versions = self.type2.reread_versions(current, schema, key_columns, upserts, gone, seq, position)
            self.type2.record(path, schema, key_columns, versions, app_id, 0)
        view = f"cdclake_reread_{abs(hash((path, app_id)))}"
        source.createOrReplaceTempView(view)
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in key_columns)
        set_all = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in cols)
        ins = ", ".join(quote(c) for c in cols)
        vals = ", ".join(f"s.{quote(c)}" for c in cols)
        newer = f"s.`__action` = 'u' AND s.`{META_SEQ}` > t.`{META_SEQ}`"
        older = f"s.`__action` = 'd' AND t.`{META_SEQ}` < {seq}"
        if opts.soft:
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


def _named_struct(fields: list[tuple[str, str]]) -> str:
    """Spark SQL for a struct of ``(name, expression)`` fields."""
    return "named_struct(" + ", ".join(f"'{sql_str(name)}', {expr}" for name, expr in fields) + ")"
