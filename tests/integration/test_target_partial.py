"""Values a source's log leaves out of an image (PostgreSQL's unchanged TOAST, Oracle's LOBs) keep the
lake's value, however a batch moves the row between keys."""

from __future__ import annotations

import json
from decimal import Decimal

from cdclake.engine.events import BRONZE_DDL
from cdclake.engine.target.targets import Targets
from cdclake.schema import TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition


class _PartialImages(MySqlTypeMapper):
    images_may_omit_columns = True


SCHEMA = TableSchema("shop", "t", [column_from_definition("id", "int", False),
                                   column_from_definition("name", "varchar(10)"),
                                   column_from_definition("filler", "text")], ["id"])


def _row(seq: int, op: str, before: dict | None, after: dict | None) -> tuple:
    return (2, "shop.t", op, Decimal(seq), f"p:{seq}", "x", None, 1,
            json.dumps(before) if before is not None else None, json.dumps(after) if after is not None else None)


def _move(seq: int, old: int, new: int, name: str = "m") -> tuple:
    """A key change whose image lacks the unchanged ``filler`` (its before image holds the key only)."""
    return _row(seq, "u", {"id": old}, {"id": new, "name": name, "__unavailable": ["filler"]})


def test_values_left_out_follow_the_row_through_chains_of_key_changes(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    targets = Targets.build(spark, _PartialImages())
    path = str(tmp_path / "t")
    targets.shapes.create(path, SCHEMA)
    initial = [1, 10, 30, 31, 40, 41, 60]
    rows = [_row(n, "c", None, {"id": n, "name": "a", "filler": f"f{n}"}) for n in initial]
    targets.merge.changes(path, SCHEMA, ["id"], spark.createDataFrame(rows, schema=BRONZE_DDL), "app", 1)
    batch = [
        _move(100, 1, 2), _move(101, 2, 3),  # two key changes, then an update that leaves filler out
        _row(102, "u", {"id": 3}, {"id": 3, "name": "u", "__unavailable": ["filler"]}),
        _move(110, 10, 11), _move(111, 11, 12), _move(112, 12, 13),  # three
        _move(120, 30, 99), _move(121, 31, 30), _move(122, 99, 31),  # a swap through a spare key
        _row(130, "d", {"id": 40}, None), _move(131, 41, 40),  # a key deleted, then moved into
        _row(132, "u", {"id": 40}, {"id": 40, "name": "v", "__unavailable": ["filler"]}),
        _row(140, "c", None, {"id": 50, "name": "n", "filler": "new50"}), _move(141, 50, 51), _move(142, 51, 52),
        _move(150, 60, 61), _row(151, "d", {"id": 61}, None),  # moved, then deleted
        _row(152, "c", None, {"id": 61, "name": "n", "filler": "new61"}),
    ]
    targets.merge.changes(path, SCHEMA, ["id"], spark.createDataFrame(batch, schema=BRONZE_DDL), "app", 2)
    got = {r.id: (r.name, r.filler) for r in spark.read.format("delta").load(path).collect()}
    assert got == {
        3: ("u", "f1"), 13: ("m", "f10"), 30: ("m", "f31"), 31: ("m", "f30"), 40: ("v", "f41"),
        52: ("m", "new50"), 61: ("n", "new61"),
    }
