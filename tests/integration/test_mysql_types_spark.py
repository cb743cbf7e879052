"""Type mapping against the real thing: a throwaway MariaDB 10.11 and a local Spark.

1. value by value, the snapshot SELECT's canonical value equals ``canonical_from_binlog`` of the
   row the binlog carries for the same stored value (extremes, zero dates, negative TIME, fsp...);
2. ``to_delta_sql`` turns canonical values (through ``from_json`` with ``canonical_type``) into the
   exact Delta values with Spark 4 in ANSI mode.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cdclake.schema import Column
from cdclake.sources.mysql.ddl import apply_ddl
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition, table_map_overrides

pytestmark = [pytest.mark.integration]
M = MySqlTypeMapper()

COLUMNS = """
  id int NOT NULL PRIMARY KEY,
  ti tinyint, tu tinyint unsigned, bo boolean, si smallint, su smallint unsigned, mi mediumint,
  mu mediumint unsigned, i int, iu int unsigned, bi bigint, bu bigint unsigned,
  d decimal(10,2), dbig decimal(65,30), d0 decimal(20,0), f float, f74 float(7,4), db double,
  da date, dt0 datetime, dt3 datetime(3), dt6 datetime(6),
  ts0 timestamp NULL, ts6 timestamp(6) NULL, t0 time, t1 time(1), t3 time(3), t6 time(6), y year,
  b1 bit(1), b10 bit(10), b64 bit(64),
  c char(5), vc varchar(20), l1 varchar(10) CHARACTER SET latin1, tx text,
  bn binary(4), vb varbinary(8), bl blob,
  e enum('a','b','it''s'), s set('x','y','z'), j json, g geometry, p point
