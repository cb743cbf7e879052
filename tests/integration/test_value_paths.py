"""One Delta value whatever path brought it, type by type, through the real pipeline.

For each source one table holds a column of every type its type doc lists (``docs/types-mysql.md``,
``docs/types-oracle.md``). The same rows are written

(a) before the snapshot (read by the snapshot over JDBC, or the simulator's flashback query),
(b) read again by ``backfill`` (the whole table re-read from the source),
(c) after the snapshot, arriving through ``mine`` (binlog / LogMiner redo),

and (a), (b) and (c) must give byte-identical Delta values, column by column; (d) reconcile's source
read (hashed against the lake) must find no difference. Then mining carries updates of every column
(to extremes, to NULL and back), a key change, deletes, a rolled-back transaction and ADD/MODIFY
COLUMN, and the lake must still equal the source. The differences that remain by design (MySQL zero
dates become NULL) are asserted as the documented values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline

pytestmark = pytest.mark.integration

_META_PREFIX = "__"


def _exact(value: Any) -> Any:
    """A value as a comparable token that two values share only when they are the same bytes:
    ``repr`` keeps a double's every bit, a Decimal's scale, a bytearray's bytes; a struct compares
    field by field."""
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    return (type(value).__name__, repr(value))


def _delta_rows(spark: Any, path: str, key: str) -> dict[Any, dict[str, Any]]:
    rows = spark.read.format("delta").load(path).collect()
    return {r[key]: r.asDict(recursive=True) for r in rows}


def _differences(rows: dict[Any, dict[str, Any]], other: dict[Any, dict[str, Any]],
                 pairs: list[tuple[Any, Any]], key: str) -> list[tuple[str, Any, Any, Any]]:
    """(column, key in ``rows``, value there, value in ``other``) for each column of each pair of
    rows (the same source row written on two paths) whose Delta values are not the same bytes."""
    out = []
    for a, b in pairs:
        left, right = rows[a], other[b]
        for column in left:
            if column == key or column.startswith(_META_PREFIX):
                continue
            if _exact(left[column]) != _exact(right[column]):
                out.append((column, a, left[column], right[column]))
    return out


def _reconcile_clean(pipeline: Any, table: str) -> Any:
    report = pipeline.reconcile([table], confirm=False)
    (result,) = report.tables
    assert result.differing == 0 and result.source_rows == result.lake_rows, result.to_dict()
    return result


# ---- MySQL / MariaDB ---------------------------------------------------------------------------------------------

# Every type of docs/types-mysql.md (and its spellings that map alike), utf8mb4 and latin1 text.
MYSQL_COLUMNS = """
  id int NOT NULL PRIMARY KEY,
  ti tinyint, tu tinyint unsigned, bo boolean, si smallint, su smallint unsigned, mi mediumint,
  mu mediumint unsigned, i int, iu int unsigned, bi bigint, bu bigint unsigned,
  d decimal(10,2), d0 numeric(20,0), dbig decimal(65,30),
  f float, f74 float(7,4), db double, re real, fp float(30),
  da date, dt0 datetime, dt6 datetime(6), ts0 timestamp NULL, ts6 timestamp(6) NULL,
  t0 time, t1 time(1), t6 time(6), y year, b1 bit(1), b10 bit(10), b64 bit(64),
  c char(10), cl char(6) CHARACTER SET latin1, vc varchar(30), vl varchar(20) CHARACTER SET latin1,
  tt tinytext, tx text, mt mediumtext, lt longtext CHARACTER SET latin1,
  bn binary(4), vb varbinary(8), tb tinyblob, bl blob, mb mediumblob, lb longblob,
  vcb varchar(8) CHARACTER SET binary,
  e enum('a','bbb','é x'), s set('x','yy','zzz'), j json,
  g geometry, pt point, ls linestring, pg polygon, mpt multipoint, mls multilinestring,
  mpg multipolygon, gc geometrycollection
