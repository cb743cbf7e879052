"""Files on any Hadoop file system (local, HDFS, S3A, ABFS...), through the Spark session's JVM."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

_CLASSES: weakref.WeakKeyDictionary[SparkContext, dict[str, Any]] = weakref.WeakKeyDictionary()


def jvm_class(spark: SparkSession, name: str) -> Any:
    """The JVM class ``name`` (dotted), looked up once per Spark context: through the gateway each package
    level of a name is a failed class search of the whole class path."""
    classes = _CLASSES.setdefault(spark.sparkContext, {})
    if name not in classes:
        found: Any = spark.sparkContext._jvm  # noqa: SLF001 - pyspark exposes the JVM only here
        for part in name.split("."):
            found = getattr(found, part)
        classes[name] = found
    return classes[name]


def hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(FileSystem, Path) for any Hadoop-FS URI; only reachable through the JVM gateway."""
    hpath = jvm_class(spark, "org.apache.hadoop.fs.Path")(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath  # noqa: SLF001


def hadoop_path_exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = hadoop_fs(spark, path)
    return bool(fs.exists(hpath))


def hadoop_delete(spark: SparkSession, path: str) -> None:
    """Delete ``path`` and everything below it, if it exists."""
    fs, hpath = hadoop_fs(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)


def hadoop_write_text(spark: SparkSession, path: str, text: str) -> None:
    """Write ``path`` whole or not at all: into a hidden file beside it, then renamed (a kill mid-write leaves
    only the hidden file, which readers of ``path`` never see)."""
    import uuid

    fs, hpath = hadoop_fs(spark, path)
    tmp = jvm_class(spark, "org.apache.hadoop.fs.Path")(hpath.getParent(), f".{hpath.getName()}.{uuid.uuid4().hex}.tmp")
    out = fs.create(tmp, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()
    if fs.exists(hpath):
        fs.delete(hpath, False)
    if not fs.rename(tmp, hpath):
        raise OSError(f"could not rename {tmp} to {path}")


def hadoop_read_text(spark: SparkSession, path: str) -> str | None:
    """The text of ``path``, or None if it does not exist."""
    fs, hpath = hadoop_fs(spark, path)
    if not fs.exists(hpath):
        return None
    stream = fs.open(hpath)
    try:
        return str(jvm_class(spark, "org.apache.commons.io.IOUtils").toString(stream, "UTF-8"))
    finally:
        stream.close()


def hadoop_list(spark: SparkSession, path: str) -> list[str]:
    """The names of the files directly in directory ``path`` (none if it does not exist)."""
    fs, hpath = hadoop_fs(spark, path)
    return [s.getPath().getName() for s in fs.listStatus(hpath)] if fs.exists(hpath) else []
