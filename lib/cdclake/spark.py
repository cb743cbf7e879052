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
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
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
# cdclake.kit.jdbc sets these around every JDBC load whoever built the session; REQUIRED sets them too.
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


def jar_dir() -> str:
    """``$CDCLAKE_JARS``, else the project's ``.cache/jars`` (filled by ``make setup``)."""
    return os.environ.get(JAR_DIR_ENV) or str(PROJECT_ROOT / ".cache" / "jars")


def cached_jars() -> list[str]:
    """The jars in :func:`jar_dir`."""
    return sorted(glob.glob(os.path.join(jar_dir(), "*.jar")))


def build_spark(
    app_name: str = "cdclake",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the active session or build one with Delta and the cached jars::

        spark = build_spark("doc")
        spark.conf.get("spark.sql.session.timeZone")   # 'UTC', whatever the pipeline file says

    Under ``spark-submit`` the command line wins, as is Spark's rule: every setting spark-submit gave
    (``--master``, which defaults to ``local[*]``, ``--conf``, ``--jars``, ``spark-defaults.conf``) is
    kept, and the pipeline file's ``spark:`` block only fills in the others (its ``master`` applies to
    ``cdclake`` commands). When the submitted classpath lacks Delta, the driver adds cdclake's jars
    itself (:func:`_driver_classpath`).
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    conf = {k: str(v) for k, v in (conf or {}).items()}
    submitted = _submitted_conf()
    if submitted is not None:
        conf = _command_line_wins(submitted, master, conf)
        master = submitted.get("spark.master")
    else:
        master = master or os.environ.get("CDCLAKE_SPARK_MASTER")
        if not master and ("SPARK_HOME" not in os.environ or not os.environ.get("PYSPARK_SUBMIT_ARGS")):
            master = "local[2]"
    local = (master or "").startswith("local")
    # Local defaults suit this machine; on a cluster Spark's own (or the submitted) ones stand.
    settings = {k: v for k, v in LOCAL_DEFAULTS.items() if local and (submitted is None or k not in submitted)}
    settings.update(conf)
    for key, value in REQUIRED.items():
        given = settings.get(key) or (submitted or {}).get(key)
        if key.endswith(".extraJavaOptions") and given:
            settings[key] = f"{given} {value}"  # the given JVM options, then the required ones
        else:
            settings[key] = value
    if submitted is not None:
        jars = _driver_classpath(submitted, conf.get("spark.jars"))
        if jars:
            settings["spark.jars"] = jars
    elif "spark.jars" not in conf and (jars := cached_jars()):
        settings["spark.jars"] = ",".join(jars)
    if submitted is not None and submitted.get("spark.app.name") not in (None, os.path.basename(sys.argv[0])):
        app_name = submitted["spark.app.name"]  # spark-submit --name (without it, Spark names the app after the script)
    builder = SparkSession.builder.appName(app_name)
    if master and submitted is None:
        builder = builder.master(master)
    if local and not os.environ.get("PYSPARK_PYTHON"):
        # Python workers (decoding UDFs) must see the same interpreter and packages as the driver.
        os.environ["PYSPARK_PYTHON"] = sys.executable
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("CDCLAKE_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _submitted_conf() -> dict[str, str] | None:
    """What ``spark-submit`` set (its JVM is up and handed this process a gateway), or None outside it."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    # The gateway spark-submit handed over; SparkConf() then reads the settings it was given.
    SparkContext._ensure_initialized()  # noqa: SLF001 (pyspark has no public hook for this)
    return dict(SparkConf().getAll())


def _command_line_wins(submitted: Mapping[str, str], master: str | None, conf: dict[str, str]) -> dict[str, str]:
    """The pipeline file's master and settings less those spark-submit set, each difference logged once."""
    notes = []
    if master and master != submitted.get("spark.master"):
        notes.append(f"spark.master {submitted.get('spark.master')} (the pipeline file's {master} applies to "
                     "'cdclake' commands only)")
    kept = {}
    for key, value in conf.items():
        if key in submitted and key not in REQUIRED:
            if submitted[key] != value:
                notes.append(f"{key}={submitted[key]} (not the pipeline file's {value})")
        else:
            kept[key] = value
    if notes:
        log.warning("spark-submit's settings win over the pipeline file's spark: block: %s", "; ".join(notes))
    return kept


class MissingJarsError(RuntimeError):
    """A submitted driver has no Delta jars and cdclake has none to add (``problem``, ``fix``); the pipeline
    turns it into a :class:`cdclake.errors.ConfigError`."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; fix: {fix}")
        self.problem, self.fix = problem, fix


# A class of delta-spark: present on the driver's classpath when spark-submit was given Delta's jars.
DELTA_PROBE_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


def _driver_classpath(submitted: Mapping[str, str], wanted: str | None) -> str | None:
    """The ``spark.jars`` a submitted driver needs: None when its classpath already has Delta (spark-submit
    was given the jars); else cdclake's jars (the pipeline file's ``spark.jars``, or the jar cache) are
    added to the driver's class loader now, before the session exists, and returned so that executors get
    them too. No jars anywhere: :class:`MissingJarsError`."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm  # noqa: SLF001 (set by _submitted_conf)
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(DELTA_PROBE_CLASS, False, loader)
        return None
    except Exception:  # py4j's error for ClassNotFoundException: add the jars below
        pass
    jars = [j for j in (wanted or "").split(",") if j] or cached_jars()
    missing = [j for j in jars if "://" not in j and not os.path.isfile(j)]
    if not jars or missing:
        raise MissingJarsError(
            f"this spark-submit has no Delta jars on its classpath ({DELTA_PROBE_CLASS} is missing) and "
            + (f"the pipeline file's spark.jars names files that do not exist: {', '.join(missing)}" if missing else
               f"cdclake's jar cache {jar_dir()} has none"),
            "run 'make setup' in the cdclake checkout (it fills .cache/jars), or set CDCLAKE_JARS to a folder "
            "of the jars 'python -m cdclake.jars' lists, or pass them to spark-submit with --jars")
    for jar in jars:
        url = jar if "://" in jar else jvm.java.io.File(jar).toURI().toString()
        loader.addURL(jvm.java.net.URL(url))
    return ",".join([*[j for j in submitted.get("spark.jars", "").split(",") if j], *jars])
