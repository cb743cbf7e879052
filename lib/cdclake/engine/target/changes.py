"""Bronze change rows decoded for the targets: the images (``before``/``after`` JSON) as typed structs,
rows a read wrote (snapshot, backfill) as target rows, and the checks that no bad image is merged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdclake.engine.events import META_COMMIT_TS, META_OP, META_POSITION, META_SEQ, META_TXID, META_WINDOW
from cdclake.engine.lake import quote, sql_str
from cdclake.engine.names import SOURCE_NAME, source_name
from cdclake.spi import UNAVAILABLE_KEY

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame

    from cdclake.engine.target.options import TargetOptions
    from cdclake.schema import Column, TableSchema
    from cdclake.spi import TypeMapper

META_COLUMNS = [META_OP, META_SEQ, META_POSITION, META_TXID, META_COMMIT_TS, META_WINDOW]
# bronze column -> the target's metadata column it becomes
BRONZE_META_PAIRS = [("op", META_OP), ("seq", META_SEQ), ("position", META_POSITION), ("txid", META_TXID),
                     ("commit_ts", META_COMMIT_TS), ("window_id", META_WINDOW)]
BRONZE_TO_META = [f"{col} AS `{meta}`" for col, meta in BRONZE_META_PAIRS]
UNDECODABLE_MARK = "cdclake: a change image does not decode"  # raised inside a MERGE; see ChangeDecoder.parse


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

    Top-level canonical columns are those the source read: named by source names (:func:`..names.source_name`);
    a decoded image's fields have the Delta names already (:func:`_decoded`)."""
    out = []
    for c in schema.columns:
        ref = f"{struct}.{quote(c.name)}" if struct else quote(source_name(c))
        out.append(f"{types.to_delta_sql(c, ref)} AS {quote(c.name)}")
    return out


def read_meta(op: str, seq: int, position: str) -> list[str]:
    """The ``__*`` columns of a row a read at ``seq`` wrote (snapshot, backfill): no transaction, no window."""
    return [f"'{op}' AS `{META_OP}`", f"CAST({seq} AS DECIMAL(38,0)) AS `{META_SEQ}`",
            f"'{sql_str(position)}' AS `{META_POSITION}`", f"CAST(NULL AS STRING) AS `{META_TXID}`",
            f"current_timestamp() AS `{META_COMMIT_TS}`", f"CAST(NULL AS BIGINT) AS `{META_WINDOW}`"]


@dataclass
class ParsedChanges:
    """A change batch with its images decoded (``b``, ``a``).

    ``frame`` stops any job that meets an undecodable image (``UNDECODABLE_MARK``), so nothing of it is
    committed; ``decoded`` is the same rows unguarded (dead letters); ``partial``: some image may list
    columns under __unavailable. ``rows``/``undecodable`` are counts when :meth:`ChangeDecoder.parse`
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


class ChangeDecoder:
    """Decodes bronze change rows (op, seq, position, txid, commit_ts, window_id, before, after) with a
    table's schema, and turns rows a read wrote into target rows."""

    def __init__(self, options: TargetOptions) -> None:
        self.options = options
        self.types = options.types

    def may_be_partial(self, image_json: SparkColumn) -> SparkColumn:
        """Whether a raw JSON image may list unavailable columns: never false when it does (a textual
        test for the key, without decoding; a value cannot hold it unescaped)."""
        if not self.options.images_may_omit_columns:
            return F.lit(False)
        # a quote inside a JSON string is escaped, so the quoted name only ever appears as a key
        return image_json.contains(f'"{UNAVAILABLE_KEY}"')

    def read_rows(self, schema: TableSchema, canonical: DataFrame, seq: int, position: str) -> DataFrame:
        """Rows read from the source (canonical columns) as target rows: ``__op = 'r'`` at ``seq``."""
        return canonical.selectExpr(*typed_select(self.types, schema), *read_meta("r", seq, position))

    def parse(self, events: DataFrame, schema: TableSchema, key_columns: list[str],
              measure: bool = True, partial: bool | None = None) -> ParsedChanges:
        """Decode a batch's images. ``measure``: count rows, undecodable rows and partial images first
        (one Spark job; the decoded rows are kept in memory/disk for the MERGE). Without it no job runs
        here: the caller knows the batch has rows (and, if the source's images may omit columns, whether
        any does: ``partial``), and the MERGE's source fails on an undecodable image instead
        (:func:`is_undecodable_error`), before anything commits."""
        from pyspark import StorageLevel

        opts = self.options
        schema = opts.lake_schema(schema)
        key_columns = opts.lake_keys(schema, key_columns)
        # A hard delete and a key change take only the key from the before image: the rest is not decoded
        # (soft deletes and type-2 tables keep the whole deleted row).
        decoded = self.decoded(events, schema, key_columns,
                               before_keys_only=bool(key_columns) and not opts.soft and not opts.type2_tables)
        if not measure:
            # every use of an image of a bad row fails (a filter could be ordered after others that drop it)
            images = [f"CASE WHEN `__bad` THEN raise_error('{UNDECODABLE_MARK}') ELSE {i} END AS {i}" for i in "ba"]
            guarded = decoded.selectExpr(*[quote(c) for c in decoded.columns if c not in ("a", "b")], *images)
            return ParsedChanges(guarded, schema.qualified_name, None, None,
                                 bool(opts.images_may_omit_columns and partial), decoded)
        frame = decoded.persist(StorageLevel.MEMORY_AND_DISK)
        stats = frame.agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("__bad").cast("int")).alias("bad"),
                          F.max(F.col("__partial").cast("int")).alias("partial")).first()
        return ParsedChanges(frame, schema.qualified_name, int(stats.n), int(stats.bad or 0), bool(stats.partial),
                             frame, cached=True)

    def decoded(self, events: DataFrame, schema: TableSchema, key_columns: list[str],
                before_keys_only: bool = False) -> DataFrame:
        """The images decoded (``b``, ``a``) with ``__bad`` (does not decode, or a null key) and
        ``__partial`` (the after image lists unavailable columns). ``schema`` is a lake schema and
        ``key_columns`` its Delta columns; ``before_keys_only``: ``b`` holds the key columns only (so only
        they are checked)."""
        omit = self.options.images_may_omit_columns
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
        schema = self.options.lake_schema(schema)
        key_columns = self.options.lake_keys(schema, key_columns)
        frame = (events.decoded or events.frame) if isinstance(events, ParsedChanges) else self.decoded(
            events, schema, key_columns)
        return frame.where("__bad").selectExpr(
            "window_id", "source_table", "seq", "position", "op",
            f"'images do not decode with schema of {sql_str(schema.qualified_name)} (or key is null)' AS reason",
            "before", "after", "current_timestamp() AS recorded_at",
        )

    def removed_keys(self, events: DataFrame, schema: TableSchema, key_columns: list[str]) -> DataFrame:
        """Keys that bronze change rows take away: deletes, and the old key of key-changing updates."""
        schema = self.options.lake_schema(schema)
        key_columns = self.options.lake_keys(schema, key_columns)
        moved = " OR ".join(f"NOT (a.{quote(k)} <=> b.{quote(k)})" for k in key_columns)
        return self.decoded(events, schema, key_columns, before_keys_only=True).where(
            f"op = 'd' OR (op = 'u' AND b IS NOT NULL AND ({moved}))").selectExpr(
            *[f"b.{quote(k)} AS {quote(k)}" for k in key_columns])
