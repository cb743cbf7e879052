"""The PostgreSQL source's preflight on a real cluster: each failure names the problem and the fix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cdclake.errors import PreflightError
from cdclake.sources.postgresql import preflight
from cdclake.testing.postgres import PostgresServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        server.execute("CREATE TABLE public.orders (id int PRIMARY KEY, v text)", dbname=server.database)
        server.execute("ALTER TABLE public.orders OWNER TO cdc")
        yield server


def _fails(pg: PostgresServer, captured: list[str], *, user: str | None = None, publication: str = "p",
           create: bool = True, slot: str = "s") -> str:
    with pg.connect(user=user) as conn, pytest.raises(PreflightError) as err:
        preflight.check(conn, captured, slot, publication, create)
    return str(err.value)


def _passes(pg: PostgresServer, captured: list[str], publication: str = "p", create: bool = True) -> None:
    with pg.connect() as conn:
        preflight.check(conn, captured, "s", publication, create)


def test_a_ready_database_passes_and_each_missing_piece_is_named_with_its_fix(pg: PostgresServer) -> None:
    _passes(pg, ["public.orders"])
    assert _fails(pg, ["public.orders"], create=False) == (
        "publication p does not exist (source.create_publication is false)\n"
        "  fix: CREATE PUBLICATION p FOR TABLE public.orders WITH (publish_via_partition_root = true)")
    assert _fails(pg, ["public.nope"]) == (
        "no such table (or a partition, captured through its root): public.nope\n  fix: check source.include_tables")

    pg.execute("CREATE ROLE plain LOGIN PASSWORD 'x'")
    pg.passwords["plain"] = "x"
    assert _fails(pg, ["public.orders"], user="plain") == (
        "the source's user has neither REPLICATION nor SUPERUSER: it cannot use a replication slot\n"
        "  fix: ALTER ROLE <user> REPLICATION (as a superuser)")

    pg.execute('CREATE TABLE public."Logs" (v text)')
    assert _fails(pg, ["public.Logs"]) == (
        "public.Logs has no replica identity (no primary key, REPLICA IDENTITY NOTHING, or an identity index that is "
        "gone): once published, the application's UPDATE and DELETE of it fail, and no change could name its row\n"
        '  fix: ALTER TABLE public."Logs" REPLICA IDENTITY FULL (or add a primary key); or exclude it '
        "(source.exclude_tables)")
    pg.execute('ALTER TABLE public."Logs" REPLICA IDENTITY FULL')
    _passes(pg, ["public.orders", "public.Logs"])


def test_a_publication_that_would_lose_changes_is_refused(pg: PostgresServer) -> None:
    pg.execute("CREATE TABLE public.parts (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k)")
    pg.execute("CREATE TABLE public.parts_1 PARTITION OF public.parts FOR VALUES FROM (0) TO (10)")
    pg.execute("CREATE PUBLICATION q FOR TABLE public.orders, public.parts WITH (publish = 'insert, update, delete')")
    assert _fails(pg, ["public.orders"], publication="q") == (
        "publication q does not publish truncate: those changes would never reach the lake\n"
        "  fix: ALTER PUBLICATION q SET (publish = 'insert, update, delete, truncate')")
    pg.execute("ALTER PUBLICATION q SET (publish = 'insert, update, delete, truncate')")
    assert _fails(pg, ["public.parts"], publication="q") == (
        "publication q publishes partitions under their own names: a partitioned table's changes would not reach "
        "its lake table\n  fix: ALTER PUBLICATION q SET (publish_via_partition_root = true)")
    pg.execute("ALTER PUBLICATION q SET (publish_via_partition_root = true)")
    _passes(pg, ["public.orders", "public.parts"], publication="q", create=False)
    pg.execute("ALTER PUBLICATION q SET TABLE public.orders (id), public.parts")
    assert _fails(pg, ["public.orders"], publication="q") == (
        "publication q publishes only some columns or rows of public.orders (a column list or a row filter): the "
        "lake would lack the rest\n  fix: ALTER PUBLICATION q SET TABLE ... without column lists or WHERE")
    pg.execute("ALTER PUBLICATION q SET TABLE public.parts")
    assert _fails(pg, ["public.orders"], publication="q", create=False) == (
        "publication q does not cover public.orders\n  fix: ALTER PUBLICATION q ADD TABLE public.orders")
    _passes(pg, ["public.orders"], publication="q", create=True)  # cdclake adds it


def test_slots_a_wrong_slot_and_the_slot_limit_are_named(pg: PostgresServer) -> None:
    pg.execute("SELECT pg_create_logical_replication_slot('other', 'test_decoding')", dbname=pg.database)
    assert _fails(pg, ["public.orders"], slot="other") == (
        "replication slot other is logical with plugin test_decoding, not a logical slot of pgoutput\n"
        "  fix: set source.slot to another name, or drop the slot")
    used: list[Any] = pg.query("SELECT count(*) FROM pg_replication_slots")[0][0]
    for i in range(16 - used - 1):  # leave one free: cdclake needs two
        pg.execute(f"SELECT pg_create_physical_replication_slot('fill{i}')")
    assert _fails(pg, ["public.orders"]) == (
        "15 of max_replication_slots = 16 are in use: cdclake needs one for its slot and one more (temporary) for "
        "each snapshot\n  fix: ALTER SYSTEM SET max_replication_slots = <more>; restart, or drop unused slots "
        "(pg_drop_replication_slot)")
    for i in range(16 - used - 1):
        pg.execute(f"SELECT pg_drop_replication_slot('fill{i}')")
    pg.execute("SELECT pg_drop_replication_slot('other')")


def test_a_server_without_logical_decoding_is_named() -> None:
    with PostgresServer(settings={"wal_level": "replica"}) as pg, pg.connect() as conn, \
            pytest.raises(PreflightError) as err:
        preflight.check(conn, [], "s", "p", True)
    assert str(err.value) == ("wal_level is replica: logical decoding needs wal_level = logical\n"
                              "  fix: ALTER SYSTEM SET wal_level = logical; then restart the server")


def test_generated_columns_are_a_warning_naming_them(pg: PostgresServer) -> None:
    pg.execute("CREATE TABLE public.lines (id int PRIMARY KEY, qty int, total int GENERATED ALWAYS AS (qty * 2) "
               "STORED)", dbname=pg.database)
    with pg.connect() as conn:
        assert preflight.warnings(conn, ["public.orders", "public.lines"], "s") == [
            "public.lines: pgoutput does not send generated columns, so total will not be in the lake (compute them "
            "downstream, or exclude the table: source.exclude_tables)"]
