"""The LogMiner simulator (cdclake.testing.logminer_sim): statements, redo shapes, sessions, faults.

The replay test mines a random workload through the simulated connection with a small reference
miner written here (independent of cdclake's own redo parser) and checks it reproduces the
simulator's committed state: redo and model agree, including partial rollbacks and LOB writes.
"""

from __future__ import annotations

import datetime as dt
import doctest
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from cdclake.sources.oracle import queries as Q
from cdclake.testing import logminer_sim
from cdclake.testing.logminer_sim import (
    MAX_SCN,
    RowLockedError,
    SimulatedDatabaseError,
    SimulatedLob,
    SimulatedOperationalError,
    SimulatedOracle,
    UnknownStatementError,
    canonical_value,
    create_typed_tables,
    parse_oracle_type,
    random_workload,
    store_value,
    unhandled_statements,
)

ONLINE = Q.START_OPTIONS["online_catalog"]
I = {name: i for i, name in enumerate(Q.CONTENTS_COLUMNS)}  # noqa: E741


def test_module_doctest() -> None:
    result = doctest.testmod(logminer_sim)
    assert result.failed == 0 and result.attempted > 0


# ---- helpers ---------------------------------------------------------------------------------------

def add_all_logs(cur: Any, db: SimulatedOracle, lo: int) -> None:
    """Add one file per (thread, sequence) needed from ``lo``: archived copy if any, else online."""
    chosen: dict[tuple[int, int], str] = {}
    for t, s, _first, _next, name in cur.execute(Q.ARCHIVED_LOGS, dest_id=1, lo=lo).fetchall():
        chosen[(t, s)] = name
    for t, s, _first, nxt, status, member in cur.execute(Q.ONLINE_LOGS).fetchall():
        if status != "UNUSED" and (t, s) not in chosen and nxt > lo:
            chosen[(t, s)] = member
    for _key, name in sorted(chosen.items()):
        cur.execute(Q.ADD_LOGFILE, name=name)


def mine(db: SimulatedOracle, lo: int, hi: int, owners: list[str] = ["APP"], *, lob: bool = True,  # noqa: B006
         excluded: list[str] = ["C##CDC"], pdb: str | None = None, fetch: int = 10_000,  # noqa: B006
         options: str = ONLINE) -> list[tuple[Any, ...]]:
    conn = db.connect()
    cur = conn.cursor()
    add_all_logs(cur, db, lo)
    cur.execute(Q.START_LOGMNR.format(options=options), lo=lo, hi=hi)
    cur.execute(Q.contents_query(owners, excluded, lob, pdb), {"lo": lo, "hi": hi})
    rows: list[tuple[Any, ...]] = []
    while True:
        chunk = cur.fetchmany(fetch)
        if not chunk:
            break
        rows.extend(chunk)
    cur.execute(Q.END_LOGMNR)
    conn.close()
    return rows


def simple_db(**kw: Any) -> SimulatedOracle:
    db = SimulatedOracle(**kw)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(4000)"), ("N", "NUMBER")], ["ID"])
    return db


# ---- statements ----------------------------------------------------------------------------------

def test_every_queries_statement_is_answered() -> None:
    assert unhandled_statements() == []
    db = SimulatedOracle(threads=2)
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"])
    conn = db.connect()
    cur = conn.cursor()
    scn = db.current_scn
    binds: dict[str, dict[str, Any]] = {
        "TABLE_DDL": {"name": "T", "owner": "APP"}, "ARCHIVED_LOGS": {"dest_id": 1, "lo": 0},
        "OLDEST_ARCHIVED_SCN": {"dest_id": 1}, "SCN_TIMES": {"lo": scn, "hi": scn},
        "FLUSH_TABLE_EXISTS": {"name": "CDCLAKE_FLUSH"}, "FLUSH": {"scn": scn},
        "DICTIONARY_LOGS": {"dest_id": 1, "lo": scn}, "DICTIONARY_CLAIM_INSERT": {"pipeline": "p@/lake"},
    }
    fmt = {"TABLES": {"system_schemas": Q.sql_list(Q.SYSTEM_SCHEMAS)}, "LOCK_TABLE": {"owner": "APP", "table": "T"},
           "FLUSH_TABLE_CREATE": {"table": "CDCLAKE_FLUSH"}, "FLUSH_TABLE_INIT": {"table": "CDCLAKE_FLUSH"},
           "FLUSH": {"table": "CDCLAKE_FLUSH"}, "DICTIONARY_CLAIM_CREATE": {"table": "CLAIM"},
           "DICTIONARY_CLAIM_READ": {"table": "CLAIM"}, "DICTIONARY_CLAIM_INSERT": {"table": "CLAIM"}}
    order = ["FLUSH_TABLE_EXISTS", "FLUSH_TABLE_CREATE", "FLUSH_TABLE_INIT", "FLUSH"]
    names = order + [n for n in logminer_sim._HANDLED if n not in order and n not in (
        "ADD_LOGFILE", "START_LOGMNR", "END_LOGMNR")]
    results = {}
    for name in names:
        sql = getattr(Q, name).format(**fmt.get(name, {}))
        out = cur.execute("  " + sql.replace(" ", "\n  ", 3), binds.get(name, {}))  # whitespace-normalised match
        results[name] = out.fetchall() if out is not None else None
    conn.commit()
    assert results["FLUSH_TABLE_EXISTS"] == [(0,)]
    assert results["CURRENT_SCN"][0][0] >= scn
    assert results["DATABASE_INFO"] == [("ORCL", "ARCHIVELOG", "YES", "NO", "NO")]
    assert results["DATABASE_ROLE"] == [(1_620_554_931, "PRIMARY", "READ WRITE", 1)]
    assert results["DICTIONARY_LOGS"] == [] and results["DICTIONARY_CLAIM_READ"] == []
    assert results["VERSION"] == [("19.0.0.0.0",)]
    assert ("LOGMINING",) in results["SESSION_PRIVILEGES"] and ("SELECT_CATALOG_ROLE",) in results["SESSION_ROLES"]
    assert results["SESSION_USER"] == [("C##CDC",)]
    assert results["MAX_STRING_SIZE"] == [("STANDARD",)]
    assert results["ALL_COLUMN_LOGGING"] == [("APP", "T")]
    assert ("APP", "T") in results["TABLES"] and ("C##CDC", "CDCLAKE_FLUSH") in results["TABLES"]
    assert not any(owner in Q.SYSTEM_SCHEMAS for owner, _t in results["TABLES"])
    ddl = results["TABLE_DDL"][0][0]
    assert isinstance(ddl, SimulatedLob) and 'CREATE TABLE "APP"."T"' in ddl.read() and "NUMBER(10,0)" in str(ddl)
    assert results["OLDEST_OPEN_TRANSACTION"][0][0] < results["CURRENT_SCN"][0][0]  # the flush transaction
    assert cur.execute(Q.OLDEST_OPEN_TRANSACTION).fetchall() == [(None,)]  # committed since
    assert results["THREADS"] == [(1, "OPEN", "PUBLIC"), (2, "OPEN", "PUBLIC")]
    assert results["ARCHIVE_DESTINATIONS"] == [(1, "LOG_ARCHIVE_DEST_1")]
    assert [r[4] for r in results["ONLINE_LOGS"]] == ["UNUSED", "UNUSED", "CURRENT"] * 2
    assert all(r[3] == MAX_SCN for r in results["ONLINE_LOGS"] if r[4] == "CURRENT")
    assert results["ARCHIVED_LOGS"] == [] and results["OLDEST_ARCHIVED_SCN"] == []
    assert isinstance(results["SCN_TIMES"][0][0], dt.datetime)
    assert cur.execute(Q.FLUSH_TABLE_EXISTS, name="CDCLAKE_FLUSH").fetchall() == [(1,)]
    assert db.rows("C##CDC", "CDCLAKE_FLUSH") == [{"LAST_SCN": scn}]
    assert cur.description is not None and cur.description[0][0] == "COUNT(*)"


