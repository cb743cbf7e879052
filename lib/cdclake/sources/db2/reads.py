"""Spark's JDBC reads of a Db2 window and of a snapshot, and the window's assembly into committed changes.

A window ``(lo, hi]`` of commit sequences is read as plain relational rows: each captured table's CD rows in
that range, split into reads of about ``mining.max_rows_per_read`` rows by commit-sequence sub-ranges (each a
Spark task), and the range's ``IBMSNAP_UOW`` rows (commit time, unit-of-work id, and the commit clock). Then,
all in Spark, with no row passing through the driver:

* an update's ``D`` + ``I`` pair (adjacent in ``IBMSNAP_INTENTSEQ`` order within one table's commit: Capture
  writes them so when ``CHG_UPD_TO_DEL_INS = 'Y'``) becomes one ``u`` change with both images; a pair whose
  keys differ is a key change, which the MERGE turns into a delete and an insert; a ``U`` row (a registration
  with ``CHG_UPD_TO_DEL_INS = 'N'``) is an update with its after image only;
* every commit gets its number in the commit clock (:mod:`cdclake.sources.db2.position`): the newest anchor at
  or below it plus its rank among the UOW rows after that anchor;
* ``seq`` = commit number × ``SEQ_SPAN`` + the change's rank in its transaction by (table, intent sequence):
  a table's changes keep their order, and one sort per commit serves pairing and numbering.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdclake.errors import CdcError
from cdclake.kit import read_jdbc
from cdclake.schema import Column, TableSchema
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.catalog import Registration
from cdclake.sources.db2.config import Db2SourceConfig
from cdclake.sources.db2.position import CommitSeqPosition, show
from cdclake.sources.db2.types import Db2TypeMapper, quote_identifier
from cdclake.spi import SEQ_SPAN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MISSING_UOW = "CDCLAKE_DB2_MISSING_UOW"


def _sql_str(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def jdbc_properties(config: Db2SourceConfig, custom_schema: str | None = None) -> dict[str, str]:
    """The JDBC properties of Spark's reads (driver, credentials, fetch size, ``customSchema``)."""
    props = {"driver": config.jdbc_driver, "user": config.user, "password": config.password.get_secret_value(),
             "fetchsize": str(config.snapshot.fetch_size), **config.jdbc_options}
    if custom_schema:
        props["customSchema"] = custom_schema
    return props


