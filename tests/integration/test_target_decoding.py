"""Rows that do not decode with the schema are caught before any MERGE (dead letters)."""

from __future__ import annotations

from decimal import Decimal

from cdclake.engine.events import BRONZE_DDL
from cdclake.engine.target import TargetTables
from cdclake.schema import TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition


def test_undecodable_rows_are_found(spark) -> None:  # type: ignore[no-untyped-def]
    schema = TableSchema("shop", "t", [column_from_definition("id", "int", False),
                                       column_from_definition("name", "varchar(10)")], ["id"])
    rows = [
        (1, "shop.t", "c", Decimal(10), "f:1", "x", None, 1, None, '{"id": 1, "name": "ok"}'),
        (1, "shop.t", "c", Decimal(11), "f:2", "x", None, 1, None, '{"id": "not a number", "name": "bad"}'),
        (1, "shop.t", "d", Decimal(12), "f:3", "x", None, 1, '{"id": 3, "name"', None),  # truncated JSON
        (1, "shop.t", "u", Decimal(13), "f:4", "x", None, 1, '{"id": 4, "name": "a"}', '{"id": 4, "name": "b"}'),
    ]
    events = spark.createDataFrame(rows, schema=BRONZE_DDL)
    bad = TargetTables(spark, MySqlTypeMapper()).undecodable(events, schema, ["id"])
    assert sorted(r.position for r in bad.collect()) == ["f:2", "f:3"]
    assert all("do not decode" in r.reason for r in bad.collect())