def test_unknown_statement_names_it() -> None:
    cur = SimulatedOracle().connect().cursor()
    with pytest.raises(UnknownStatementError, match="select 1 from dual"):
        cur.execute("select 1\n from dual")
    with pytest.raises(SimulatedDatabaseError, match="^ORA-00933"):
        cur.execute(Q.CURRENT_SCN + ";")
    with pytest.raises(UnknownStatementError, match="ORDER BY"):
        cur.execute("SELECT SCN FROM V$LOGMNR_CONTENTS WHERE SCN > 1 ORDER BY SCN")


def test_description_and_cursor_protocol() -> None:
    db = simple_db()
    cur = db.connect().cursor()
    assert cur.execute(Q.THREADS) is cur
    assert [d[0] for d in cur.description] == ["THREAD#", "STATUS", "ENABLED"]
    assert len(cur.description[0]) == 7
    assert cur.execute(Q.SCN_TIMES, {"lo": db.start_scn, "hi": db.current_scn}) is cur
    assert [d[0] for d in cur.description] == ["SCN_TO_TIMESTAMP(:LO)", "SCN_TO_TIMESTAMP(:HI)"]
    cur.execute(Q.ONLINE_LOGS)
    assert cur.description[-1][0] == "MIN(F.MEMBER)"
    assert list(cur)[0][0] == 1 and cur.rowcount == 3
    with pytest.raises(SimulatedDatabaseError, match="^DPY-4010"):
        cur.execute(Q.ARCHIVED_LOGS, dest_id=1)
    with pytest.raises(SimulatedDatabaseError, match="^DPY-4008"):
        cur.execute(Q.THREADS, lo=1)


# ---- redo shapes -------------------------------------------------------------------------------------

def test_transaction_rows_and_sql_redo_shapes() -> None:
    db = SimulatedOracle(threads=2, start_scn=5000)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(30)"), ("AMT", "NUMBER(12,2)"),
                                 ("D", "DATE"), ("NOTE", "VARCHAR2(10)")], ["ID"])
    lo = db.current_scn
    tx = db.begin(thread=2, username="APP")
    rid = tx.insert("APP", "T", {"ID": 1, "NAME": "it's", "AMT": Decimal("0.5"), "D": dt.datetime(2024, 1, 2, 3, 4, 5)})
    tx.update("APP", "T", {"ID": 1}, {"NAME": "x", "AMT": 12})
    tx.delete("APP", "T", {"ID": 1})
    scn = tx.commit()
    rows = mine(db, lo, scn)
    assert [r[I["OPERATION"]] for r in rows] == ["START", "INSERT", "UPDATE", "DELETE", "COMMIT"]
    start, ins, upd, dele, com = rows
    assert ins[I["SQL_REDO"]] == ('insert into "APP"."T"("ID","NAME","AMT","D") values (\'1\',\'it\'\'s\',\'.5\','
                                  "TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS'))")
    assert upd[I["SQL_REDO"]] == ('update "APP"."T" set "NAME" = \'x\', "AMT" = \'12\' where "ID" = \'1\' and '
                                  "\"NAME\" = 'it''s' and \"AMT\" = '.5' and \"D\" = TO_DATE('2024-01-02 03:04:05', "
                                  "'YYYY-MM-DD HH24:MI:SS') and \"NOTE\" IS NULL")
    assert dele[I["SQL_REDO"]].startswith('delete from "APP"."T" where "ID" = \'1\' and "NAME" = \'x\'')
    assert ins[I["ROW_ID"]] == upd[I["ROW_ID"]] == dele[I["ROW_ID"]] == rid and len(rid) == 18
    assert start[I["SCN"]] == ins[I["SCN"]] == start[I["START_SCN"]] == com[I["START_SCN"]]
    assert [r[I["COMMIT_SCN"]] for r in rows] == [None, None, None, None, scn]
    assert com[I["COMMIT_TIMESTAMP"]] == com[I["TIMESTAMP"]] and isinstance(com[I["TIMESTAMP"]], dt.datetime)
    assert {r[I["XID"]] for r in rows} == {tx.xid_hex} and re.fullmatch(r"[0-9A-F]{16}", tx.xid_hex)
    assert {r[I["THREAD#"]] for r in rows} == {2} and {r[I["USERNAME"]] for r in rows} == {"APP"}
    assert all(re.fullmatch(r" 0x[0-9a-f]{6}\.[0-9a-f]{8}\.[0-9a-f]{4} ", r[I["RS_ID"]]) for r in rows)
    assert start[I["ROW_ID"]] == "AAAAAAAAAAAAAAAAAA" and start[I["SEG_OWNER"]] is None


def test_literals_per_type() -> None:
    db = SimulatedOracle(literal_split=5)
    cols = [("ID", "NUMBER(10)"), ("NV", "NVARCHAR2(20)"), ("C", "CHAR(5)"), ("TS", "TIMESTAMP(6)"),
            ("TS0", "TIMESTAMP(9)"), ("TZ", "TIMESTAMP(6) WITH TIME ZONE"), ("LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"),
            ("R", "RAW(16)"), ("YM", "INTERVAL YEAR TO MONTH"), ("DS", "INTERVAL DAY(2) TO SECOND(6)"),
            ("BD", "BINARY_DOUBLE"), ("LONGTXT", "VARCHAR2(100)")]
    db.create_table("APP", "L", cols, ["ID"])
    lo = db.current_scn
    tx = db.begin()
    tx.insert("APP", "L", {"ID": 7, "NV": "café😀", "C": "ab", "TS": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
                           "TS0": "2024-01-02 03:04:05", "TZ": "2024-01-02 03:04:05.5 +02:00",
                           "LTZ": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
                           "R": b"\x0a\xff", "YM": "+01-02", "DS": "+01 02:03:04.5", "BD": 1.5,
                           "LONGTXT": "abcdefghijkl"})
    scn = tx.commit()
    sql = [r for r in mine(db, lo, scn) if r[I["OPERATION"]] == "INSERT"][0][I["SQL_REDO"]]
    values = sql.split(" values (", 1)[1]
    assert values == (
        "'7','caf' || UNISTR('\\00e9\\d83d\\de00'),'ab   ',TO_TIMESTAMP('2024-01-02 03:04:05.123456'),"
        "TO_TIMESTAMP('2024-01-02 03:04:05.'),TO_TIMESTAMP_TZ('2024-01-02 03:04:05.5 +02:00'),"
        "TO_TIMESTAMP('2024-01-02 01:04:05.'),HEXTORAW('0AFF'),TO_YMINTERVAL('+01-02'),"
        "TO_DSINTERVAL('+01 02:03:04.500000'),'1.5E+000','abcde' || 'fghij' || 'kl')")
    assert db.canonical("APP", "L") == [{
        "ID": "7", "NV": "café😀", "C": "ab   ", "TS": "2024-01-02T03:04:05.123456",
        "TS0": "2024-01-02T03:04:05.000000000", "TZ": "2024-01-02T03:04:05.500000+02:00",
        "LTZ": "2024-01-02T01:04:05.000000+00:00", "R": "0aff", "YM": "P1Y2M", "DS": "P1DT2H3M4.5S", "BD": "1.5",
        "LONGTXT": "abcdefghijkl"}]


