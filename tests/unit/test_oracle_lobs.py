"""LOB pieces folded into a committed transaction's changes (checklist items 12, 13, 35)."""

from __future__ import annotations

import json

import pandas as pd
from cdclake.engine.events import LOG_ROWS_COLUMNS
from cdclake.sources.oracle.lobs import _fold_transaction, piece


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
