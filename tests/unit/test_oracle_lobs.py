"""LOB, XMLTYPE and extended-string pieces folded into a committed transaction's changes (checklist items
12, 13, 34, 35, 36), and the decoder's piece rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cdclake.schema import TableSchema
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.decode import _LOB_PIECES, _Decoder, _lob_piece
from cdclake.sources.oracle.lobs import NULL_ROWID, _fold_transaction, piece
from cdclake.sources.oracle.redo import RedoParseError, parse_redo
from cdclake.sources.oracle.types import OracleTypeMapper, column_from_oracle
from cdclake.spi import LOG_ROWS_COLUMNS
from cdclake.testing.logminer_sim import I_OP, I_ROW_ID, I_SQL_REDO, SimulatedOracle


def row(idx: int, kind: str, op: str | None = None, before: str | None = None, after: str | None = None,
        locator: str = "R1") -> dict:
    base = dict.fromkeys(LOG_ROWS_COLUMNS)
    base.update(window_id=1, idx=idx, kind=kind, txid="t", source_table="APP.DOCS", op=op, before=before,
                after=after, locator=locator)
    return base


def fold(rows: list[dict]) -> list[dict]:
    out = _fold_transaction(pd.DataFrame(rows, columns=LOG_ROWS_COLUMNS, dtype=object))
    return [{"op": r["op"], "after": json.loads(r["after"]) if r["after"] else None} for r in out.to_dict("records")]


KEY = json.dumps({"ID": "1", "TITLE": "t", "__unavailable": ["BODY", "DATA"]})


def test_writes_after_an_insert_fill_the_inserted_row() -> None:
    got = fold([
        row(1, "change", "c", after=json.dumps({"ID": "1", "TITLE": "t", "BODY": "", "DATA": ""})),
        row(2, "piece", before=KEY, after=piece("locator", "BODY")),
        row(3, "piece", after=piece("write", offset=1, length=5, data="hello")),
        row(4, "piece", after=piece("write", offset=6, length=6, data=" world")),
        row(5, "piece", before=KEY, after=piece("locator", "DATA", binary=True)),
        row(6, "piece", after=piece("write", offset=1, length=3, data="0a0b0c")),
        row(7, "piece", after=piece("trim", length=2)),
    ])
    assert got == [{"op": "c", "after": {"ID": "1", "TITLE": "t", "BODY": "hello world", "DATA": "0a0b"}}]


def test_a_lob_only_update_becomes_an_update_with_the_others_unavailable() -> None:
    got = fold([
        row(1, "piece", before=KEY, after=piece("locator", "BODY")),
        row(2, "piece", after=piece("write", offset=1, length=3, data="new")),
    ])
    assert got == [{"op": "u", "after": {"ID": "1", "TITLE": "t", "BODY": "new", "__unavailable": ["DATA"]}}]


def test_a_write_into_the_middle_of_an_unknown_value_stays_unavailable() -> None:
    got = fold([
        row(1, "change", "u", before=KEY, after=KEY),
        row(2, "piece", before=KEY, after=piece("locator", "BODY")),
        row(3, "piece", after=piece("write", offset=10, length=3, data="mid")),
    ])
    assert got == [{"op": "u", "after": {"ID": "1", "TITLE": "t", "__unavailable": ["DATA", "BODY"]}}]


def test_a_later_update_of_the_row_is_not_the_target_of_an_earlier_locator() -> None:
    got = fold([
        row(1, "change", "c", after=json.dumps({"ID": "1", "TITLE": "t", "BODY": ""})),
        row(2, "piece", before=KEY, after=piece("locator", "BODY")),
        row(3, "piece", after=piece("write", offset=1, length=2, data="ab")),
        row(4, "change", "u", before=KEY, after=json.dumps({"ID": "1", "TITLE": "u", "__unavailable": ["BODY"]})),
    ])
    assert got[0]["after"]["BODY"] == "ab" and "BODY" not in got[1]["after"]


# ---- XMLTYPE and extended strings: begin / append / end (checklist items 13, 34, 36) ----------------

DOC_KEY = json.dumps({"ID": "1", "TITLE": "t", "__unavailable": ["DOC", "BIG", "BIN"]})


def fold_rows(rows: list[dict]) -> list[dict]:
    out = _fold_transaction(pd.DataFrame(rows, columns=LOG_ROWS_COLUMNS, dtype=object))
    return out.to_dict("records")


def test_xml_and_extended_string_pieces_fill_the_inserted_row() -> None:
    doc = "<p>l'été</p>".encode()
    cut = doc.index("é".encode()) + 1  # HEXTORAW chunks may split a character
    got = fold([
        row(1, "change", "c", after=json.dumps({"ID": "1", "TITLE": "t", "__unavailable": ["DOC", "BIG", "BIN"]})),
        row(2, "piece", before=DOC_KEY, after=piece("begin", "DOC")),
        row(3, "piece", after=piece("append", binary=True, data=doc[:cut].hex())),
        row(4, "piece", after=piece("append", binary=True, data=doc[cut:].hex())),
        row(5, "piece", after=piece("end")),
        row(6, "piece", before=DOC_KEY, after=piece("begin", "BIG")),
        row(7, "piece", after=piece("append", data="x" * 3)),
        row(8, "piece", after=piece("append", data="y'z")),
        row(9, "piece", after=piece("end")),
        row(10, "piece", before=DOC_KEY, after=piece("begin", "BIN", binary=True)),
        row(11, "piece", after=piece("append", binary=True, data="0a0b")),
        row(12, "piece", after=piece("append", binary=True, data="ff")),
        row(13, "piece", after=piece("end")),
    ])
    assert got == [{"op": "c", "after": {"ID": "1", "TITLE": "t", "DOC": "<p>l'été</p>", "BIG": "xxxy'z",
                                         "BIN": "0a0bff"}}]


def test_a_value_rebuilt_from_appends_replaces_the_old_one_and_null_is_null() -> None:
    got = fold([
        row(1, "change", "u", before=DOC_KEY, after=json.dumps({"ID": "1", "TITLE": "u", "BIG": "old value",
                                                                  "__unavailable": ["DOC", "BIN"]})),
        row(2, "piece", before=DOC_KEY, after=piece("begin", "BIG")),
        row(3, "piece", after=piece("append", data="new")),
        row(4, "piece", after=piece("end")),
        row(5, "piece", before=DOC_KEY, after=piece("begin", "DOC")),
        row(6, "piece", after=piece("append", data=None)),  # XML_REDO := NULL
        row(7, "piece", after=piece("end")),
        row(8, "piece", after=piece("write", offset=1, length=1, data="!")),  # after END: no current value
    ])
    assert got == [{"op": "u", "after": {"ID": "1", "TITLE": "u", "BIG": "new", "DOC": None,
                                         "__unavailable": ["BIN"]}}]


def test_an_extended_only_update_becomes_an_update_of_its_own() -> None:
    got = fold([
        row(1, "piece", before=DOC_KEY, after=piece("begin", "BIN", binary=True)),
        row(2, "piece", after=piece("append", binary=True, data="00ff")),
        row(3, "piece", after=piece("end")),
    ])
    assert got == [{"op": "u", "after": {"ID": "1", "TITLE": "t", "BIN": "00ff", "__unavailable": ["DOC", "BIG"]}}]


def test_rows_without_a_rowid_are_matched_by_the_key_the_begin_names() -> None:
    def insert(idx: int, ident: str) -> dict:
        return row(idx, "change", "c", locator=NULL_ROWID,
                   after=json.dumps({"ID": ident, "TITLE": "t", "__unavailable": ["DOC"]}))

    key2 = json.dumps({"ID": "2", "__unavailable": ["TITLE", "DOC"]})
    got = fold([
        insert(1, "1"),
        insert(2, "2"),
        insert(3, "3"),
        row(4, "piece", before=key2, after=piece("begin", "DOC"), locator=NULL_ROWID),
        row(5, "piece", after=piece("append", data="<two/>"), locator=NULL_ROWID),
        row(6, "piece", after=piece("end"), locator=NULL_ROWID),
    ])
    assert [g["after"].get("DOC") for g in got] == [None, "<two/>", None]
    assert [g["after"]["ID"] for g in got] == ["1", "2", "3"]


def test_xml_bytes_that_are_not_utf8_make_the_change_an_error() -> None:
    rows = fold_rows([
        row(1, "change", "u", before=DOC_KEY, after=DOC_KEY),
        row(2, "piece", before=DOC_KEY, after=piece("begin", "DOC")),
        row(3, "piece", after=piece("append", binary=True, data="3c61c3")),  # '<a' and half a character
        row(4, "piece", after=piece("end")),
    ])
    assert len(rows) == 1 and "APP.DOCS.DOC" in rows[0]["error"] and "not UTF-8" in rows[0]["error"]
    assert "DOC" not in json.loads(rows[0]["after"]) and "DOC" in json.loads(rows[0]["after"])["__unavailable"]


# ---- decode: XML_* and 32K_* rows -> piece JSON -------------------------------------------------------


def decoder() -> _Decoder:
    cols = [column_from_oracle("ID", "NUMBER(10)"), column_from_oracle("TITLE", "VARCHAR2(50)"),
            column_from_oracle("DOC", "XMLTYPE"), column_from_oracle("BIG", "VARCHAR2(32767)"),
            column_from_oracle("BIN", "RAW(32767)")]
    return _Decoder(TableSchema("APP", "DOCS", cols, ["ID"]), OracleTypeMapper())


def test_xml_rows_become_begin_append_end_pieces() -> None:
    dec = decoder()
    key, begin = _lob_piece(Q.OP_XML_BEGIN, 'XML DOC BEGIN:  select "DOC" from "APP"."DOCS" where "ID" = \'1\'', dec)
    assert json.loads(key or "") == {"ID": "1", "__unavailable": ["TITLE", "DOC", "BIG", "BIN"]}
    assert json.loads(begin) == {"op": "begin", "column": "DOC", "binary": False, "offset": 0, "length": 0, "data": ""}
    _, hexed = _lob_piece(Q.OP_XML_WRITE, "XML_REDO := HEXTORAW('3C613E'):3", dec)
    assert (json.loads(hexed)["data"], json.loads(hexed)["binary"]) == ("3c613e", True)
    _, null = _lob_piece(Q.OP_XML_WRITE, "XML_REDO := NULL", dec)
    assert json.loads(null)["data"] is None
    assert json.loads(_lob_piece(Q.OP_XML_END, None, dec)[1])["op"] == "end"  # XML_END has no SQL_REDO


def test_extended_string_rows_become_pieces_and_bad_ones_raise() -> None:
    dec = decoder()
    sql = ("DECLARE\n TempLob BLOB;\n buf_b   RAW(32767);\n Stmt    CLOB;\nBEGIN\n"
           " DBMS_LOB.CreateTemporary(TempLob, FALSE);\n Stmt := 'update \"APP\".\"DOCS\" a set a.\"BIN\" = :BIN "
           "where a.\"ID\" = ''1'' and a.\"TITLE\" = ''t'';';")
    key, begin = _lob_piece(Q.OP_EXT_STRING_BEGIN, sql, dec)
    assert json.loads(key or "")["TITLE"] == "t" and json.loads(begin)["binary"] is True
    append = "\n buf_b := HEXTORAW('0A');\n DBMS_LOB.WRITEAPPEND(TempLob, 1, buf_b);"
    _, write = _lob_piece(Q.OP_EXT_STRING_WRITE, append, dec)
    assert (json.loads(write)["op"], json.loads(write)["data"]) == ("append", "0a")
    assert json.loads(_lob_piece(Q.OP_EXT_STRING_END, "\n EXECUTE IMMEDIATE Stmt USING TempLob;\nEND;", dec)[1]) == (
        json.loads(piece("end")))
    with pytest.raises(ValueError, match="'NOPE' is not in APP.DOCS"):
        _lob_piece(Q.OP_EXT_STRING_BEGIN, sql.replace('a."BIN"', 'a."NOPE"'), dec)
    with pytest.raises(RedoParseError):
        _lob_piece(Q.OP_XML_WRITE, None, dec)


def test_the_simulators_xml_and_32k_rows_fold_back_to_the_values_written() -> None:
    """Simulator -> parsers -> pieces -> fold, without Spark: the replayed changes give the source row."""
    db = SimulatedOracle(max_string_size="EXTENDED", lob_chunk=50, lob_inline_max=60, max_redo_len=10**6)
    types = [("ID", "NUMBER(10)"), ("TITLE", "VARCHAR2(50)"), ("DOC", "XMLTYPE"), ("BIG", "VARCHAR2(32767)"),
             ("BIN", "RAW(32767)")]
    db.create_table("APP", "DOCS", types, ["ID"])
    lo = db.current_scn
    tx = db.begin()
    tx.insert("APP", "DOCS", {"ID": 1, "TITLE": "t", "DOC": "<d>" + "é'" * 60 + "</d>", "BIG": "ü'" * 2100,
                              "BIN": bytes(range(250)) * 9})
    tx.update("APP", "DOCS", {"ID": 1}, {"TITLE": "u", "DOC": "<short it's='1'/>", "BIG": "b" * 4001})
    tx.update("APP", "DOCS", {"ID": 1}, {"BIN": b"\x07" * 2001})
    tx.commit()
    dec = _Decoder(TableSchema("APP", "DOCS", [column_from_oracle(n, t) for n, t in types], ["ID"]),
                   OracleTypeMapper())
    rows = []
    for i, r in enumerate(db.redo(lo)):
        code, sql, rowid = r[I_OP], r[I_SQL_REDO], r[I_ROW_ID]
        if code in _LOB_PIECES:
            before, after = _lob_piece(code, sql, dec)
            rows.append(row(i, "piece", before=before, after=after, locator=rowid))
        elif code in (Q.OP_INSERT, Q.OP_UPDATE):
            parsed = parse_redo(sql)
            before, _ = dec.image(parsed.before, missing_is_unavailable=False)
            after, _ = dec.image(parsed.after, missing_is_unavailable=parsed.op == "u")
            rows.append(row(i, "change", parsed.op, before=before, after=after, locator=rowid))
    assert {r[I_OP] for r in db.redo(lo)} >= {Q.OP_XML_BEGIN, Q.OP_XML_WRITE, Q.OP_XML_END, Q.OP_EXT_STRING_BEGIN,
                                               Q.OP_EXT_STRING_WRITE, Q.OP_EXT_STRING_END}
    state: dict = {}
    for change in fold(rows):  # what the MERGE does: unavailable columns keep the earlier value
        state.update({c: v for c, v in change["after"].items() if c != "__unavailable"})
    assert state == db.canonical("APP", "DOCS")[0]