@pytest.mark.parametrize(("type_text", "value", "canonical"), [
    ("NUMBER(10)", 42, "42"),
    ("NUMBER(12,2)", Decimal("1.005"), "1.01"),
    ("NUMBER(12,2)", "7.50", "7.5"),
    ("NUMBER", Decimal("1E+5"), "100000"),
    ("NUMBER", Decimal("-0.00012300"), "-0.000123"),
    ("NUMBER(38)", 10**37 + 1, str(10**37 + 1)),
    ("NUMBER(5,-2)", 12345, "12300"),
    ("FLOAT", 2.5, "2.5"),
    ("BINARY_DOUBLE", 1e21, "1000000000000000000000"),
    ("BINARY_FLOAT", 0.1, "0.1"),
    ("VARCHAR2(10)", "", None),
    ("CHAR(3)", "a", "a  "),
    ("CLOB", "", ""),
    ("DATE", dt.datetime(2024, 1, 2, 3, 4, 5, 999), "2024-01-02T03:04:05"),
    ("TIMESTAMP(3)", "2024-01-02 03:04:05.1235", "2024-01-02T03:04:05.124"),
    ("TIMESTAMP(0)", dt.datetime(2024, 1, 2, 3, 4, 5, 600000), "2024-01-02T03:04:06"),
    ("TIMESTAMP(9)", "2024-01-02 03:04:05.123456789", "2024-01-02T03:04:05.123456789"),
    ("TIMESTAMP WITH TIME ZONE", "2024-01-02 03:04:05 Europe/Paris", "2024-01-02T03:04:05.000000 Europe/Paris"),
    ("TIMESTAMP(2) WITH TIME ZONE", "2024-01-02 03:04:05.129 -05:30", "2024-01-02T03:04:05.13-05:30"),
    ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-02 03:04:05 +02:00", "2024-01-02T01:04:05.000000+00:00"),
    ("RAW(4)", bytes.fromhex("0AFF"), "0aff"),
    ("BLOB", b"", ""),
    ("INTERVAL YEAR(3) TO MONTH", "-1-14", "-P2Y2M"),
    ("INTERVAL DAY TO SECOND", dt.timedelta(days=-1, hours=1), "-P0DT23H0M0S"),
    ("INTERVAL DAY TO SECOND(3)", "+00 00:00:00.0004", "P0DT0H0M0S"),
])
def test_canonical_values(type_text: str, value: Any, canonical: str | None) -> None:
    t = parse_oracle_type(type_text)
    assert canonical_value(t, store_value(t, value)) == canonical


def test_number_errors_and_types() -> None:
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01438"):
        store_value(parse_oracle_type("NUMBER(3,1)"), 123)
    with pytest.raises(SimulatedDatabaseError, match="^ORA-12899"):
        store_value(parse_oracle_type("VARCHAR2(2)"), "abc")
    assert parse_oracle_type("integer").kind == "NUMBER" and parse_oracle_type("integer").precision == 38
    assert parse_oracle_type("SDO_GEOMETRY").kind == "UNSUPPORTED"
    assert parse_oracle_type("timestamp (3) with local time zone").kind == "TSLTZ"


def test_csf_split_of_long_redo() -> None:
    db = simple_db(literal_split=1000)
    lo = db.current_scn
    tx = db.begin()
    text = "é" + "q'" * 1999 + "z"  # 4000 chars; quotes double in the literal
    tx.insert("APP", "T", {"ID": 1, "NAME": text})
    scn = tx.commit()
    rows = [r for r in mine(db, lo, scn) if r[I["OPERATION"]] == "INSERT"]
    assert len(rows) >= 2
    assert [r[I["CSF"]] for r in rows] == [1] * (len(rows) - 1) + [0]
    assert all(len(r[I["SQL_REDO"]]) == 4000 for r in rows[:-1])
    assert len({(r[I["SCN"]], r[I["RS_ID"]], r[I["ROW_ID"]]) for r in rows}) == 1
    sql = "".join(r[I["SQL_REDO"]] for r in rows)
    assert sql.startswith('insert into "APP"."T"("ID","NAME") values (\'1\',UNISTR(\'\\00e9\') || \'q\'\'q')
    assert sql.count(" || ") == 4  # UNISTR piece + split into 1000-character fragments
    assert parse_literal(sql.split(",", 2)[2][:-1]) == text


def test_supplemental_logging_shapes_where() -> None:
    db = SimulatedOracle(shuffle_where=True, seed=3)
    db.create_table("APP", "A", [("ID", "NUMBER(10)"), ("X", "NUMBER"), ("Y", "NUMBER"), ("DOC", "CLOB")], ["ID"])
    db.create_table("APP", "P", [("ID", "NUMBER(10)"), ("X", "NUMBER"), ("Y", "NUMBER")], ["ID"],
                    supplemental_all=False)
    lo = db.current_scn
    tx = db.begin()
    for t in ("A", "P"):
        tx.insert("APP", t, {"ID": 1, "X": 2, "Y": 3})
        tx.update("APP", t, {"ID": 1}, {"X": 5})
    scn = tx.commit()
    updates = [r[I["SQL_REDO"]] for r in mine(db, lo, scn) if r[I["OPERATION"]] == "UPDATE"]
    where_a = set(updates[0].split(" where ")[1].split(" and "))
    assert where_a == {"\"ID\" = '1'", "\"X\" = '2'", "\"Y\" = '3'"}  # every non-LOB column, any order
    assert set(updates[1].split(" where ")[1].split(" and ")) == {"\"ID\" = '1'", "\"X\" = '2'"}  # key + changed
    assert ("ALL COLUMN LOGGING" not in Q.ALL_COLUMN_LOGGING) is False
    conn = db.connect()
    assert conn.cursor().execute(Q.ALL_COLUMN_LOGGING).fetchall() == [("APP", "A")]


def test_rowid_stable_and_new_after_reinsert() -> None:
    db = simple_db()
    tx = db.begin()
    r1 = tx.insert("APP", "T", {"ID": 1})
    assert tx.update("APP", "T", {"ID": 1}, {"ID": 2}) == r1  # a primary-key update keeps the ROWID
    tx.delete("APP", "T", {"ID": 2})
    r2 = tx.insert("APP", "T", {"ID": 2})
    assert r2 != r1
    tx.commit()
    assert db.rows("APP", "T") == [{"ID": 2, "NAME": None, "N": None}]


