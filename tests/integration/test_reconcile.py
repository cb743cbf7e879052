"""cdclake reconcile on Oracle (the LogMiner simulator): a two-column NUMBER key written as literals Oracle and
Spark SQL read alike, repaired by backfills that read ``AS OF SCN``. Chunk checksums, the confirm pass and the
repair with one- and two-column keys, from the API and the CLI: tests/engine/test_reconcile.py (issue 44)."""

from __future__ import annotations

import json


def test_oracle_keys_are_found_and_repaired_with_an_as_of_scn_backfill(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The Oracle plug-in against the LogMiner simulator: a two-column NUMBER key written as literals
    Oracle and Spark SQL read alike, repaired by backfills that read ``AS OF SCN``."""
    import random

    from cdclake.testing.logminer_sim import SimulatedOracle, create_typed_tables, random_workload

    from tests.integration.oracle_helpers import assert_lake_equals_simulated, drain, oracle_pipeline

    db = SimulatedOracle(seed=11)
    tables = create_typed_tables(db, lob=False)
    random_workload(db, random.Random(11), tables, transactions=15, lob=False)
    pipeline = oracle_pipeline(spark, db, tmp_path / "lake", include=r"APP\.ORDER_LINES")
    pipeline.snapshot()
    random_workload(db, random.Random(12), tables, transactions=10, lob=False)
    drain(pipeline)
    table = "APP.ORDER_LINES"
    path = pipeline.layout.target(table)
    lines = sorted((r.ORDER_ID, r.LINE_NO) for r in spark.read.format("delta").load(path).collect())
    (lost_o, lost_l), (stale_o, stale_l) = lines[0], lines[-1]
    spark.sql(f"DELETE FROM delta.`{path}` WHERE ORDER_ID = {lost_o} AND LINE_NO = {lost_l}")
    spark.sql(f"UPDATE delta.`{path}` SET SKU = 'wrong' WHERE ORDER_ID = {stale_o} AND LINE_NO = {stale_l}")
    spark.sql(f"INSERT INTO delta.`{path}` (ORDER_ID, LINE_NO, QTY, `__op`, `__seq`, `__position`) "
              "VALUES (999999, 7, 1, 'c', 1, 'x')")

    fixed = pipeline.reconcile(chunks=8, repair=True).tables[0]

    key = ["ORDER_ID", "LINE_NO"]
    assert {kind: [tuple(k[c] for c in key) for k in found] for kind, found in fixed.keys.items()} == {
        "only_in_source": [(lost_o, lost_l)], "only_in_lake": [(999999, 7)], "different": [(stale_o, stale_l)]}
    assert fixed.repaired and fixed.ok
    assert_lake_equals_simulated(spark, pipeline, db, [table])
    backfills = spark.read.format("delta").load(pipeline.layout.checkpoints).where("kind = 'backfill'").collect()
    keys = sorted([(lost_o, lost_l), (stale_o, stale_l), (999999, 7)])  # one filter, in key order
    assert {json.loads(r.detail)["where"] for r in backfills} == {
        " OR ".join(f"(ORDER_ID = {o} AND LINE_NO = {n})" for o, n in keys)}
