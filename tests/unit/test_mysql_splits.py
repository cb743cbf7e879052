"""Planning a binlog window as splits: which columns the JVM reader decodes, the byte ranges, the cut."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cdclake.errors import ConfigError
from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql import splits
from cdclake.sources.mysql.position import BinlogPosition
from cdclake.sources.mysql.types import column_from_definition
from cdclake.spi import SplitOptions, WindowRequest


def _kind(definition: str) -> dict:
    name, source_type = definition.split(" ", 1)
    return splits.column_kind(column_from_definition(name, source_type))


def test_every_column_kind_the_reader_knows() -> None:
    assert _kind("a tinyint unsigned")["kind"] == "uint8"
    assert _kind("a bigint unsigned")["kind"] == "uint64"
    assert _kind("a mediumint")["kind"] == "int"
    assert _kind("a float")["kind"] == _kind("a double")["kind"] == "real"
    assert _kind("a bit(1)")["kind"] == "bit1" and _kind("a bit(9)")["kind"] == "bytes"
    assert _kind("a binary(4)") == {"name": "a", "kind": "binary", "pad": 4}
    assert _kind("a enum('x','y')") == {"name": "a", "kind": "enum", "values": ["x", "y"]}
    assert _kind("a set('x','y')")["values"] == ["x", "y"]
    assert _kind("a varchar(3) CHARACTER SET latin1")["charset"] == "windows-1252"
    assert _kind("a text")["charset"] == "UTF-8"
    assert _kind("a point")["kind"] == "bytes"
    for kind in ("date", "datetime(6)", "timestamp(3)", "time(1)", "year", "decimal(5,2)"):
        assert _kind(f"a {kind}")["kind"] == kind.split("(")[0]


def test_a_column_without_a_canonical_form_keeps_the_window_on_the_driver() -> None:
    with pytest.raises(splits.NotSplittable, match="column a has type uuid"):
        splits.column_kind(Column("a", "uuid", "STRING", attrs={"base": "uuid"}))


def test_ranges_cover_the_window_file_by_file() -> None:
    logs = [("b.000001", 900), ("b.000002", 500), ("b.000003", 700), ("b.000004", 300)]
    got = splits._ranges(logs, BinlogPosition("b.000002", 120), BinlogPosition("b.000004", 250))
    assert [(r.file, r.start, r.end, r.head) for r in got] == [
        ("b.000002", 120, 500, False), ("b.000003", 4, 700, True), ("b.000004", 4, 250, True)]
    assert splits._ranges(logs, BinlogPosition("b.000002", 500), BinlogPosition("b.000002", 500)) == []


def _request(decoder: str, max_events: int | None = None) -> WindowRequest:
    return WindowRequest(1, BinlogPosition("b.000001", 4), BinlogPosition("b.000001", 9000), {}, {}, 1,
                         max_events, {}, "", SplitOptions(decoder=decoder))


def test_what_keeps_a_window_on_the_driver() -> None:
    mysql = SimpleNamespace(flavor="mysql")
    assert splits.plan(mysql, _request("driver")).reason == "mining.decoder: driver"  # type: ignore[arg-type]
    assert "max-events" in splits.plan(mysql, _request("auto", 10)).reason  # type: ignore[arg-type]
    assert "MariaDB" in splits.plan(mysql, _request("auto")).reason  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cannot be decoded on executors"):
        splits.plan(mysql, _request("executors"))  # type: ignore[arg-type]


def test_which_statements_end_a_split_window() -> None:
    source = SimpleNamespace(config=SimpleNamespace(captures=lambda t: t.startswith("shop.")))
    schemas = {"shop.t": TableSchema("shop", "t", [column_from_definition("id", "int")])}
    assert splits._matters(source, "ALTER TABLE t ADD c INT", "shop", schemas)  # type: ignore[arg-type]
    assert splits._matters(source, "TRUNCATE TABLE t", "shop", schemas)  # type: ignore[arg-type]
    assert splits._matters(source, "CREATE TABLE shop.n (id INT)", None, schemas)  # type: ignore[arg-type]
    assert splits._matters(source, "ALTER TABLE t ADD COLUMN c FOOTYPE", "shop", schemas)  # type: ignore[arg-type]
    assert not splits._matters(source, "CREATE TABLE other.n (id INT)", None, schemas)  # type: ignore[arg-type]
    assert not splits._matters(source, "GRANT SELECT ON shop.* TO x", None, schemas)  # type: ignore[arg-type]
