"""The Db2 source over the capture emulator: snapshot, then windows of interleaved transactions, equal to
the emulated source row by row."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cdclake.testing.db2_emulator import EmulatedDb2, UnknownStatementError

from tests.integration.db2_helpers import assert_lake_equals_emulated, db2_pipeline
from tests.integration.pipeline_helpers import break_three_rows_and_reconcile

COLUMNS = [("ID", "INTEGER", False), ("NAME", "VARCHAR(40)", True), ("AMOUNT", "DECIMAL(10,2)", True),
           ("TS", "TIMESTAMP(6)", True), ("D", "DATE", True), ("B", "VARCHAR(8) FOR BIT DATA", True)]


def _row(rng: random.Random, i: int) -> dict[str, Any]:
    return {"ID": i, "NAME": rng.choice(["a", "café", None, "x" * 40]),
            "AMOUNT": Decimal(rng.randint(-10**6, 10**6)) / 100,
            "TS": dt.datetime(2025, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**12)),
            "D": dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(0, 9000)), "B": rng.randbytes(rng.randint(0, 8))}


@pytest.fixture
def db(tmp_path: Path) -> EmulatedDb2:
    db = EmulatedDb2(tmp_path / "db2")
    for name in ("ORDERS", "ITEMS"):
        db.create_table("APP", name, COLUMNS, ["ID"])
        db.add_table("APP", name)
    return db


def test_snapshot_then_interleaved_windows_equal_the_source(spark: Any, db: EmulatedDb2, tmp_path: Path) -> None:
    rng = random.Random(7)
    with db.transaction() as tx:
        for i in range(50):
            tx.insert("APP", "ORDERS", _row(rng, i))
            tx.insert("APP", "ITEMS", _row(rng, i))
    db.capture.cycle()
    pipeline = db2_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()
    assert_lake_equals_emulated(spark, pipeline, db)
    next_id = 1000
    for _ in range(3):
        open_txns = [db.begin() for _ in range(3)]
        for _ in range(40):
            tx = rng.choice(open_txns)
            table = rng.choice(["ORDERS", "ITEMS"])
            free = [r["ID"] for r in db.rows("APP", table)
                    if db.locks.get(("APP", table, (r["ID"],)), tx.txid) == tx.txid
                    and tx.current("APP", table, {"ID": r["ID"]}) is not None]
            kind = rng.random()
            if kind < 0.4 or not free:
                tx.insert("APP", table, _row(rng, next_id))
                next_id += 1
            elif kind < 0.7:
                tx.update("APP", table, {"ID": rng.choice(free)}, {"NAME": f"n{rng.randint(0, 99)}",
                                                                    "AMOUNT": Decimal("1.50")})
            elif kind < 0.8:  # a key change: the CD table has a D + I pair with different keys
                tx.update("APP", table, {"ID": rng.choice(free)}, {"ID": next_id})
                next_id += 1
            else:
                tx.delete("APP", table, {"ID": rng.choice(free)})
        for i, tx in enumerate(open_txns):
            tx.rollback() if i == 1 else tx.commit()
        db.capture.cycle()
        report = pipeline.mine()
        assert report.events > 0
        assert_lake_equals_emulated(spark, pipeline, db)
    idle = pipeline.mine()
    assert idle.events == 0


def test_the_emulator_refuses_a_statement_the_source_does_not_send(db: EmulatedDb2) -> None:
    cur = db.connect().cursor()
    with pytest.raises(UnknownStatementError) as err:
        cur.execute("SELECT  *\n FROM ASNCDC.IBMSNAP_REGISTER")
    assert str(err.value) == "the emulated Db2 does not answer this statement: SELECT * FROM ASNCDC.IBMSNAP_REGISTER"


def test_every_type_lands_the_same_from_the_snapshot_and_from_the_cd_tables(spark: Any, tmp_path: Path) -> None:
    """Every column type the source reads, in rows from the snapshot and in rows changed afterwards (inserted,
    every column updated, keys changed, deleted and re-inserted, rolled back), equals the emulated source."""
    from cdclake.testing.db2_emulator.workload import create_typed_tables, random_row, random_workload

    db = EmulatedDb2(tmp_path / "db2")
    tables = create_typed_tables(db)
    rng = random.Random(11)
    with db.transaction() as tx:
        for i in range(1, 41):
            for schema, name in tables:
                tx.insert(schema, name, random_row(rng, i))
    db.capture.cycle()
    pipeline = db2_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()
    assert_lake_equals_emulated(spark, pipeline, db)
    random_workload(db, rng, tables, transactions=30)
    assert pipeline.mine().events > 0
    assert_lake_equals_emulated(spark, pipeline, db)


def test_a_column_added_and_one_renamed_online_land_at_their_place(spark: Any, tmp_path: Path) -> None:
    """The online procedures (docs/db2.md): a column added at the end of the source and CD table, later a column
    renamed in the source only (the CD table keeps the old name): each becomes a schema-history entry after the
    last commit before it, rows before it keep the old shape, and the lake equals the source."""
    db = EmulatedDb2(tmp_path / "db2")
    db.create_table("APP", "T", [("ID", "INTEGER", False), ("V", "VARCHAR(10)", True)], ["ID"])
    db.add_table("APP", "T")
    with db.transaction() as tx:
        for i in range(1, 6):
            tx.insert("APP", "T", {"ID": i, "V": f"v{i}"})
    db.capture.cycle()
    pipeline = db2_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 1}, {"V": "before"})
        tx.insert("APP", "T", {"ID": 6, "V": "v6"})
    db.set_state("APP", "T", "I")
    db.add_column("APP", "T", "W", "INTEGER")
    db.add_column("ASNCDC", "CDC_APP_T", "W", "INTEGER")
    db.set_state("APP", "T", "A")
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 2}, {"W": 5})
        tx.insert("APP", "T", {"ID": 7, "V": "v7", "W": 9})
    db.capture.cycle()
    pipeline.mine()
    assert_lake_equals_emulated(spark, pipeline, db)
    entry = pipeline.control.latest_entries()["APP.T"]
    assert entry.schema is not None and entry.schema.column_names == ["ID", "V", "W"]

    db.rename_column("APP", "T", "V", "NAME")
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 3}, {"NAME": "renamed"})
    db.capture.cycle()
    pipeline.mine()
    assert_lake_equals_emulated(spark, pipeline, db)
    entry = pipeline.control.latest_entries()["APP.T"]
    assert entry.schema is not None and entry.schema.column_names == ["ID", "NAME", "W"]


def test_the_offline_procedure_lands_its_schema_and_a_cd_table_recreated_too_late_is_a_lost_range(
        spark: Any, tmp_path: Path) -> None:
    """Offline procedure (docs/db2.md): with the lake caught up, the registration removed (its CD table dropped),
    the source altered and registered again: a schema-history entry, rows after it in the new shape. Done again
    with a transaction the lake had not read: the lost range is named, and nothing is merged."""
    from cdclake.errors import PositionLostError

    db = EmulatedDb2(tmp_path / "db2")
    db.create_table("APP", "T", [("ID", "INTEGER", False), ("V", "VARCHAR(10)", True)], ["ID"])
    db.add_table("APP", "T")
    with db.transaction() as tx:
        for i in range(1, 4):
            tx.insert("APP", "T", {"ID": i, "V": f"v{i}"})
    db.capture.cycle()
    pipeline = db2_pipeline(spark, db, tmp_path / "lake")
    pipeline.snapshot()
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 1}, {"V": "x"})
    db.capture.cycle()
    pipeline.mine()
    db.set_state("APP", "T", "I")
    db.remove_table("APP", "T")
    db.add_column("APP", "T", "W", "INTEGER")
    db.add_table("APP", "T")
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 2}, {"W": 7})
        tx.insert("APP", "T", {"ID": 4, "V": "v4", "W": 8})
    db.capture.cycle()
    pipeline.mine()
    assert_lake_equals_emulated(spark, pipeline, db)
    entry = pipeline.control.latest_entries()["APP.T"]
    assert entry.schema is not None and entry.schema.column_names == ["ID", "V", "W"]

    with db.transaction() as tx:
        tx.delete("APP", "T", {"ID": 3})
    db.capture.cycle()
    position = pipeline.control.last_window().end  # type: ignore[union-attr]
    db.remove_table("APP", "T")
    db.add_table("APP", "T")
    created = db.tables[("ASNCDC", "CDC_APP_T")].created
    lost = db.select('SELECT MAX(IBMSNAP_COMMITSEQ) FROM ASNCDC."IBMSNAP_UOW"')[0][0]
    with db.transaction() as tx:
        tx.insert("APP", "T", {"ID": 5, "V": "v5", "W": 9})
    db.capture.cycle()
    with pytest.raises(PositionLostError) as err:
        pipeline.mine()
    from cdclake.sources.db2.position import CommitSeqPosition, show

    start = CommitSeqPosition.from_dict(position)
    assert str(err.value) == (
        f"APP.T: its CD table ASNCDC.CDC_APP_T was created at {created.isoformat(' ')}, after the lake's position "
        f"{start.describe()}; the changes of the transactions committed in between (up to {show(lost.hex())}) were "
        "in the CD table it replaced, or not captured\n"
        "  fix: re-snapshot it: `cdclake snapshot --force --tables 'APP\\.T'`; before recreating a CD table, mine "
        "until the lake has everything (docs/db2.md, offline procedure)")


def test_reconcile_backfill_quality_gates_and_report_work_for_db2(spark: Any, db: EmulatedDb2, tmp_path: Path) -> None:
    """The commands around mining, on Db2: quality gates after the snapshot and a window, reconcile finding and
    repairing (by key-filtered backfills read from the source) a lost, a stale and an extra row, a resnapshot
    backfill of a key range, status and the HTML report."""
    rng = random.Random(3)
    with db.transaction() as tx:
        for i in range(1, 41):
            tx.insert("APP", "ORDERS", _row(rng, i))
    db.capture.cycle()
    quality = ("quality:\n  enabled: true\n  after_snapshot: true\ntables:\n  APP.ORDERS:\n    expectations:\n"
               "      - {type: expect_column_values_to_not_be_null, kwargs: {column: ID}}\n")
    pipeline = db2_pipeline(spark, db, tmp_path / "lake", include=r"APP\.ORDERS", extra=quality)
    pipeline.snapshot()
    with db.transaction() as tx:
        tx.update("APP", "ORDERS", {"ID": 2}, {"NAME": "changed"})
        tx.delete("APP", "ORDERS", {"ID": 3})
    db.capture.cycle()
    window = pipeline.mine()
    results = spark.read.format("delta").load(pipeline.layout.quality)
    assert results.where("window_id IS NULL").count() > 0  # the snapshot's gate ran
    assert results.where(f"window_id = {window.window_id} AND NOT success").count() == 0

    break_three_rows_and_reconcile(spark, pipeline, "APP.ORDERS", "ID", lost=5, stale=7, stale_set="NAME = 'wrong'",
                                   extra=999)
    assert_lake_equals_emulated(spark, pipeline, db)
    path = pipeline.layout.target("APP.ORDERS")

    spark.sql(f"UPDATE delta.`{path}` SET AMOUNT = -1 WHERE ID BETWEEN 10 AND 12")
    pipeline.backfill("APP.ORDERS", where="ID BETWEEN 10 AND 12")
    assert_lake_equals_emulated(spark, pipeline, db)
    with db.transaction() as tx:
        tx.update("APP", "ORDERS", {"ID": 4}, {"NAME": "pending"})
    db.capture.cycle()
    committed = db.select('SELECT MAX(IBMSNAP_LOGMARKER) FROM ASNCDC."IBMSNAP_UOW"')[0][0]
    (status,) = pipeline.status()
    assert (status["source_table"], status["rows"], status["distance"], status["distance_unit"]) == (
        "APP.ORDERS", len(db.rows("APP", "ORDERS")), 2, "CD rows")  # the update's D and I rows
    assert status["pending_since"].startswith(committed[:10])
    assert "APP.ORDERS" in pipeline.report(tmp_path / "report.html").read_text()
