"""The naming rule of docs/schema-changes.md ("Names"): deterministic, collision-free, existing names unmoved."""

from __future__ import annotations

import pytest
from cdclake.engine.names import (
    SOURCE_NAME,
    UnstorableNames,
    column_map,
    field_metadata,
    lake_keys,
    lake_schema,
    renamed_columns,
    target_dir,
)
from cdclake.schema import Column, TableSchema, UniqueKey

ODD = ["my col", "a,b", "x;y", "{c}", "(p)", "k=v", "tab\tcol", "nl\ncol", "a=b"]


def test_plain_names_keep_their_column_and_odd_ones_get_a_stable_mapped_name() -> None:
    names = ["id", "amount", "Name", "a-b", "a.b", "$x", *ODD, "a b", "a_b", "__op", "_x"]
    mapped = column_map(names, column_mapping=False)
    for n in ["id", "amount", "Name", "a-b", "a.b", "$x", "a_b", "_x"]:
        assert mapped[n] == n
    lakes = list(mapped.values())
    assert len({n.lower() for n in lakes}) == len(lakes)  # no two alike, even without case
    for n in [*ODD, "a b", "__op"]:
        assert mapped[n] != n and not any(ch in mapped[n] for ch in " ,;{}()\n\t=")
        assert not mapped[n].startswith("__")
    assert column_map(list(reversed(names)), column_mapping=False) == mapped  # order does not matter
    assert column_map(["my col"], False)["my col"] == mapped["my col"]  # nor the other columns
    with_mapping = column_map(names, column_mapping=True)
    assert all(with_mapping[n] == n for n in names if n != "__op")


def test_a_mapped_name_never_takes_another_columns_name() -> None:
    first = column_map(["my col"], False)["my col"]
    both = column_map(["my col", first], False)
    assert both[first] == first and both["my col"] != first and both["my col"].startswith("my_col_")
    upper = column_map(["my col", first.upper()], False)
    assert upper["my col"].lower() != first.lower()


def test_columns_differing_only_by_case_park_the_table() -> None:
    with pytest.raises(UnstorableNames, match="differ only by case") as caught:
        column_map(["Name", "NAME", "id"], column_mapping=True, table="s.t")
    assert "snapshot --tables" in caught.value.fix


def test_a_lake_schema_keeps_source_names_and_keys() -> None:
    t = TableSchema("s", "t", [Column("my id", "int", "INT"), Column("v", "int", "INT")], ["my id"],
                    [UniqueKey("u", ("my id", "v"))])
    lake = lake_schema(t, column_mapping=False)
    mapped = lake.columns[0].name
    assert lake.columns[0].attrs[SOURCE_NAME] == "my id" and lake.primary_key == [mapped]
    assert lake.unique_keys[0].columns == (mapped, "v")
    assert lake_schema(lake, column_mapping=False) == lake  # idempotent
    assert lake_keys(lake, ["my id", "V"]) == [mapped, "v"] and lake_keys(lake, [mapped]) == [mapped]
    assert renamed_columns(lake) == {"my id": mapped}
    assert lake_schema(t, column_mapping=True) is t
    fields = [(mapped, {}), ("v", {SOURCE_NAME: "stale", "comment": "c"}), ("__op", {})]
    assert field_metadata(fields, lake) == {mapped: {SOURCE_NAME: "my id"}, "v": {"comment": "c"}}


def test_table_directories_are_unchanged_for_plain_names_and_never_collide() -> None:
    for db, table in [("shop", "orders"), ("shop", "order-lines"), ("Shop1", "T_2"), ("shop", "_x"), ("shop", "a__b")]:
        assert target_dir(db, table) == f"{db}__{table}"
    tables = [("s", "a b"), ("s", "a_b"), ("s", "a-b"), ("a__b", "c"), ("a", "b__c"), ("a_", "_b"), ("a", "__b"),
              ("s", "t__history"), ("s", "t"), ("s", "t__0123abcd"), ("s", "t.x"), ("s", "t x"), ("s", "T x")]
    dirs = [target_dir(d, t) for d, t in tables]
    histories = [f"{d}__history" for d in dirs]
    assert len(set(dirs) | set(histories)) == 2 * len(tables), dirs
    assert target_dir("s", "a b") == target_dir("s", "a b") and target_dir("s", "a b").startswith("s__a_b__")
