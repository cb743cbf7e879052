"""The source kit on its own: the chunked snapshot read, the schema registry, connections (no Spark, no server)."""

from __future__ import annotations

from typing import Any

import pytest
from cdclake.errors import PreflightError
from cdclake.kit import (
    ChunkPlan,
    Connector,
    HeldTables,
    JdbcEndpoint,
    JdbcSnapshotReader,
    KeyRange,
    SchemaRegistry,
    SnapshotOptions,
)
from cdclake.schema import Column, TableSchema


class _Frame:
    def __init__(self, reads: list[dict[str, Any]]) -> None:
        self.reads = reads


class _Spark:
    """Records each ``spark.read.jdbc`` call; sessions settings are a plain dict."""

    def __init__(self) -> None:
        self.reads: list[dict[str, Any]] = []
        self.conf = self
        self.read = self
        self._values: dict[str, str] = {}

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self._values[key] = value

    def unset(self, key: str) -> None:
        self._values.pop(key, None)

    def jdbc(self, url: str, table: str, **kw: Any) -> _Frame:
        self.reads.append({"url": url, "table": table, **kw})
        return _Frame(self.reads)


class _Reader(JdbcSnapshotReader):
    def __init__(self, rows: int | None, partitions: int = 4, slices: bool = False) -> None:
        super().__init__(SnapshotOptions(partitions=partitions, min_rows_per_partition=100))
        self.rows, self.slices, self.ranges_asked = rows, slices, []

    def start(self, tables: list[str]) -> Any:
        raise AssertionError("not used")

    def endpoint(self) -> JdbcEndpoint:
        return JdbcEndpoint("jdbc:db9://h/d", {"user": "u", "password": "s3cret"})

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        return f"(SELECT * FROM {schema.table}{' WHERE ' + where if where else ''}) q"

    def key_range(self, spark: Any, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        self.ranges_asked.append((key, where))
        return KeyRange(1, 1000, self.rows)

    def slice_predicates(self, schema: TableSchema, parts: int) -> tuple[str, ...]:
        return tuple(f"MOD(H, {parts}) = {i}" for i in range(parts)) if self.slices else ()

    def canonical(self, frame: Any, schema: TableSchema) -> Any:
        return frame


KEYED = TableSchema("db", "t", [Column("id", "int", "INT"), Column("v", "text", "STRING")], ["id"])
KEYLESS = TableSchema("db", "k", [Column("v", "text", "STRING")])


def test_a_large_keyed_table_is_read_in_key_ranges_sized_by_its_row_count() -> None:
    spark = _Spark()
    _Reader(rows=250).read(spark, KEYED, "v > 'a'")  # type: ignore[arg-type]
    (read,) = spark.reads
    assert (read["column"], read["lowerBound"], read["upperBound"], read["numPartitions"]) == ("id", 1, 1001, 2)
    assert read["table"] == "(SELECT * FROM t WHERE v > 'a') q"
    assert read["properties"]["fetchsize"] == "10000" and read["properties"]["password"] == "s3cret"


def test_a_small_or_keyless_table_is_one_query_unless_the_source_can_slice_it() -> None:
    spark = _Spark()
    _Reader(rows=150).read(spark, KEYED)  # type: ignore[arg-type]  # 150 // 100 = 1 chunk
    _Reader(rows=None).read(spark, KEYLESS)  # type: ignore[arg-type]
    assert all("column" not in r and "predicates" not in r for r in spark.reads)
    _Reader(rows=None, slices=True).read(spark, KEYLESS)  # type: ignore[arg-type]
    assert spark.reads[-1]["predicates"] == ["MOD(H, 4) = 0", "MOD(H, 4) = 1", "MOD(H, 4) = 2", "MOD(H, 4) = 3"]


def test_one_partition_configured_asks_for_no_key_range() -> None:
    reader = _Reader(rows=10**9, partitions=1)
    reader.read(_Spark(), KEYED)  # type: ignore[arg-type]
    assert reader.ranges_asked == []


def test_a_rename_carries_what_the_statement_noted_of_the_table() -> None:
    reg = SchemaRegistry({"S.T": KEYED.renamed("S", "T")}, "S")
    reg.outcome.reread["S.T"] = "partition exchanged"
    reg.outcome.column_renames["S.T"] = {"a": "b"}
    reg.rename("S.T", "S.U")
    out = reg.finish()
    assert out.reread == {"S.U": "partition exchanged"} and out.column_renames == {"S.U": {"a": "b"}}
    assert out.renamed_from == {"S.U": "S.T"} and out.changes["S.T"] is None
    with pytest.raises(Exception, match="exists already"):
        SchemaRegistry({"S.A": KEYED, "S.B": KEYED}, "S").rename("S.A", "S.B")


def test_a_failed_connection_is_one_retryable_error_and_locks_go_with_the_last_held_table() -> None:
    class Refusing(Connector):
        system = "Db9"

        def where(self) -> str:
            return "h:1 as u"

        def open(self) -> Any:
            raise OSError("connection refused")

        def jdbc(self) -> JdbcEndpoint:
            return JdbcEndpoint("jdbc:db9://h")

    with pytest.raises(PreflightError) as err:
        Refusing(config=None).connect()
    assert err.value.problem == "cannot connect to Db9 at h:1 as u: connection refused" and not err.value.permanent
    released: list[str] = []

    class Conn:
        def close(self) -> None:
            released.append("closed")

    held = HeldTables(lambda conn: released.append("unlocked"))
    held.hold(Conn(), ["a", "b"])
    held.let_go("a")
    assert released == []
    held.let_go("b")
    assert released == ["unlocked", "closed"]
