"""The JVM decoder fast path gives exactly the Python decoder's log rows.

``decode_all(..., jvm=True)`` decodes commits, rollbacks and the common DML statement forms in
Spark SQL with ``cdclake.oracle.RedoFastPath``; everything else still goes to the Python decoder.
Each test decodes the same window both ways and compares every column of every row (images as
text), and checks the fast path really took the rows it should.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pytest
from cdclake.schema import TableSchema
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.decode import DecodePlan, decode_all, fast_path_plan, prepare, register_fast_path
from cdclake.sources.oracle.logminer import _arrow_chunk, _CommitRanks
from cdclake.sources.oracle.source import RAW_DDL
from cdclake.sources.oracle.types import column_from_oracle
from cdclake.testing.logminer_sim import SimulatedOracle

WIDE = [("ID", "NUMBER(10)"), ("AMOUNT", "NUMBER(12,2)"), ("FREE", "NUMBER"), ("RATE", "FLOAT"),
        ("NAME", "VARCHAR2(200)"), ("CODE", "CHAR(5)"), ("NAT", "NVARCHAR2(50)"), ("BORN", "DATE"),
        ("SEEN", "TIMESTAMP(3)"), ("NANO", "TIMESTAMP(9)"), ("PLAIN", "TIMESTAMP")]
# A table the fast path leaves to Python (a RAW column), mined in the same window.
OTHER = [("ID", "NUMBER(10)"), ("BITS", "RAW(16)"), ("NAME", "VARCHAR2(20)")]
ODD_TEXT = ["", "O'Brien", "''", "a, \"B\" = 'c'", "x' and \"Y\" = 'z", "line\nbreak\ttab", "ctl\x01\x1f",
            "back\\slash", "quote\"d", "é ü 😀", "  padded  ", ")", "NULL", "TO_DATE('x')", "-1", "'"]


def _schema(owner: str, table: str, columns: list[tuple[str, str]]) -> TableSchema:
    return TableSchema(owner, table, [column_from_oracle(n, t) for n, t in columns], ["ID"])


def _value(rng: random.Random, name: str, i: int) -> Any:
    if rng.random() < 0.12:
        return None
    if name == "AMOUNT":
        return Decimal(rng.randint(-10**9, 10**9)) / 100
    if name == "FREE":
        return rng.choice([Decimal(rng.randint(-10**6, 10**6)) / 1000, Decimal("0.5"), Decimal(10**30 + 7),
                           Decimal("100"), rng.randint(-5, 5)])
    if name == "RATE":
        return Decimal(rng.randint(0, 10**5)) / 7
    if name in ("NAME", "NAT"):
        return rng.choice(ODD_TEXT + [f"name {i}"])
    if name == "CODE":
        return rng.choice(["AB", "ABCDE", "x'y", "é"])
    if name == "BORN":
        return dt.datetime(1900, 1, 1) + dt.timedelta(seconds=rng.randint(0, 4 * 10**9))
    return dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**13))


def _window(spark: Any, db: SimulatedOracle, lo: int) -> Any:
    import pyarrow as pa

    rows = db.redo(lo, db.current_scn)
    table = _arrow_chunk(pa, rows, 1, 0, _CommitRanks())
    return prepare(spark.createDataFrame(table, schema=RAW_DDL), continuations=False, rank=False)


def _both(prepared: Any, plan: DecodePlan) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    fast = sorted(tuple(r) for r in decode_all(prepared, plan, jvm=True).collect())
    slow = sorted(tuple(r) for r in decode_all(prepared, plan, jvm=False).collect())
    return fast, slow


def _fast_taken(spark: Any, prepared: Any, plan: DecodePlan) -> int:
    name = register_fast_path(spark, plan)
    assert name is not None, "the JVM fast path is not registered: is .cache/jars/cdclake-jvm.jar built?"
    return prepared.where(f"OPERATION_CODE IN (1, 2, 3) AND {name}(SQL_REDO, concat(SEG_OWNER, '.', TABLE_NAME), "
                          "IDX, OPERATION_CODE) IS NOT NULL").count()


def _plan(*schemas: TableSchema) -> DecodePlan:
    plan = DecodePlan([r"APP\..*"], [])
    for s in schemas:
        plan.versions[s.qualified_name] = [(-1, 3, s.to_json())]
    return plan


@pytest.mark.parametrize("options", [
    {"literal_split": None},
    {"literal_split": 8, "number_leading_zero": True, "shuffle_where": True, "omit_trailing_nulls": False},
], ids=["logminer-defaults", "split-literals-leading-zeros"])
def test_random_window_decodes_the_same_in_the_jvm_and_in_python(spark: Any, options: dict[str, Any]) -> None:
    rng = random.Random(7)
    db = SimulatedOracle(seed=7, **options)
    db.create_table("APP", "WIDE", WIDE, ["ID"])
    db.create_table("APP", "OTHER", OTHER, ["ID"])
    lo = db.current_scn
    live: list[int] = []
    next_id = 0
    for i in range(400):
        tx = db.begin()
        if i % 17 == 0:  # rolled back: its changes never reach the lake, but are decoded
            tx.insert("APP", "WIDE", {"ID": 10**6 + i, "NAME": "gone"})
            tx.rollback()
            continue
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.45 or len(live) < 2:
                row = {c: _value(rng, c, i) for c, _ in WIDE if c != "ID"}
                tx.insert("APP", "WIDE", {"ID": next_id, **row})
                live.append(next_id)
                next_id += 1
            elif roll < 0.85:
                cols = rng.sample([c for c, _ in WIDE if c != "ID"], rng.randint(1, 3))
                tx.update("APP", "WIDE", {"ID": rng.choice(live)}, {c: _value(rng, c, i) for c in cols})
            else:
                tx.delete("APP", "WIDE", {"ID": live.pop(rng.randrange(len(live)))})
        if i % 5 == 0:
            tx.insert("APP", "OTHER", {"ID": i, "BITS": bytes([i % 256, 1]), "NAME": "n'x"})
        tx.commit()
    prepared = _window(spark, db, lo)
    plan = _plan(_schema("APP", "WIDE", WIDE), _schema("APP", "OTHER", OTHER))
    fast, slow = _both(prepared, plan)
    assert fast == slow
    changes = sum(1 for r in fast if r[2] == "change")
    taken = _fast_taken(spark, prepared, plan)
    assert changes > 600
    if options["literal_split"] is None:
        # Everything of APP.WIDE but statements with UNISTR (non-ASCII NVARCHAR2/VARCHAR2 text).
        assert taken > changes * 0.6, (taken, changes)
    else:
        assert 0 < taken < changes, (taken, changes)


STATEMENTS = [
    # (statement, taken by the fast path)
    ('insert into "APP"."T"("ID","N","D","TS","S") values (\'1\',\'2.50\',TO_DATE(\'2024-01-02 03:04:05\', '
     '\'YYYY-MM-DD HH24:MI:SS\'),TO_TIMESTAMP(\'2024-01-02 03:04:05.\'),\'\');', True),
    ('insert into "APP"."T"("ID","N") values (1,-0.5)', True),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'+5\')', False),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'.5\')', True),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'-.5\')', True),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'1.\')', False),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'-.50\')', False),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'.25\')', True),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'1e5\')', False),
    ('insert into "APP"."T"("ID","N") values (\'1\',\'2\',\'3\')', False),
    ('insert into "APP"."T"("ID","NOPE") values (\'1\',\'2\')', False),
    ('insert into "APP"."T"("ID","S") values (\'1\',\'a\' || \'b\')', False),
    ('insert into "APP"."T"("ID","S") values (\'1\',UNISTR(\'\\00e9\'))', False),
    ('insert into "APP"."T"("ID","D") values (\'1\',TO_DATE(\'02-JAN-24\', \'DD-MON-RR\'))', False),
    ('insert into "APP"."T"("ID","D") values (\'1\',\'2024-01-02T03:04:05\')', True),
    ('insert into "APP"."T"("ID","D") values (\'1\',TO_TIMESTAMP(\'2024-01-02 03:04:05.5\'))', False),
    ('insert into "APP"."T"("ID","TS") values (\'1\',TO_TIMESTAMP(\'2024-01-02 03:04:05.1234567\'))', True),
    ('insert into "APP"."T"("ID","S") values (\'1\',\'it\'\'s\')', True),
    ('insert into "APP"."T"("ID","S") values (\'1\',\'x\', "Y" = \'z\')', False),
    ('insert into "APP"."T"("ID","S") values (\'1\',null)', False),
    ('insert into "APP"."T" ("ID") values (\'1\')', False),
    ('update "APP"."T" set "S" = \'x\'', True),
    ('update "APP"."T" set "S" = \'x\', "N" = NULL where "ID" = \'1\' and "D" IS NULL', True),
    ('update "APP"."T" set "S" = \'x\' where "ID" = \'1\' and ROWID = \'AAAR3sAAEAAAACXAAA\'', False),
    ('update "APP"."T" a set a."S" = \'x\' where a."ID" = \'1\'', False),
    ('update "APP"."T" set "ID" = \'2\' where "ID" = \'1\' and "S" = \'a\'\'b\'', True),
    ('delete from "APP"."T" where "ID" = \'1\' and "S" = \'x\' and "N" = \'3.25\'', True),
    ('delete from "APP"."T"', True),
    ('delete from "APP"."T" where "ID" = \'1\' and "S" = Unsupported Type', False),
    ('delete from "APP"."T" where "ID" = \'1\';  ', False),
    ('insert into "APP"."T"("ID","S") values (\'1\',\'unterminated)', False),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'100\')', True),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'1.50\')', False),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'0012\')', False),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'-0.125\')', True),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'' + "9" * 30 + '\')', True),
    ('insert into "APP"."T"("ID","P") values (\'1\',\'0.' + "1" * 39 + '\')', True),
    ('insert into "APP"."T"("ID") values (\'x1\')', False),
    ('select 1 from dual', False),
]
T_COLUMNS = [("ID", "NUMBER(10)"), ("N", "NUMBER(10,2)"), ("D", "DATE"), ("TS", "TIMESTAMP(9)"),
             ("S", "VARCHAR2(30)"), ("P", "NUMBER")]


def _statement_rows(spark: Any) -> Any:
    base = dict(SCN=5000, START_SCN=None, COMMIT_SCN=None, TIMESTAMP=dt.datetime(2024, 1, 1),
                COMMIT_TIMESTAMP=None, XID="0A0B", OPERATION=None, SEG_OWNER="APP", TABLE_NAME="T",
                ROW_ID="AAAR3sAAEAAAACXAAA", ROLLBACK=0, RS_ID=" 0x1 ", SSN=0, CSF=0, THREAD=1,
                USERNAME="U", INFO=None, WINDOW_ID=1, K=None)
    rows = []
    for i, (sql, _) in enumerate(STATEMENTS):
        code = {"i": Q.OP_INSERT, "u": Q.OP_UPDATE, "d": Q.OP_DELETE}.get(sql[0], Q.OP_INSERT)
        rows.append({**base, "IDX": i, "OPERATION_CODE": code, "SQL_REDO": sql, "SCN": 5000 + i})
    rows.append({**base, "IDX": len(rows), "OPERATION_CODE": Q.OP_COMMIT, "SQL_REDO": "commit", "K": 1,
                 "COMMIT_TIMESTAMP": dt.datetime(2024, 1, 1, 0, 0, 1), "THREAD": None})
    rows.append({**base, "IDX": len(rows), "OPERATION_CODE": Q.OP_ROLLBACK, "SQL_REDO": "rollback", "XID": ""})
    names = [f.split(" ")[0] for f in RAW_DDL.split(", ")]
    return spark.createDataFrame([tuple(r[n] for n in names) for r in rows], RAW_DDL)


def test_statement_forms_outside_the_fast_path_go_to_python(spark: Any) -> None:
    """Each statement decodes alike both ways; the fast path takes exactly the forms it should."""
    prepared = _statement_rows(spark)
    plan = _plan(TableSchema("APP", "T", [column_from_oracle(n, t) for n, t in T_COLUMNS], ["ID"]))
    fast, slow = _both(prepared, plan)
    assert fast == slow
    name = register_fast_path(spark, plan)
    taken = {r.IDX for r in prepared.where(
        f"{name}(SQL_REDO, concat(SEG_OWNER, '.', TABLE_NAME), IDX, OPERATION_CODE) IS NOT NULL").collect()}
    expected = {i for i, (_, ok) in enumerate(STATEMENTS) if ok}
    assert taken == expected, {"taken, not expected": [STATEMENTS[i][0] for i in taken - expected],
                               "expected, not taken": [STATEMENTS[i][0] for i in expected - taken]}


def test_schema_versions_within_the_window_follow_the_redo_index(spark: Any) -> None:
    """A DDL in the window gives later rows another schema version (here: column P added at index
    10, the table dropped at index 30): both decoders pick the same version for each row."""
    prepared = _statement_rows(spark)
    without_p = TableSchema("APP", "T", [column_from_oracle(n, t) for n, t in T_COLUMNS if n != "P"], ["ID"])
    with_p = TableSchema("APP", "T", [column_from_oracle(n, t) for n, t in T_COLUMNS], ["ID"])
    plan = DecodePlan([r"APP\..*"], [])
    plan.versions["APP.T"] = [(-1, 3, without_p.to_json()), (10, 4, with_p.to_json()), (30, 5, None)]
    fast, slow = _both(prepared, plan)
    assert fast == slow
    versions = {r[1]: r[8] for r in fast if r[2] == "change" and r[8] is not None}
    assert versions[1] == 3 and versions[20] == 4 and all(idx <= 30 for idx in versions)


def test_tables_with_other_column_types_are_left_to_python() -> None:
    plan = _plan(_schema("APP", "OTHER", OTHER))
    assert fast_path_plan(plan) is None
    plan = _plan(_schema("APP", "OTHER", OTHER), _schema("APP", "WIDE", WIDE), _schema("HR", "WIDE", WIDE))
    text = fast_path_plan(plan)
    assert text is not None and '"APP.OTHER": [[-1, 3, null]]' in text and "HR.WIDE" not in text
