"""Settings every Spark session of the tests gets: the test session's own, and those of the
``cdclake`` processes the tests start (through the pipeline file's ``spark.conf``)."""

from __future__ import annotations

# The tests' data is tiny and the machine has 2 cores shared by 2 workers, so the JVM's CPU is what
# `make test` waits for: fewer tasks per job and no whole-stage code generation (compiling it costs more
# than it saves on a few rows) cut it by about a fifth (BENCHMARKS.md, test suite). Results do not depend
# on them. Tried and left out: no generated code at all (`spark.sql.codegen.factoryMode=NO_CODEGEN`,
# -37 % JVM CPU on one small window, no gain over the whole suite) and C1-only JIT (helps one short test,
# slows a whole session: the C2 JIT pays for itself).
TEST_SPARK_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.codegen.wholeStage": "false",
}
