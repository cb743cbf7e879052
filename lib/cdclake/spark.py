"""One Spark session factory for every entry point (CLI, spark-submit jobs, tests, benchmarks).

Delta's SQL extension and catalog are always set; the jars come from the project-local cache that
``make setup`` fills (``.cache/jars``), so a run never reaches the network. Every setting can be
overridden from the pipeline file's ``spark:`` block, e.g. for a cluster::

    spark:
      master: spark://host:7077
      conf:
        spark.executor.memory: 8g
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROJECT_ROOT = Path(__file__).resolve().parents[2]
JAR_DIR_ENV = "CDCLAKE_JARS"

# Local defaults for a small machine; a cluster overrides them from config.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "3g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.properties.defaults.enableChangeDataFeed": "false",
}

# A JDBC read must return each value as the source database returns it. By default Spark 4 reads a
# JDBC CHAR(n) column (and what drivers report as CHAR: MariaDB's ENUM and SET) as CHAR(n) and pads it
# with blanks to n characters (readSideCharPadding), while the log carries the value unpadded: the same
# row would reach Delta as two values. As plain STRING (charVarcharAsString) no padding, length check
# or CHAR comparison rule is ever attached to the column, even when a later plan is analysed again.
# cdclake.spi.jdbc sets these around every JDBC load whoever built the session; REQUIRED sets them too.
JDBC_READ_SETTINGS: dict[str, str] = {
    "spark.sql.legacy.charVarcharAsString": "true",
    "spark.sql.readSideCharPadding": "false",
}

# Settings cdclake relies on for correctness; config may not turn them off (JVM options are added to).
REQUIRED: dict[str, str] = {
    **JDBC_READ_SETTINGS,
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Timestamps are decoded as UTC instants; the JVM zone must not shift them.
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Within the block the session has ``settings``; afterwards each is back to what it was."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def cached_jars() -> list[str]:
    """Jars from ``$CDCLAKE_JARS`` or the project's ``.cache/jars`` (filled by ``make setup``)."""
    jar_dir = os.environ.get(JAR_DIR_ENV) or str(PROJECT_ROOT / ".cache" / "jars")
    return sorted(glob.glob(os.path.join(jar_dir, "*.jar")))


def build_spark(
    app_name: str = "cdclake",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the active session or build one with Delta and the cached jars::

        spark = build_spark("doc")
        spark.conf.get("spark.sql.session.timeZone")   # 'UTC', whatever the pipeline file says
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = dict(LOCAL_DEFAULTS)
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    for key, value in REQUIRED.items():
        if key.endswith(".extraJavaOptions") and settings.get(key):
            settings[key] = f"{settings[key]} {value}"  # the pipeline file's JVM options, then the required ones
        else:
            settings[key] = value
    jars = cached_jars()
    if jars and "spark.jars" not in (conf or {}):
        settings["spark.jars"] = ",".join(jars)
    builder = SparkSession.builder.appName(app_name)
    # spark-submit sets the master itself (its JVM is up and handed this process a gateway); only
    # default to local when nothing did.
    master = master or os.environ.get("CDCLAKE_SPARK_MASTER")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if master:
        builder = builder.master(master)
    elif not submitted and ("SPARK_HOME" not in os.environ or not os.environ.get("PYSPARK_SUBMIT_ARGS")):
        builder = builder.master("local[2]")
        master = "local[2]"
    if (master or "").startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        # Python workers (decoding UDFs) must see the same interpreter and packages as the driver.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCLAKE_SPARK_LOG_LEVEL", "ERROR"))
    return spark
