"""Where things live in the lake, and the few Delta operations the engine repeats.

Layout under ``lake.root/<pipeline>/``::

    <database>__<table>/          one target table per source table (change data feed on)
    _cdclake/bronze/              raw change log, append-only
    _cdclake/checkpoints/         window and per-table positions
    _cdclake/schema_history/      every DDL with its position and resulting schema
    _cdclake/runs/                run log with metrics
    _cdclake/dead_letters/        events that could not be applied
    _cdclake/staging/window=N/    mined rows of a window before its bronze commit
    _cdclake/inflight/            changes of transactions still open at a window's end (frame sources)
    _cdclake/transactions/        every transaction that ended: committed, rolled back or abandoned
    _cdclake/quality/             data-quality results: one row per expectation checked (quality:)
    _cdclake/reconcile/           results of ``cdclake reconcile`` runs
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")

TARGET_PROPERTIES = {
    "delta.enableChangeDataFeed": "true",
    # Renames and drops of columns need column mapping by name.
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
    "delta.enableTypeWidening": "true",
}


class LakeLayout:
    def __init__(self, lake_root: str, pipeline: str) -> None:
        self.root = f"{lake_root.rstrip('/')}/{pipeline}"
        self.pipeline = pipeline

    def target(self, source_table: str) -> str:
        database, _, table = source_table.partition(".")
        return f"{self.root}/{_UNSAFE.sub('_', database)}__{_UNSAFE.sub('_', table)}"

    def history(self, source_table: str) -> str:
        return history_path(self.target(source_table))

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


def history_path(target_path: str) -> str:
    """The SCD type 2 history table beside a target (``lake.history_tables``)."""
    return target_path + "__history"


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
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def ensure_table(spark: SparkSession, path: str, ddl: str, properties: dict[str, str] | None = None) -> None:
    """Create an empty Delta table at ``path`` if none is there (idempotent)."""
    props = ""
    if properties:
        props = " TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in properties.items()) + ")"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {delta_ref(path)} ({ddl}) USING delta{props}")


@contextlib.contextmanager
def idempotent_write(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """Delta idempotent DML/writes: a commit with an (app id, version) already recorded is skipped.

    Used for every data commit of a window so a re-run after a kill never applies it twice.
    """
    spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(version))
    try:
        yield
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")


USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


@contextlib.contextmanager
def commit_tag(spark: SparkSession, **tag: Any) -> Iterator[None]:
    """Tag every Delta commit made inside with ``tag`` (JSON in the commit's ``userMetadata``).

    Target commits say what wrote them (``{"snapshot": true}``, ``{"window": 7}``, ``{"rebuild": id,
    "through": 9}``), so a rebuild can find the table version that stood before a given window
    (:func:`commit_tags`) without an extra commit per window.
    """
    spark.conf.set(USER_METADATA_CONF, json.dumps(tag, sort_keys=True))
    try:
        yield
    finally:
        spark.conf.unset(USER_METADATA_CONF)


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


def read_delta(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("delta").load(path)