def split_range(lo: str, hi: str, parts: int) -> list[tuple[str, str]]:
    """``(lo, hi]`` (32-hex-digit sequences) cut into ``parts`` ranges of equal numeric width.

    >>> split_range("0" * 32, "0" * 31 + "a", 2)
    [('00000000000000000000000000000000', '00000000000000000000000000000005'), \
('00000000000000000000000000000005', '0000000000000000000000000000000a')]
    """
    a, b = int(lo, 16), int(hi, 16)
    parts = max(1, min(parts, b - a))
    cuts = [a + (b - a) * i // parts for i in range(parts + 1)]
    return [(f"{x:032x}", f"{y:032x}") for x, y in zip(cuts, cuts[1:], strict=False) if y > x]


@dataclass(frozen=True)
class TableRead:
    """One captured table's part of a window: its registration, its schema and version, its CD row count."""

    table: str
    registration: Registration
    schema: TableSchema
    version: int
    rows: int
    floor: int | None  # commits numbered at or below it are in the lake already (the table's snapshot)
    lo: str = ""  # the commit-sequence range read with this schema, (lo, hi]; empty: the window's
    hi: str = ""
    #: the CD table's columns now, when it no longer has every column of ``schema`` (a column dropped later):
    #: those read as NULL
    present: frozenset[str] | None = None


def cd_rows(spark: SparkSession, config: Db2SourceConfig, types: Db2TypeMapper, read: TableRead,
            lo: str, hi: str) -> DataFrame:
    """``read``'s CD rows of ``(lo, hi]``: ``source_table, schema_version, commitseq, intentseq, operation,
    image`` (the canonical row as JSON), split into ranges of about ``mining.max_rows_per_read`` rows."""
    from pyspark.sql import functions as F

    reg, schema = read.registration, read.schema
    def column_sql(c: Column) -> str:
        cd_name = c.attrs.get("cd_name") or c.name
        if read.present is not None and cd_name not in read.present:
            return "CAST(NULL AS VARCHAR(1))"
        return types.read_sql(c, cd_name)

    cols = "".join(f", {column_sql(c)} AS {quote_identifier(c.name)}" for c in schema.columns)
    parts = min(config.mining.max_reads_per_table, max(1, -(-read.rows // config.mining.max_rows_per_read)))
    custom = ", ".join(["CDCLAKE_SEQ BINARY", "CDCLAKE_COMMITSEQ STRING", "CDCLAKE_INTENTSEQ STRING",
                        "CDCLAKE_OPERATION STRING"] + [f"`{c.name}` {types.read_type(c)}" for c in schema.columns])
    lo, hi = read.lo or lo, read.hi or hi
    sql = Q.CD_READ.format(columns=cols, cd=reg.cd_sql, lo=lo.upper(), hi=hi.upper())
    ranges = [Q.SEQ_RANGE.format(lo=a.upper(), hi=b.upper()) for a, b in split_range(lo, hi, parts)]
    frame = read_jdbc(spark, config.spark_jdbc_url(), sql, jdbc_properties(config, custom),
                      predicates=ranges).drop("CDCLAKE_SEQ")
    image = F.to_json(F.struct(*[F.expr(types.canonical_sql(c, f"`{c.name}`")).alias(c.name)
                                 for c in schema.columns]), {"ignoreNullFields": "false"})
    return frame.select(
        F.lit(read.table).alias("source_table"), F.lit(read.version).cast("bigint").alias("schema_version"),
        F.lower("CDCLAKE_COMMITSEQ").alias("commitseq"), F.lower("CDCLAKE_INTENTSEQ").alias("intentseq"),
        F.col("CDCLAKE_OPERATION").alias("operation"), image.alias("image"))


def uow_rows(spark: SparkSession, config: Db2SourceConfig, lo: str, hi: str) -> DataFrame:
    from pyspark.sql import functions as F

    sql = Q.UOW_READ.format(cs=config.control_schema, lo=lo.upper(), hi=hi.upper())
    custom = "CDCLAKE_COMMITSEQ STRING, CDCLAKE_UOWID STRING, CDCLAKE_LOGMARKER STRING"
    frame = read_jdbc(spark, config.spark_jdbc_url(), sql, jdbc_properties(config, custom))
    ts = "CDCLAKE_LOGMARKER"
    iso = f"concat(substr({ts}, 1, 10), ' ', translate(substr({ts}, 12, 8), '.', ':'), substr({ts}, 20))"
    return frame.select(F.lower("CDCLAKE_COMMITSEQ").alias("commitseq"), F.lower("CDCLAKE_UOWID").alias("uowid"),
                        F.expr(f"CAST({iso} AS TIMESTAMP)").alias("commit_ts"))


def numbered(uow: DataFrame, anchors: list[CommitSeqPosition]) -> DataFrame:
    """``uow`` with each commit's ``clock``: its newest anchor's clock plus its rank after that anchor."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ordered = sorted({(a.commitseq, a.clock) for a in anchors})
    case = "CASE " + " ".join(f"WHEN commitseq > '{s}' THEN {i}" for i, (s, _) in reversed(list(enumerate(ordered))))
    base = "CASE " + " ".join(f"WHEN anchor = {i} THEN CAST({c} AS BIGINT)" for i, (_, c) in enumerate(ordered))
    with_anchor = uow.withColumn("anchor", F.expr(case + " END"))
    rank = F.row_number().over(Window.partitionBy("anchor").orderBy("commitseq"))
    return with_anchor.withColumn("clock", F.expr(base + " END") + rank).drop("anchor")


def assemble(changes: DataFrame, uow: DataFrame, floors: Mapping[str, int]) -> DataFrame:
    """CD rows (:func:`cd_rows`) of a window, with its numbered UOW rows, into committed changes with the
    bronze columns (``source_table, op, seq, position, txid, commit_ts, schema_version, before, after``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # Every step below is per commit: one shuffle by commitseq serves the pairing, the UOW join and the numbering.
    # A table's rows of a commit are adjacent when ordered by (table, intent sequence); a pair is a D row and
    # the next row of the same table, an I.
    in_commit = Window.partitionBy("commitseq").orderBy("source_table", "intentseq")
    same_prev = F.lag("source_table").over(in_commit) == F.col("source_table")
    same_next = F.lead("source_table").over(in_commit) == F.col("source_table")
    # the change's number in its commit (gaps where a pair's I row goes): orders a table's changes, one sort
    paired = (changes.withColumn("prev_op", F.when(same_prev, F.lag("operation").over(in_commit)))
              .withColumn("next_op", F.when(same_next, F.lead("operation").over(in_commit)))
              .withColumn("next_image", F.when(same_next, F.lead("image").over(in_commit)))
              .withColumn("in_commit", F.row_number().over(in_commit)))
    events = paired.where("NOT (operation = 'I' AND prev_op <=> 'D')").selectExpr(
        "source_table", "schema_version", "commitseq", "intentseq", "in_commit",
        "CASE WHEN operation = 'D' AND next_op <=> 'I' THEN 'u' WHEN operation = 'D' THEN 'd' "
        "WHEN operation = 'I' THEN 'c' WHEN operation = 'U' THEN 'u' END AS op",
        "CASE WHEN operation = 'D' THEN image END AS before",
        "CASE WHEN operation = 'D' AND next_op <=> 'I' THEN next_image WHEN operation IN ('I', 'U') THEN image "
        "END AS after")
    joined = events.join(uow, "commitseq", "left")
    guarded = joined.withColumn("clock", F.expr(
        f"CASE WHEN clock IS NULL THEN raise_error(concat('{MISSING_UOW} ', commitseq)) ELSE clock END"))
    if floors:
        keep = " ".join(f"WHEN source_table = '{_sql_str(t)}' THEN clock > {f}" for t, f in floors.items())
        guarded = guarded.where(f"CASE {keep} ELSE true END")
    return guarded.select(
        "source_table", "op",
        (F.col("clock").cast("decimal(38,0)") * F.lit(SEQ_SPAN).cast("decimal(38,0)")
         + F.col("in_commit").cast("decimal(38,0)")).cast("decimal(38,0)").alias("seq"),
        F.concat(F.substring("commitseq", 1, 8), F.lit(":"), F.substring("commitseq", 9, 8), F.lit(":"),
                 F.substring("commitseq", 17, 16)).alias("position"),
        F.col("uowid").alias("txid"), "commit_ts", "schema_version", "before", "after")


def explain_missing_uow(exc: BaseException, control_schema: str) -> CdcError | None:
    text = str(exc)
    if MISSING_UOW not in text:
        return None
    seq = text.split(MISSING_UOW, 1)[1].strip().split()[0][:32]
    return CdcError(f"a CD row of commit sequence {show(seq)} has no {control_schema}.IBMSNAP_UOW row: its commit "
                    "cannot be placed in commit order",
                    f"check that Capture writes {control_schema}.IBMSNAP_UOW and that it is not pruned before the CD "
                    "tables; then mine again", permanent=True)
