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


def hadoop_write_text(spark: SparkSession, path: str, text: str) -> None:
    """Write ``path`` whole or not at all: into a hidden file beside it, then renamed (a kill mid-write leaves
    only the hidden file, which readers of ``path`` never see)."""
    import uuid

    fs, hpath = hadoop_fs(spark, path)
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    tmp = jvm.org.apache.hadoop.fs.Path(hpath.getParent(), f".{hpath.getName()}.{uuid.uuid4().hex}.tmp")
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
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    stream = fs.open(hpath)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def hadoop_list(spark: SparkSession, path: str) -> list[str]:
    """The names of the files directly in directory ``path`` (none if it does not exist)."""
    fs, hpath = hadoop_fs(spark, path)
    return [s.getPath().getName() for s in fs.listStatus(hpath)] if fs.exists(hpath) else []
