"""Tables without a row key (no primary key, no NOT NULL unique key, no ``tables.<t>.key_columns``),
kept as a multiset of whole rows: an after image adds a copy of its row, a before image takes one away."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdclake.engine.events import META_DELETED, META_OP, META_POSITION, META_SEQ
from cdclake.engine.lake import delta_ref, idempotent_write, quote
from cdclake.engine.target.changes import BRONZE_TO_META, META_COLUMNS, typed_select
from cdclake.errors import CdcError, command, table_regex

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from cdclake.engine.target.changes import ChangeDecoder, ParsedChanges
    from cdclake.engine.target.options import TargetOptions
    from cdclake.engine.target.type2 import Type2Tables
    from cdclake.schema import TableSchema


class KeylessTables:
    """The MERGE of a change batch into a keyless target, and the replacement of a range re-read."""

    def __init__(self, options: TargetOptions, decoder: ChangeDecoder, type2: Type2Tables) -> None:
        self.options = options
        self.spark = options.spark
        self.decoder = decoder
        self.type2 = type2

    def merge(self, path: str, schema: TableSchema, parsed: ParsedChanges, app_id: str, version: int) -> None:
        """MERGE a batch (``schema``: a lake schema) into a table without a row key.

        Rows the batch only adds are inserted; for a row some change removed, every live copy is
        replaced by the copies left (:func:`surviving_copies`). One MERGE, idempotent per (``app_id``,
        ``version``).
        """
        if parsed.partial and (parsed.rows is not None or not parsed.frame.where("__partial").isEmpty()):
            raise CdcError(
                f"{schema.qualified_name} has no primary or NOT NULL unique key, and the log left columns out of "
                "its row images (LOB or extended columns), so a changed row cannot be matched whole",
                f"set tables.{schema.qualified_name}.key_columns in the pipeline file to columns that identify a "
                "row, then re-snapshot the table: "
                f"{command('snapshot', '--tables', table_regex(schema.qualified_name), '--force')}", permanent=True)
        from pyspark import StorageLevel

        soft = self.options.soft
        names = schema.column_names
        cols = names + META_COLUMNS
        changes = self.counted_images(parsed.frame, schema).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            removed = changes.where("__n < 0").select("__h", *[quote(n) for n in names]).distinct()
            same = [F.col("c.__h") == F.col("x.__h")] + [F.col(f"c.{quote(n)}").eqNullSafe(F.col(f"x.{quote(n)}"))
                                                        for n in names]
            inserts = (changes.where("__n > 0").alias("c").join(removed.alias("x"), same, "left_anti")
                       .select(*[quote(c) for c in cols]))
            current = self.spark.read.format("delta").load(path)
            if soft:
                current = current.where(f"NOT `{META_DELETED}`")
            have = (current.select(*[quote(c) for c in cols]).withColumn("__h", _row_hash(names))
                    .withColumn("__n", F.lit(0)).alias("c").join(removed.alias("x"), same, "left_semi"))
            touched = changes.alias("c").join(removed.alias("x"), same, "left_semi")
            survivors = surviving_copies(have.unionByName(touched).drop("__h"), names, cols)
            source = (inserts.unionByName(survivors).withColumn("__h", F.lit(None).cast("bigint"))
                      .withColumn("__action", F.lit("i"))
                      .unionByName(removed.withColumn("__action", F.lit("d")), allowMissingColumns=True))
            if soft:  # a delete leaves a tombstone per removed copy
                tomb = changes.where(f"__n < 0 AND `{META_OP}` = 'd'").select(*[quote(c) for c in cols])
                source = source.unionByName(tomb.withColumn("__h", F.lit(None).cast("bigint"))
                                            .withColumn("__action", F.lit("t")))
            if self.type2.enabled:
                self.type2.record_keyless(path, changes, cols, app_id, version)
            view = f"cdclake_bag_{abs(hash((path, version)))}"
            source.createOrReplaceTempView(view)
            t_hash = f"xxhash64({', '.join('t.' + quote(n) for n in names)})"
            on = " AND ".join(["s.`__action` = 'd'", f"{t_hash} = s.`__h`",
                               *[f"t.{quote(n)} <=> s.{quote(n)}" for n in names]])
            ins_cols = ", ".join(quote(c) for c in cols)
            ins_vals = ", ".join(f"s.{quote(c)}" for c in cols)
            if soft:
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

    def replace(self, path: str, schema: TableSchema, canonical: DataFrame, seq: int, position: str,
                where: str | None, later: DataFrame, app_id: str) -> None:
        """Replace the rows matching ``where`` of a table without a row key with rows re-read at
        ``seq``, plus what the applied changes after ``seq`` (``later``: bronze rows up to the table's
        position) added to or took from that range. The caller has the pipeline lock and mining past
        ``seq``; one idempotent MERGE."""
        opts = self.options
        schema = opts.lake_schema(schema)
        cols = schema.column_names + META_COLUMNS
        read = self.decoder.read_rows(schema, canonical, seq, position).withColumn("__n", F.lit(0))
        parsed = self.decoder.decoded(later, schema, [])
        truncate = parsed.where("op = 't'").agg(F.max("seq")).first()[0]
        if truncate is not None:  # the re-read rows and the changes before the truncate are gone
            read = read.limit(0)
            parsed = parsed.where(f"seq > {truncate}")
        changes = self.counted_images(parsed, schema)
        if where:
            changes = changes.where(where)
        desired = surviving_copies(read.unionByName(changes.drop("__h")), schema.column_names, cols)
        # One MERGE that matches nothing: every desired row is inserted, every live target row of the
        # range deleted (a plain overwrite is refused on column-mapped tables with a change data feed).
        in_range = [f"({where})"] if where else []
        if opts.soft:
            in_range.append(f"NOT t.`{META_DELETED}`")
        ins_cols = ", ".join(quote(c) for c in cols) + (f", `{META_DELETED}`" if opts.soft else "")
        # source columns renamed: the range filter names the target's columns unqualified
        ins_vals = ", ".join(f"s.`__s{i}`" for i in range(len(cols))) + (", false" if opts.soft else "")
        view = f"cdclake_bag_reread_{abs(hash((path, app_id)))}"
        desired.toDF(*[f"__s{i}" for i in range(len(cols))]).createOrReplaceTempView(view)
        cond = f" AND {' AND '.join(in_range)}" if in_range else ""
        with idempotent_write(self.spark, app_id, 1):
            self.spark.sql(f"MERGE INTO {delta_ref(path)} t USING {view} s ON false "
                           f"WHEN NOT MATCHED THEN INSERT ({ins_cols}) VALUES ({ins_vals}) "
                           f"WHEN NOT MATCHED BY SOURCE{cond} THEN DELETE")
        self.spark.catalog.dropTempView(view)

    def counted_images(self, parsed: DataFrame, schema: TableSchema) -> DataFrame:
        """Decoded changes (:meth:`.changes.ChangeDecoder.decoded`) as row copies counted ``__n``: +1 per
        after image, -1 per before image, typed, with their ``__*`` metadata and ``__h`` (a hash of the row)."""
        ev = parsed.select("op", "seq", "position", "txid", "commit_ts", "window_id", "b", "a")
        types = self.options.types

        def image(where: str, img: str, sign: int) -> DataFrame:
            return ev.where(where).selectExpr(*typed_select(types, schema, img), *BRONZE_TO_META, f"{sign} AS `__n`")

        return (image("op IN ('c', 'u', 'r') AND a IS NOT NULL", "a", 1)
                .unionByName(image("op IN ('u', 'd') AND b IS NOT NULL", "b", -1))
                .withColumn("__h", _row_hash(schema.column_names)))


def _row_hash(names: list[str]) -> SparkColumn:
    return F.xxhash64(*[F.col(quote(n)) for n in names])


def surviving_copies(rows: DataFrame, names: list[str], cols: list[str]) -> DataFrame:
    """Copies of each distinct row left after counted changes: ``rows`` has the copies there were
    (``__n = 0``) and the changes to them (``__n`` +1 or -1); there are as many left as were there
    plus added minus removed, and the newest of those there or added (by ``__seq``) keep their metadata."""
    per_row = Window.partitionBy(*[F.col(quote(n)) for n in names])
    newest = per_row.orderBy(F.col(META_SEQ).desc(), F.col(META_POSITION).desc())
    return (rows.withColumn("__keep", F.count(F.when(F.col("__n") == 0, 1)).over(per_row) + F.sum("__n").over(per_row))
            .where("__n >= 0").withColumn("__rank", F.row_number().over(newest))
            .where("__rank <= __keep").select(*[quote(c) for c in cols]))
