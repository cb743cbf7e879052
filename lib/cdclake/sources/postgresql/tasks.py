"""A large window decoded in Spark tasks instead of on the driver (``mining.decoder``).

A slot has one reader at a time, so the window's read cannot be split; its decoding can:

1. **Stage.** One Spark JDBC read runs the window's ``pg_logical_slot_peek_binary_changes`` (the same bound,
   options and session settings as the driver's read) and writes the messages to the staging folder in their
   order (``ord``). Commit messages are parsed there, in Spark SQL.
2. **Schemas, on the driver.** Only the Relation and Truncate messages (a few per table) are collected: the
   :class:`~.decoder.ChangeDecoder` turns them into the window's schema-history entries, exactly as on the driver
   path, and notes, per relation, from which message on which columns and schema version decode its rows.
3. **Rows, in tasks.** The Insert/Update/Delete messages, spread over ``mining.target_splits`` tasks, are decoded
   (:func:`decode_rows`) with the columns in force at their place; each change then takes its transaction's
   commit (position, time) by its ``xid`` and is numbered in it, as the driver's assembler numbers it.

The result is the same bronze rows as the driver path (a test mines one window both ways), handed to the engine
as a :class:`~cdclake.spi.source.CommittedWindow`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import CdcError
from cdclake.kit import read_jdbc
from cdclake.sources.postgresql.decoder import ChangeDecoder, row_images
from cdclake.sources.postgresql.pgoutput import PG_EPOCH, Delete, Insert, Relation, Truncate, Update, decode
from cdclake.sources.postgresql.snapshot import session_settings_sql
from cdclake.spi import SEQ_SPAN
from cdclake.spi.logrows import UNAVAILABLE_KEY
from cdclake.spi.records import Ddl, RowChange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: the window's messages, as the driver's read asks for them (:data:`.stream.PEEK`), with each one's transaction
PEEK_ROWS = (
    "SELECT xid::text AS xid, data FROM pg_logical_slot_peek_binary_changes('{slot}', '{upto}'::pg_lsn, {limit}, "
    "'proto_version', '1', 'publication_names', '{publication}', 'messages', 'true')"
)
#: what the row decoder gives for each Insert/Update/Delete message of a captured table
ROWS_DDL = ("ord BIGINT, xid STRING, source_table STRING, op STRING, before STRING, after STRING, "
            "schema_version BIGINT")
_EPOCH_US = int((PG_EPOCH - PG_EPOCH.replace(year=1970)).total_seconds()) * 1_000_000


def _int64(data: str, offset: int) -> str:
    """Spark SQL: the big-endian 64-bit integer at byte ``offset`` (1-based) of binary column ``data``."""
    return f"CAST(conv(hex(substring({data}, {offset}, 8)), 16, 10) AS BIGINT)"


@dataclass
class StagedWindow:
    """The window's messages in the staging folder, and what their read says of the window."""

    messages: int
    commits: int
    last_end: int | None  # the end LSN of the window's last commit
    path: str


def stage(spark: SparkSession, url: str, properties: dict[str, str], slot: str, publication: str, upto: str,
          limit: int | None, path: str) -> StagedWindow:
    """Read the window's messages once (one JDBC read, in order) into ``path``; count them and its commits."""
    from pyspark.sql import functions as F

    sql = PEEK_ROWS.format(slot=slot, upto=upto, limit="NULL" if limit is None else int(limit),
                           publication=publication)
    props = {**properties, "sessionInitStatement": session_settings_sql()}
    raw = read_jdbc(spark, url, f"({sql}) cdclake_peek", props)
    kind = "CAST(substring(data, 1, 1) AS STRING)"
    # Begin/Commit: B final_lsn ts xid / C flags commit_lsn end_lsn ts; a commit's fields parsed here
    (raw.select(F.monotonically_increasing_id().alias("ord"), "xid", F.expr(kind).alias("kind"), "data")
        .selectExpr("ord", "xid", "kind",
                    f"CASE WHEN kind = 'C' THEN {_int64('data', 3)} END AS commit_lsn",
                    f"CASE WHEN kind = 'C' THEN {_int64('data', 11)} END AS end_lsn",
                    f"CASE WHEN kind = 'C' THEN {_int64('data', 19)} END AS commit_us",
                    "CASE WHEN kind IN ('B', 'C') THEN NULL ELSE data END AS data")
        .write.mode("overwrite").parquet(path))
    stats = spark.read.parquet(path).agg(
        F.count(F.lit(1)).alias("n"), F.sum((F.col("kind") == "C").cast("long")).alias("c"),
        F.max("end_lsn").alias("last")).first()
    return StagedWindow(int(stats.n), int(stats.c or 0), None if stats["last"] is None else int(stats["last"]), path)