"""


def _geo(wkt: str, srid: int) -> str:
    return f"ST_GeomFromText('{wkt}', {srid})"


# (column -> SQL literal) per row; the columns not named are NULL. Row 4 is all NULL.
MYSQL_ROWS: list[dict[str, str]] = [
    {  # maxima, non-zero SRIDs, padded and non-ASCII text
        "ti": "127", "tu": "255", "bo": "1", "si": "32767", "su": "65535", "mi": "8388607", "mu": "16777215",
        "i": "2147483647", "iu": "4294967295", "bi": "9223372036854775807", "bu": "18446744073709551615",
        "d": "99999999.99", "d0": "99999999999999999999",
        "dbig": "99999999999999999999999999999999999.999999999999999999999999999999",
        "f": "3.40282e38", "f74": "999.9999", "db": "1.7976931348623157e308", "re": "0.1e0 + 0.2e0",
        "fp": "2.2250738585072014e-308",
        "da": "'9999-12-31'", "dt0": "'9999-12-31 23:59:59'", "dt6": "'9999-12-31 23:59:59.999999'",
        "ts0": "'2038-01-19 03:14:07'", "ts6": "'2038-01-19 03:14:07.999999'",
        "t0": "'838:59:59'", "t1": "'-00:00:00.1'", "t6": "'-838:59:59.999999'", "y": "2155",
        "b1": "b'1'", "b10": "b'1111111111'", "b64": "0xFFFFFFFFFFFFFFFF",
        "c": "'ab'", "cl": "'é'", "vc": "'héllo ✓ 𝄞 '", "vl": "'café ÿ'", "tt": "'t'", "tx": "'x\\ny'",
        "mt": "'𝄞𝄞'", "lt": "'déjà vu'",
        "bn": "0x6162", "vb": "0x00FF00", "tb": "0x00", "bl": "0xDEADBEEF", "mb": "0x01", "lb": "0xFF00",
        "vcb": "0x0102",
        "e": "'é x'", "s": "'x,zzz'", "j": "'{\"a\": [1, 2.5, \"é\"], \"b\": null}'",
        "g": _geo("POLYGON((0 0,10 0,10 10,0 10,0 0))", 3857), "pt": _geo("POINT(1.5 -2.25)", 4326),
        "ls": _geo("LINESTRING(0 0,1 1,2 4)", 2154),
        "pg": _geo("POLYGON((0 0,9 0,9 9,0 9,0 0),(1 1,2 1,2 2,1 2,1 1))", 27700),
        "mpt": _geo("MULTIPOINT(1 1,2 2)", 4326), "mls": _geo("MULTILINESTRING((0 0,1 1),(2 2,3 3))", 3857),
        "mpg": _geo("MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))", 4326),
        "gc": _geo("GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))", 4294967295),
    },
    {  # minima, zero dates (NULL by design), empty values, SRID 0
        "ti": "-128", "tu": "0", "bo": "0", "si": "-32768", "su": "0", "mi": "-8388608", "mu": "0",
        "i": "-2147483648", "iu": "0", "bi": "-9223372036854775808", "bu": "0",
        "d": "-99999999.99", "d0": "-1", "dbig": "-0.000000000000000000000000000001",
        "f": "-1.17549e-38", "f74": "-0.0001", "db": "-2.2250738585072014e-308", "re": "-0e0", "fp": "0",
        "da": "'0000-00-00'", "dt0": "'0000-00-00 00:00:00'", "dt6": "'2020-00-15 10:00:00'",
        "ts0": "'0000-00-00 00:00:00'", "ts6": "'1970-01-01 00:00:01.000001'",
        "t0": "'-838:59:59'", "t1": "'00:00:00'", "t6": "'00:00:00.000001'", "y": "0",
        "b1": "b'0'", "b10": "b'0'", "b64": "0",
        "c": "''", "cl": "''", "vc": "''", "vl": "''", "tt": "''", "tx": "''", "mt": "''", "lt": "''",
        "bn": "0x00000000", "vb": "''", "tb": "''", "bl": "''", "mb": "''", "lb": "''", "vcb": "''",
        "e": "''", "s": "''", "j": "'[]'",
        "g": _geo("POINT(0 0)", 0), "pt": _geo("POINT(-180 -90)", 0), "ls": _geo("LINESTRING(0 0,0 1)", 0),
        "pg": _geo("POLYGON((0 0,1 0,1 1,0 0))", 0), "mpt": _geo("MULTIPOINT(0 0)", 0),
        "mls": _geo("MULTILINESTRING((0 0,1 1))", 0), "mpg": _geo("MULTIPOLYGON(((0 0,1 0,1 1,0 0)))", 0),
        "gc": _geo("GEOMETRYCOLLECTION(POINT(0 0))", 0),
    },
    {  # CHAR / ENUM / SET shorter than their length, trailing blanks, the other path's favourite cases
        "ti": "0", "bo": "2", "i": "0", "bu": "9223372036854775808", "d": "0", "dbig": "0",
        "f": "0.123456789", "f74": "1.5", "db": "-0e0", "re": "1e-300",
        "da": "'1000-01-01'", "dt0": "'1000-01-01 00:00:00'", "dt6": "'2024-02-29 12:34:56.000001'",
        "ts0": "'1970-01-01 00:00:01'", "ts6": "'2001-02-03 04:05:06.5'",
        "t0": "'00:00:00'", "t1": "'12:34:56.7'", "t6": "'-00:00:00.000001'", "y": "1901",
        "b1": "b'1'", "b10": "b'1000000001'", "b64": "1",
        "c": "'a  '", "cl": "'ÿ '", "vc": "' padded  '", "vl": "' '", "tt": "'ü'", "tx": "'it''s \\\\ \"q\"'",
        "bn": "0x61", "vb": "0x20", "tb": "0x2000", "e": "'a'", "s": "'yy'", "j": "'\"just a string\"'",
        "pt": _geo("POINT(1 2)", 4326),
    },
    {},  # all NULL
]
MYSQL_AFTER = 100  # the same rows again, written after the snapshot: id + 100


def _insert_sql(table: str, key: int, row: dict[str, str]) -> str:
    names = ["id", *row]
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join([str(key), *row.values()])})"


def _mysql_run(mariadb: Any, database: str, statements: list[str], commit: bool = True) -> None:
    """One transaction, in a session that allows zero dates like a legacy application's."""
    conn = mariadb.connect(autocommit=False, database=database)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'NO_ENGINE_SUBSTITUTION'")
            cur.execute("SET SESSION time_zone = '+00:00'")
            for sql in statements:
                cur.execute(sql)
        conn.commit() if commit else conn.rollback()
    finally:
        conn.close()


