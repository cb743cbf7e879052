"""Key filters of ``cdclake reconcile --repair``: literals both the source's SQL and Spark SQL read
alike, multi-column keys, batches, and refusals that name the column and the fix (no Spark)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from cdclake.engine.repair.reconcile import KeyColumn, key_filters, sql_literal
from cdclake.errors import CdcError
from cdclake.sources.mysql.snapshot import MySqlSnapshotReader
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition
from cdclake.spi import SnapshotReader

ID = KeyColumn("id", "`id`", "number")
NAME = KeyColumn("name", "`name`", "string")
DAY = KeyColumn("day", "`day`", "date")


def test_literals() -> None:
    assert sql_literal("number", 7) == "7"
    assert sql_literal("number", -12) == "-12"
    assert sql_literal("number", Decimal("18446744073709551615")) == "18446744073709551615"
    assert sql_literal("number", Decimal("1E+3")) == "1000"  # never an exponent (a double in Spark)
    assert sql_literal("number", Decimal("0.10")) == "0.10"
    assert sql_literal("string", "a b?%_ü") == "'a b?%_ü'"
    assert sql_literal("date", dt.date(2024, 2, 29)) == "DATE '2024-02-29'"
    # What has no literal both sides read alike:
    assert sql_literal("number", True) is None
    assert sql_literal("number", 1.5) is None
    assert sql_literal("number", Decimal("NaN")) is None
    assert sql_literal("string", "it's") is None
    assert sql_literal("string", "back\\slash") is None
    assert sql_literal("date", dt.datetime(2024, 1, 1)) is None
    assert sql_literal(None, 1) is None


def test_single_column_keys_in_batches_with_nulls() -> None:
    keys = [(i,) for i in range(1, 1102)]
    filters = key_filters("db.t", [ID], keys)
    assert len(filters) == 3
    assert filters[0].startswith("`id` IN (1, 2, ") and filters[0].endswith(", 500)")
    assert filters[2] == "`id` IN (" + ", ".join(str(i) for i in range(1001, 1102)) + ")"
    assert key_filters("db.t", [NAME], [("x",), (None,)]) == ["`name` IN ('x') OR `name` IS NULL"]
    assert key_filters("db.t", [NAME], [(None,)]) == ["`name` IS NULL"]
    assert key_filters("db.t", [ID], []) == []


def test_multi_column_keys() -> None:
    filters = key_filters("db.t", [NAME, ID, DAY], [("eu", 1, dt.date(2024, 1, 2)), ("us", 2, None)], batch_size=1)
    assert filters == ["(`name` = 'eu' AND `id` = 1 AND `day` = DATE '2024-01-02')",
                       "(`name` = 'us' AND `id` = 2 AND `day` IS NULL)"]
    assert key_filters("db.t", [NAME, ID], [("a", 1), ("b", 2)]) == [
        "(`name` = 'a' AND `id` = 1) OR (`name` = 'b' AND `id` = 2)"]


def test_refusals_name_the_column_and_the_fix() -> None:
    with pytest.raises(CdcError, match="key column name holds the value \"o'k\"") as err:
        key_filters("db.t", [ID, NAME], [(1, "fine"), (2, "o'k")])
    assert "`cdclake backfill --table db.t`" in (err.value.fix or "") and err.value.permanent
    with pytest.raises(CdcError, match="key column ts has a type without a literal"):
        key_filters("db.t", [KeyColumn("ts", "`ts`", None)], [(dt.datetime(2024, 1, 1),)])
    with pytest.raises(CdcError, match="key column Weird Name has a name"):
        key_filters("db.t", [KeyColumn("Weird Name", None, "number")], [(1,)])


def test_the_mysql_plugin_says_which_keys_have_literals() -> None:
    types = MySqlTypeMapper()
    kinds = {t: types.filter_literal_kind(column_from_definition("c", t)) for t in (
        "INT", "BIGINT UNSIGNED", "TINYINT(1)", "YEAR", "DECIMAL(10,2)", "VARCHAR(20)", "ENUM('a','b')", "DATE",
        "DATETIME(3)", "TIMESTAMP", "TIME", "BIT(1)", "VARBINARY(8)", "DOUBLE", "DECIMAL(65,2)")}
    assert kinds == {"INT": "number", "BIGINT UNSIGNED": "number", "TINYINT(1)": "number", "YEAR": "number",
                     "DECIMAL(10,2)": "number", "VARCHAR(20)": "string", "ENUM('a','b')": "string", "DATE": "date",
                     "DATETIME(3)": None, "TIMESTAMP": None, "TIME": None, "BIT(1)": None, "VARBINARY(8)": None,
                     "DOUBLE": None, "DECIMAL(65,2)": None}
    assert MySqlSnapshotReader.filter_identifier(None, "we`ird") == "`we``ird`"  # type: ignore[arg-type]
    assert SnapshotReader.filter_identifier(None, "ID") == "ID"  # type: ignore[arg-type]
    assert SnapshotReader.filter_identifier(None, "two words") is None  # type: ignore[arg-type]


def test_the_oracle_plugin_says_which_keys_have_literals() -> None:
    from cdclake.sources.oracle.source import OracleSnapshotReader
    from cdclake.sources.oracle.types import OracleTypeMapper, column_from_oracle

    types = OracleTypeMapper()
    cases = {"NUMBER(10)": (10, 0), "NUMBER(12,2)": (12, 2), "NUMBER": (None, None), "VARCHAR2(20)": None,
             "CHAR(3)": None, "NVARCHAR2(20)": None, "DATE": None, "TIMESTAMP(6)": None, "RAW(16)": None,
             "BINARY_DOUBLE": None}
    kinds = {}
    for t, ps in cases.items():
        kw = {"data_precision": ps[0], "data_scale": ps[1]} if ps else {}
        kinds[t] = types.filter_literal_kind(column_from_oracle("C", t, **kw))
    assert kinds == {"NUMBER(10)": "number", "NUMBER(12,2)": "number", "NUMBER": None, "VARCHAR2(20)": "string",
                     "CHAR(3)": "string", "NVARCHAR2(20)": None, "DATE": None, "TIMESTAMP(6)": None,
                     "RAW(16)": None, "BINARY_DOUBLE": None}
    assert OracleSnapshotReader.filter_identifier(None, "ORDER_ID") == "ORDER_ID"  # type: ignore[arg-type]
    assert OracleSnapshotReader.filter_identifier(None, "order_id") is None  # type: ignore[arg-type]  # a quoted name