def test_partial_and_full_rollback_rows() -> None:
    db = simple_db()
    lo = db.current_scn
    tx = db.begin()
    keep = tx.insert("APP", "T", {"ID": 1, "NAME": "a"})
    tx.savepoint("s1")
    r2 = tx.insert("APP", "T", {"ID": 2})
    tx.update("APP", "T", {"ID": 1}, {"NAME": "b"})
    tx.rollback_to("S1")
    tx.failed_insert("APP", "T", {"ID": 1, "NAME": "dup"})
    scn = tx.commit()
    other = db.begin()
    other.insert("APP", "T", {"ID": 9})
    other.rollback()
    assert db.flushed_scn < db.current_scn  # a rollback does not make LGWR write
    db.flush()
    rows = mine(db, lo, db.current_scn)
    body = [(r[I["OPERATION"]], r[I["ROLLBACK"]], r[I["ROW_ID"]]) for r in rows if r[I["XID"]] == tx.xid_hex]
    assert body == [("START", 0, "AAAAAAAAAAAAAAAAAA"), ("INSERT", 0, keep), ("INSERT", 0, r2), ("UPDATE", 0, keep),
                    ("UPDATE", 1, keep), ("DELETE", 1, r2), ("INSERT", 0, body[6][2]), ("DELETE", 1, body[6][2]),
                    ("COMMIT", 0, "AAAAAAAAAAAAAAAAAA")]
    undo = [r for r in rows if r[I["XID"]] == tx.xid_hex and r[I["ROLLBACK"]] == 1]
    assert undo[0][I["SQL_REDO"]].startswith('update "APP"."T" set "NAME" = \'a\' where ')
    assert [r[I["OPERATION"]] for r in rows if r[I["XID"]] == other.xid_hex] == ["START", "INSERT", "DELETE",
                                                                                  "ROLLBACK"]
    assert db.rows("APP", "T") == [{"ID": 1, "NAME": "a", "N": None}]
    assert scn is not None and db.rows_at("APP", "T", scn) == db.rows("APP", "T")


def test_row_locks() -> None:
    db = simple_db()
    a, b = db.begin(), db.begin(thread=1)
    a.insert("APP", "T", {"ID": 1})
    with pytest.raises(RowLockedError):
        b.insert("APP", "T", {"ID": 1})
    a.commit()
    a2 = db.begin()
    a2.update("APP", "T", {"ID": 1}, {"N": 1})
    with pytest.raises(RowLockedError):
        b.delete("APP", "T", {"ID": 1})
    with pytest.raises(SimulatedDatabaseError, match="^ORA-00054"):
        db.add_column("APP", "T", "X", "NUMBER")
    a2.commit()
    b.delete("APP", "T", {"ID": 1})
    b.commit()
    with pytest.raises(SimulatedDatabaseError, match="^ORA-00001"):
        tx = db.begin()
        tx.insert("APP", "T", {"ID": 5})
        tx.insert("APP", "T", {"ID": 5})


def test_lob_rows() -> None:
    db = SimulatedOracle(lob_inline_max=4, lob_chunk=3)
    db.create_table("APP", "D", [("ID", "NUMBER(10)"), ("BODY", "CLOB"), ("BIN", "BLOB")], ["ID"])
    lo = db.current_scn
    tx = db.begin()
    rid = tx.insert("APP", "D", {"ID": 1, "BODY": "hello'x", "BIN": b"\x01\x02"})
    tx.lob_write("APP", "D", {"ID": 1}, "BODY", "hi")
    tx.lob_erase("APP", "D", {"ID": 1}, "BODY", 1, 2)
    tx.lob_write("APP", "D", {"ID": 1}, "BIN", b"\x01\x02\x03\x04\x05")
    scn = tx.commit()
    rows = [r for r in mine(db, lo, scn) if r[I["XID"]] == tx.xid_hex][1:-1]
    shown = [(r[I["OPERATION_CODE"]], r[I["SQL_REDO"]]) for r in rows]
    declare = shown[1][1]
    assert declare.startswith("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6174);")
    assert declare.endswith('BEGIN\n select "BODY" into loc_c from "APP"."D" where "ID" = \'1\' for update;')
    assert shown[0] == (1, 'insert into "APP"."D"("ID","BODY","BIN") values (\'1\',EMPTY_CLOB(),HEXTORAW(\'0102\'))')
    assert shown[2:5] == [(10, " buf_c := 'hel';\n  dbms_lob.write(loc_c, 3, 1, buf_c);"),
                          (10, " buf_c := 'lo''';\n  dbms_lob.write(loc_c, 3, 4, buf_c);"),
                          (10, " buf_c := 'x';\n  dbms_lob.write(loc_c, 1, 7, buf_c);")]
    assert shown[6:8] == [(10, " buf_c := 'hi';\n  dbms_lob.write(loc_c, 2, 1, buf_c);"),
                          (11, " dbms_lob.trim(loc_c, 2);")]
    assert shown[9] == (29, " dbms_lob.erase(loc_c, 1, 2);")
    assert "into loc_b" in shown[10][1]
    assert shown[11:] == [(10, " buf_b := HEXTORAW('010203');\n  dbms_lob.write(loc_b, 3, 1, buf_b);"),
                          (10, " buf_b := HEXTORAW('0405');\n  dbms_lob.write(loc_b, 2, 4, buf_b);")]
    assert {r[I["ROW_ID"]] for r in rows} == {rid}
    assert db.canonical("APP", "D") == [{"ID": "1", "BODY": "h ", "BIN": "0102030405"}]
    no_lob = mine(db, lo, scn, lob=False)
    assert {r[I["OPERATION_CODE"]] for r in no_lob} <= {1, 2, 3, 5, 6, 7, 36}


def test_unsupported_and_missing_scn_rows() -> None:
    db = simple_db()
    lo = db.current_scn
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "NAME": "a"})
    tx.unsupported_update("APP", "T", {"ID": 1}, {"NAME": "b", "N": 3}, ["NAME"])
    tx.unsupported_operation("APP", "T")
    tx.commit()
    db.emit_missing_scn()
    db.emit_missing_scn(owner="APP")
    db.flush()
    rows = mine(db, lo, db.current_scn)
    upd = [r for r in rows if r[I["OPERATION"]] == "UPDATE"][0][I["SQL_REDO"]]
    assert upd.startswith('update "APP"."T" set "NAME" = Unsupported Type, "N" = \'3\' where ')
    assert '"NAME" = Unsupported Type' in upd.split(" where ")[1]
    # a MISSING_SCN row without SEG_OWNER does not pass contents_query's owner filter
    assert [(r[I["OPERATION_CODE"]], r[I["SEG_OWNER"]]) for r in rows
            if r[I["OPERATION"]] in ("UNSUPPORTED", "MISSING_SCN")] == [(255, "APP"), (34, "APP")]
    assert [r[I["SEG_OWNER"]] for r in db.redo() if r[I["OPERATION_CODE"]] == 34] == [None, "APP"]


