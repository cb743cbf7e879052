"""cdclake reconcile: chunk checksums find exactly the corrupted keys (drilling only into the chunks
that differ), the confirm pass tells rows in flight from real differences, and --repair backfills
the keys until the lake equals the source — with one- and two-column keys, from the API and the CLI."""

from __future__ import annotations

import json
from typing import Any

from cdclake.cli import cli
from cdclake.engine.repair import reconcile as rc
from click.testing import CliRunner

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml


def _ids(keys: dict[str, list[dict[str, Any]]]) -> dict[str, list[int]]:
    return {kind: [k["id"] for k in found] for kind, found in keys.items()}


def test_reconcile_reports_exactly_the_corrupted_keys_confirms_in_flight_rows_and_repairs(
        spark, mariadb, fresh_database, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    table = f"{db}.acct"
    mariadb.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, owner VARCHAR(20), balance DECIMAL(10,2))")
    mariadb.execute(f"INSERT INTO {table} SELECT seq, CONCAT('o', seq), seq * 1.5 FROM {db}.seq_1_to_300")
    mariadb.execute(f"DELETE FROM {table} WHERE id = 175")
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", name="rc")
    pipeline.snapshot()
    mariadb.execute(f"UPDATE {table} SET balance = balance + 1 WHERE id % 10 = 0")
    pipeline.mine()

    clean = pipeline.reconcile().tables[0]
    assert (clean.ok, clean.differing, clean.chunks_mismatched) == (True, 0, 0)
    assert (clean.chunks, clean.chunking, clean.source_rows, clean.lake_rows) == (64, "key range", 299, 299)
    assert not clean.lake_behind

    # What a bug could leave behind: rows lost (105, 150), stale (110, 160) and invented (175).
    path = pipeline.layout.target(table)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (105, 150)")
    spark.sql(f"UPDATE delta.`{path}` SET owner = 'wrong' WHERE id IN (110, 160)")
    spark.sql(f"INSERT INTO delta.`{path}` (id, owner, balance, `__op`, `__seq`, `__position`) "
              "VALUES (175, 'ghost', 1, 'c', 1, 'x')")
    mariadb.execute(f"UPDATE {table} SET owner = 'late' WHERE id = 42")  # committed, not mined yet
    wait = rc._wait_for_lake

    def mining_meanwhile(p, t, ordinal, timeout_s):  # type: ignore[no-untyped-def]
        # During --confirm-wait a scheduled mining run applies 42; then 150 changes again at the source.
        pipeline.mine()
        mariadb.execute(f"UPDATE {table} SET owner = 'moving' WHERE id = 150")
        return wait(p, t, ordinal, 0)

    monkeypatch.setattr(rc, "_wait_for_lake", mining_meanwhile)
    found = pipeline.reconcile(confirm_wait_s=60).tables[0]
    monkeypatch.setattr(rc, "_wait_for_lake", wait)

    assert _ids(found.keys) == {"only_in_source": [105], "only_in_lake": [175], "different": [110, 160]}
    assert found.counts == {"only_in_source": 1, "only_in_lake": 1, "different": 2}
    assert [k["id"] for k in found.in_flight] == [150]  # changed between the reads: not judged
    assert found.caught_up == 1  # 42 differed (not mined), then mining applied it
    assert 1 <= found.chunks_mismatched <= 6 and found.chunks == 64  # only those chunks drilled into
    assert (found.confirmed, found.lake_behind, found.ok, found.repaired) == (True, False, False, False)

    # 150's change is not mined yet: the repair backfills it with the corrupted keys, safely.
    fixed = pipeline.reconcile(repair=True).tables[0]
    assert _ids(fixed.keys) == {"only_in_source": [105, 150], "only_in_lake": [175], "different": [110, 160]}
    assert fixed.lake_behind and fixed.note and "not mined yet" in fixed.note
    assert fixed.repaired and fixed.ok and fixed.remaining == {"only_in_source": 0, "only_in_lake": 0, "different": 0}
    assert_lake_equals_source(spark, mariadb, pipeline, [table])

    runs = spark.read.format("delta").load(pipeline.layout.runs)
    assert runs.where("command = 'reconcile' AND status = 'ok'").count() == 3
    assert runs.where("command = 'backfill' AND status = 'ok'").count() == 1  # all five keys in one filter
    recorded = spark.read.format("delta").load(pipeline.layout.reconcile).orderBy("checked_at").collect()
    assert [(r.only_in_source, r.only_in_lake, r.different, r.repaired) for r in recorded] == [
        (0, 0, 0, False), (1, 1, 2, False), (2, 1, 2, True)]
    assert json.loads(recorded[1].sample_keys)["in_flight"] == [{"id": 150}]


def test_two_column_key_soft_deletes_and_the_cli(spark, mariadb, fresh_database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    table = f"{db}.stock"
    mariadb.execute(f"CREATE TABLE {table} (region VARCHAR(8), sku INT, qty INT, PRIMARY KEY (region, sku))")
    mariadb.execute(f"INSERT INTO {table} SELECT IF(seq % 2, 'eu', 'us'), seq, seq FROM {db}.seq_1_to_200")
    config = tmp_path / "stock.yaml"
    config.write_text(pipeline_yaml(mariadb, db, tmp_path / "lake", name="rc2", extra="  delete_mode: soft\n"))
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", name="rc2", extra="  delete_mode: soft\n")
    pipeline.snapshot()
    mariadb.execute(f"DELETE FROM {table} WHERE sku = 7")  # a tombstone in the lake: not a row
    pipeline.mine()
    path = pipeline.layout.target(table)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE sku = 10")
    spark.sql(f"UPDATE delta.`{path}` SET qty = -1 WHERE sku = 21")
    spark.sql(f"INSERT INTO delta.`{path}` (region, sku, qty, `__op`, `__seq`, `__position`, `__deleted`) "
              "VALUES ('xx', 999, 1, 'c', 1, 'x', false)")
    runner = CliRunner()

    listed = runner.invoke(cli, ["reconcile", "--config", str(config), "--table", table, "--no-confirm",
                                 "--chunks", "8"])
    assert listed.exit_code == 1, listed.output
    assert "source 199 rows, lake 199 rows (not confirmed)" in listed.output
    assert "only in source (lost):" in listed.output and "(region=us, sku=10)" in listed.output
    assert "only in lake (invented):" in listed.output and "(region=xx, sku=999)" in listed.output
    assert "different (stale):" in listed.output and "(region=eu, sku=21)" in listed.output
    assert f"DIFFERENCES REMAIN in {table}" in listed.output

    repaired = runner.invoke(cli, ["reconcile", "--config", str(config), "--table", table, "--repair", "--json",
                                   "--max-keys", "100", "--confirm-wait", "0"])
    assert repaired.exit_code == 0, repaired.output
    result = json.loads(repaired.stdout)["tables"][0]
    assert (result["chunking"], result["chunks"], result["repaired"], result["ok"]) == ("key hash", 64, True, True)
    assert result["keys"] == {"only_in_source": [{"region": "us", "sku": 10}],
                              "only_in_lake": [{"region": "xx", "sku": 999}],
                              "different": [{"region": "eu", "sku": 21}]}
    assert result["chunks_mismatched"] <= 3
    assert_lake_equals_source(spark, mariadb, pipeline, [table])


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
