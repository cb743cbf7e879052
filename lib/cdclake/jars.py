"""The JVM jars cdclake puts on Spark's classpath: Delta's and each registered source's (its JDBC driver).

``python -m cdclake.jars`` prints their Maven coordinates, one per line; ``make setup`` copies them
into ``.cache/jars`` (:func:`cdclake.spark.cached_jars`), and a cluster deployment ships the same.

>>> [c for c in maven_coordinates() if c.startswith("io.delta:")]
['io.delta:delta-spark_4.1_2.13:4.1.0', 'io.delta:delta-storage:4.1.0']
"""

from __future__ import annotations

from cdclake.spi import plugins

# delta-spark must match the pinned pyspark's major.minor (setup.py).
DELTA_JARS = ("io.delta:delta-spark_4.1_2.13:4.1.0", "io.delta:delta-storage:4.1.0")
# What cdclake's own tests need besides: the JDBC driver Spark reads the Db2 capture emulator's tables with
# (cdclake.testing.db2_emulator).
TESTING_JARS = ("org.xerial:sqlite-jdbc:3.54.1.0",)


def maven_coordinates(testing: bool = False) -> list[str]:
    """Delta's jars, then every registered source's, without repeats (with ``testing``, the tests' as well)."""
    out = list(DELTA_JARS)
    for plugin in plugins():
        out += [c for c in plugin.jars if c not in out]
    if testing:
        out += [c for c in TESTING_JARS if c not in out]
    return out


if __name__ == "__main__":
    import sys

    print("\n".join(maven_coordinates(testing="--testing" in sys.argv[1:])))