def test_ddl_rows_and_internal_ddl_filtered() -> None:
    db = SimulatedOracle()
    lo = db.current_scn
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"])
    db.add_column("APP", "T", "X", "VARCHAR2(5)", default="a")
    db.truncate_table("APP", "T")
    db.rename_table("APP", "T", "T2")
    db.drop_table("APP", "T2")
    everything = db.redo(lo)
    assert any(r[I["INFO"]] == "INTERNAL DDL" for r in everything)
    assert any(r[I["SEG_OWNER"]] == "SYS" for r in everything)
    ddl = [r[I["SQL_REDO"]] for r in mine(db, lo, db.current_scn) if r[I["OPERATION_CODE"]] == 5]
    assert ddl == ['CREATE TABLE "APP"."T" ("ID" NUMBER(10) NOT NULL, PRIMARY KEY ("ID"))',
                   'ALTER TABLE "APP"."T" ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS',
                   'ALTER TABLE "APP"."T" ADD ("X" VARCHAR2(5) DEFAULT \'a\')', 'TRUNCATE TABLE "APP"."T"',
                   'ALTER TABLE "APP"."T" RENAME TO "T2"', 'DROP TABLE "APP"."T2"']


def test_schema_history_and_flashback() -> None:
    db = simple_db()
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "NAME": "a"})
    s1 = tx.commit()
    assert s1 is not None
    tx = db.begin()
    tx.update("APP", "T", {"ID": 1}, {"NAME": "b"})
    tx.insert("APP", "T", {"ID": 2})
    open_tx = db.begin()
    open_tx.insert("APP", "T", {"ID": 3})
    s2 = tx.commit()
    assert s2 is not None
    assert db.oldest_open_scn() == open_tx.start_scn
    cur = db.connect().cursor()
    assert cur.execute(Q.OLDEST_OPEN_TRANSACTION).fetchall() == [(open_tx.start_scn,)]
    with pytest.raises(SimulatedDatabaseError, match="^ORA-00054"):
        db.add_column("APP", "T", "X", "NUMBER", default=7)
    open_tx.rollback()
    db.add_column("APP", "T", "X", "NUMBER", default=7)
    s3 = db.current_scn
    assert db.rows_at("APP", "T", s1) == [{"ID": 1, "NAME": "a", "N": None}]
    assert db.rows_at("APP", "T", s2 - 1) == [{"ID": 1, "NAME": "a", "N": None}]
    assert [r["ID"] for r in db.rows_at("APP", "T", s2)] == [1, 2]
    assert db.canonical("APP", "T", s3) == [{"ID": "1", "NAME": "b", "N": None, "X": "7"},
                                           {"ID": "2", "NAME": None, "N": None, "X": "7"}]
    assert [c.name for c in db.schema_at("APP", "T", s2).columns] == ["ID", "NAME", "N"]  # type: ignore[union-attr]
    assert db.schema_at("APP", "T", db.start_scn) is None
    assert db.oldest_open_scn() is None
    with pytest.raises(SimulatedDatabaseError, match="^ORA-08181"):
        cur.execute(Q.SCN_TIMES, lo=db.start_scn - 1, hi=db.current_scn)


# ---- files and the LogMiner session -------------------------------------------------------------------

def test_log_switch_archive_purge_and_errors() -> None:
    db = simple_db(groups_per_thread=2, archive_destinations=2)
    conn = db.connect()
    cur = conn.cursor()
    lo = db.current_scn
    for i in range(4):
        tx = db.begin()
        tx.insert("APP", "T", {"ID": i})
        tx.commit()
        db.switch_log(1)
    # groups reused: sequences 1..3 exist only as (forced) archived copies; 4 INACTIVE? no: 4 closed, 5 CURRENT
    online = cur.execute(Q.ONLINE_LOGS).fetchall()
    assert [(r[1], r[4]) for r in online] == [(4, "ACTIVE"), (5, "CURRENT")]
    archived = cur.execute(Q.ARCHIVED_LOGS, dest_id=1, lo=0).fetchall()
    assert [r[1] for r in archived] == [1, 2, 3]
    assert archived[0][4] == f"/arch/1_1_{logminer_sim.RESETLOGS_ID}.arc"
    db.archive_logs()
    assert [r[1] for r in cur.execute(Q.ARCHIVED_LOGS, dest_id=2, lo=0).fetchall()] == [1, 2, 3, 4]
    assert cur.execute(Q.ARCHIVE_DESTINATIONS).fetchall() == [(1, "LOG_ARCHIVE_DEST_1"), (2, "LOG_ARCHIVE_DEST_2")]
    # the same sequence twice (archived + online copy) -> ORA-01289
    cur.execute(Q.ADD_LOGFILE, name=db.archive_name(1, db.logs(1)[3]))
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01289: cannot add duplicate logfile"):
        cur.execute(Q.ADD_LOGFILE, name=db.member_name(db.logs(1)[3].group))
    # a gap: sequence 3 missing -> ORA-01291 at START_LOGMNR
    for seq in (1, 2):
        cur.execute(Q.ADD_LOGFILE, name=db.archive_name(1, db.logs(1)[seq - 1]))
    cur.execute(Q.ADD_LOGFILE, name=db.member_name(db.current_log(1).group))
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01291: missing logfile") as info:
        cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
    assert info.value.missing == [(1, 3)]  # type: ignore[attr-defined]
    cur.execute(Q.ADD_LOGFILE, name=db.archive_name(2, db.logs(1)[2]))
    cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
    cur.execute(Q.END_LOGMNR)
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01307"):
        cur.execute(Q.END_LOGMNR)
    # purged copies
    db.purge_archived(1, 2, dest_id=1)
    assert [r[1] for r in cur.execute(Q.ARCHIVED_LOGS, dest_id=1, lo=0).fetchall()] == [3, 4]
    assert cur.execute(Q.OLDEST_ARCHIVED_SCN, dest_id=1).fetchall() == [(1, db.logs(1)[2].first_change)]
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01284.*\nORA-00308"):
        cur.execute(Q.ADD_LOGFILE, name=db.archive_name(1, db.logs(1)[0]))
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01284"):
        cur.execute(Q.ADD_LOGFILE, name="/nowhere/x.arc")
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01292"):
        cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01306"):
        cur.execute(Q.contents_query(["APP"], [], False, None), lo=lo, hi=db.current_scn)


def test_noarchivelog_loses_reused_logs() -> None:
    db = simple_db(groups_per_thread=2, log_mode="NOARCHIVELOG")
    lo = db.current_scn
    db.switch_log()
    db.switch_log()
    cur = db.connect().cursor()
    assert [r[1] for r in cur.execute(Q.ONLINE_LOGS).fetchall()] == [2, 3]
    add_all_logs(cur, db, lo)
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01291"):
        cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)


def test_online_member_name_follows_group_reuse() -> None:
    db = simple_db(groups_per_thread=2)
    cur = db.connect().cursor()
    member = db.member_name(db.current_log(1).group)  # sequence 1 now
    db.switch_log()
    db.switch_log()  # the group of sequence 1 now holds sequence 3
    cur.execute(Q.ADD_LOGFILE, name=member)
    assert [(f.thread, f.sequence) for f in cur.connection.logminer_files] == [(1, 3)]


def test_dictionary_from_redo_logs_needs_a_build() -> None:
    db = simple_db()
    cur = db.connect().cursor()
    options = Q.START_OPTIONS["redo_log_catalog"]
    lo = db.current_scn
    cur.execute(Q.ADD_LOGFILE, name=db.member_name(db.current_log().group))
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01371"):
        cur.execute(Q.START_LOGMNR.format(options=options), lo=lo, hi=db.current_scn)
    cur.execute(Q.END_LOGMNR)
    cur.execute(Q.BUILD_DICTIONARY)
    db.switch_log()
    for log in db.logs(1):
        cur.execute(Q.ADD_LOGFILE, name=db.member_name(log.group))
    cur.execute(Q.START_LOGMNR.format(options=options), lo=lo, hi=db.current_scn)
    cur.execute(Q.END_LOGMNR)


