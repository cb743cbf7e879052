"""Writes of a target's rows wholesale, not change by change: a snapshot's rows, a truncate, and the
rows a renamed table takes from the name it had."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.engine.events import META_DELETED, META_OP, META_SEQ
from cdclake.engine.lake import commit_metric, delta_ref, idempotent_write, is_delta_table, quote, table_version
from cdclake.engine.target.rewrite import last_commit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.engine.target.changes import ChangeDecoder
    from cdclake.engine.target.options import TargetOptions
    from cdclake.engine.target.shape import TableShapes
    from cdclake.engine.target.type2 import Type2Tables
    from cdclake.schema import TableSchema


class BulkWrites:
    def __init__(self, options: TargetOptions, decoder: ChangeDecoder, shapes: TableShapes,
                 type2: Type2Tables) -> None:
        self.options = options
        self.spark = options.spark
        self.decoder = decoder
        self.shapes = shapes
        self.type2 = type2

    def write_snapshot(self, path: str, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> int:
        """Replace the target with snapshot rows (``__op = 'r'``, all at the snapshot sequence); the number of
        rows written (from the commit's metrics: the rows are not read again to count them). The type-2
        table's open versions are the caller's to close first (:meth:`.type2.Type2Tables.close`)."""
        schema = self.options.lake_schema(schema)
        self.shapes.create(path, schema, replace=True)
        typed = self.decoder.read_rows(schema, canonical, seq, position)
        if self.options.soft:
            typed = typed.selectExpr("*", f"false AS `{META_DELETED}`")
        typed.write.format("delta").mode("append").save(path)
        written = table_version(self.spark, path)
        rows = None if written is None else commit_metric(self.spark, path, written[1], "numOutputRows")
        if rows is None:  # a commit without metrics (e.g. written with them off)
            rows = self.spark.read.format("delta").load(path).count()
        self.type2.start(path)
        return rows

    def truncate(self, path: str, seq: int, app_id: str, version: int) -> None:
        """Remove every row older than the truncate (newer ones came after it in the log)."""
        self.type2.close(path, seq)
        with idempotent_write(self.spark, app_id, version):
            if self.options.soft:
                self.spark.sql(
                    f"UPDATE {delta_ref(path)} SET `{META_DELETED}` = true, `{META_OP}` = 't', "
                    f"`{META_SEQ}` = {seq} WHERE `{META_SEQ}` < {seq}"
                )
            else:
                self.spark.sql(f"DELETE FROM {delta_ref(path)} WHERE `{META_SEQ}` < {seq}")

    def version(self, path: str) -> int | None:
        """The table's current Delta version (None: no table there)."""
        return last_commit(self.spark, path)[0] if is_delta_table(self.spark, path) else None

    def insert_version(self, source_path: str, version: int, dest_path: str) -> None:
        """Append every row of ``source_path`` as of ``version`` to ``dest_path`` (the columns both have): a
        table renamed onto another name takes its rows, read as they stood when the rename came."""
        src = self.spark.read.format("delta").option("versionAsOf", version).load(source_path)
        dest_cols = self.spark.read.format("delta").load(dest_path).columns
        cols = [c for c in dest_cols if c in set(src.columns)]
        src.select(*[quote(c) for c in cols]).write.format("delta").mode("append").save(dest_path)
