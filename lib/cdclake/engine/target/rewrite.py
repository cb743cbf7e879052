"""Changes to a Delta table's columns beyond adding one: type changes, column moves, and the two-commit
rewrite that does a rename, drop or type change a table's features cannot do in its metadata.

Functions of the session and a table's path; each step looks at the table first, so a run killed half-way
finishes the change when it runs the same DDL again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from cdclake.engine.faults import crash_point
from cdclake.engine.lake import commit_tag, delta_ref, quote
from cdclake.errors import CdcError, command, table_regex

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.schema import Column

RETYPE_PREFIX = "__cdclake_retype_"  # a column taking a type change's values (column mapping tables)


def simple_type(ddl_type: str) -> str:
    """A DDL type as Spark prints it (``simpleString``), to compare with a table's field types."""
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl_type).simpleString()


def table_properties(spark: SparkSession, path: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {delta_ref(path)}").collect()}


def column_mapping(spark: SparkSession, path: str) -> bool:
    """Whether the table renames and drops columns in its metadata (column mapping, the spark mode)."""
    return table_properties(spark, path).get("delta.columnMapping.mode", "none").lower() != "none"


def last_commit(spark: SparkSession, path: str) -> tuple[int, str, dict | None]:
    """The table's newest commit: (version, operation, the tag cdclake put on it, if any)."""
    r = spark.sql(f"DESCRIBE HISTORY {delta_ref(path)} LIMIT 1").select("version", "operation", "userMetadata").first()
    try:
        tag = json.loads(r.userMetadata) if r.userMetadata else None
    except ValueError:
        tag = None
    return int(r.version), r.operation, tag if isinstance(tag, dict) else None


def enable_features_for(spark: SparkSession, ref: str, spark_type: str) -> None:
    """A column type that needs a Delta table feature the table was created without: enable it first
    (Delta enables it by itself only at CREATE, and refuses the column otherwise)."""
    if "TIMESTAMP_NTZ" in spark_type.upper():
        spark.sql(f"ALTER TABLE {ref} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")


def reorder(spark: SparkSession, path: str, wanted: list[str]) -> None:
    """Move columns (metadata only) until the source's columns stand in the source's order."""
    ref = delta_ref(path)
    have = [f.name for f in spark.read.format("delta").load(path).schema.fields if f.name in set(wanted)]
    for k, name in enumerate(wanted):
        if have[k] == name:
            continue
        where = "FIRST" if k == 0 else f"AFTER {quote(wanted[k - 1])}"
        spark.sql(f"ALTER TABLE {ref} ALTER COLUMN {quote(name)} {where}")
        have.remove(name)
        have.insert(k, name)


def change_type(spark: SparkSession, path: str, name: str, col: Column, table: str) -> None:
    """Column ``name`` to ``col``'s type: Delta type widening where the table has it, else in place
    beside it (column mapping), else by a rewrite (values that do not fit become null)."""
    ref = delta_ref(path)
    enable_features_for(spark, ref, col.spark_type)
    if table_properties(spark, path).get("delta.enableTypeWidening", "").lower() == "true":
        try:  # Delta type widening (int -> bigint, decimal precision up, float -> double ...)
            spark.sql(f"ALTER TABLE {ref} ALTER COLUMN {quote(name)} TYPE {col.spark_type}")
            return
        except Exception:
            pass
    if column_mapping(spark, path):
        retype_in_place(spark, path, name, col.spark_type)
        return
    fields = spark.read.format("delta").load(path).schema.fields
    rewrite(spark, path, [
        f"try_cast({quote(f.name)} AS {col.spark_type}) AS {quote(f.name)}" if f.name == name else quote(f.name)
        for f in fields
    ], None, table)


def retype_in_place(spark: SparkSession, path: str, name: str, spark_type: str) -> None:
    """A type change on a table with column mapping, where Delta refuses a rewrite once a column was
    dropped or renamed under the change data feed: a new column beside it takes the cast values,
    then the old one is dropped and the new one takes its name. Each step looks at the table, so a
    run killed half-way finishes the change when it runs the DDL again; change-data-feed readers see
    an update of every row."""
    ref = delta_ref(path)
    temp = f"{RETYPE_PREFIX}{name}"
    names = {f.name for f in spark.read.format("delta").load(path).schema.fields}
    if temp not in names:
        spark.sql(f"ALTER TABLE {ref} ADD COLUMNS ({quote(temp)} {spark_type} AFTER {quote(name)})")
    if name in names or temp not in names:
        spark.sql(f"UPDATE {ref} SET {quote(temp)} = try_cast({quote(name)} AS {spark_type})")
        crash_point("retype")
        spark.sql(f"ALTER TABLE {ref} DROP COLUMN {quote(name)}")
    spark.sql(f"ALTER TABLE {ref} RENAME COLUMN {quote(temp)} TO {quote(name)}")


def pending_rewrite(spark: SparkSession, path: str) -> int | None:
    """The version a rewrite started from, if its first commit (the delete) is the table's last."""
    _, operation, tag = last_commit(spark, path)
    return int(tag["rewrite_from"]) if operation == "DELETE" and tag and "rewrite_from" in tag else None


def rewrite(spark: SparkSession, path: str, select: list[str], pending: int | None, table: str) -> None:
    """Rewrite the table as ``select`` (a select list over every column, ``__*`` ones included) of
    itself: a rename, drop or type change the table's features cannot do in its metadata
    (``pending``: the version a rewrite killed half-way started from; ``table``: the source table, for
    the fix of an error).

    Two commits, so that the change data feed says what happened in order: version N deletes every
    row (as it was), version N+1 inserts every row in the new shape, the ``__*`` columns unchanged.
    The delete is tagged with the version it started from, so a run killed between the two commits
    finishes the rewrite from that version when it runs the same DDL again (idempotent).
    A reader of version N sees the table empty.
    """
    base = pending
    if base is None:
        base = last_commit(spark, path)[0]
        with commit_tag(spark, rewrite_from=base):
            spark.sql(f"DELETE FROM {delta_ref(path)}")
        crash_point("rewrite")
    try:
        old = spark.read.format("delta").option("versionAsOf", base).load(path)
        old.limit(1).collect()  # missing files show here, not half-way through the write
    except Exception as exc:
        raise CdcError(f"the rewrite of {path} for a schema change needs its version {base}, which can no "
                       f"longer be read ({str(exc).splitlines()[0][:300]})",
                       f"re-snapshot the table: {command('snapshot', '--tables', table_regex(table), '--force')}",
                       permanent=True
                       ) from exc
    with commit_tag(spark, rewritten_from=base):
        (old.selectExpr(*select).write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .save(path))