# ---- contents filtering ----------------------------------------------------------------------------------

def test_contents_filters_scn_range_ops_owners_users() -> None:
    db = SimulatedOracle()
    for owner in ("APP", "HR"):
        db.create_table(owner, "T", [("ID", "NUMBER(10)")], ["ID"])
    lo = db.current_scn
    scns = []
    for i, (owner, user) in enumerate([("APP", "APP"), ("HR", "APP"), ("APP", "C##CDC"), ("APP", None)]):
        tx = db.begin(username=user)
        tx.insert(owner, "T", {"ID": i})
        scns.append(tx.commit())
    rows = mine(db, lo, db.current_scn)
    dml = [(r[I["SEG_OWNER"]], r[I["USERNAME"]]) for r in rows if r[I["OPERATION_CODE"]] == 1]
    assert dml == [("APP", "APP"), ("APP", None)]  # HR not captured; the pipeline's own user excluded
    assert sum(1 for r in rows if r[I["OPERATION"]] == "COMMIT") == 4  # control rows are never filtered
    both = mine(db, lo, db.current_scn, owners=["APP", "HR"], excluded=[])
    assert len([r for r in both if r[I["OPERATION_CODE"]] == 1]) == 4
    window = mine(db, scns[0], scns[1])  # SCN > lo AND SCN <= hi
    assert [r[I["OPERATION"]] for r in window] == ["START", "COMMIT"] and window[-1][I["SCN"]] == scns[1]
    assert all(scns[0] < r[I["SCN"]] <= scns[1] for r in window)
    # a hand-written query through the same WHERE compiler
    cur = db.connect().cursor()
    add_all_logs(cur, db, lo)
    cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
    cur.execute("SELECT SCN, XID, SRC_CON_NAME, OPERATION FROM V$LOGMNR_CONTENTS WHERE OPERATION_CODE = 7 "
                "AND (USERNAME IS NULL OR USERNAME NOT IN ('APP')) AND SCN >= :a", a=scns[2])
    got = cur.fetchall()
    assert [(r[0], r[3]) for r in got] == [(scns[2], "COMMIT"), (scns[3], "COMMIT")]
    assert isinstance(got[0][1], bytes) and len(got[0][1]) == 8 and got[0][2] is None


def test_pdb_filter() -> None:
    db = SimulatedOracle(cdb="YES")
    db.create_table("APP", "T", [("ID", "NUMBER(10)")], ["ID"])
    db.create_table("APP", "U", [("ID", "NUMBER(10)")], ["ID"], pdb="OTHERPDB")
    lo = db.current_scn
    for t in ("T", "U"):
        tx = db.begin()
        tx.insert("APP", t, {"ID": 1})
        tx.commit()
    rows = mine(db, lo, db.current_scn, pdb="ORCLPDB1")
    assert [r[I["TABLE_NAME"]] for r in rows if r[I["OPERATION_CODE"]] == 1] == ["T"]
    assert db.connect().cursor().execute(Q.DATABASE_INFO).fetchone()[4] == "YES"


def test_without_no_sql_delimiter_and_no_rowid() -> None:
    db = simple_db()
    lo = db.current_scn
    tx = db.begin()
    rid = tx.insert("APP", "T", {"ID": 1})
    tx.delete("APP", "T", {"ID": 1})
    scn = tx.commit()
    rows = mine(db, lo, scn, options="SYS.DBMS_LOGMNR.DICT_FROM_ONLINE_CATALOG")
    sql = [r[I["SQL_REDO"]] for r in rows if r[I["OPERATION_CODE"]] in (1, 2)]
    assert sql[0].endswith(");") and sql[1].endswith(f" and ROWID = '{rid}';")


def test_rac_merge_order() -> None:
    db = simple_db(threads=3)
    lo = db.current_scn
    txs = [db.begin(thread=t) for t in (3, 1, 2)]
    for i, tx in enumerate(txs):
        tx.insert("APP", "T", {"ID": i})
    with db.hold_scn():
        for tx in txs:
            tx.commit()
    rows = mine(db, lo, db.current_scn)
    commits = [r for r in rows if r[I["OPERATION"]] == "COMMIT"]
    assert len({r[I["SCN"]] for r in commits}) == 1
    assert [r[I["THREAD#"]] for r in commits] == [1, 2, 3]  # one SCN: thread order, then redo order
    assert [r[I["SCN"]] for r in rows] == sorted(r[I["SCN"]] for r in rows)
    # the RAC gap check is per thread: without thread 2's file START_LOGMNR fails
    cur = db.connect().cursor()
    for t in (1, 3):
        cur.execute(Q.ADD_LOGFILE, name=db.member_name(db.current_log(t).group))
    with pytest.raises(SimulatedDatabaseError, match="^ORA-01291"):
        cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)


def test_flushed_scn_visibility() -> None:
    db = simple_db()
    conn = db.connect()
    cur = conn.cursor()
    lo = db.current_scn
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1})

    def visible() -> list[str]:
        c = db.connect().cursor()
        c.execute(Q.ADD_LOGFILE, name=db.member_name(db.current_log().group))
        c.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
        c.execute(Q.contents_query(["APP"], ["C##CDC"], False, None), lo=lo, hi=db.current_scn)
        return [r[I["OPERATION"]] for r in c.fetchall()]

    assert visible() == []  # in the log buffer only
    assert db.flushed_scn < db.current_scn
    cur.execute(Q.FLUSH_TABLE_CREATE.format(table="LOG_MINING_FLUSH"))
    cur.execute(Q.FLUSH_TABLE_INIT.format(table="LOG_MINING_FLUSH"))
    conn.commit()
    cur.execute(Q.FLUSH.format(table="LOG_MINING_FLUSH"), scn=db.current_scn)
    assert visible()[:2] == ["START", "INSERT"]
    tx.update("APP", "T", {"ID": 1}, {"N": 2})
    cur.execute(Q.FLUSH.format(table="LOG_MINING_FLUSH"), scn=db.current_scn)
    assert "UPDATE" not in visible()
    conn.commit()  # the flush transaction's commit makes LGWR write
    assert "UPDATE" in visible()
    assert db.flushed_scn == db.current_scn


# ---- failure injection ---------------------------------------------------------------------------------

