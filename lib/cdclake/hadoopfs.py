"""Files on any Hadoop file system (local, HDFS, S3A, ABFS...), through the Spark session's JVM."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def hadoop_fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """(FileSystem, Path) for any Hadoop-FS URI; only reachable through the JVM gateway."""
    # pyspark exposes the Hadoop API only through its private gateway handles
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath  # noqa: SLF001


def hadoop_path_exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = hadoop_fs(spark, path)
    return bool(fs.exists(hpath))


def hadoop_delete(spark: SparkSession, path: str) -> None:
    """Delete ``path`` and everything below it, if it exists."""
    fs, hpath = hadoop_fs(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)
