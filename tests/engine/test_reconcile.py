"""cdclake reconcile: chunk checksums find exactly the corrupted keys (drilling only into the chunks
that differ), the confirm pass tells rows in flight from real differences, and --repair backfills
the keys until the lake equals the source — with one- and two-column keys, from the API and the CLI (moved from
integration/test_reconcile.py, issue 44; Oracle's literals and AS OF SCN backfills stay there)."""

from __future__ import annotations

import json
from typing import Any

from cdclake.cli import cli
from cdclake.engine.repair import reconcile as rc
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner

from tests.engine.helpers import assert_lake_equals_source, make_pipeline, pipeline_yaml


def _ids(keys: dict[str, list[dict[str, Any]]]) -> dict[str, list[int]]:
    return {kind: [k["id"] for k in found] for kind, found in keys.items()}


def test_reconcile_reports_exactly_the_corrupted_keys_confirms_in_flight_rows_and_repairs(
        spark, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    table = "shop.acct"
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table(table, [("id", "int", False), ("owner", "text"), ("balance", "decimal(10,2)")], key=["id"])
    db.insert(table, *({"id": i, "owner": f"o{i}", "balance": i * 1.5} for i in range(1, 301) if i != 175))
    pipeline = make_pipeline(spark, db, tmp_path / "lake", name="rc")
    pipeline.snapshot()
    db.update(table, lambda r: r["id"] % 10 == 0, {"balance": lambda r: float(r["balance"]) + 1})
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
    db.update(table, {"id": 42}, {"owner": "late"})  # committed, not mined yet
    wait = rc._wait_for_lake

    def mining_meanwhile(p, t, ordinal, timeout_s):  # type: ignore[no-untyped-def]
        # During --confirm-wait a scheduled mining run applies 42; then 150 changes again at the source.
        pipeline.mine()
        db.update(table, {"id": 150}, {"owner": "moving"})
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
    assert_lake_equals_source(spark, pipeline, [table])

    runs = spark.read.format("delta").load(pipeline.layout.runs)
    assert runs.where("command = 'reconcile' AND status = 'ok'").count() == 3
    assert runs.where("command = 'backfill' AND status = 'ok'").count() == 1  # all five keys in one filter
    recorded = spark.read.format("delta").load(pipeline.layout.reconcile).orderBy("checked_at").collect()
    assert [(r.only_in_source, r.only_in_lake, r.different, r.repaired) for r in recorded] == [
        (0, 0, 0, False), (1, 1, 2, False), (2, 1, 2, True)]
    assert json.loads(recorded[1].sample_keys)["in_flight"] == [{"id": 150}]


def test_two_column_key_soft_deletes_and_the_cli(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = "shop.stock"
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table(table, [("region", "varchar(8)", False), ("sku", "int", False), ("qty", "int")],
                    key=["region", "sku"])
    db.insert(table, *({"region": "eu" if i % 2 else "us", "sku": i, "qty": i} for i in range(1, 201)))
    config = tmp_path / "stock.yaml"
    config.write_text(pipeline_yaml(db, tmp_path / "lake", name="rc2", extra="  delete_mode: soft\n"))
    pipeline = make_pipeline(spark, db, tmp_path / "lake", name="rc2", extra="  delete_mode: soft\n")
    pipeline.snapshot()
    db.delete(table, {"sku": 7})  # a tombstone in the lake: not a row
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
    assert_lake_equals_source(spark, pipeline, [table])
