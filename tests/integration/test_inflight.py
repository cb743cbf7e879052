"""The persistent in-flight buffer: transactions across windows, rollbacks, partial rollbacks,
abandonment, floors, and idempotent re-assembly of a window (engine level, synthetic log rows)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from cdclake.engine.events import SEQ_SPAN
from cdclake.engine.inflight import InflightBuffer
from cdclake.engine.lake import LakeLayout
from cdclake.spi import LOG_ROWS_DDL

T0 = datetime(2026, 1, 1, 12, 0, 0)


def change(w, i, txid, key, op="c", table="S.T", ts=T0, locator=None):  # type: ignore[no-untyped-def]
    after = None if op == "d" else f'{{"ID": "{key}"}}'
    before = None if op == "c" else f'{{"ID": "{key}"}}'
    return (w, i, "change", txid, table, op, before, after, 1, locator or f"rid-{key}", Decimal(i * 10),
            f"SCN {i}", ts, None, None)


def undo(w, i, txid, locator, table="S.T"):  # type: ignore[no-untyped-def]
    return (w, i, "undo", txid, table, None, None, None, None, locator, Decimal(i * 10), f"SCN {i}", T0, None, None)


def end(w, i, txid, kind="commit", ordinal=None):  # type: ignore[no-untyped-def]
    return (w, i, kind, txid, None, None, None, None, None, None, Decimal(ordinal or i * 1000), f"SCN {i}",
            T0, None, None)


@pytest.fixture
def buffer(spark, tmp_path):  # type: ignore[no-untyped-def]
    b = InflightBuffer(spark, LakeLayout(str(tmp_path), "p"), "p")
    b.ensure()
    return b


def window(spark, buffer, w, rows, floors=None, retention=None, end_ts=None):  # type: ignore[no-untyped-def]
    frame = spark.createDataFrame(rows, LOG_ROWS_DDL)
    asm = buffer.assemble(w, frame, floors or {}, retention, end_ts)
    committed = sorted((r.txid, int(r.seq), r.op, r.after or r.before) for r in asm.committed.collect())
    buffer.record(w, asm)
    return asm, committed


def test_transactions_span_windows_and_end_in_commit_order(spark, buffer):  # type: ignore[no-untyped-def]
    _, c1 = window(spark, buffer, 1, [
        change(1, 1, "a", 1), change(1, 2, "b", 2), change(1, 3, "a", 1, "u"), end(1, 4, "a", ordinal=500),
    ])
    # within one window a change is numbered by its row's place in the window (log order)
    assert c1 == [("a", 500 * SEQ_SPAN + 2, "c", '{"ID": "1"}'), ("a", 500 * SEQ_SPAN + 4, "u", '{"ID": "1"}')]
    # b spans windows 1..3; window 2 has only its further change
    _, c2 = window(spark, buffer, 2, [change(2, 0, "b", 3), change(2, 1, "c", 9), end(2, 2, "c", "rollback")])
    assert c2 == []
    _, c3 = window(spark, buffer, 3, [change(3, 0, "b", 4), end(3, 1, "b", ordinal=900)])
    # across windows, by its place in the transaction
    assert [(t, s - 900 * SEQ_SPAN, op) for t, s, op, _ in c3] == [("b", 1, "c"), ("b", 2, "c"), ("b", 3, "c")]
    # recorded: the transactions the buffer held (a and c began and ended in one window)
    statuses = {r.txid: (r.status, r.rows) for r in spark.read.format("delta").load(buffer.layout.transactions)
                .collect()}
    assert statuses == {"b": ("committed", 3)}
    buffer.purge(3)
    assert spark.read.format("delta").load(buffer.layout.inflight).count() == 0


def test_partial_rollback_removes_the_newest_earlier_change_of_the_row(spark, buffer):  # type: ignore[no-untyped-def]
    _, c = window(spark, buffer, 1, [
        change(1, 1, "t", 1), change(1, 2, "t", 2), change(1, 3, "t", 2, "u"), undo(1, 4, "t", "rid-2"),
        change(1, 5, "t", 3), undo(1, 6, "t", "rid-3"), end(1, 7, "t"),
    ])
    # key 2: insert kept, update undone; key 3: insert undone
    assert [(op, img) for _, _, op, img in c] == [("c", '{"ID": "1"}'), ("c", '{"ID": "2"}')]


def test_undo_in_a_later_window_matches_a_buffered_change(spark, buffer):  # type: ignore[no-untyped-def]
    window(spark, buffer, 1, [change(1, 1, "t", 1), change(1, 2, "t", 2)])
    _, c = window(spark, buffer, 2, [undo(2, 0, "t", "rid-2"), end(2, 1, "t")])
    assert [img for _, _, _, img in c] == ['{"ID": "1"}']


def test_floors_drop_changes_a_table_already_holds(spark, buffer):  # type: ignore[no-untyped-def]
    _, c = window(spark, buffer, 1, [
        change(1, 1, "a", 1), end(1, 2, "a", ordinal=100), change(1, 3, "b", 2), end(1, 4, "b", ordinal=300),
    ], floors={"S.T": 200})
    assert [t for t, *_ in c] == ["b"]


def test_rerunning_a_window_assembles_the_same_rows_once(spark, buffer):  # type: ignore[no-untyped-def]
    window(spark, buffer, 1, [change(1, 1, "a", 1)])
    rows2 = [change(2, 0, "a", 2), change(2, 1, "b", 3)]
    _, first = window(spark, buffer, 2, rows2)
    _, again = window(spark, buffer, 2, rows2)  # killed after recording, re-run
    assert first == again == []
    inflight = spark.read.format("delta").load(buffer.layout.inflight)
    assert sorted(r.txid for r in inflight.collect()) == ["a", "a", "b"]
    _, c3 = window(spark, buffer, 3, [end(3, 0, "a"), end(3, 1, "b")])
    assert len(c3) == 3


def test_abandoned_transaction_is_recorded_and_never_applied(spark, buffer):  # type: ignore[no-untyped-def]
    window(spark, buffer, 1, [change(1, 1, "old", 1, ts=T0)])
    asm, c = window(spark, buffer, 2, [change(2, 0, "new", 2, ts=T0 + timedelta(hours=2))],
                    retention=timedelta(hours=1), end_ts=T0 + timedelta(hours=2))
    assert c == []
    ended = {r.txid: r for r in spark.read.format("delta").load(buffer.layout.transactions).collect()}
    assert ended["old"].status == "abandoned" and ended["old"].rows == 1 and ended["old"].first_position == "SCN 1"
    asm3, c3 = window(spark, buffer, 3, [change(3, 0, "old", 5), end(3, 1, "old"), end(3, 2, "new")])
    assert [t for t, *_ in c3] == ["new"]
    assert [r.txid for r in asm3.stats["late_commits"].collect()] == ["old"]