Forms = dict[int, list[tuple[int, tuple[str, list[str], int] | None]]]


@dataclass
class WindowSchemas:
    """What the driver made of the window's Relation and Truncate messages (:func:`schema_records`)."""

    ddl: list[Ddl]
    truncates: list[tuple[int, RowChange]]  # (ord, its change)
    forms: Forms  # relation id -> [(ord, how its rows decode from there on: ChangeDecoder.row_form)]


def schema_records(spark: SparkSession, staged: StagedWindow, decoder: ChangeDecoder) -> WindowSchemas:
    """The window's Relation and Truncate messages through ``decoder``, in order (only they are collected)."""
    from pyspark.sql import functions as F

    rows = spark.read.parquet(staged.path)
    controls = rows.where("kind IN ('R', 'T')").select("ord", "xid", "data").collect()
    xids = sorted({r.xid for r in controls})
    commits = {} if not xids else {
        r.xid: int(r.commit_lsn)
        for r in rows.where(F.col("kind") == "C").where(F.col("xid").isin(xids)).select("xid", "commit_lsn").collect()}
    out = WindowSchemas([], [], {})
    for r in sorted(controls, key=lambda r: r.ord):
        message = decode(bytes(r.data))
        if r.xid not in commits:
            raise CdcError(f"a {type(message).__name__} message of transaction {r.xid} has no commit in the window "
                           "read", "this is a bug: report it with the window's staged folder; mining.decoder: driver "
                           "avoids it", permanent=True)
        assert isinstance(message, (Relation, Truncate))
        for record in decoder.control(r.xid, commits[r.xid], message):
            if isinstance(record, Ddl):
                out.ddl.append(record)
            else:
                assert isinstance(record, RowChange)
                out.truncates.append((int(r.ord), record))
        if isinstance(message, Relation):
            out.forms.setdefault(message.relid, []).append((int(r.ord), decoder.row_form(message.relid)))
    return out


def decode_rows(batches: Iterator[Any], forms: Forms) -> Iterator[Any]:
    """``mapInArrow`` body: messages (``ord``, ``xid``, ``data``) -> rows of :data:`ROWS_DDL`."""
    import pyarrow as pa

    starts = {relid: [o for o, _ in entries] for relid, entries in forms.items()}
    schema = pa.schema([("ord", pa.int64()), ("xid", pa.string()), ("source_table", pa.string()),
                        ("op", pa.string()), ("before", pa.string()), ("after", pa.string()),
                        ("schema_version", pa.int64())])
    for batch in batches:
        cols = batch.to_pydict()
        out: dict[str, list[Any]] = {name: [] for name in schema.names}
        for ord_, xid, data in zip(cols["ord"], cols["xid"], cols["data"], strict=True):
            message = decode(data)
            assert isinstance(message, (Insert, Update, Delete))
            at = bisect.bisect_left(starts.get(message.relid, []), ord_) - 1
            form = forms[message.relid][at][1] if at >= 0 else None
            if form is None:  # not captured (or no Relation before it: none is possible)
                continue
            table, names, version = form
            op, before, after = row_images(message, names)
            out["ord"].append(ord_)
            out["xid"].append(xid)
            out["source_table"].append(table)
            out["op"].append(op)
            out["before"].append(None if before is None else orjson.dumps(before).decode())
            out["after"].append(None if after is None else orjson.dumps(after).decode())
            out["schema_version"].append(version)
        yield pa.RecordBatch.from_pydict(out, schema=schema)


