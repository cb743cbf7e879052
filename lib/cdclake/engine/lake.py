"""Where things live in the lake, and the few Delta operations the engine repeats.

Layout under ``lake.root/<pipeline>/``::

    <database>__<table>/          one target table per source table (change data feed on; names.py:
                                  a hash is appended to an odd or ambiguous name)
    _cdclake/bronze/              raw change log, append-only
    _cdclake/checkpoints/         window and per-table positions
    _cdclake/schema_history/      every DDL with its position and resulting schema
    _cdclake/runs/                run log with metrics
    _cdclake/dead_letters/        events that could not be applied
    _cdclake/staging/window=N/    mined rows of a window before its bronze commit (log records: from its second flush)
    _cdclake/inflight/            changes of transactions still open at a window's end (frame sources)
    _cdclake/transactions/        every transaction that ended: committed, rolled back or abandoned
    _cdclake/quality/             data-quality results: one row per expectation checked (quality:)
    _cdclake/reconcile/           results of ``cdclake reconcile`` runs
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cdclake.engine.names import legacy_target_dir, target_dir
from cdclake.hadoopfs import hadoop_read_text, jvm_class
from cdclake.spark import session_conf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# ``lake.table_features``: which Delta table features targets (and their type-2 tables) are made with.
COMPATIBLE, SPARK = "compatible", "spark"

# No reader feature but timestampNtz (what delta-rs 1.x, and so Polars, DuckDB and pandas, open):
# pinned off, so a session default (spark.databricks.delta.properties.defaults.*, on by default on
# some platforms) cannot add one. Renames, drops and type changes rewrite the table instead.
READABLE_PROPERTIES = {
    "delta.columnMapping.mode": "none",
    "delta.enableTypeWidening": "false",
    "delta.enableDeletionVectors": "false",
    "delta.checkpointPolicy": "classic",
}
# Reader features a compatible table may have: delta-rs 1.x reads timestampNtz, and refuses
# columnMapping (as a table feature; with reader version 2 it opens the table but reads NULLs),
# typeWidening, deletionVectors, v2Checkpoint and vacuumProtocolCheck (measured with deltalake 1.6).
COMPATIBLE_READER_FEATURES = frozenset({"timestampNtz"})

TARGET_PROPERTIES = {  # the spark mode: metadata-only renames, drops and widenings; Spark (and Trino) read it
    "delta.enableChangeDataFeed": "true",
    # Renames and drops of columns need column mapping by name.
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
    "delta.enableTypeWidening": "true",
}
FEATURE_PROPERTIES = {
    COMPATIBLE: {"delta.enableChangeDataFeed": "true", **READABLE_PROPERTIES},
    SPARK: TARGET_PROPERTIES,
}
FEATURES_PROPERTY = "cdclake.tableFeatures"  # on the lake's checkpoints table: the mode the lake was made in


class LakeLayout:
    def __init__(self, lake_root: str, pipeline: str) -> None:
        self.root = f"{lake_root.rstrip('/')}/{pipeline}"
        self.pipeline = pipeline

    def target(self, source_table: str) -> str:
        """The target's directory: ``<database>__<table>``, with a hash of the source name appended only
        when a character had to be replaced or the plain form would be ambiguous (:func:`.names.target_dir`)."""
        database, _, table = source_table.partition(".")
        return f"{self.root}/{target_dir(database, table)}"

    def legacy_target(self, source_table: str) -> str | None:
        """The directory a lake made before :func:`.names.target_dir` kept the target in, if another."""
        database, _, table = source_table.partition(".")
        old = legacy_target_dir(database, table)
        return None if old is None else f"{self.root}/{old}"

    def type2(self, source_table: str) -> str:
        """The SCD type-2 table beside the target (``lake.history_tables``)."""
        return type2_path(self.target(source_table))

    @property
    def control(self) -> str:
        return f"{self.root}/_cdclake"

    @property
    def bronze(self) -> str:
        return f"{self.control}/bronze"

    @property
    def checkpoints(self) -> str:
        return f"{self.control}/checkpoints"

    @property
    def plans(self) -> str:
        """The open window's plan: a small JSON file, not a Delta commit (:meth:`ControlTables.plan_window`)."""
        return f"{self.control}/plans"

    @property
    def schema_history(self) -> str:
        return f"{self.control}/schema_history"

    @property
    def runs(self) -> str:
        return f"{self.control}/runs"

    @property
    def dead_letters(self) -> str:
        return f"{self.control}/dead_letters"

    @property
    def inflight(self) -> str:
        return f"{self.control}/inflight"

    @property
    def transactions(self) -> str:
        return f"{self.control}/transactions"

    @property
    def reconcile(self) -> str:
        """One row per table and ``cdclake reconcile`` run: counts and sample keys."""
        return f"{self.control}/reconcile"

    @property
    def quality(self) -> str:
        """One row per table, window and expectation checked by the data-quality gate."""
        return f"{self.control}/quality"

    def staging(self, window_id: int) -> str:
        return f"{self.control}/staging/window={window_id}"

    @property
    def lock(self) -> str:
        return f"{self.control}/lock"


