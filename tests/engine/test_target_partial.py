"""Values a source's log leaves out of an image (PostgreSQL's unchanged TOAST, Oracle's LOBs: ``UNAVAILABLE_KEY``)
keep the lake's value, however a window moves the row between keys (moved from integration/test_target_partial.py,
issue 44, where the batch was written by hand: here the fake source logs it, each shape)."""

from __future__ import annotations

import pytest
from cdclake.testing.fake import FakeDatabase, column

from tests.engine.helpers import SHAPES, assert_lake_equals_source, make_pipeline

T = "shop.t"


@pytest.mark.parametrize("shape", SHAPES)
def test_values_left_out_follow_the_row_through_chains_of_key_changes(spark, tmp_path, shape: str) -> None:  # type: ignore[no-untyped-def]
    db = FakeDatabase(tmp_path / "db.log")
    db.create_table(T, [("id", "int", False), ("name", "text"), column("filler", "text", toast=True)], key=["id"])
    db.insert(T, *({"id": n, "name": "a", "filler": f"f{n}"} for n in (1, 10, 30, 31, 40, 41, 60)))
    pipeline = make_pipeline(spark, db, tmp_path / "lake", f"partial_{shape}", shape,
                             source_extra="  partial_images: true\n")
    pipeline.snapshot()

    def move(tx, old: int, new: int) -> None:  # type: ignore[no-untyped-def]
        """A key change that leaves filler alone: its image lacks it (the before image holds the key only)."""
        tx.update(T, {"id": old}, {"id": new, "name": "m"})

    with db.transaction() as tx:
        move(tx, 1, 2)
        move(tx, 2, 3)  # two key changes, then an update that leaves filler out
        tx.update(T, {"id": 3}, {"name": "u"})
        for old, new in ((10, 11), (11, 12), (12, 13)):  # three
            move(tx, old, new)
    with db.transaction() as tx:
        for old, new in ((30, 99), (31, 30), (99, 31)):  # a swap through a spare key
            move(tx, old, new)
        tx.delete(T, {"id": 40})  # a key deleted, then moved into
        move(tx, 41, 40)
        tx.update(T, {"id": 40}, {"name": "v"})
    with db.transaction() as tx:
        tx.insert(T, {"id": 50, "name": "n", "filler": "new50"})
        move(tx, 50, 51)
        move(tx, 51, 52)
        move(tx, 60, 61)  # moved, then deleted, then a new row with its key
        tx.delete(T, {"id": 61})
        tx.insert(T, {"id": 61, "name": "n", "filler": "new61"})
    report = pipeline.mine()
    assert report.events == 18
    assert_lake_equals_source(spark, pipeline, [T])
    got = {r.id: (r.name, r.filler) for r in spark.read.format("delta").load(pipeline.layout.target(T)).collect()}
    assert got == {3: ("u", "f1"), 13: ("m", "f10"), 30: ("m", "f31"), 31: ("m", "f30"), 40: ("v", "f41"),
                   52: ("m", "new50"), 61: ("n", "new61")}