def _backfill_changes_no_value(spark, pipeline, table: str, path: str, mined: dict[Any, dict[str, Any]],  # type: ignore[no-untyped-def]
                                key: str) -> None:
    """(b) a backfill re-reads the whole table: every row rewritten, not one value changed; (d)
    reconcile's source read, hashed against the lake, finds nothing to report."""
    pipeline.backfill(table)
    backfilled = _delta_rows(spark, path, key)
    assert {r["__op"] for r in backfilled.values()} == {"r"}
    assert min(r["__seq"] for r in backfilled.values()) > max(r["__seq"] for r in mined.values())
    assert _differences(mined, backfilled, [(k, k) for k in mined], key) == [], \
        "snapshot/log (left) and backfill (right) differ"
    _reconcile_clean(pipeline, table)


# The binlog decoded on the driver (python-mysql-replication) and in Spark tasks (the JVM split reader).
@pytest.mark.parametrize("decoder", ["driver", "executors"])
def test_mysql_every_type_one_value_on_every_path(spark, mariadb, fresh_database, tmp_path,  # type: ignore[no-untyped-def]
                                                  decoder: str) -> None:
    db, table = fresh_database, f"{fresh_database}.vals"
    mariadb.execute(f"CREATE TABLE {table} ({MYSQL_COLUMNS}) DEFAULT CHARSET=utf8mb4")
    rows = list(enumerate(MYSQL_ROWS, start=1))
    _mysql_run(mariadb, db, [_insert_sql("vals", k, r) for k, r in rows])
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", name=f"valuepaths{decoder}",
                             extra=f"mining:\n  decoder: {decoder}\n")
    path = pipeline.layout.target(table)

    # (a) the snapshot
    pipeline.snapshot()
    assert_lake_equals_source(spark, mariadb, pipeline, [table])
    # (c) the same rows through the binlog
    _mysql_run(mariadb, db, [_insert_sql("vals", k + MYSQL_AFTER, r) for k, r in rows])
    report = pipeline.mine()
    assert ("decode_bronze" in report.phases) == (decoder == "executors")  # decoded by Spark tasks, or not
    mined = _delta_rows(spark, path, "id")
    pairs = [(k, k + MYSQL_AFTER) for k, _ in rows]
    assert _differences(mined, mined, pairs, "id") == [], "snapshot (left) and binlog (right) differ"
    _mysql_documented_values(mined)

    _backfill_changes_no_value(spark, pipeline, table, path, mined, "id")

    # Mining: every column updated (to the other rows' values, NULLs and back), a key change, deletes,
    # a rolled-back transaction, ADD and MODIFY COLUMN.
    copy = ", ".join(f"a.{c} = b.{c}" for c in _mysql_column_names() if c != "id")
    _mysql_run(mariadb, db, [
        f"UPDATE vals a JOIN vals b ON b.id = 2 SET {copy} WHERE a.id = 101",
        f"UPDATE vals a JOIN vals b ON b.id = 1 SET {copy} WHERE a.id = 102",
        f"UPDATE vals a JOIN vals b ON b.id = 3 SET {copy} WHERE a.id = 104",
        f"UPDATE vals a JOIN vals b ON b.id = 4 SET {copy} WHERE a.id = 103",
        "UPDATE vals SET id = 300 WHERE id = 3",
        "DELETE FROM vals WHERE id = 4",
    ])
    _mysql_run(mariadb, db, [
        "UPDATE vals SET c = 'gone', pt = ST_GeomFromText('POINT(9 9)', 4326), e = 'bbb' WHERE id = 1",
        _insert_sql("vals", 999, MYSQL_ROWS[0]),
        "DELETE FROM vals WHERE id = 2",
    ], commit=False)
    mariadb.execute(f"ALTER TABLE {table} ADD COLUMN nc char(4) NOT NULL DEFAULT 'q', "
                    "ADD COLUMN ng geometry NOT NULL, ADD COLUMN ne enum('p','qq') NOT NULL, "
                    "ADD COLUMN nd decimal(5,1) DEFAULT 2.5")
    mariadb.execute(f"ALTER TABLE {table} MODIFY c char(20), MODIFY i bigint, MODIFY vc varchar(60), "
                    "MODIFY e enum('a','bbb','é x','new'), MODIFY pt geometry, MODIFY s set('x','yy','zzz','w')")
    _mysql_run(mariadb, db, [
        "UPDATE vals SET nc = 'r', ng = ST_GeomFromText('POINT(3 4)', 4326), ne = 'qq', c = 'twenty chars long..', "
        "e = 'new', s = 'w,x', i = 9223372036854775807 WHERE id = 1",
        "INSERT INTO vals (id, nc, ng, ne, c, e) VALUES (5, '', ST_GeomFromText('POINT(0 1)', 0), 'p', 'z', 'new')",
    ])
    pipeline.mine()
    assert_lake_equals_source(spark, mariadb, pipeline, [table])
    _reconcile_clean(pipeline, table)
    final = _delta_rows(spark, path, "id")
    assert sorted(final) == [1, 2, 5, 101, 102, 103, 104, 300]
    # Rows that existed before ADD COLUMN hold what MariaDB gave them: the default, the first ENUM
    # member, the empty geometry (no WKB, SRID 0).
    assert (final[2]["nc"], final[2]["ne"], final[2]["nd"]) == ("q", "p", Decimal("2.5"))
    assert (bytes(final[2]["ng"]["wkb"]), final[2]["ng"]["srid"]) == (b"", 0)
    assert final[1]["ng"]["srid"] == 4326 and final[1]["i"] == 9223372036854775807
    _quality_accepts_every_column(spark, pipeline, table)