def type2_path(target_path: str) -> str:
    """The SCD type-2 table beside a target (``lake.history_tables``): ``<target>__history``, a directory
    users read (in the code "history" is the schema history; see :mod:`.target.type2`)."""
    return target_path + "__history"


def delta_refusals() -> tuple[type[Exception], ...]:
    """The errors by which Delta refuses a table or a change to it (pyspark loads only once one happens)."""
    from pyspark.errors import AnalysisException, IllegalArgumentException, UnsupportedOperationException

    return (AnalysisException, IllegalArgumentException, UnsupportedOperationException)


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_str(text: str) -> str:
    """``text`` escaped for a single-quoted Spark SQL string literal.

    >>> print(sql_str("it's"))
    it\\'s
    """
    return text.replace("\\", "\\\\").replace("'", "\\'")


def delta_ref(path: str) -> str:
    return f"delta.{quote(path)}"


def is_delta_table(spark: SparkSession, path: str) -> bool:
    """``DeltaTable.isDeltaTable`` without its per-call class lookup through the gateway."""
    return bool(jvm_class(spark, "io.delta.tables.DeltaTable").isDeltaTable(spark._jsparkSession, path))  # noqa: SLF001


def ensure_table(spark: SparkSession, path: str, ddl: str, properties: dict[str, str] | None = None,
                 stats_columns: tuple[str, ...] = ()) -> None:
    """Create an empty Delta table at ``path`` if none is there (idempotent).

    Bronze and control tables, in every mode: no reader feature delta-rs lacks (``READABLE_PROPERTIES``).
    File statistics only on ``stats_columns`` (those that reads filter on): Delta collects min/max/nulls of
    the first 32 columns by default, which is most of the cost of a small append (measured: a one-row
    append 0.79 s with all 8 columns, 0.48 s with none; BENCHMARKS.md).
    """
    stats = ({"delta.dataSkippingStatsColumns": ",".join(stats_columns)} if stats_columns
             else {"delta.dataSkippingNumIndexedCols": "0"})
    merged = {**READABLE_PROPERTIES, **stats, **(properties or {})}
    props = " TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in merged.items()) + ")"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {delta_ref(path)} ({ddl}) USING delta{props}")


@contextlib.contextmanager
def idempotent_write(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """Delta idempotent DML/writes: a commit with an (app id, version) already recorded is skipped.

    Used for every data commit of a window so a re-run after a kill never applies it twice.
    """
    with session_conf(spark, {"spark.databricks.delta.write.txnAppId": app_id,
                              "spark.databricks.delta.write.txnVersion": str(version)}):
        yield


USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


@contextlib.contextmanager
def commit_tag(spark: SparkSession, **tag: Any) -> Iterator[None]:
    """Tag every Delta commit made inside with ``tag`` (JSON in the commit's ``userMetadata``).

    Target commits say what wrote them (``{"snapshot": true}``, ``{"window": 7}``, ``{"rebuild": id,
    "through": 9}``), so a rebuild can find the table version that stood before a given window
    (:func:`commit_tags`) without an extra commit per window.
    """
    outer = spark.conf.get(USER_METADATA_CONF, None)  # nested: the inner tag adds to the outer one
    try:
        prior = json.loads(outer) if outer else {}
    except ValueError:
        prior = {}
    merged = {**prior, **tag} if isinstance(prior, dict) else tag
    with session_conf(spark, {USER_METADATA_CONF: json.dumps(merged, sort_keys=True)}):
        yield


def commit_tags(spark: SparkSession, path: str) -> list[tuple[int, str, dict[str, Any] | None]]:
    """``(version, operation, tag)`` of every commit still in the table's log, oldest first."""
    out: list[tuple[int, str, dict[str, Any] | None]] = []
    for r in spark.sql(f"DESCRIBE HISTORY {delta_ref(path)}").select("version", "operation", "userMetadata").collect():
        tag = None
        if r.userMetadata:
            try:
                tag = json.loads(r.userMetadata)
            except ValueError:
                tag = None  # someone else's metadata
        out.append((int(r.version), r.operation, tag if isinstance(tag, dict) else None))
    return sorted(out)


def set_field_metadata(spark: SparkSession, path: str,
                       change: Callable[[list[tuple[str, dict[str, Any]]]], dict[str, dict[str, Any]]]) -> bool:
    """Give top-level fields of the Delta table at ``path`` new field metadata, in one metadata-only commit
    (operation ``UPDATE SCHEMA``); ``change`` gets every field's ``(name, metadata)`` and returns the new
    metadata of those that change. No commit (False) when nothing changes. Delta's SQL cannot set a field's
    metadata (only a comment), hence the transaction API; a column mapping's own keys are kept as given."""
    log = jvm_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(spark._jsparkSession, path)  # noqa: SLF001
    txn = log.startTransaction()
    metadata = txn.metadata()
    before = metadata.schemaString()
    schema = json.loads(before)
    changes = change([(f["name"], dict(f.get("metadata") or {})) for f in schema["fields"]])
    if not changes:
        return False
    for f in schema["fields"]:
        if f["name"] in changes:
            f["metadata"] = changes[f["name"]]
    after = json.dumps(schema)
    txn.updateMetadata(metadata.copy(metadata.id(), metadata.name(), metadata.description(), metadata.format(), after,
                                     metadata.partitionColumns(), metadata.configuration(), metadata.createdTime()),
                       False)
    jvm = spark._jvm  # noqa: SLF001
    data_type = jvm_class(spark, "org.apache.spark.sql.types.DataType")
    operation = getattr(jvm, "org.apache.spark.sql.delta.DeltaOperations$UpdateSchema")(
        data_type.fromJson(before), data_type.fromJson(after))
    no_actions = jvm.scala.jdk.javaapi.CollectionConverters.asScala(jvm.java.util.ArrayList()).toSeq()
    txn.commit(no_actions, operation)
    return True


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)