def test_fail_next_statement_and_fetch() -> None:
    db = simple_db()
    tx = db.begin()
    for i in range(50):
        tx.insert("APP", "T", {"ID": i})
    tx.commit()
    conn = db.connect()
    cur = conn.cursor()
    db.fail_next("CURRENT_SCN", "ORA-00600: internal error code, arguments: [flg0]")
    with pytest.raises(SimulatedDatabaseError, match=r"^ORA-00600") as info:
        cur.execute(Q.CURRENT_SCN)
    assert not isinstance(info.value, SimulatedOperationalError) and info.value.full_code == "ORA-00600"
    assert info.value.args[0].code == 600
    assert cur.execute(Q.CURRENT_SCN).fetchone()[0] > 0  # only once
    db.fail_next("select version", "ORA-12170: TNS:Connect timeout occurred", times=2)
    for _ in range(2):
        conn = db.connect()
        with pytest.raises(SimulatedOperationalError):
            conn.cursor().execute(Q.VERSION)
        with pytest.raises(SimulatedOperationalError, match="^DPY-1001"):
            conn.cursor()
    conn = db.connect()
    cur = conn.cursor()
    add_all_logs(cur, db, db.start_scn)
    cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=db.start_scn, hi=db.current_scn)
    db.fail_next("CONTENTS", "DPY-4011: the database or network closed the connection", after_rows=25)
    cur.execute(Q.contents_query(["APP"], [], False, None), lo=db.start_scn, hi=db.current_scn)
    assert len(cur.fetchmany(20)) == 20
    with pytest.raises(SimulatedOperationalError, match="^DPY-4011"):
        cur.fetchmany(20)
    with pytest.raises(SimulatedOperationalError, match="^DPY-1001"):
        conn.ping()
    db.fail_next("CONNECT", "ORA-12541: TNS:no listener")
    with pytest.raises(SimulatedDatabaseError, match="^ORA-12541"):
        db.connect()
    conn = db.connect()
    conn.cursor().execute(Q.FLUSH_TABLE_CREATE.format(table="F"))
    conn.cursor().execute(Q.FLUSH_TABLE_INIT.format(table="F"))
    db.fail_next("COMMIT", "ORA-03113: end-of-file on communication channel")
    with pytest.raises(SimulatedOperationalError, match="^ORA-03113"):
        conn.commit()
    assert db.rows("C##CDC", "F") == [] and db.open_transactions == []  # the server rolled it back


# ---- export ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_contents(tmp_path: Path, fmt: str) -> None:
    db = simple_db()
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "NAME": "a,b\n'c'"})
    scn = tx.commit()
    path = tmp_path / f"contents.{fmt}"
    n = db.export_contents(path, fmt=fmt)
    table = pacsv.read_csv(path) if fmt == "csv" else pq.read_table(path)
    assert table.column_names == list(Q.CONTENTS_COLUMNS) and table.num_rows == n == len(db.redo())
    data = table.to_pylist()
    assert data[-1]["COMMIT_SCN"] == scn and data[-1]["XID"] == tx.xid_hex
    assert [r for r in data if r["OPERATION"] == "INSERT" and r["SEG_OWNER"] == "APP"][0]["SQL_REDO"].endswith(
        "values ('1','a,b\n''c''')")
    assert db.export_contents(tmp_path / "w.parquet", fmt="parquet", lo=scn - 1, hi=scn) == 1


# ---- unknown objects under the online catalog ------------------------------------------------------------------