def _mysql_column_names() -> list[str]:
    return [c.split()[0] for c in _split_columns(MYSQL_COLUMNS)]


def _split_columns(text: str) -> list[str]:
    """Top-level comma-separated column definitions (commas inside parentheses and quotes kept)."""
    out, depth, quoted, cur = [], 0, False, ""
    for ch in text:
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [c for c in [*out, cur.strip()] if c]


def _mysql_documented_values(rows: dict[Any, dict[str, Any]]) -> None:
    """The values docs/types-mysql.md promises, on both paths (each row k equals row k + 100)."""
    for k in (1, 1 + MYSQL_AFTER):
        first = rows[k]
        assert (first["c"], first["cl"], first["e"], first["s"]) == ("ab", "é", "é x", "x,zzz")  # no padding
        assert first["vc"] == "héllo ✓ 𝄞 " and first["vl"] == "café ÿ" and first["lt"] == "déjà vu"
        assert first["bu"] == Decimal("18446744073709551615") and first["tu"] == 255
        assert bytes(first["bn"]) == b"ab\x00\x00" and bytes(first["b10"]) == b"\x03\xff"
        assert (bytes(first["pt"]["wkb"]).hex(), first["pt"]["srid"]) == (
            "0101000000000000000000f83f00000000000002c0", 4326)
        assert [first[c]["srid"] for c in ("g", "ls", "pg", "mpt", "mls", "mpg", "gc")] == [
            3857, 2154, 27700, 4326, 3857, 4326, -1]  # SRID 4294967295: its 32 bits as a signed INT
        second = rows[k + 1]
        # Zero and invalid dates become NULL (by design: no Spark date holds them; every column is nullable).
        assert [second[c] for c in ("da", "dt0", "dt6", "ts0")] == [None] * 4
        assert (second["y"], second["c"], second["e"], second["s"], second["bl"]) == (0, "", "", "", bytearray())
        assert second["pt"]["srid"] == 0
        third = rows[k + 2]
        assert (third["c"], third["cl"], third["e"], third["s"]) == ("a", "ÿ", "a", "yy")  # CHAR loses trailing blanks
        assert third["vc"] == " padded  " and third["bo"] == 2
        assert all(v is None for c, v in rows[k + 3].items() if c != "id" and not c.startswith(_META_PREFIX))