def changes(spark: SparkSession, staged: StagedWindow, schemas: WindowSchemas, floors: dict[str, int],
            tasks: int) -> DataFrame:
    """The window's committed changes with the bronze columns (but ``window_id``), sequenced as the driver's
    assembler sequences them (commit ordinal: the commit's end LSN; then the change's place in its transaction);
    changes at or below their table's floor left out. ``txid`` is null for a change whose commit is missing
    (:func:`committed_stats` refuses such a window)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.read.parquet(staged.path)
    forms = schemas.forms
    decoded = (rows.where("kind IN ('I', 'U', 'D')").select("ord", "xid", "data").repartition(max(1, tasks))
               .mapInArrow(lambda batches: decode_rows(batches, forms), ROWS_DDL))
    if schemas.truncates:
        decoded = decoded.unionByName(spark.createDataFrame(
            [(o, t.txid, t.table, "t", None, None, t.schema_version) for o, t in schemas.truncates], ROWS_DDL))
    commits = rows.where("kind = 'C'").select("xid", "end_lsn", "commit_us")
    joined = decoded.join(commits, "xid", "left")
    index = F.row_number().over(Window.partitionBy("xid").orderBy("ord"))
    floor = F.lit(-1)
    for table, value in floors.items():
        floor = F.when(F.col("source_table") == table, F.lit(value)).otherwise(floor)
    lsn = F.col("end_lsn")
    position = F.concat(F.lit("LSN "), F.hex(F.shiftright(lsn, 32)), F.lit("/"), F.hex(lsn.bitwiseAND(0xFFFFFFFF)))
    return (joined.withColumn("__index", index).where(lsn.isNull() | (lsn > floor)).select(
        "source_table", "op",
        (lsn.cast("decimal(38,0)") * F.lit(SEQ_SPAN).cast("decimal(38,0)") + F.col("__index")).cast(
            "decimal(38,0)").alias("seq"),
        position.alias("position"), F.when(lsn.isNotNull(), F.col("xid")).alias("txid"),
        F.timestamp_micros(F.col("commit_us") + F.lit(_EPOCH_US)).alias("commit_ts"),
        "schema_version", "before", "after"))


def committed_stats(spark: SparkSession, path: str | None) -> dict[str, Any]:
    """The counts the bronze marker keeps, of the staged changes at ``path`` (None: an empty window)."""
    from pyspark.sql import functions as F

    if path is None:
        return {"events": 0, "transactions": 0, "rolled_back": 0, "rows_by_table": {}, "truncates": 0,
                "partial": False}
    rows = spark.read.parquet(path)
    per_table = rows.groupBy("source_table").agg(
        F.count(F.lit(1)).alias("n"), F.sum((F.col("op") == "t").cast("long")).alias("t"),
        F.max(F.col("after").contains(f'"{UNAVAILABLE_KEY}"').cast("int")).alias("p"),
        F.sum(F.col("txid").isNull().cast("long")).alias("orphans")).collect()
    orphans = sum(int(r.orphans) for r in per_table)
    if orphans:
        raise CdcError(f"{orphans} row change(s) of the window have no commit in the window's read",
                       "this is a bug: report it with the window's staged folder; mining.decoder: driver avoids it",
                       permanent=True)
    transactions = rows.select(F.countDistinct("txid")).first()[0] if per_table else 0
    return {"events": sum(int(r.n) for r in per_table), "transactions": int(transactions), "rolled_back": 0,
            "rows_by_table": {r.source_table: int(r.n) for r in per_table},
            "truncates": sum(int(r.t or 0) for r in per_table), "partial": any(bool(r.p) for r in per_table)}