"""

# (column, SQL literal) per row; unspecified columns are NULL.
ROWS: list[dict[str, str]] = [
    {
        "ti": "-128",
        "tu": "255",
        "bo": "1",
        "si": "-32768",
        "su": "65535",
        "mi": "-8388608",
        "mu": "16777215",
        "i": "-2147483648",
        "iu": "4294967295",
        "bi": "-9223372036854775808",
        "bu": "18446744073709551615",
        "d": "-12345678.99",
        "dbig": "-99999999999999999999999999999999999.999999999999999999999999999999",
        "d0": "99999999999999999999",
        "f": "1.1",
        "f74": "123.4567",
        "db": "0.1e0 + 0.2e0",
        "da": "'1000-01-01'",
        "dt0": "'1000-01-01 00:00:00'",
        "dt3": "'2024-02-29 12:34:56.789'",
        "dt6": "'9999-12-31 23:59:59.999999'",
        "ts0": "'1970-01-01 00:00:01'",
        "ts6": "'2038-01-19 03:14:07.999999'",
        "t0": "'-838:59:59'",
        "t1": "'-00:00:00.1'",
        "t3": "'-12:00:00.001'",
        "t6": "'-838:59:59.999999'",
        "y": "1901",
        "b1": "b'1'",
        "b10": "b'1000000001'",
        "b64": "0xFFFFFFFFFFFFFFFF",
        "c": "'abc'",
        "vc": "'héllo ✓ 𝄞'",
        "l1": "'café'",
        "tx": "''",
        "bn": "0x6162",
        "vb": "0x00FF00",
        "bl": "''",
        "e": "'it''s'",
        "s": "'z,x'",
        "j": '\'{"a": [1, 2.5, "x"], "b": null}\'',
        "g": "ST_GeomFromText('LINESTRING(0 0, 1 1)')",
        "p": "ST_GeomFromText('POINT(1 2)', 4326)",
    },
    {
        "ti": "127",
        "tu": "0",
        "bo": "0",
        "si": "32767",
        "mi": "8388607",
        "i": "2147483647",
        "bi": "9223372036854775807",
        "bu": "0",
        "d": "0",
        "dbig": "0",
        "d0": "-1",
        "f": "-3.4e38",
        "f74": "-0.0001",
        "db": "1.7976931348623157e308",
        "da": "'0000-00-00'",
        "dt0": "'0000-00-00 00:00:00'",
        "dt3": "'2020-00-15 10:00:00'",
        "dt6": "'0000-01-01 00:00:00'",
        "ts0": "'0000-00-00 00:00:00'",
        "ts6": "'1970-01-01 00:00:01.000001'",
        "t0": "'838:59:59'",
        "t1": "'00:00:00'",
        "t3": "'-00:00:01.5'",
        "t6": "'00:00:00.000001'",
        "y": "0",
        "b1": "b'0'",
        "b10": "b'0'",
        "b64": "0",
        "c": "''",
        "vc": "' padded  '",
        "l1": "''",
        "tx": "'x'",
        "bn": "0x00000000",
        "vb": "''",
        "e": "''",
        "s": "''",
        "j": "'[]'",
    },
    {
        "f": "0.123456789",
        "db": "-2.2250738585072014e-308",
        "dbig": "0.000000000000000000000000000001",
        "da": "'2024-02-29'",
        "dt0": "'2001-02-03 04:05:06'",
        "ts6": "'2001-02-03 04:05:06.123456'",
        "t6": "'-00:00:00.000001'",
        "t3": "'12:34:56.7'",
        "y": "2155",
        "e": "'a'",
        "s": "'x,y,z'",
        "j": "'\"just a string\"'",
    },
    {},  # all NULL
]


@pytest.fixture(scope="module")
def stored(mariadb: Any) -> Iterator[tuple[list[Column], list[dict[str, Any]], list[dict[str, Any]]]]:
    """(columns, snapshot canonical rows, binlog canonical rows) for ROWS, by id."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    db = "types_check"
    mariadb.execute(f"DROP DATABASE IF EXISTS {db}")
    mariadb.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
    conn = mariadb.connect(database=db)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE t ({COLUMNS}) DEFAULT CHARSET=utf8mb4")
            cur.execute("SHOW CREATE TABLE t")
            schema = apply_ddl(cur.fetchone()[1], {}, db).changes[f"{db}.t"]
            assert schema is not None
            cur.execute("SHOW MASTER STATUS")
            log_file, log_pos = cur.fetchone()[:2]
            cur.execute("SET SESSION sql_mode = ''")  # allow zero dates, like legacy applications
            for n, row in enumerate(ROWS, start=1):
                names = ["id", *row]
                cur.execute(
                    f"INSERT INTO t ({', '.join(names)}) VALUES ({', '.join([str(n), *row.values()])})"
                )
            # The canonical values must not depend on the session zone: read with a non-UTC one.
            cur.execute("SET SESSION time_zone = '+05:00'")
            select = ", ".join(M.snapshot_select_sql(c) for c in schema.columns)
            cur.execute(f"SELECT {select} FROM t ORDER BY id")
            names = [d[0] for d in cur.description]
            snapshot = [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        conn.close()

    stream = BinLogStreamReader(
        connection_settings=mariadb.connection_settings(),
        server_id=4242,
        log_file=log_file,
        log_pos=log_pos,
        resume_stream=True,
        blocking=False,
        # Plain COM_BINLOG_DUMP at file/offset: the library's MariaDB mode ignores log_file/log_pos
        # and dumps the whole binlog from its first file (which on the shared server holds every
        # earlier test's events).
        is_mariadb=False,
        only_events=[WriteRowsEvent],
        only_schemas=[db],
    )
    binlog: list[dict[str, Any]] = []
    try:
        for event in stream:
            for col, source_col in zip(stream.table_map[event.table_id].columns, schema.columns):
                for attr, value in table_map_overrides(source_col).items():
                    setattr(col, attr, value)
            for row in event.rows:
                values, sources = row["values"], row["none_sources"]
                binlog.append(
                    {
                        c.name: M.canonical_from_binlog(c, values[c.name], sources.get(c.name))
                        for c in schema.columns
                    }
                )
    finally:
        stream.close()
        mariadb.execute(f"DROP DATABASE IF EXISTS {db}")
    yield schema.columns, snapshot, binlog


def test_snapshot_and_binlog_canonical_values_agree(stored: Any) -> None:
    columns, snapshot, binlog = stored
    assert len(snapshot) == len(binlog) == len(ROWS)
    mismatches = [
        (row["id"], c.name, c.source_type, snap[c.name], row[c.name])
        for snap, row in zip(snapshot, binlog)
        for c in columns
        if snap[c.name] != row[c.name] or type(snap[c.name]) is not type(row[c.name])
    ]
    assert mismatches == []
    # JSON round-trip (the engine carries canonical values as JSON) keeps them equal too.
    assert json.loads(json.dumps(binlog)) == binlog


def test_canonical_values_are_the_documented_ones(stored: Any) -> None:
    _, _, rows = stored
    first, second, third, nulls = rows
    assert first["bu"] == "18446744073709551615" and first["iu"] == 4294967295
    assert first["dbig"] == "-99999999999999999999999999999999999.999999999999999999999999999999"
    assert second["dbig"] == "0.000000000000000000000000000000"
    assert first["f"] == pytest.approx(1.1, rel=1e-7) and first["db"] == 0.30000000000000004
    assert (first["da"], first["dt3"], first["dt6"]) == (
        "1000-01-01",
        "2024-02-29 12:34:56.789000",
        "9999-12-31 23:59:59.999999",
    )
    assert (first["ts0"], first["ts6"]) == (1_000000, 2147483647_999999)
    assert (first["t0"], first["t1"], first["t3"], first["t6"]) == (
        -3020399_000000,
        -100000,
        -43200_001000,
        -3020399_999999,
    )
    assert (second["t3"], third["t3"], third["t6"]) == (-1_500000, 45296_700000, -1)
    # zero / invalid dates are NULL
    assert [second[k] for k in ("da", "dt0", "dt3", "dt6", "ts0")] == [None] * 5
    assert (first["y"], second["y"], third["y"]) == (1901, 0, 2155)
    assert (first["b1"], first["b10"], first["b64"], second["b10"]) == (1, "0201", "ff" * 8, "0000")
    assert (first["bn"], second["bn"], first["vb"], first["bl"]) == ("61620000", "00000000", "00ff00", "")
    assert (first["e"], second["e"], first["s"], second["s"], third["s"]) == ("it's", "", "x,z", "", "x,y,z")
    assert first["l1"] == "café" and first["vc"] == "héllo ✓ 𝄞" and second["vc"] == " padded  "
    # Spatial: the stored value, SRID (little-endian) then WKB.
    assert first["p"] == "e6100000" + "0101000000000000000000f03f0000000000000040"
    assert first["g"] == "00000000" + "010200000002000000" + "00" * 16 + "000000000000f03f" * 2
    assert first["j"] == '{"a": [1, 2.5, "x"], "b": null}'
    assert all(v is None for k, v in nulls.items() if k != "id")


# ---- Spark: canonical -> Delta type ----------------------------------------------------------------


@pytest.fixture(scope="module")
def spark() -> Any:
    from cdclake.spark import build_spark

    return build_spark("test-mysql-types")


def to_delta(spark: Any, columns: list[Column], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pyspark.sql.types import _parse_datatype_string

    schema = ", ".join(f"`{c.name}` {M.canonical_type(c)}" for c in columns)
    frame = spark.createDataFrame([(json.dumps(r),) for r in rows], "raw STRING")
    parsed = frame.selectExpr(f"from_json(raw, '{schema}') AS r").selectExpr(
        *[f"{M.to_delta_sql(c, f'r.`{c.name}`')} AS `{c.name}`" for c in columns]
    )
    # The Delta column types come out exactly as mapped.
    assert {f.name: f.dataType.simpleString() for f in parsed.schema.fields} == {
        c.name: _parse_datatype_string(c.spark_type).simpleString() for c in columns
    }
    return [r.asDict() for r in parsed.collect()]


@pytest.mark.spark
def test_to_delta_sql_from_server_values(spark: Any, stored: Any) -> None:
    columns, _, rows = stored
    first, second, third, nulls = to_delta(spark, columns, rows)
    assert first["bu"] == Decimal("18446744073709551615") and first["bi"] == -9223372036854775808
    assert first["tu"] == 255 and first["bo"] == 1 and first["iu"] == 4294967295
    assert first["d"] == Decimal("-12345678.99") and first["d0"] == Decimal("99999999999999999999")
    assert first["dbig"] == "-99999999999999999999999999999999999.999999999999999999999999999999"
    assert first["f"] == pytest.approx(1.1, rel=1e-7) and third["f"] == pytest.approx(0.123456789, rel=1e-7)
    assert first["db"] == 0.30000000000000004 and second["db"] == 1.7976931348623157e308
    assert first["da"] == dt.date(1000, 1, 1) and third["da"] == dt.date(2024, 2, 29)
    assert first["dt6"] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert first["dt3"] == dt.datetime(2024, 2, 29, 12, 34, 56, 789000)
    assert third["dt0"] == dt.datetime(2001, 2, 3, 4, 5, 6)
    # TIMESTAMP is an instant; the session zone is UTC so the naive value is the UTC wall time.
    assert first["ts0"] == dt.datetime(1970, 1, 1, 0, 0, 1)
    assert first["ts6"] == dt.datetime(2038, 1, 19, 3, 14, 7, 999999)
    assert third["ts6"] == dt.datetime(2001, 2, 3, 4, 5, 6, 123456)
    assert [second[k] for k in ("da", "dt0", "dt3", "dt6", "ts0")] == [None] * 5
    assert (first["t6"], second["t0"], third["t6"]) == (-3020399_999999, 3020399_000000, -1)
    assert (first["y"], second["y"]) == (1901, 0)
    assert (first["b1"], second["b1"]) == (True, False)
    assert bytes(first["b10"]) == b"\x02\x01" and bytes(first["b64"]) == b"\xff" * 8
    assert bytes(first["bn"]) == b"ab\x00\x00" and bytes(first["bl"]) == b""
    assert (bytes(first["p"]["wkb"]).hex(), first["p"]["srid"]) == ("0101000000000000000000f03f0000000000000040", 4326)
    assert first["g"]["srid"] == 0 and bytes(first["g"]["wkb"])[:1] == b"\x01"
    assert (first["e"], first["s"], second["s"]) == ("it's", "x,z", "")
    assert all(v is None for k, v in nulls.items() if k != "id")


@pytest.mark.spark
def test_to_delta_sql_edge_values(spark: Any) -> None:
    cols = [
        column_from_definition("bu", "bigint unsigned"),
        column_from_definition("dbig", "decimal(65,30)"),
        column_from_definition("d38", "decimal(38,10)"),
        column_from_definition("da", "date"),
        column_from_definition("dt", "datetime(6)"),
        column_from_definition("ts", "timestamp(6)"),
        column_from_definition("t", "time(6)"),
    ]
    rows = [
        {
            "bu": "18446744073709551615",
            "dbig": "1." + "0" * 30,
            "d38": "9999999999999999999999999999.9999999999",
            "da": "0000-00-00",
            "dt": "0000-00-00 00:00:00.000000",
            "ts": None,
            "t": -3020399_999999,
        },
        {
            "bu": "0",
            "dbig": None,
            "d38": "-0.0000000001",
            "da": "2020-00-01",
            "dt": "2020-01-00 00:00:00.000000",
            "ts": 1,
            "t": 0,
        },
    ]
    first, second = to_delta(spark, cols, rows)
    assert first == {
        "bu": Decimal("18446744073709551615"),
        "dbig": "1." + "0" * 30,
        "d38": Decimal("9999999999999999999999999999.9999999999"),
        "da": None,
        "dt": None,
        "ts": None,
        "t": -3020399_999999,
    }
    assert second["d38"] == Decimal("-0.0000000001")
    assert (second["da"], second["dt"]) == (None, None)  # zero-in-date: NULL, no ANSI error
    assert second["ts"] == dt.datetime(1970, 1, 1, 0, 0, 0, 1)


@pytest.mark.spark
def test_spatial_struct_keeps_the_srid(spark: Any) -> None:
    """WKB and SRID from the stored value: a 4-byte little-endian SRID (all 32 bits, read as a signed
    INT like Debezium), then WKB; MariaDB's empty value has empty WKB and SRID 0."""
    wkb = "0101000000000000000000f03f0000000000000040"
    cols = [column_from_definition(n, t) for n, t in
            (("g", "geometry"), ("p", "point"), ("l", "linestring"), ("y", "polygon"), ("mp", "multipoint"),
             ("ml", "multilinestring"), ("my", "multipolygon"), ("gc", "geometrycollection"))]
    values = {"g": "e6100000" + wkb, "p": "110f0000" + wkb, "l": "ffffffff" + wkb, "y": "ffffff7f" + wkb,
              "mp": "00000080" + wkb, "ml": "00000000" + wkb, "my": "", "gc": None}
    (row,) = to_delta(spark, cols, [values])
    got = {k: None if v is None else (bytes(v["wkb"]).hex(), v["srid"]) for k, v in row.items()}
    assert got == {"g": (wkb, 4326), "p": (wkb, 3857), "l": (wkb, -1), "y": (wkb, 2147483647),
                   "mp": (wkb, -2147483648), "ml": (wkb, 0), "my": ("", 0), "gc": None}