def _quality_accepts_every_column(spark: Any, pipeline: Any, table: str) -> None:
    """The generated quality checks (types, keys) hold for every column, the spatial struct too."""
    from cdclake.config import QualityOptions
    from cdclake.engine.quality import CHANGED, KEYS, generated_specs, validate

    schema = pipeline.control.latest_entries()[table].schema
    keys = pipeline.key_columns(schema)
    lake = spark.read.format("delta").load(pipeline.layout.target(table))
    specs = generated_specs(schema, keys, QualityOptions(not_null=False))
    results = validate(spark, table, {CHANGED: lake.select(*[f"`{c}`" for c in schema.column_names]),
                                      KEYS: lake.select(*[f"`{k}`" for k in keys])}, specs)
    failed = [(r.expectation, r.column, r.observed) for r in results if not r.success]
    assert failed == [] and len(results) == len(specs)
    assert any(r.column == "pt" and r.expectation == "expect_column_values_to_be_of_type" for r in results)


# ---- Oracle (LogMiner simulator) ---------------------------------------------------------------------------------

# Every type of docs/types-oracle.md the simulator models (LONG, LONG RAW, ROWID, UROWID and BOOLEAN
# it does not: their redo is covered by the redo parser's unit tests), and the spellings that map alike.
ORACLE_COLUMNS = [
    ("ID", "NUMBER(10)"), ("N52", "NUMBER(5,2)"), ("N25", "NUMBER(2,5)"), ("N1", "NUMBER(1)"), ("N4", "NUMBER(4)"),
    ("N9", "NUMBER(9)"), ("N18", "NUMBER(18)"), ("N38", "NUMBER(38)"), ("NNEG", "NUMBER(5,-2)"),
    ("NWIDE", "NUMBER(38,-5)"), ("NINT", "INTEGER"), ("DEC", "DECIMAL(10,2)"), ("NV", "NUMBER"), ("FL", "FLOAT"),
    ("RE", "REAL"), ("BF", "BINARY_FLOAT"), ("BD", "BINARY_DOUBLE"), ("DA", "DATE"), ("TS0", "TIMESTAMP(0)"),
    ("TS6", "TIMESTAMP"), ("TS9", "TIMESTAMP(9)"), ("TZ", "TIMESTAMP(6) WITH TIME ZONE"),
    ("TZ9", "TIMESTAMP(9) WITH TIME ZONE"), ("LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("YM", "INTERVAL YEAR(2) TO MONTH"), ("DS", "INTERVAL DAY(2) TO SECOND(6)"), ("CH", "CHAR(10)"),
    ("NCH", "NCHAR(6)"), ("VC", "VARCHAR2(100)"), ("NVC", "NVARCHAR2(50)"), ("CL", "CLOB"), ("NCL", "NCLOB"),
    ("XML", "XMLTYPE"), ("RW", "RAW(16)"), ("BL", "BLOB"),
]
ORACLE_ROWS: list[dict[str, Any]] = [
    {  # maxima, offsets, non-ASCII text
        "N52": Decimal("999.99"), "N25": Decimal("0.00099"), "N1": 9, "N4": 9999, "N9": 999999999,
        "N18": 999999999999999999, "N38": int("9" * 38), "NNEG": 9999949, "NWIDE": int("9" * 38) * 10**5,
        "NINT": int("9" * 38), "DEC": Decimal("99999999.99"), "NV": Decimal("1234567890123456789012345678.123456789"),
        "FL": Decimal("3.14159265358979"), "RE": Decimal("-0.5"), "BF": 3.3999999521443642e38,
        "BD": 1.7976931348623157e308, "DA": "9999-12-31 23:59:59", "TS0": "9999-12-31 23:59:59",
        "TS6": "9999-12-31 23:59:59.999999", "TS9": "2024-01-02 03:04:05.123456789",
        "TZ": "2024-01-02 03:04:05.5 +14:00", "TZ9": "2024-01-02 03:04:05.123456789 -05:30",
        "LTZ": "2024-01-02 03:04:05.5 +02:00", "YM": "+99-11", "DS": "+99 23:59:59.999999", "CH": "ab",
        "NCH": "é", "VC": "it's || \\ é 日本 😀 ", "NVC": "Ω 中文", "CL": "héllo ✓\nline", "NCL": "ñ",
        "XML": "<a x='1'>é</a>", "RW": bytes(range(16)), "BL": b"\x00\xff" * 10,
    },
    {  # minima, negatives, zones by name, empty LOBs
        "N52": Decimal("-999.99"), "N25": Decimal("-0.00001"), "N1": -9, "N4": -9999, "N9": -999999999,
        "N18": -999999999999999999, "N38": -int("9" * 38), "NNEG": -1234567, "NWIDE": -(10**42),
        "NINT": 0, "DEC": Decimal("-0.01"), "NV": Decimal("-15000000000"), "FL": Decimal("0.000123"),
        "RE": 0, "BF": float("-inf"), "BD": -2.2250738585072014e-308, "DA": "0001-01-01 00:00:00",
        "TS0": "1582-10-04 12:00:00", "TS6": "0001-01-01 00:00:00.000001", "TS9": "1970-01-01 00:00:00.000000001",
        "TZ": "2024-07-01 12:00:00.25 Europe/Paris", "TZ9": "2024-01-02 03:04:05 +00:00",
        "LTZ": "1970-01-01 00:00:00 +00:00", "YM": "-99-11", "DS": "-00 00:00:00.000001", "CH": "x         ",
        "NCH": "Ωмир", "VC": " ", "NVC": "😀", "CL": "", "NCL": "", "XML": "<e/>", "RW": b"\x00", "BL": b"",
    },
    {  # special floats, zero intervals, NUMBER without precision at its smallest
        "N52": Decimal("0.5"), "N25": 0, "N1": 0, "NV": Decimal("0.00000000004"), "FL": Decimal("-1E+20"),
        "BF": float("nan"), "BD": float("inf"), "YM": "+00-00", "DS": "+00 00:00:00", "TS6": "2000-02-29 00:00:00",
        "CH": "a", "VC": "0", "RW": b"\xff" * 16,
    },
    {},  # all NULL
]
ORACLE_AFTER = 100
ORACLE_TABLE = "APP.VALS"


def _oracle_row(key: int, values: dict[str, Any]) -> dict[str, Any]:
    return {"ID": key, **{name: values.get(name) for name, _ in ORACLE_COLUMNS if name != "ID"}}


def test_oracle_every_type_one_value_on_every_path(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cdclake.testing.logminer_sim import SimulatedOracle

    from tests.integration.oracle_helpers import assert_lake_equals_simulated, oracle_pipeline

    db = SimulatedOracle(seed=16, lob_inline_max=8)  # longer LOB values come as LOB write rows
    db.create_table("APP", "VALS", ORACLE_COLUMNS, ["ID"])
    rows = list(enumerate(ORACLE_ROWS, start=1))
    tx = db.begin()
    for k, values in rows:
        tx.insert("APP", "VALS", _oracle_row(k, values))
    tx.commit()
    pipeline = oracle_pipeline(spark, db, tmp_path / "lake", name="valuepaths", mining="lob: true")
    path = pipeline.layout.target(ORACLE_TABLE)

    # (a) the snapshot
    pipeline.snapshot()
    assert_lake_equals_simulated(spark, pipeline, db, [ORACLE_TABLE])
    # (c) the same rows through the redo
    tx = db.begin(thread=1)
    for k, values in rows:
        tx.insert("APP", "VALS", _oracle_row(k + ORACLE_AFTER, values))
    tx.commit()
    pipeline.mine()
    mined = _delta_rows(spark, path, "ID")
    pairs = [(k, k + ORACLE_AFTER) for k, _ in rows]
    assert _differences(mined, mined, pairs, "ID") == [], "snapshot (left) and redo (right) differ"
    _oracle_documented_values(mined)

    _backfill_changes_no_value(spark, pipeline, ORACLE_TABLE, path, mined, "ID")

    # Mining: every column updated (other rows' values, NULLs and back), a key change, a delete, a
    # rolled-back transaction, ADD and MODIFY COLUMN.
    tx = db.begin(thread=1)
    tx.update("APP", "VALS", {"ID": 101}, _oracle_row(101, ORACLE_ROWS[1]))
    tx.update("APP", "VALS", {"ID": 102}, _oracle_row(102, ORACLE_ROWS[0]))
    tx.update("APP", "VALS", {"ID": 104}, _oracle_row(104, ORACLE_ROWS[2]))
    tx.update("APP", "VALS", {"ID": 103}, _oracle_row(103, {}))
    tx.update("APP", "VALS", {"ID": 3}, {"ID": 300})
    tx.delete("APP", "VALS", {"ID": 4})
    tx.commit()
    gone = db.begin(thread=1)
    gone.update("APP", "VALS", {"ID": 1}, {"CH": "rolled", "CL": "rolled back", "XML": "<no/>"})
    gone.insert("APP", "VALS", _oracle_row(999, ORACLE_ROWS[0]))
    gone.delete("APP", "VALS", {"ID": 2})
    gone.rollback()
    db.add_column("APP", "VALS", "NC", "CHAR(4)", default="a")
    db.add_column("APP", "VALS", "NN", "NUMBER(5,1)", default=Decimal("2.5"))
    # (Not CHAR(n) -> CHAR(m): Oracle pads the stored values again with no row change in the redo;
    # docs/types-oracle.md, "CHAR padding".)
    columns = [(n, {"VC": "VARCHAR2(200)", "N9": "NUMBER(18)", "NVC": "NVARCHAR2(100)"}.get(n, t))
               for n, t in ORACLE_COLUMNS + [("NC", "CHAR(4)"), ("NN", "NUMBER(5,1)")]]
    db.alter_table("APP", "VALS", 'ALTER TABLE "APP"."VALS" MODIFY ("VC" VARCHAR2(200), "N9" NUMBER(18), '
                   '"NVC" NVARCHAR2(100))', columns)
    tx = db.begin(thread=1)
    tx.update("APP", "VALS", {"ID": 1}, {"NC": "b", "NN": Decimal("-9999.9"), "VC": "v" * 150,
                                         "N9": 999999999999999999, "CH": "now ten"})
    tx.insert("APP", "VALS", {"ID": 5, "NC": "c", "CH": "z", "XML": "<n/>"})
    tx.commit()
    pipeline.mine()
    assert_lake_equals_simulated(spark, pipeline, db, [ORACLE_TABLE])
    _reconcile_clean(pipeline, ORACLE_TABLE)
    final = _delta_rows(spark, path, "ID")
    assert sorted(final) == [1, 2, 5, 101, 102, 103, 104, 300]
    # Rows that existed before ADD COLUMN hold the default, CHAR blank-padded as Oracle stores it.
    assert (final[2]["NC"], final[2]["NN"]) == ("a   ", Decimal("2.5"))
    assert (final[1]["NC"], final[1]["CH"], final[1]["N9"]) == ("b   ", "now ten   ", 999999999999999999)


def _oracle_documented_values(rows: dict[Any, dict[str, Any]]) -> None:
    """The values docs/types-oracle.md promises, on both paths (each row k equals row k + 100)."""
    import datetime as dt

    for k in (1, 1 + ORACLE_AFTER):
        first, second, third = rows[k], rows[k + 1], rows[k + 2]
        # CHAR and NCHAR keep Oracle's blank padding (on both paths: the redo carries it).
        assert (first["CH"], first["NCH"], second["CH"], third["CH"]) == ("ab        ", "é     ", "x         ",
                                                                        "a         ")
        assert first["VC"] == "it's || \\ é 日本 😀 " and second["VC"] == " "
        assert first["NINT"] == Decimal("9" * 38) and first["NWIDE"] == "9" * 38 + "00000"
        assert first["NNEG"] == 9999900 and first["NV"] == "1234567890123456789012345678.123456789"
        assert first["DA"] == dt.datetime(9999, 12, 31, 23, 59, 59) and first["TS9"] == "2024-01-02T03:04:05.123456789"
        assert first["TZ"] == "2024-01-02T03:04:05.500000+14:00"
        assert first["LTZ"] == dt.datetime(2024, 1, 2, 1, 4, 5, 500000)  # +02:00 as a UTC instant
        assert (first["YM"], first["DS"], second["DS"], third["YM"], third["DS"]) == (
            "P99Y11M", "P99DT23H59M59.999999S", "-P0DT0H0M0.000001S", "P0Y0M", "P0DT0H0M0S")
        assert (second["CL"], second["NCL"], bytes(second["BL"])) == ("", "", b"")  # EMPTY_CLOB()/EMPTY_BLOB()
        assert second["BF"] == float("-inf") and third["BD"] == float("inf") and third["BF"] != third["BF"]
        assert first["XML"] == "<a x='1'>é</a>" and bytes(first["RW"]) == bytes(range(16))
        assert all(v is None for c, v in rows[k + 3].items() if c != "ID" and not c.startswith(_META_PREFIX))
