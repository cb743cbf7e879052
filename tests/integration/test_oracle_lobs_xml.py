"""XMLTYPE and extended strings (MAX_STRING_SIZE=EXTENDED) end to end against the LogMiner simulator
(checklist items 12, 13, 34, 36 of shared/reference/oracle.md): with LOB capture on, the
XML_BEGIN/WRITE/END and 32K_BEGIN/WRITE/END rows rebuild the value at commit, across windows, with
rollbacks; with it off, those values are unavailable and never overwrite the lake's value."""

from __future__ import annotations

import pytest
from cdclake.sources.oracle import queries as Q
from cdclake.testing.logminer_sim import I_OP, I_SCN, SimulatedOracle

from tests.integration.oracle_helpers import assert_lake_equals_simulated, bronze_markers, oracle_pipeline

pytestmark = pytest.mark.integration

COLUMNS = [("ID", "NUMBER(10)"), ("TITLE", "VARCHAR2(50)"), ("DOC", "XMLTYPE"), ("BIG", "VARCHAR2(32767)"),
           ("BIN", "RAW(32767)")]
# XML above lob_inline_max goes as HEXTORAW chunks of its UTF-8 bytes, split inside 'é' characters.
LONG_DOC = "<doc n=\"1\">" + "<p>d'été</p>" * 120 + "</doc>"
SHORT_DOC = "<a x='1'>b</a>"
LONG_TEXT = "ça coûte l'été; " * 300  # 4800 characters, 5700 bytes: over 4000 bytes
LONG_BYTES = bytes(range(256)) * 10  # 2560 bytes: over 2000


def extended_db() -> SimulatedOracle:
    db = SimulatedOracle(threads=2, seed=61, max_string_size="EXTENDED", lob_chunk=300, lob_inline_max=200)
    db.create_table("APP", "DOCS", COLUMNS, ["ID"])
    tx = db.begin()
    tx.insert("APP", "DOCS", {"ID": 1, "TITLE": "one", "DOC": SHORT_DOC, "BIG": "small", "BIN": b"\x01\x02"})
    tx.insert("APP", "DOCS", {"ID": 2, "TITLE": "two", "DOC": LONG_DOC, "BIG": LONG_TEXT, "BIN": LONG_BYTES})
    tx.commit()
    return db


