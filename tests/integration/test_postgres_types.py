"""Every PostgreSQL type the source maps, on a real cluster: the snapshot's ``::text`` read (inside the exported
snapshot, through Spark JDBC) and pgoutput's text of the same rows give the same canonical string, and one Spark
SQL expression gives the same Delta value from both (docs/postgresql-design.md, section 7)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from cdclake.sources.postgresql.pgoutput import Insert, decode
from cdclake.sources.postgresql.snapshot import (
    GUARD,
    create_slot_with_snapshot,
    guarded,
    jdbc_options,
    session_settings_sql,
)
from cdclake.sources.postgresql.types import PostgresTypeMapper, columns, quote_identifier
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration

#: (column, type, a value of each row as SQL literals); row 1 ordinary values, row 2 edge values, row 3 NULLs
COLUMNS = [
    ("i2", "smallint", ["-32768", "32767"]), ("i4", "integer", ["1", "-2147483648"]),
    ("i8", "bigint", ["9223372036854775807", "0"]), ("n", "numeric(12,2)", ["1234567890.12", "'NaN'"]),
    ("nfree", "numeric", ["'1e-30'", "'-Infinity'"]), ("r", "real", ["1.5", "'NaN'"]),
    ("d", "double precision", ["0.1", "'-Infinity'"]), ("m", "money", ["'1234.56'", "'-0.5'"]),
    ("t", "text", ["'café ''quoted'' \\ back'", "''"]), ("vc", "varchar(10)", ["'abc'", "'x'"]),
    ("ch", "char(4)", ["'ab'", "'abcd'"]), ("b", "bytea", ["'\\xdeadbeef'", "''"]),
    ("bo", "boolean", ["true", "false"]),
    ("da", "date", ["'2024-02-29'", "'infinity'"]), ("ti", "time(3)", ["'23:59:59.999'", "'24:00:00'"]),
    ("tz", "timetz", ["'12:00:00+05:30'", "'00:00:00-01'"]),
    ("ts", "timestamp(6)", ["'2024-02-29 12:34:56.123456'", "'4713-01-01 00:00:00 BC'"]),
    ("tt", "timestamptz", ["'2024-02-29 12:34:56.5+02'", "'-infinity'"]),
    ("iv", "interval", ["'1 year 2 mons 3 days 04:05:06.789'", "'-1 day'"]),
    ("u", "uuid", ["'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'"]),
    ("j", "json", ["'{\"b\": 1,  \"a\": [1, 2]}'", "'null'"]),
    ("jb", "jsonb", ["'{\"b\": 1,  \"a\": [1, 2]}'", "'[]'"]),
    ("ai", "integer[]", ["'{1,NULL,3}'", "'{{1,2},{3,4}}'"]), ("at", "text[]", ["'{\"a b\",\"c,d\",NULL}'", "'{}'"]),
    ("e", "mood", ["'happy'", "'sad'"]), ("dm", "price", ["12.5", "0"]), ("ip", "inet", ["'192.168.0.1/24'", "'::1'"]),
    ("ci", "cidr", ["'10.0.0.0/8'", "'2001:db8::/32'"]),
    ("ma", "macaddr", ["'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'"]),
    ("bv", "bit varying(8)", ["B'1011'", "B''"]), ("bt", "bit(4)", ["B'1010'", "B'0000'"]),
    ("x", "xml", ["'<a>1</a>'", "'<b/>'"]), ("rg", "int4range", ["'[1,10)'", "'empty'"]),
    ("tr", "tstzrange", ["'[2024-01-01 00:00+00,infinity)'", "'(,)'"]),
    ("hs", "hstore", ["'a=>1, \"b c\"=>NULL'", "''"]),
]
EXPECTED = {  # the Delta values of rows 1 and 2 where the text alone is not the value
    "n": [Decimal("1234567890.12"), None], "da": [dt.date(2024, 2, 29), None],
    "ts": [dt.datetime(2024, 2, 29, 12, 34, 56, 123456), None], "ti": [86399999000, 86400000000],
    "bo": [True, False], "b": [bytes.fromhex("deadbeef"), b""], "m": [Decimal("1234.56"), Decimal("-0.50")],
    "i8": [9223372036854775807, 0],
}


def test_the_snapshot_and_the_log_give_each_type_the_same_delta_value(spark: Any) -> None:
    with PostgresServer() as pg, pg.connect() as conn:
        conn.execute("CREATE EXTENSION hstore")
        conn.execute("CREATE TYPE mood AS ENUM ('sad', 'happy')")
        conn.execute("CREATE DOMAIN price AS numeric(8,2)")
        cols = ", ".join(f"{c} {t}" for c, t, _ in COLUMNS)
        conn.execute(f"CREATE TABLE v (id int PRIMARY KEY, {cols})")
        conn.execute("CREATE PUBLICATION p FOR TABLE v")
        conn.execute("SELECT pg_create_logical_replication_slot('s', 'pgoutput')")
        conn.execute(session_settings_sql())  # the writer's own settings do not matter; this is the reader's
        names = ", ".join(c for c, _, _ in COLUMNS)
        for row in (1, 2):
            values = ", ".join(vals[row - 1] for _, _, vals in COLUMNS)
            conn.execute(f"INSERT INTO v (id, {names}) VALUES ({row}, {values})")
        conn.execute("INSERT INTO v (id) VALUES (3)")
        schema = columns(conn, "public.v")
        log_rows = []
        for (data,) in conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL, "
                                    "'proto_version', '1', 'publication_names', 'p')").fetchall():
            message = decode(data)
            if isinstance(message, Insert):
                log_rows.append(tuple(v.text for v in message.new))
        snap = create_slot_with_snapshot(pg.connection_settings(), "s2")
        try:
            select = "SELECT " + ", ".join(f"{PostgresTypeMapper().read_sql(c)} AS {quote_identifier(c.name)}"
                                           for c in schema) + " FROM v"
            snapshot = (spark.read.format("jdbc").options(url=pg.jdbc_url, driver="org.postgresql.Driver",
                                                          user=pg.cdc_user, password=pg.passwords[pg.cdc_user],
                                                          **jdbc_options(snap, 100))
                        .option("query", guarded(select, snap)).load().where(f"{GUARD} = 1").drop(GUARD))
            snapshot_rows = sorted(tuple(r) for r in snapshot.collect())
        finally:
            snap.release()

    for snap_row, log_row in zip(snapshot_rows, sorted(log_rows), strict=True):  # one canonical text, both paths
        assert {c.name: (a, b) for c, a, b in zip(schema, snap_row, log_row, strict=True) if a != b} == {}
    mapper = PostgresTypeMapper()
    names = [c.name for c in schema]
    frame = spark.createDataFrame(log_rows, ", ".join(f"`{n}` STRING" for n in names))
    delta = frame.selectExpr(*[f"{mapper.to_delta_sql(c, f'`{c.name}`')} AS `{c.name}`" for c in schema])
    assert [f.dataType.simpleString() for f in delta.schema.fields] == [
        c.spark_type.lower() for c in schema]
    by_id = {r["id"]: r.asDict() for r in delta.collect()}
    for name, values in EXPECTED.items():
        assert [by_id[1][name], by_id[2][name]] == values, name
    assert all(v is None for k, v in by_id[3].items() if k != "id")  # NULLs stay NULL
    assert by_id[2]["nfree"] == "-Infinity" and by_id[1]["j"] == '{"b": 1,  "a": [1, 2]}'  # exact text
    instants = dict(delta.selectExpr("id", "unix_micros(tt)").collect())  # the instant, whatever Spark's zone
    utc = dt.datetime(2024, 2, 29, 10, 34, 56, 500000, tzinfo=dt.timezone.utc)
    assert instants == {1: int(utc.timestamp() * 10**6), 2: None, 3: None}  # -infinity: NULL
    assert by_id[2]["ai"] == "{{1,2},{3,4}}" and by_id[1]["dm"] == Decimal("12.50")  # a domain: its base type
