"""Step marks: which schema or barrier step of which window a target has done, so that a run resumed
after a kill neither repeats a step nor merges a segment in a shape the table no longer has
(:meth:`..apply.WindowApplier.table_steps`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.hadoopfs import hadoop_delete, hadoop_fs, hadoop_list

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APPLIED_PROPERTY = "cdclake.applied"  # where earlier versions kept "<window>:<op index>" of the last step done
MARKER_DIR = "_cdclake"  # beside _delta_log: files of cdclake's own, which Delta readers and VACUUM skip
MARKER_PREFIX = "applied-"


def marker_of(name: str) -> tuple[int, int] | None:
    """(window, step) of a marker file's name, None for any other file.

    >>> marker_of("applied-12-3"), marker_of("other")
    ((12, 3), None)
    """
    w, _, k = name.removeprefix(MARKER_PREFIX).partition("-")
    return (int(w), int(k)) if name.startswith(MARKER_PREFIX) and w.isdigit() and k.isdigit() else None


def _marks(spark: SparkSession, path: str) -> list[tuple[str, tuple[int, int]]]:
    """The step marks in ``path``'s ``_cdclake`` directory: (file name, (window, step))."""
    found = [(name, marker_of(name)) for name in hadoop_list(spark, f"{path}/{MARKER_DIR}")]
    return [(name, m) for name, m in found if m is not None]


def applied_marker(spark: SparkSession, path: str) -> tuple[int, int] | None:
    """(window, step) of the last schema/barrier step done on ``path`` (:func:`set_marker`)."""
    marks = _marks(spark, path)
    if marks:
        return max(m for _, m in marks)
    from delta.tables import DeltaTable  # earlier versions marked the table's properties

    props = DeltaTable.forPath(spark, path).detail().select("properties").collect()[0][0] or {}
    raw = props.get(APPLIED_PROPERTY)
    if not raw:
        return None
    w, _, k = raw.partition(":")
    return int(w), int(k)


def set_marker(spark: SparkSession, path: str, window_id: int, op_index: int) -> None:
    """Record that step ``op_index`` of window ``window_id`` is done on ``path``: an empty file named so
    in the table's ``_cdclake`` directory (which Delta readers and VACUUM leave alone), because a file
    appears whole or not at all and costs no Delta commit. Older marks are removed after."""
    fs, mark = hadoop_fs(spark, f"{path}/{MARKER_DIR}/{MARKER_PREFIX}{window_id}-{op_index}")
    fs.create(mark, True).close()
    for name, m in _marks(spark, path):
        if m != (window_id, op_index):
            hadoop_delete(spark, f"{path}/{MARKER_DIR}/{name}")
