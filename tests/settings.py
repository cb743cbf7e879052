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
}