def test_xml_and_extended_strings_are_rebuilt_when_lob_capture_is_on(spark, tmp_path):  # type: ignore[no-untyped-def]
    db = extended_db()
    # the first window is one LogMiner batch of 20 SCNs: it ends inside transaction A's 32K_WRITE rows
    batches = "lob: true\nbatch_size_min: 10\nbatch_size_default: 20\nbatch_size_increment: 50\nbatch_size_max: 200"
    pipeline = oracle_pipeline(spark, db, tmp_path, mining=batches)
    pipeline.snapshot()

    a = db.begin(thread=1)  # its pieces wait in the in-flight buffer across the window end
    a.insert("APP", "DOCS", {"ID": 3, "TITLE": "three", "DOC": LONG_DOC[::-1], "BIG": LONG_TEXT[::-1],
                             "BIN": LONG_BYTES[::-1]})
    a.update("APP", "DOCS", {"ID": 1}, {"TITLE": "one'", "BIG": LONG_TEXT.upper()})
    a.update("APP", "DOCS", {"ID": 2}, {"DOC": SHORT_DOC})  # an XML-only update: no UPDATE row
    a.update("APP", "DOCS", {"ID": 2}, {"BIN": LONG_BYTES[7:]})  # RAW-only update
    a.update("APP", "DOCS", {"ID": 1}, {"DOC": LONG_DOC.replace("été", "hiver")})
    a.commit()

    b = db.begin(thread=2)  # rolled back: none of its pieces apply
    b.update("APP", "DOCS", {"ID": 1}, {"DOC": "<rolled-back/>", "BIN": b"\xff" * 2100})
    b.insert("APP", "DOCS", {"ID": 9, "TITLE": "gone", "DOC": LONG_DOC, "BIG": LONG_TEXT})
    b.rollback()

    c = db.begin(thread=2)
    c.update("APP", "DOCS", {"ID": 3}, {"TITLE": "three'"})
    c.savepoint("S")
    c.update("APP", "DOCS", {"ID": 3}, {"BIG": "y" * 4500, "DOC": "<undone/>"})  # undone by the savepoint
    c.rollback_to("S")
    c.update("APP", "DOCS", {"ID": 3}, {"DOC": None})  # XML_REDO := NULL
    c.update("APP", "DOCS", {"ID": 2}, {"BIG": "short again", "TITLE": "two'"})  # back under 4000 bytes
    c.insert("APP", "DOCS", {"ID": 4, "TITLE": "four", "DOC": SHORT_DOC, "BIG": LONG_TEXT, "BIN": b"\x00"})
    c.commit()

    pipeline.mine(max_events=1)  # stops after its first batch
    pipeline.mine()
    first = bronze_markers(spark, pipeline)[0]
    cut = int(first["mined_to_scn"])
    sequences = [(r[I_SCN], r[I_OP]) for r in db.redo() if r[I_OP] in (Q.OP_EXT_STRING_BEGIN, Q.OP_EXT_STRING_END)]
    inside = any(b < cut < e for (b, op_b), (e, op_e) in zip(sequences, sequences[1:], strict=False)
                 if (op_b, op_e) == (Q.OP_EXT_STRING_BEGIN, Q.OP_EXT_STRING_END))
    assert first["open_transactions"] == 1 and inside, (cut, sequences[:6])
    assert_lake_equals_simulated(spark, pipeline, db, ["APP.DOCS"])
    got = {r["ID"]: r for r in spark.read.format("delta").load(pipeline.layout.target("APP.DOCS")).collect()}
    assert got[3]["DOC"] is None and got[3]["BIG"] == LONG_TEXT[::-1] and bytes(got[3]["BIN"]) == LONG_BYTES[::-1]
    assert got[1]["DOC"] == LONG_DOC.replace("été", "hiver") and got[1]["BIG"] == LONG_TEXT.upper()
    assert 9 not in got


def test_without_lob_capture_those_columns_keep_the_lake_value(spark, tmp_path):  # type: ignore[no-untyped-def]
    db = extended_db()
    pipeline = oracle_pipeline(spark, db, tmp_path)  # mining.lob is off
    pipeline.snapshot()
    tx = db.begin()
    tx.update("APP", "DOCS", {"ID": 1}, {"TITLE": "one'", "DOC": LONG_DOC, "BIG": LONG_TEXT, "BIN": LONG_BYTES})
    tx.update("APP", "DOCS", {"ID": 2}, {"DOC": SHORT_DOC, "BIG": LONG_TEXT.upper()})  # no UPDATE row at all
    tx.insert("APP", "DOCS", {"ID": 3, "TITLE": "three", "DOC": LONG_DOC, "BIG": LONG_TEXT, "BIN": LONG_BYTES})
    tx.insert("APP", "DOCS", {"ID": 4, "TITLE": "four", "DOC": SHORT_DOC, "BIG": "short", "BIN": b"\x0a"})
    tx.commit()
    pipeline.mine()

    got = {r["ID"]: (r["TITLE"], r["DOC"], r["BIG"], None if r["BIN"] is None else bytes(r["BIN"]))
           for r in spark.read.format("delta").load(pipeline.layout.target("APP.DOCS")).collect()}
    assert got == {
        1: ("one'", SHORT_DOC, "small", b"\x01\x02"),  # the new values were not supplied: lake values kept
        2: ("two", LONG_DOC, LONG_TEXT, LONG_BYTES),
        3: ("three", None, None, None),  # inserted: nothing known to keep (LM_EMPTY_STRING, XML not logged)
        4: ("four", None, "short", b"\x0a"),  # values under the standard size travel in the INSERT
    }
