"""Oracle schema changes on the LogMiner simulator, through the same model as MySQL's
(docs/schema-changes.md): each applied at its SCN between the changes around it, in both table modes;
one that cannot be applied parks only its table, and ``backfill`` brings it back."""

from __future__ import annotations

import pytest
from cdclake.errors import TablesParkedError
from cdclake.testing.logminer_sim import SimulatedOracle

from tests.integration.oracle_helpers import assert_lake_equals_simulated, oracle_pipeline

T = '"APP"."T"'


def _dml(db: SimulatedOracle, table: str, new: int, upd: int, gone: int) -> None:
    tx = db.begin()
    tx.insert("APP", table, {"ID": new})
    tx.update("APP", table, {"ID": upd}, {"K": new})
    tx.delete("APP", table, {"ID": gone})
    assert tx.commit() is not None


def test_every_kind_of_change_is_applied_and_an_unappliable_one_parks_its_table(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """In the default table mode; the spark mode's ways of changing a target (column mapping) are the
    engine's, the same for every source, and tests/engine/test_schema_changes.py runs them."""
    db = SimulatedOracle(seed=91)
    base = [("ID", "NUMBER(10)"), ("K", "NUMBER(10)"), ("A", "NUMBER(9)"), ("S", "VARCHAR2(20 CHAR)"),
            ("D", "NUMBER(12,2)")]
    db.create_table("APP", "T", base, ["ID"])
    db.create_table("APP", "P", base, ["ID"])
    db.create_table("APP", "Q", base, ["ID"])
    for table in ("T", "P", "Q"):
        tx = db.begin()
        for i in range(1, 4):
            tx.insert("APP", table, {"ID": i, "K": i, "A": 10 * i, "S": f"s{i}", "D": i + 0.25})
        tx.commit()
    pipeline = oracle_pipeline(spark, db, tmp_path)
    pipeline.snapshot()

    # window 1: DML, every kind of change with DML between, a rename, an EXCHANGE PARTITION, a FLASHBACK on P
    _dml(db, "T", 10, 1, 3)
    cols = [(c.name, c.type_text) for c in db.table("APP", "T").columns]
    cols = [*cols, ("N", "NUMBER(9)")]
    db.alter_table("APP", "T", f'ALTER TABLE {T} ADD ("N" NUMBER(9) DEFAULT 7 NOT NULL)', cols, defaults={"N": 7})
    db.alter_table("APP", "T", f'ALTER TABLE {T} ADD ("V" NUMBER GENERATED ALWAYS AS ("A" * 2) VIRTUAL)', cols)
    cols = [(n, "NUMBER(18)" if n == "A" else t) for n, t in cols]
    db.alter_table("APP", "T", f'ALTER TABLE {T} MODIFY ("A" NUMBER(18))', cols)
    cols = [(n, "VARCHAR2(40 CHAR)" if n == "S" else t) for n, t in cols]
    db.alter_table("APP", "T", f'ALTER TABLE {T} MODIFY ("S" VARCHAR2(40 CHAR) DEFAULT \'dflt\')', cols)
    _dml(db, "T", 11, 2, 1)
    db.alter_table("APP", "T", f'ALTER TABLE {T} RENAME COLUMN "D" TO "D2"',
                   [("D2" if n == "D" else n, t) for n, t in cols], renamed={"D": "D2"})
    db.drop_column("APP", "T", "S")
    db.rename_table("APP", "T", "T2")
    _dml(db, "T2", 12, 10, 11)
    # rows change without row changes in the redo: Q is read again after the run
    _dml(db, "Q", 15, 1, 3)
    db.alter_table("APP", "Q", '''ALTER TABLE "APP"."Q" EXCHANGE PARTITION P1 WITH TABLE "APP"."X"''')
    db.alter_table("APP", "Q", '''ALTER TABLE "APP"."Q" TRUNCATE PARTITION P2 DROP STORAGE''')
    db.alter_table("APP", "Q", '''ALTER TABLE "APP"."Q" DROP PARTITION P3 UPDATE GLOBAL INDEXES''')
    db.alter_table("APP", "P", '''FLASHBACK TABLE "APP"."P" TO BEFORE DROP''')  # rows without redo rows
    _dml(db, "P", 13, 2, 1)
    with pytest.raises(TablesParkedError) as parked:
        pipeline.mine()
    assert "APP.P" in parked.value.problem and "FLASHBACK" in parked.value.problem
    assert "APP.Q" not in parked.value.problem and "reread_seq" not in pipeline.control.table_states()["APP.Q"].detail
    assert "cdclake backfill --table APP.P" in (parked.value.fix or "")

    # window 2: the others go on; P stays parked until its backfill
    _dml(db, "T2", 14, 12, 2)
    with pytest.raises(TablesParkedError):
        pipeline.mine()
    states = pipeline.control.table_states()
    assert states["APP.T2"].status == "streaming" and states["APP.P"].status == "parked"
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.T2"])
    lake = spark.read.format("delta").load(pipeline.layout.target("APP.T2"))
    assert [c for c in lake.columns if not c.startswith("__")] == ["ID", "K", "A", "D2", "N"]
    pipeline.backfill("APP.P")
    assert pipeline.control.table_states()["APP.P"].status == "streaming"
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.P", "APP.Q", "APP.T2"])
    pipeline.mine()  # nothing parked: an ordinary run
