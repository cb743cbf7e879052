"""Housekeeping of a pipeline's Delta tables (``cdclake maintain``, the maintenance DAG).

Runs under the pipeline lock, so never beside a snapshot or mining run:

* targets (and their SCD type-2 tables): ``OPTIMIZE`` (compaction), then ``VACUUM``;
* bronze: windows applied before ``maintenance.bronze_retention_days`` are deleted — never the
  latest applied window, never a window not yet applied (a killed run re-applies it from bronze);
* control tables: run log and dead letters older than ``control_retention_days`` are deleted;
  records of committed and rolled-back transactions too, once the in-flight buffer holds no row
  of them (abandoned ones are kept: they make a late commit of the same transaction reportable);
* bronze and control tables (appended to by every run) are compacted and vacuumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from cdclake.engine.control import WINDOW_APPLIED, utcnow
from cdclake.engine.inflight import ABANDONED, InflightBuffer
from cdclake.engine.lake import LakeLayout, delta_ref, is_delta_table, type2_path
from cdclake.spark import session_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.config import MaintenanceOptions


@dataclass
class MaintenanceReport:
    optimized: list[str] = field(default_factory=list)
    vacuumed: list[str] = field(default_factory=list)
    bronze_windows_deleted_through: int | None = None
    deleted_rows: dict[str, int] = field(default_factory=dict)


def _deleted(spark: SparkSession, path: str, where: str) -> int:
    """``DELETE ... WHERE``; the number of rows it removed (from the Delta commit's metrics)."""
    result = spark.sql(f"DELETE FROM {delta_ref(path)} WHERE {where}").collect()
    return int(result[0][0]) if result and result[0][0] is not None else 0


def maintain(spark: SparkSession, layout: LakeLayout, targets: list[str], options: MaintenanceOptions,
             pipeline: str) -> MaintenanceReport:
    """Compact and vacuum ``targets`` (paths) and apply the retention rules to bronze and control tables."""
    settings = {
        # VACUUM lists files with this many tasks (default 10,000: minutes of scheduling on a small
        # cluster); one task per core is enough for a table's directories.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(max(1, spark.sparkContext.defaultParallelism)),
    }
    if options.vacuum_retain_hours < 168:
        # Delta refuses a shorter retention unless its safety check is off; the option says it is wanted.
        settings["spark.databricks.delta.retentionDurationCheck.enabled"] = "false"
    with session_conf(spark, settings):
        return _maintain(spark, layout, targets, options, pipeline)


def _maintain(spark: SparkSession, layout: LakeLayout, targets: list[str], options: MaintenanceOptions,
              pipeline: str) -> MaintenanceReport:
    report = MaintenanceReport()

    def compact_and_vacuum(table: str) -> None:
        if not is_delta_table(spark, table):
            return
        if options.optimize:
            spark.sql(f"OPTIMIZE {delta_ref(table)}").collect()
            report.optimized.append(table)
        spark.sql(f"VACUUM {delta_ref(table)} RETAIN {options.vacuum_retain_hours} HOURS").collect()
        report.vacuumed.append(table)

    for path in targets:
        compact_and_vacuum(path)
        compact_and_vacuum(type2_path(path))

    now = utcnow()
    if options.bronze_retention_days is not None:
        cutoff = now - timedelta(days=options.bronze_retention_days)
        applied = (spark.read.format("delta").load(layout.checkpoints)
                   .where(f"kind = 'window' AND status = '{WINDOW_APPLIED}'")
                   .selectExpr("max(window_id) AS latest",
                               f"max(CASE WHEN updated_at < TIMESTAMP'{cutoff.isoformat(' ')}' THEN window_id END) "
                               "AS old").first())
        if applied is not None and applied.old is not None:
            through = min(int(applied.old), int(applied.latest) - 1)
            if through >= 1:
                report.deleted_rows["bronze"] = _deleted(spark, layout.bronze, f"window_id <= {through}")
                report.bronze_windows_deleted_through = through

    cutoff_sql = f"TIMESTAMP'{(now - timedelta(days=options.control_retention_days)).isoformat(' ')}'"
    report.deleted_rows["runs"] = _deleted(spark, layout.runs, f"started_at < {cutoff_sql}")
    report.deleted_rows["dead_letters"] = _deleted(spark, layout.dead_letters, f"recorded_at < {cutoff_sql}")
    if is_delta_table(spark, layout.transactions):
        ended_long_ago = f"recorded_at < {cutoff_sql} AND status <> '{ABANDONED}'"
        old = spark.read.format("delta").load(layout.transactions).where(ended_long_ago).selectExpr(
            "max(window_id) AS w").first()
        if old is not None and old.w is not None:
            # First: no in-flight row may outlive its transaction's record.
            InflightBuffer(spark, layout, pipeline).purge(int(old.w))
            report.deleted_rows["transactions"] = _deleted(spark, layout.transactions, ended_long_ago)
    # Appended to once per run or window: many small files that every run reads.
    for table in (layout.bronze, layout.runs, layout.dead_letters, layout.transactions, layout.inflight,
                  layout.checkpoints, layout.schema_history):
        compact_and_vacuum(table)
    return report
