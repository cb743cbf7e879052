"""Column selection and masking of log rows decoded in Spark (Oracle, the LogMiner simulator): no raw value of a
column left out or masked reaches a file under the lake root, transactions held in flight across windows too.
Log records and committed windows (the MariaDB test's driver and Spark-task decoders, before issue 44):
tests/engine/test_column_rules.py, on the fake source.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.engine.helpers import SALT, raw_values_in

pytestmark = [pytest.mark.integration]


def test_oracle_rules_apply_to_log_rows_and_transactions_held_in_flight(spark: Any, tmp_path: Path) -> None:
    from cdclake.engine.target.changes import typed_select
    from cdclake.testing.logminer_sim import SimulatedOracle

    from tests.integration.oracle_helpers import flashback_reader, oracle_pipeline

    db = SimulatedOracle(seed=5)
    db.create_table("APP", "P", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(30)"), ("SSN", "VARCHAR2(20)"),
                                 ("EMAIL", "VARCHAR2(40)")], ["ID"])
    tx = db.begin()
    for i in (1, 2, 3):
        tx.insert("APP", "P", {"ID": i, "NAME": f"NAME-VISIBLE-{i}", "SSN": f"SSN-RAW-{i}", "EMAIL": f"raw.mail.{i}@x"})
    tx.commit()
    os.environ["CDCLAKE_TEST_SALT"] = SALT
    extra = ('masking: {salt: "${CDCLAKE_TEST_SALT}"}\n'
             "tables:\n  APP.P:\n    exclude_columns: [SSN]\n    mask_columns: {EMAIL: {hash: sha256}}\n")
    lake = tmp_path / "lake"
    p = oracle_pipeline(spark, db, lake, extra=extra)
    p.snapshot()
    held = db.begin()  # open across a window: its rows wait in the in-flight buffer
    held.update("APP", "P", {"ID": 1}, {"SSN": "SSN-RAW-HELD", "EMAIL": "raw.mail.held@x"})
    tx = db.begin()
    tx.insert("APP", "P", {"ID": 4, "NAME": "NAME-VISIBLE-4", "SSN": "SSN-RAW-4", "EMAIL": "raw.mail.4@x"})
    tx.update("APP", "P", {"ID": 2}, {"ID": 20, "EMAIL": "raw.mail.20@x"})
    tx.delete("APP", "P", {"ID": 3})
    tx.commit()
    p.mine()
    assert list(lake.rglob("*.parquet")), "the in-flight buffer holds the open transaction"
    raw = ["SSN-RAW-", "raw.mail."]
    assert not {n: f for n, f in raw_values_in(lake, raw).items() if f}
    held.commit()
    p.mine()

    schema = p.control.latest_entries()["APP.P"].schema
    assert schema is not None
    shown = p.ctx.columns.lake_schema(schema)
    expected = p.ctx.columns.mask_frame("APP.P", flashback_reader(db)(spark, shown, db.current_scn)).selectExpr(
        *typed_select(p.source.types, shown))
    got = spark.read.format("delta").load(p.layout.target("APP.P")).select(*shown.column_names)
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, expected.collect()))
    assert sorted(r.ID for r in got.collect()) == [1, 4, 20] and "SSN" not in got.columns
    email = got.where("ID = 1").first().EMAIL
    assert email == hashlib.sha256((SALT + "raw.mail.held@x").encode()).hexdigest()
    found = raw_values_in(lake, [*raw, "NAME-VISIBLE-4"])
    assert found["NAME-VISIBLE-4"] and not {n: f for n, f in found.items() if f and n in raw}
