"""The emulator's schema procedures keep rows and feed Capture the new shape (docs/db2.md)."""

from __future__ import annotations

from pathlib import Path

from cdclake.testing.db2_emulator import EmulatedDb2


def test_a_column_added_in_the_middle_of_source_and_cd_table_reaches_the_cd_rows(tmp_path: Path) -> None:
    db = EmulatedDb2(tmp_path)
    db.create_table("APP", "T", [("ID", "INTEGER", False), ("B", "VARCHAR(5)", True)], ["ID"])
    db.add_table("APP", "T")
    with db.transaction() as tx:
        tx.insert("APP", "T", {"ID": 1, "B": "x"})
    db.capture.cycle()
    db.set_state("APP", "T", "I")
    db.add_column("APP", "T", "A", "INTEGER", default=7, before="B")
    db.add_column("ASNCDC", "CDC_APP_T", "A", "INTEGER", before="B")
    db.set_state("APP", "T", "A")
    with db.transaction() as tx:
        tx.update("APP", "T", {"ID": 1}, {"A": 8})
    db.capture.cycle()
    assert db.rows("APP", "T") == [{"ID": 1, "A": 8, "B": "x"}]
    cd = [r[2:] for r in db.select('SELECT * FROM "ASNCDC"."CDC_APP_T" ORDER BY 1, 2')]
    assert cd == [("I", 1, None, "x"), ("D", 1, 7, "x"), ("I", 1, 8, "x")]
    assert db.table("ASNCDC", "CDC_APP_T").altered > db.table("ASNCDC", "CDC_APP_T").created


def test_removetable_drops_the_cd_table_and_addtable_makes_a_new_one(tmp_path: Path) -> None:
    db = EmulatedDb2(tmp_path)
    db.create_table("APP", "T", [("ID", "INTEGER", False)], ["ID"])
    db.add_table("APP", "T")
    created = db.table("ASNCDC", "CDC_APP_T").created
    db.remove_table("APP", "T")
    assert db.select("SELECT COUNT(*) FROM ASNCDC.IBMSNAP_REGISTER WHERE SOURCE_TABLE = 'T'") == [(0,)]
    db.add_table("APP", "T")
    assert db.table("ASNCDC", "CDC_APP_T").created > created