def test_online_catalog_renders_unknown_objects_after_ddl() -> None:
    db = SimulatedOracle(track_dictionary=True)
    db.create_table("APP", "T", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(10)")], ["ID"])
    db.create_table("APP", "R", [("ID", "NUMBER(10)")], ["ID"])
    lo = db.current_scn
    tx = db.begin()
    tx.insert("APP", "T", {"ID": 1, "NAME": "ab"})
    tx.insert("APP", "R", {"ID": 100})
    tx.commit()
    before_ddl = mine(db, lo, db.current_scn, owners=["APP", "UNKNOWN"])
    assert [r[I["TABLE_NAME"]] for r in before_ddl if r[I["OPERATION_CODE"]] == 1] == ["T", "R"]
    db.add_column("APP", "T", "X", "NUMBER")
    db.rename_table("APP", "R", "R2")
    hi = db.current_scn
    rows = [r for r in mine(db, lo, hi, owners=["APP", "UNKNOWN"]) if r[I["OPERATION_CODE"]] == 1]
    obj = db.table("APP", "T").obj_id
    assert [(r[I["SEG_OWNER"]], r[I["TABLE_NAME"]]) for r in rows] == [("UNKNOWN", f"OBJ# {obj}"), ("APP", "R2")]
    assert rows[0][I["SQL_REDO"]] == (f'insert into "UNKNOWN"."OBJ# {db.table("APP", "T").obj_id}"("COL 1","COL 2") '
                                      "values (HEXTORAW('c102'),HEXTORAW('6162'))")
    assert rows[0][I["INFO"]] == "Dictionary Version Mismatch"
    assert rows[1][I["SQL_REDO"]] == 'insert into "APP"."R2"("ID") values (\'100\')'
    # with the dictionary in the redo (DICT_FROM_REDO_LOGS), rows render as of the redo
    cur = db.connect().cursor()
    cur.execute(Q.BUILD_DICTIONARY)
    assert [r[I["TABLE_NAME"]] for r in mine(db, lo, hi, owners=["APP", "UNKNOWN"],
                                             options=Q.START_OPTIONS["redo_log_catalog"])
            if r[I["OPERATION_CODE"]] == 1] == ["T", "R"]


# ---- a reference miner: redo and model agree ------------------------------------------------------------------

_LIT = re.compile(r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<func>UNISTR|HEXTORAW|TO_DATE|TO_TIMESTAMP_TZ|TO_TIMESTAMP|
    TO_YMINTERVAL|TO_DSINTERVAL|EMPTY_CLOB|EMPTY_BLOB)\(|(?P<null>NULL)|(?P<unsup>Unsupported\ Type))""", re.X)


def _unistr(body: str) -> str:
    units = re.findall(r"\\([0-9a-fA-F]{4})|(.)", body, re.S)
    raw = "".join(chr(int(h, 16)) if h else ch for h, ch in units)
    return raw.encode("utf-16", "surrogatepass").decode("utf-16")


def _value(text: str, pos: int) -> tuple[Any, int]:
    parts: list[Any] = []
    while True:
        m = _LIT.match(text, pos)
        assert m is not None, text[pos:pos + 80]
        pos = m.end()
        if m.group("str"):
            parts.append(m.group("str")[1:-1].replace("''", "'"))
        elif m.group("null"):
            parts.append(None)
        elif m.group("unsup"):
            parts.append("<unsupported>")
        else:
            func = m.group("func")
            args = re.compile(r"\s*(?:'((?:[^']|'')*)'(?:\s*,\s*'[^']*')?)?\s*\)").match(text, pos)
            assert args is not None
            pos = args.end()
            arg = (args.group(1) or "").replace("''", "'")
            parts.append({"UNISTR": _unistr, "HEXTORAW": bytes.fromhex, "EMPTY_CLOB": lambda a: "",
                          "EMPTY_BLOB": lambda a: b""}.get(func, lambda a: a)(arg))
        m2 = re.compile(r"\s*\|\|").match(text, pos)
        if m2 is None:
            break
        pos = m2.end()
    return (parts[0] if len(parts) == 1 else "".join(parts)), pos


def parse_literal(text: str) -> Any:
    return _value(text, 0)[0]


def parse_dml(sql: str) -> tuple[str, str, str, dict[str, Any]]:
    """(op, owner, table, new values) of our INSERT/UPDATE/DELETE text."""
    m = re.match(r'(insert into|update|delete from) "([^"]+)"\."([^"]+)"', sql)
    assert m is not None, sql[:100]
    op, owner, table = m.groups()
    pos = m.end()
    values: dict[str, Any] = {}
    if op == "insert into":
        cols_m = re.compile(r"\(([^)]*)\) values \(").match(sql, pos)
        assert cols_m is not None
        pos = cols_m.end()
        for col in re.findall(r'"([^"]+)"', cols_m.group(1)):
            values[col], pos = _value(sql, pos)
            pos = re.compile(r"\s*[,)]").match(sql, pos).end()  # type: ignore[union-attr]
    elif op == "update":
        pos = sql.index(" set ", pos) + 5
        while True:
            cm = re.compile(r'\s*"([^"]+)" = ').match(sql, pos)
            assert cm is not None
            values[cm.group(1)], pos = _value(sql, cm.end())
            if not sql.startswith(",", pos):
                break
            pos += 1
    return op.split()[0], owner, table, values


def replay(db: SimulatedOracle, rows: list[tuple[Any, ...]]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """A reference miner: buffer per XID, partial rollbacks by ROW_ID, apply at COMMIT, LOBs reassembled."""
    tables: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    buffers: dict[str, list[tuple[Any, ...]]] = {}
    pending: dict[str, tuple[Any, ...]] = {}
    for r in rows:
        xid = r[I["XID"]]
        if r[I["CSF"]] == 1:
            prev = pending.get(xid)
            pending[xid] = r if prev is None else prev[:I["SQL_REDO"]] + (prev[I["SQL_REDO"]] + r[I["SQL_REDO"]],) + \
                prev[I["SQL_REDO"] + 1:]
            continue
        if xid in pending:
            prev = pending.pop(xid)
            r = prev[:I["SQL_REDO"]] + (prev[I["SQL_REDO"]] + r[I["SQL_REDO"]],) + prev[I["SQL_REDO"] + 1:]
        op = r[I["OPERATION_CODE"]]
        if op == 7:
            for e in buffers.pop(xid, []):
                apply(tables, e)
        elif op == 36:
            buffers.pop(xid, None)
        elif op in (1, 2, 3, 9, 10, 11, 29):
            buf = buffers.setdefault(xid, [])
            if r[I["ROLLBACK"]] == 1:
                for k in range(len(buf) - 1, -1, -1):
                    if buf[k][I["ROW_ID"]] == r[I["ROW_ID"]]:
                        del buf[k]
                        break
                else:
                    raise AssertionError(f"undo row without its change: {r}")
            else:
                buf.append(r)
    return tables


_LOB_COLUMN: dict[str, str] = {}


def apply(tables: dict[tuple[str, str], dict[str, dict[str, Any]]], r: tuple[Any, ...]) -> None:
    key = (r[I["SEG_OWNER"]], r[I["TABLE_NAME"]])
    data = tables.setdefault(key, {})
    rowid, sql, op = r[I["ROW_ID"]], r[I["SQL_REDO"]], r[I["OPERATION_CODE"]]
    if op == 9:
        _LOB_COLUMN[rowid] = re.search(r'select "([^"]+)" into', sql).group(1)  # type: ignore[union-attr]
        return
    if op in (10, 11, 29):
        col = _LOB_COLUMN[rowid]
        old = data[rowid].get(col)
        old = old if old is not None else (b"" if "loc_b" in sql else "")
        if op == 10:
            m = re.search(r":= (.*);\s*dbms_lob\.write\(\w+, (\d+), (\d+), \w+\);$", sql, re.S)
            assert m is not None
            piece, off = parse_literal(m.group(1)), int(m.group(3))
            pad = (b"\x00" if isinstance(old, bytes) else " ") * max(0, off - 1 - len(old))
            data[rowid][col] = old[: off - 1] + pad + piece + old[off - 1 + len(piece):]
        elif op == 11:
            data[rowid][col] = old[: int(re.search(r"trim\(\w+, (\d+)\)", sql).group(1))]  # type: ignore[union-attr]
        else:
            amount, off = map(int, re.search(r"erase\(\w+, (\d+), (\d+)\)", sql).groups())  # type: ignore[union-attr]
            fill = (b"\x00" if isinstance(old, bytes) else " ") * amount
            data[rowid][col] = old[: off - 1] + fill[: max(0, min(len(old), off - 1 + amount) - off + 1)] + \
                old[off - 1 + amount:]
        return
    kind, _owner, _table, values = parse_dml(sql)
    if kind == "insert":
        data[rowid] = values
    elif kind == "update":
        data[rowid].update(values)
    else:
        del data[rowid]


def canonical_rows(db: SimulatedOracle, owner: str, table: str, rows: dict[str, dict[str, Any]]) -> list[str]:
    defn = db.table(owner, table)
    out = []
    for values in rows.values():
        out.append(repr([canonical_value(c.type, store_value(c.type, values.get(c.name))) for c in defn.columns]))
    return sorted(out)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replayed_redo_reproduces_the_committed_state(seed: int) -> None:
    db = SimulatedOracle(threads=2, shuffle_where=True, lob_inline_max=300, lob_chunk=700, literal_split=700,
                         groups_per_thread=3, seed=seed)
    tables = create_typed_tables(db)
    lo = db.current_scn
    stats = random_workload(db, random.Random(seed), tables, transactions=150, max_open=5, ddl=True,
                            p_partial_rollback=0.2, long_txn_every=30)
    assert stats.committed and stats.rolled_back and stats.partial_rollbacks and stats.pk_updates
    assert stats.reinserts and stats.lob_writes and stats.log_switches and stats.same_scn_commits
    db.flush()
    rows = mine(db, lo, db.current_scn)
    assert any(r[I["CSF"]] for r in rows)
    state = replay(db, rows)
    for owner, table in tables:
        assert canonical_rows(db, owner, table, state.get((owner, table), {})) == sorted(
            repr(list(r.values())) for r in db.canonical(owner, table)), table


def test_workload_is_deterministic() -> None:
    def run() -> list[tuple[Any, ...]]:
        db = SimulatedOracle(threads=2)
        tables = create_typed_tables(db)
        random_workload(db, random.Random(11), tables, transactions=60)
        return [r[:3] + r[5:] for r in db.redo(flushed_only=False)]  # without the wall-clock columns

    assert run() == run()


# ---- volume ------------------------------------------------------------------------------------------------
# (the simulator's speed is measured in benchmarks/run_oracle_bench.py, not asserted here)


def test_a_large_redo_range_is_fetched_whole_in_chunks() -> None:
    db = SimulatedOracle()
    db.create_table("APP", "BIG", [("ID", "NUMBER(10)"), ("NAME", "VARCHAR2(30)")], ["ID"])
    lo = db.current_scn
    n = 0
    with db.bulk():
        while n < 50_000:
            tx = db.begin()
            for _ in range(998):
                tx.insert("APP", "BIG", {"ID": n, "NAME": "row"})
                n += 1
            tx.commit()
    conn = db.connect()
    cur = conn.cursor()
    cur.execute(Q.ADD_LOGFILE, name=db.member_name(db.current_log().group))
    cur.execute(Q.START_LOGMNR.format(options=ONLINE), lo=lo, hi=db.current_scn)
    cur.execute(Q.contents_query(["APP"], ["C##CDC"], False, None), lo=lo, hi=db.current_scn)
    chunks = []
    while chunk := cur.fetchmany(10_000):
        chunks.append(len(chunk))
    inserts = n
    transactions = -(-n // 998)
    assert sum(chunks) >= inserts + transactions and all(c == 10_000 for c in chunks[:-1])
