"""Settings every Spark session of the tests gets: the test session's own, and those of the
``cdclake`` processes the tests start (through the pipeline file's ``spark.conf``)."""

from __future__ import annotations

# The tests' data is tiny and the machine has 2 cores shared by 2 workers, so the JVM's CPU is what
# `make test` waits for. Fewer tasks per job, and no generated code at all: a JFR profile of a small
# mining window found a third of the JVM's CPU (71 % of the task threads') in compiling Java for each new
# plan's expressions (Janino, its class lookups through every jar, the code formatter), which costs far
# more than it saves on a few rows. Interpreted evaluation gives the same results (Spark's own tests run
# both). BENCHMARKS.md, test suite. (C1-only JIT helps one short test but slows a whole session: the C2
# JIT pays for itself.)
TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # A test session touches thousands of Delta tables over its life; Delta keeps each one's log and
    # snapshot (with its query plans, ~4 MB live per table) in a cache of 10,000. Measured: 120 tables left
    # 495 MB live with the default, 206 MB with a cache of 10; the workers' GC had grown to 17-19 % of
    # their CPU by the second half of `make test` (BENCHMARKS.md, test suite).
    "spark.databricks.delta.delta.log.cacheSize": "64",
    # The throughput collector: G1's concurrent marking competes with the tests for the 2 cores; measured
    # on the same tests, 5-9 % less JVM CPU (BENCHMARKS.md, test suite). Added to cdclake's own JVM options.
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
    # Adaptive execution re-plans each stage of a job and posts its plan to the listeners, which tiny
    # data never repays (one shuffle partition already); measured 5 % less JVM CPU. Results are the same.
    "spark.sql.adaptive.enabled": "false",
}

# The JVMs the tests start as processes (spark-submit drivers and executors, a standalone master and worker,
# the cdclake CLI) live under a minute: C2 compilation never pays back there, and its threads take CPU
# from the other test worker. C1 only and the throughput collector: the Airflow end-to-end test 194 s ->
# 169 s alone (BENCHMARKS.md, test suite). Results are the same; only the JIT differs.
SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


def short_jvm_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with :data:`SHORT_JVM_OPTIONS` for every JVM a process started with it starts."""
    return {**env, "JAVA_TOOL_OPTIONS": SHORT_JVM_OPTIONS}


def spark_conf_yaml() -> str:
    """:data:`TEST_SPARK_CONF` as a pipeline file's ``spark:`` block."""
    return "spark:\n  conf:\n" + "".join(f"    {k}: '{v}'\n" for k, v in TEST_SPARK_CONF.items())
