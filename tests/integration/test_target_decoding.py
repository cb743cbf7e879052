"""Rows that do not decode with the schema are caught before any MERGE (dead letters)."""

from __future__ import annotations

from decimal import Decimal

from cdclake.engine.events import BRONZE_DDL
from cdclake.engine.target.changes import is_undecodable_error
from cdclake.engine.target.targets import Targets
from cdclake.schema import TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition
from delta.tables import DeltaTable


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
    bad = Targets.build(spark, MySqlTypeMapper()).changes.undecodable(events, schema, ["id"])
    assert sorted(r.position for r in bad.collect()) == ["f:2", "f:3"]
    assert all("do not decode" in r.reason for r in bad.collect())


def test_a_merge_whose_source_meets_an_undecodable_image_commits_nothing(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Unmeasured batches (the window counted them already) are not checked by a job of their own: the
    MERGE's source fails at the first image that does not decode, whichever branch of the MERGE uses it."""
    schema = TableSchema("shop", "t", [column_from_definition("id", "int", False),
                                       column_from_definition("name", "varchar(10)")], ["id"])
    targets = Targets.build(spark, MySqlTypeMapper())
    path = str(tmp_path / "t")
    targets.shapes.create(path, schema)
    created = DeltaTable.forPath(spark, path).history(1).collect()[0].version
    good = (1, "shop.t", "c", Decimal(10), "f:1", "x", None, 1, None, '{"id": 1, "name": "ok"}')
    bad_rows = {
        "insert": (1, "shop.t", "c", Decimal(11), "f:2", "x", None, 1, None, '{"id": "nan", "name": "bad"}'),
        "delete": (1, "shop.t", "d", Decimal(12), "f:3", "x", None, 1, '{"id": 3, "name"', None),
        "update": (1, "shop.t", "u", Decimal(13), "f:4", "x", None, 1, '{"id": null, "name": "a"}',
                   '{"id": 4, "name": "b"}'),
    }
    for n, (kind, bad) in enumerate(bad_rows.items()):
        events = spark.createDataFrame([good, bad], schema=BRONZE_DDL)
        parsed = targets.changes.parse(events, schema, ["id"], measure=False, partial=False)
        assert parsed.rows is None and parsed.undecodable is None
        try:
            targets.merge.changes(path, schema, ["id"], parsed, "app", n + 1)
        except Exception as exc:  # Spark's error type varies with where the job failed
            assert is_undecodable_error(exc), kind
        else:
            raise AssertionError(f"a MERGE with an undecodable {kind} image went through")
        assert DeltaTable.forPath(spark, path).history(1).collect()[0].version == created, kind
        assert [r.position for r in targets.changes.undecodable(parsed, schema, ["id"]).collect()] == [bad[4]], kind
    events = spark.createDataFrame([good], schema=BRONZE_DDL)
    targets.merge.changes(path, schema, ["id"], targets.changes.parse(events, schema, ["id"], measure=False), "app", 9)
    assert [tuple(r) for r in spark.read.format("delta").load(path).select("id", "name").collect()] == [(1, "ok")]