def table_version(spark: SparkSession, path: str) -> tuple[str, int] | None:
    """``(table id, version)`` of the Delta table at ``path`` as of now, None if there is none.

    From the table's log alone (a listing from its last checkpoint, no Spark job): what a cached read of
    the table is checked against. The id tells a table made again at the same path from the one before.
    """
    log = jvm_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(spark._jsparkSession, path)  # noqa: SLF001
    # Scala default arguments of DeltaLog.update(stalenessAcceptable, checkIfUpdatedSinceTs, catalogTable)
    snapshot = log.update(False, getattr(log, "update$default$2")(), getattr(log, "update$default$3")())
    version = int(snapshot.version())
    return None if version < 0 else (str(snapshot.metadata().id()), version)


def commit_metric(spark: SparkSession, path: str, version: int, name: str) -> int | None:
    """Operation metric ``name`` (e.g. ``numOutputRows``) of commit ``version`` of the table at ``path``,
    from the commit file (no Spark job); None where the commit or the metric is not found."""
    text = hadoop_read_text(spark, f"{path}/_delta_log/{version:020d}.json")
    for line in (text or "").splitlines():
        if '"commitInfo"' not in line:
            continue
        try:
            value = json.loads(line)["commitInfo"].get("operationMetrics", {}).get(name)
            return None if value is None else int(value)
        except (ValueError, KeyError, AttributeError, TypeError):
            return None
    return None


def local_frame(spark: SparkSession, rows: list[Any], ddl: str) -> DataFrame:
    """A DataFrame of a few driver-side rows (tuples in ``ddl``'s column order, or dicts), built through Arrow.

    ``spark.createDataFrame`` over Python rows ships them pickled to a Python worker in every task (one per
    default-parallelism slice, ~0.25 s each on 2 cores, most of them empty); through Arrow the rows reach the
    JVM in one partition and no Python worker starts. Naive datetimes are read as UTC (the session's zone);
    a map column takes a dict.
    """
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import MapType

    schema = _struct_of(spark, ddl)
    names = schema.names
    maps = [f.name for f in schema.fields if isinstance(f.dataType, MapType)]
    records = []
    for row in rows:
        record = dict(row) if isinstance(row, dict) else dict(zip(names, row, strict=True))
        for name in maps:  # Arrow takes a map as its (key, value) pairs
            if record.get(name) is not None:
                record[name] = list(record[name].items())
        records.append(record)
    table = pa.Table.from_pylist(records, schema=to_arrow_schema(schema))
    return spark.createDataFrame(table, schema=schema)


_STRUCTS: dict[str, Any] = {}


def _struct_of(spark: SparkSession, ddl: str) -> Any:
    if ddl not in _STRUCTS:
        _STRUCTS[ddl] = spark.createDataFrame([], ddl).schema
    return _STRUCTS[ddl]
