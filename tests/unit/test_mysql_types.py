"""MySQL/MariaDB type mapping and binlog value canonicalisation (no server, no Spark)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition, table_map_overrides

UTC5 = dt.timezone(dt.timedelta(hours=5))
M = MySqlTypeMapper()
SPATIAL = "STRUCT<wkb: BINARY, srid: INT>"


@pytest.mark.parametrize(
    ("type_text", "source_type", "spark_type", "canonical"),
    [
        ("tinyint", "tinyint(4)", "TINYINT", "BIGINT"),
        ("TINYINT UNSIGNED", "tinyint(3) unsigned", "SMALLINT", "BIGINT"),
        ("tinyint(1)", "tinyint(1)", "TINYINT", "BIGINT"),
        ("BOOL", "tinyint(1)", "TINYINT", "BIGINT"),
        ("boolean", "tinyint(1)", "TINYINT", "BIGINT"),
        ("smallint", "smallint(6)", "SMALLINT", "BIGINT"),
        ("smallint unsigned", "smallint(5) unsigned", "INT", "BIGINT"),
        ("mediumint", "mediumint(9)", "INT", "BIGINT"),
        ("mediumint(8) unsigned", "mediumint(8) unsigned", "INT", "BIGINT"),
        ("int", "int(11)", "INT", "BIGINT"),
        ("INTEGER", "int(11)", "INT", "BIGINT"),
        ("int(10) unsigned", "int(10) unsigned", "BIGINT", "BIGINT"),
        ("int zerofill", "int(10) unsigned zerofill", "BIGINT", "BIGINT"),
        ("bigint", "bigint(20)", "BIGINT", "BIGINT"),
        ("BIGINT(20) UNSIGNED", "bigint(20) unsigned", "DECIMAL(20,0)", "STRING"),
        ("decimal", "decimal(10,0)", "DECIMAL(10,0)", "STRING"),
        ("numeric(5)", "decimal(5,0)", "DECIMAL(5,0)", "STRING"),
        ("DEC(38, 10)", "decimal(38,10)", "DECIMAL(38,10)", "STRING"),
        ("fixed(39,2)", "decimal(39,2)", "STRING", "STRING"),
        ("decimal(65,30) unsigned", "decimal(65,30) unsigned", "STRING", "STRING"),
        ("float", "float", "FLOAT", "DOUBLE"),
        ("float(7,4)", "float(7,4)", "FLOAT", "DOUBLE"),
        ("float(24)", "float(24)", "FLOAT", "DOUBLE"),
        ("float(25)", "double", "DOUBLE", "DOUBLE"),
        ("double", "double", "DOUBLE", "DOUBLE"),
        ("double precision", "double", "DOUBLE", "DOUBLE"),
        ("REAL", "double", "DOUBLE", "DOUBLE"),
        ("double(10,2)", "double(10,2)", "DOUBLE", "DOUBLE"),
        ("date", "date", "DATE", "STRING"),
        ("datetime", "datetime", "TIMESTAMP_NTZ", "STRING"),
        ("datetime(0)", "datetime", "TIMESTAMP_NTZ", "STRING"),
        ("datetime(6)", "datetime(6)", "TIMESTAMP_NTZ", "STRING"),
        ("timestamp", "timestamp", "TIMESTAMP", "BIGINT"),
        ("timestamp(3)", "timestamp(3)", "TIMESTAMP", "BIGINT"),
        ("time", "time", "BIGINT", "BIGINT"),
        ("time(6)", "time(6)", "BIGINT", "BIGINT"),
        ("year", "year(4)", "SMALLINT", "BIGINT"),
        ("year(4)", "year(4)", "SMALLINT", "BIGINT"),
        ("bit", "bit(1)", "BOOLEAN", "BIGINT"),
        ("bit(1)", "bit(1)", "BOOLEAN", "BIGINT"),
        ("bit(9)", "bit(9)", "BINARY", "STRING"),
        ("bit(64)", "bit(64)", "BINARY", "STRING"),
        ("char", "char(1)", "STRING", "STRING"),
        ("char(10)", "char(10)", "STRING", "STRING"),
        ("character(3)", "char(3)", "STRING", "STRING"),
        ("varchar(255)", "varchar(255)", "STRING", "STRING"),
        ("character varying(5)", "varchar(5)", "STRING", "STRING"),
        ("national varchar(5)", "varchar(5)", "STRING", "STRING"),
        ("nchar(2)", "char(2)", "STRING", "STRING"),
        ("tinytext", "tinytext", "STRING", "STRING"),
        ("text", "text", "STRING", "STRING"),
        ("mediumtext", "mediumtext", "STRING", "STRING"),
        ("longtext", "longtext", "STRING", "STRING"),
        ("long varchar", "mediumtext", "STRING", "STRING"),
        ("binary", "binary(1)", "BINARY", "STRING"),
        ("binary(16)", "binary(16)", "BINARY", "STRING"),
        ("varbinary(16)", "varbinary(16)", "BINARY", "STRING"),
        ("tinyblob", "tinyblob", "BINARY", "STRING"),
        ("blob", "blob", "BINARY", "STRING"),
        ("mediumblob", "mediumblob", "BINARY", "STRING"),
        ("longblob", "longblob", "BINARY", "STRING"),
        ("varchar(8) character set binary", "varbinary(8)", "BINARY", "STRING"),
        ("enum('a','B c','it''s')", "enum('a','B c','it''s')", "STRING", "STRING"),
        ("SET('x', 'y')", "set('x','y')", "STRING", "STRING"),
        ("json", "json", "STRING", "STRING"),
        ("geometry", "geometry", SPATIAL, "STRING"),
        ("point", "point", SPATIAL, "STRING"),
        ("linestring", "linestring", SPATIAL, "STRING"),
        ("polygon", "polygon", SPATIAL, "STRING"),
        ("multipoint", "multipoint", SPATIAL, "STRING"),
        ("multilinestring", "multilinestring", SPATIAL, "STRING"),
        ("multipolygon", "multipolygon", SPATIAL, "STRING"),
        ("geometrycollection", "geometrycollection", SPATIAL, "STRING"),
        ("geomcollection", "geometrycollection", SPATIAL, "STRING"),
    ],
)
def test_type_mapping(type_text: str, source_type: str, spark_type: str, canonical: str) -> None:
    col = column_from_definition("c", type_text)
    assert (col.source_type, col.spark_type, M.canonical_type(col)) == (source_type, spark_type, canonical)


def test_attrs() -> None:
    assert column_from_definition("c", "bigint unsigned").attrs == {
        "base": "bigint", "unsigned": True, "charset": "utf8mb4"
    }
    assert column_from_definition("c", "decimal(65,30)").attrs["precision"] == 65
    assert column_from_definition("c", "decimal(65,30)").attrs["scale"] == 30
    assert column_from_definition("c", "datetime(3)").attrs["fsp"] == 3
    assert column_from_definition("c", "timestamp").attrs["fsp"] == 0
    assert column_from_definition("c", "varchar(7)").attrs["length"] == 7
    assert column_from_definition("c", "bit(12)").attrs == {
        "base": "bit", "unsigned": False, "length": 12, "charset": "binary"
    }
    assert column_from_definition("c", "enum('a','b')").attrs["enum_values"] == ["a", "b"]
    assert column_from_definition("c", "set('a','b')").attrs["set_values"] == ["a", "b"]
    assert column_from_definition("c", "varbinary(3)").attrs["charset"] == "binary"
    assert column_from_definition("c", "point").attrs["charset"] == "binary"
    assert column_from_definition("c", "varchar(3)", charset="latin1").attrs["charset"] == "latin1"
    assert column_from_definition("c", "varchar(3) collate latin1_bin", charset="utf8mb4").attrs[
        "charset"
    ] == "latin1"
    col = column_from_definition("c", "int", nullable=False, default="3")
    assert (col.nullable, col.default) == (False, "3")


def test_unknown_type_raises_naming_it() -> None:
    with pytest.raises(ValueError, match="frobtype"):
        column_from_definition("c", "frobtype(3)")


def test_table_map_overrides_prepends_enum_error_value() -> None:
    over = table_map_overrides(column_from_definition("e", "enum('a','b')"))
    assert over["enum_values"] == ["", "a", "b"] and over["name"] == "e" and over["unsigned"] is False
    assert table_map_overrides(column_from_definition("b", "blob"))["character_set_name"] == "binary"
    assert table_map_overrides(column_from_definition("s", "set('x')"))["set_values"] == ["x"]


# ---- canonical_from_binlog -------------------------------------------------------------------


def canon(type_text: str, value: object, none_source: str | None = None) -> object:
    result = M.canonical_from_binlog(column_from_definition("c", type_text), value, none_source)
    json.dumps(result)  # always JSON-serialisable
    return result


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        ("tinyint", -128, -128),
        ("tinyint unsigned", 255, 255),
        ("tinyint(1)", 1, 1),
        ("smallint unsigned", 65535, 65535),
        ("mediumint", -8388608, -8388608),
        ("int unsigned", 4294967295, 4294967295),
        ("bigint", -9223372036854775808, -9223372036854775808),
        ("bigint unsigned", 18446744073709551615, "18446744073709551615"),
        ("bigint unsigned", 0, "0"),
        ("decimal(10,2)", Decimal("1.50"), "1.50"),
        ("decimal(10,2)", Decimal("-0.05"), "-0.05"),
        ("decimal(10,0)", Decimal("123."), "123"),
        ("decimal(65,30)", Decimal("0.000000000000000000000000000000"), "0.000000000000000000000000000000"),
        (
            "decimal(65,30)",
            Decimal("-99999999999999999999999999999999999.999999999999999999999999999999"),
            "-99999999999999999999999999999999999.999999999999999999999999999999",
        ),
        ("float", 1.100000023841858, 1.100000023841858),
        ("double", 0.30000000000000004, 0.30000000000000004),
        ("date", dt.date(2024, 2, 29), "2024-02-29"),
        ("date", dt.date(1, 1, 1), "0001-01-01"),
        ("date", None, None),  # zero date
        ("datetime(6)", dt.datetime(2024, 1, 2, 3, 4, 5, 6), "2024-01-02 03:04:05.000006"),
        ("datetime", dt.datetime(999, 12, 31, 23, 59, 59), "0999-12-31 23:59:59.000000"),
        ("datetime(4)", dt.datetime(9999, 12, 31, 23, 59, 59, 999900), "9999-12-31 23:59:59.999900"),
        ("timestamp(6)", dt.datetime(1970, 1, 1, 0, 0, 1, 500000), 1_500_000),
        ("timestamp", dt.datetime(2038, 1, 19, 3, 14, 7), 2147483647_000000),
        ("timestamp", dt.datetime(1970, 1, 1), None),  # zero timestamp arrives as the epoch
        ("timestamp", dt.datetime(2020, 1, 1, 5, tzinfo=UTC5), 1577836800_000000),
        ("time", dt.timedelta(hours=838, minutes=59, seconds=59), 3020399_000000),
        ("time", dt.timedelta(hours=-838, minutes=-59, seconds=-59), -3020399_000000),
        ("time(6)", dt.timedelta(microseconds=1), 1),
        ("time(6)", -dt.timedelta(seconds=1), -1_000000),
        # python-mysql-replication 1.0.17's negative TIME2 with a fraction: f -> (1 - f) (see _time_micros)
        ("time(1)", -dt.timedelta(seconds=0.9), -100000),  # stored '-00:00:00.1'
        ("time(3)", -dt.timedelta(seconds=43200, milliseconds=999), -43200_001000),  # '-12:00:00.001'
        ("time(6)", -dt.timedelta(seconds=3020399, microseconds=1), -3020399_999999),  # '-838:59:59.999999'
        ("time(6)", -dt.timedelta(seconds=1, microseconds=500000), -1_500000),  # '-00:00:01.5'
        ("year", 2024, 2024),
        ("year", 1901, 1901),
        ("year", 1900, 0),  # the zero year 0000 (stored 0, decoded as 0 + 1900)
        ("bit(1)", "1", 1),
        ("bit(1)", "0", 0),
        ("bit(10)", "1000000001", "0201"),
        ("bit(10)", "0000000011", "0003"),
        ("bit(64)", "1" * 64, "ff" * 8),
        ("bit(8)", "00000000", "00"),
        ("char(3)", "abc", "abc"),
        ("varchar(10)", "héllo ✓", "héllo ✓"),
        ("text", b"caf\xc3\xa9", "café"),
        ("varchar(5) character set latin1", b"caf\xe9", "café"),
        ("binary(4)", b"ab", "61620000"),  # the binlog drops BINARY(n)'s trailing 0x00 padding
        ("binary(2)", b"\x00\x01", "0001"),
        ("varbinary(8)", b"\x00\xff", "00ff"),
        ("blob", b"", ""),
        ("longblob", b"\x01\x02", "0102"),
        ("enum('a','b')", "b", "b"),
        ("enum('a','b')", "", ""),
        ("enum('a','b')", 2, "b"),  # index when the decoder did not know the values
        ("enum('a','b')", 0, ""),
        ("set('a','b','c')", {"c", "a"}, "a,c"),
        ("set('a','b','c')", None, None),
        ("set('a','b','c')", 5, "a,c"),
        ("json", '{"a": [1, 2.5, "x"]}', '{"a": [1, 2.5, "x"]}'),
        ("json", {b"k": [1, None, True]}, '{"k": [1, null, true]}'),
        ("json", None, None),
        (  # the stored value whole: the SRID (4326, little-endian), then WKB
            "point",
            bytes.fromhex("e6100000") + bytes.fromhex("0101000000000000000000f03f0000000000000040"),
            "e61000000101000000000000000000f03f0000000000000040",
        ),
        ("geometry", b"\x00\x00\x00\x00\x01\x02", "000000000102"),
        ("geometry", b"", ""),  # MariaDB's empty value (ADD c GEOMETRY NOT NULL on existing rows)
    ],
)
def test_canonical_from_binlog(type_text: str, value: object, expected: object) -> None:
    assert canon(type_text, value) == expected


def test_empty_set_is_empty_string_not_null() -> None:
    assert canon("set('a','b')", None, "empty set") == ""
    assert canon("set('a','b')", None, "null") is None


def test_every_null_is_none() -> None:
    for t in ("int", "bigint unsigned", "decimal(5,2)", "datetime", "timestamp", "time(3)", "bit(3)", "blob"):
        assert canon(t, None) is None


# ---- snapshot SQL and Spark expressions (text only) ----------------------------------------------


def test_snapshot_select_sql_shapes() -> None:
    def sql(type_text: str, name: str = "c") -> str:
        return M.snapshot_select_sql(column_from_definition(name, type_text))

    assert sql("int") == "CAST(`c` AS SIGNED) AS `c`"
    assert sql("bigint unsigned") == "CAST(`c` AS CHAR) AS `c`"
    assert sql("decimal(5,2)", "we`ird") == "CAST(`we``ird` AS CHAR) AS `we``ird`"
    assert sql("float") == "CAST(`c` AS DOUBLE) AS `c`"
    assert sql("double") == "`c` AS `c`"
    assert "UNIX_TIMESTAMP(`c`)" in sql("timestamp(6)")
    assert sql("bit(10)") == "LOWER(LPAD(HEX(`c`), 4, '0')) AS `c`"
    assert sql("point") == "LOWER(HEX(`c`)) AS `c`"
    assert sql("varchar(3)") == "`c` AS `c`"


def test_to_delta_sql_shapes() -> None:
    def expr(type_text: str) -> str:
        return M.to_delta_sql(column_from_definition("c", type_text), "v")

    assert expr("bigint unsigned") == "CAST(v AS DECIMAL(20,0))"
    assert expr("decimal(65,30)") == "v"
    assert expr("timestamp(6)") == "timestamp_micros(v)"
    assert expr("bit(1)") == "(v <> 0)"
    assert expr("blob") == "unhex(v)"
    assert "try_cast(v AS TIMESTAMP_NTZ)" in expr("datetime(6)")
    assert expr("text") == "v"
    for spatial in ("geometry", "point", "multipolygon"):
        assert expr(spatial).startswith(
            "CASE WHEN v IS NULL THEN NULL ELSE named_struct('wkb', unhex(substring(v, 9)), ")


def test_spatial_initial_values() -> None:
    """A NOT NULL spatial column added without a default holds MariaDB's empty value in existing rows;
    an expression default is not evaluable (NULL); a nullable one is NULL."""
    empty = M.initial_value_sql(column_from_definition("g", "geometry", nullable=False))
    assert empty == M.to_delta_sql(column_from_definition("g", "geometry"), "''")
    assert M.initial_value_sql(column_from_definition(
        "g", "point", nullable=False, default="st_geometryfromtext('POINT(1 1)',4326)")) is None
    assert M.initial_value_sql(column_from_definition("g", "point")) is None
