"""The Db2 capture-emulator scenarios against a real Db2 with ASN Capture: the lake must equal the database row
by row. Run with `make test-db2-live` (docs/db2.md, 'The live suite'; the server's set-up: tests_live/db2_setup.sql).

Each test makes its own tables (`<name>_<suffix>` in CDCLAKE_DB2_SCHEMA), registers them with
`<cs>.ADDTABLE`, and removes and drops them at its end. Every table has a probe row (ID -1): updating it and
waiting for its CD row shows that Capture captures the table (after a registration or a procedure's reinit).
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.engine.pipeline import Pipeline
from cdclake.errors import PositionLostError

# the connection variables are checked before the (session) Spark fixture starts a JVM
pytestmark = pytest.mark.usefixtures("db2_env")

CAPTURE_DEADLINE_S = 120.0  # a wait for Capture gives up after this long
POLL_S = 0.5
LOCK_TIMEOUT_S = 30  # a statement waiting on a lock fails instead of hanging the suite
PROBE_ID = -1

#: the table of the windows scenario (the emulator's columns, and a CLOB)
WIDE = [("ID", "INTEGER NOT NULL"), ("NAME", "VARCHAR(40)"), ("AMOUNT", "DECIMAL(10,2)"), ("TS", "TIMESTAMP(6)"),
        ("D", "DATE"), ("B", "VARCHAR(8) FOR BIT DATA"), ("BODY", "CLOB(1M)")]
#: the tables of the schema-change scenarios
SMALL = [("ID", "INTEGER NOT NULL"), ("V", "VARCHAR(20)"), ("AMOUNT", "DECIMAL(10,2)"), ("TS", "TIMESTAMP(6)")]


def _q(text: str) -> str:
    """A YAML single-quoted scalar."""
    return "'" + text.replace("'", "''") + "'"


def _seq(value: Any) -> bytes:
    """A Capture sequence, comparable as unsigned bytes (a 10-byte one widened in front, as Db2 does)."""
    return bytes(value).rjust(16, b"\0")


def _value(value: Any) -> Any:
    """A value from either side in one comparable form (Decimal, datetime, date, str and int compare as they are)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


class LiveDb2:
    """Test tables in a Db2 database with ASN Capture, driven with ``ibm_db_dbi`` as an application would."""

    def __init__(self, env: dict[str, str]) -> None:
        import ibm_db_dbi

        self.dbapi = ibm_db_dbi
        self.env = env
        self.host, self.port = env["CDCLAKE_DB2_HOST"], int(env["CDCLAKE_DB2_PORT"])
        self.database = env["CDCLAKE_DB2_DATABASE"]
        self.user, self.password = env["CDCLAKE_DB2_USER"], env["CDCLAKE_DB2_PASSWORD"]
        self.dsn = f"DATABASE={self.database};HOSTNAME={self.host};PORT={self.port};PROTOCOL=TCPIP;"
        self.schema = env["CDCLAKE_DB2_SCHEMA"]
        self.cs = env["CDCLAKE_DB2_CONTROL_SCHEMA"]
        self.suffix = uuid.uuid4().hex[:6].upper()
        self.tables: list[str] = []
        self.registered: set[str] = set()
        self.pipelines: list[Pipeline] = []

    # ---- connections and statements ---------------------------------------------------------------------------

    def connect(self) -> Any:
        conn = self.dbapi.connect(self.dsn, self.user, self.password)
        conn.set_autocommit(False)
        cur = conn.cursor()
        cur.execute(f"SET CURRENT LOCK TIMEOUT {LOCK_TIMEOUT_S}")
        cur.close()
        return conn

    def run(self, *statements: tuple[str, Sequence[Any]] | str) -> None:
        """Statements in one transaction, committed."""
        with self.connect() as conn:
            cur = conn.cursor()
            for s in statements:
                sql, params = (s, ()) if isinstance(s, str) else s
                cur.execute(sql, tuple(params)) if params else cur.execute(sql)
            conn.commit()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.connect() as conn:
            cur = conn.cursor()
            cur.execute(sql, tuple(params)) if params else cur.execute(sql)
            rows = [tuple(r) for r in cur.fetchall()]
            conn.rollback()
            return rows

    def call(self, procedure: str, table: str) -> None:
        with self.connect() as conn:
            conn.cursor().callproc(f"{self.cs}.{procedure}", (self.schema, table))
            conn.commit()

    def services(self, command: str) -> str:
        """``VALUES <cs>.ASNCDCSERVICES(command, 'asncdc')``: Capture's answer."""
        rows = self.query(f"VALUES {self.cs}.ASNCDCSERVICES('{command}','asncdc')")
        return str(rows[0][0] if rows else "").strip()

    # ---- tables -----------------------------------------------------------------------------------------------

    def name(self, base: str) -> str:
        return f"{base}_{self.suffix}"

    def sql_name(self, table: str) -> str:
        return f'"{self.schema}"."{table}"'

    def table_id(self, table: str) -> str:
        """The table's name in cdclake (``SCHEMA.TABLE``, as registered)."""
        return f"{self.schema}.{table}"

    def create(self, base: str, columns: list[tuple[str, str]]) -> str:
        table = self.name(base)
        cols = ", ".join(f'"{c}" {t}' for c, t in columns)
        self.run(f'CREATE TABLE {self.sql_name(table)} ({cols}, PRIMARY KEY ("ID"))')
        self.tables.append(table)
        # few rows and no statistics: VOLATILE makes Db2 reach rows by the key's index, so that open transactions
        # of the tests, each on its own keys, never wait on each other's row locks
        self.run(f"ALTER TABLE {self.sql_name(table)} VOLATILE CARDINALITY",
                 (f'INSERT INTO {self.sql_name(table)} ("ID", "AMOUNT") VALUES (?, 0)', [PROBE_ID]))
        return table

    def insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        self.run(*[self.insert_sql(table, row) for row in rows])

    def insert_sql(self, table: str, row: dict[str, Any]) -> tuple[str, list[Any]]:
        cols = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join("?" for _ in row)
        return f"INSERT INTO {self.sql_name(table)} ({cols}) VALUES ({marks})", list(row.values())

    def keys(self, table: str) -> set[int]:
        return {int(r[0]) for r in self.query(f'SELECT "ID" FROM {self.sql_name(table)}') if r[0] != PROBE_ID}

    def rows(self, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
        cols = ", ".join(f'"{c}"' for c in columns)
        return [tuple(_value(v) for v in r) for r in self.query(f"SELECT {cols} FROM {self.sql_name(table)}")]

    # ---- registrations and the procedures of docs/db2.md ------------------------------------------------------

    def register(self, table: str) -> None:
        """ADDTABLE (the CD table, the registration), then active and reinit, as Debezium's harness does."""
        self.call("ADDTABLE", table)
        self.registered.add(table)
        self.set_state(table, "A")

    def remove(self, table: str) -> None:
        """REMOVETABLE: the registration goes and the CD table is dropped."""
        self.call("REMOVETABLE", table)
        self.registered.discard(table)

    def set_state(self, table: str, state: str) -> None:
        self.run((f"UPDATE {self.cs}.IBMSNAP_REGISTER SET STATE = ? WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?",
                  [state, self.schema, table]))
        self.reinit()

    def reinit(self, check: bool = True) -> None:
        answer = self.services("reinit")
        if check and "not running" in answer:
            pytest.fail(f"Capture is not running ({answer}): start it, VALUES {self.cs}.ASNCDCSERVICES('start',"
                        "'asncdc') (tests_live/db2_setup.sql)")

    def registration(self, table: str) -> tuple[str, str, str, str | None]:
        """CD_OWNER, CD_TABLE, STATE, STATE_INFO of the table's registration."""
        rows = self.query(f"SELECT CD_OWNER, CD_TABLE, STATE, STATE_INFO FROM {self.cs}.IBMSNAP_REGISTER "
                          "WHERE SOURCE_OWNER = ? AND SOURCE_TABLE = ?", [self.schema, table])
        assert rows, f"{self.table_id(table)} is not registered in {self.cs}.IBMSNAP_REGISTER"
        owner, cd, state, info = rows[0]
        return str(owner).strip(), str(cd).strip(), str(state).strip(), None if info is None else str(info).strip()

    def cd_sql(self, table: str) -> str:
        owner, cd, _, _ = self.registration(table)
        return f'"{owner}"."{cd}"'

    def add_column_online(self, table: str, column: str) -> None:
        """The online procedure for a column added at the end: lock, inactive + reinit, the same ALTER on the
        source and on the CD table the register names, active + reinit."""
        cd = self.cd_sql(table)
        with self.connect() as lock:
            cur = lock.cursor()
            cur.execute(f"LOCK TABLE {self.sql_name(table)} IN EXCLUSIVE MODE")  # held until the ALTERs commit
            self.set_state(table, "I")
            cur.execute(f"ALTER TABLE {self.sql_name(table)} ADD COLUMN {column}")
            cur.execute(f"ALTER TABLE {cd} ADD COLUMN {column}")
            lock.commit()
        self.set_state(table, "A")

    def offline_procedure(self, table: str, alter: str) -> None:
        """The offline procedure: inactive + reinit, REMOVETABLE (the CD table is dropped), the ALTER of the
        source, ADDTABLE (a new CD table in the new shape), active + reinit."""
        self.set_state(table, "I")
        self.remove(table)
        self.run(f"ALTER TABLE {self.sql_name(table)} {alter}")
        self.register(table)

    # ---- waiting for Capture ------------------------------------------------------------------------------------

    def capture_mark(self) -> tuple[bytes | None, dt.datetime | None, dt.datetime]:
        """Capture's synchpoint (the largest SYNCHPOINT / CD_NEW_SYNCHPOINT of the register, the bound of a
        cdclake window), the global record's SYNCHTIME, and the server's CURRENT TIMESTAMP."""
        sp, cd_new, synchtime, now = self.query(
            f"SELECT MAX(SYNCHPOINT), MAX(CD_NEW_SYNCHPOINT), MAX(CASE WHEN GLOBAL_RECORD = 'Y' THEN SYNCHTIME END), "
            f"CURRENT TIMESTAMP FROM {self.cs}.IBMSNAP_REGISTER")[0]
        seqs = [_seq(s) for s in (sp, cd_new) if s is not None]
        return (max(seqs) if seqs else None), synchtime, now

    def wait_captured(self) -> None:
        """Wait until Capture has captured every transaction committed before this call.

        Capture commits a cycle's CD rows, UOW rows and the global record's SYNCHPOINT / SYNCHTIME past them
        together, and SYNCHTIME is the time of the log position the synchpoint stands at (the time Capture
        reached the log's end when it has caught up: IBM's description of the register, to verify). Our commits
        were logged before the CURRENT TIMESTAMP read here, so a SYNCHTIME later than it (the same server clock)
        lies past them: their rows are in the CD tables. The synchpoint must also have moved past its value read
        here: the global record was rewritten by a later cycle, and the next window's bound (the synchpoint, not
        the time) covers the commits.
        """
        hwm0, _, now0 = self.capture_mark()
        deadline = time.monotonic() + CAPTURE_DEADLINE_S
        while True:
            hwm, synchtime, _ = self.capture_mark()
            if hwm is not None and (hwm0 is None or hwm > hwm0) and synchtime is not None and synchtime > now0:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"Capture did not pass {now0} within {CAPTURE_DEADLINE_S:.0f} s (synchpoint "
                            f"{hwm.hex() if hwm else None}, was {hwm0.hex() if hwm0 else None}; SYNCHTIME "
                            f"{synchtime}); status: {self.services('status')}")
            time.sleep(POLL_S)

    def wait_capturing(self, table: str) -> None:
        """Wait until Capture captures ``table`` (after ADDTABLE or a procedure's reinit): update its probe row
        until a new row shows in its CD table."""
        cd = self.cd_sql(table)
        newest = f"SELECT MAX(IBMSNAP_COMMITSEQ) FROM {cd}"
        before = self.query(newest)[0][0]
        deadline = time.monotonic() + CAPTURE_DEADLINE_S
        while True:
            self.run(f'UPDATE {self.sql_name(table)} SET "AMOUNT" = COALESCE("AMOUNT", 0) + 1 WHERE "ID" = {PROBE_ID}')
            self.wait_captured()
            latest = self.query(newest)[0][0]
            if latest is not None and (before is None or _seq(latest) > _seq(before)):
                return
            if time.monotonic() > deadline:
                _, _, state, info = self.registration(table)
                pytest.fail(f"Capture does not capture {self.table_id(table)} into {cd} (registration STATE "
                            f"'{state}', STATE_INFO {info!r}); status: {self.services('status')}")

    # ---- pipelines ----------------------------------------------------------------------------------------------

    def pipeline_text(self, lake: Path) -> str:
        """The pipeline file: this test's tables, the password from the environment."""
        include = rf"{re.escape(self.schema)}\..*_{self.suffix}"
        return (
            f"pipeline: db2live{self.suffix.lower()}\nsource:\n  type: db2\n  host: {_q(self.host)}\n"
            f"  port: {self.port}\n  database: {_q(self.database)}\n  user: {_q(self.user)}\n"
            "  password: ${CDCLAKE_DB2_PASSWORD}\n"
            f"  control_schema: {self.cs}\n  include_tables: [{_q(include)}]\nlake:\n  root: {_q(str(lake))}\n"
        )

    def pipeline(self, spark: Any, lake: Path) -> Pipeline:
        pipeline = Pipeline.from_config(load_config_text(self.pipeline_text(lake)), spark)
        self.pipelines.append(pipeline)
        return pipeline

    def close(self) -> None:
        """The tables go: registrations removed (their CD tables dropped), then the tables dropped."""
        for pipeline in self.pipelines:
            try:
                pipeline.source.close()  # its connection would hold REMOVETABLE's DROP of the CD tables
            except Exception as exc:
                warnings.warn(f"closing the pipeline's source: {exc}", stacklevel=1)
        for table in self.tables:
            for step, action in (("REMOVETABLE", lambda t=table: self.remove(t) if t in self.registered else None),
                                 ("DROP TABLE", lambda t=table: self.run(f"DROP TABLE {self.sql_name(t)}"))):
                try:
                    action()
                except Exception as exc:
                    warnings.warn(f"{step} {self.table_id(table)}: {exc}", stacklevel=1)
        if self.tables:
            try:
                self.reinit(check=False)
            except Exception as exc:
                warnings.warn(f"reinit: {exc}", stacklevel=1)


@pytest.fixture
def live(db2_env: dict[str, str]) -> Iterator[LiveDb2]:
    db = LiveDb2(db2_env)
    try:
        yield db
    finally:
        db.close()


def assert_lake_equals(spark: Any, pipeline: Pipeline, live: LiveDb2, table: str, columns: list[str]) -> None:
    """The lake's table equals the database's now, row by row, on ``columns``."""
    expected = sorted(live.rows(table, columns), key=repr)
    frame = spark.read.format("delta").load(pipeline.layout.target(live.table_id(table)))
    got = sorted((tuple(_value(v) for v in r) for r in frame.select(*[f"`{c}`" for c in columns]).collect()),
                 key=repr)
    missing = [r for r in expected if r not in got][:5]
    extra = [r for r in got if r not in expected][:5]
    assert not missing and not extra, (f"{table}: lake {len(got)} rows, database {len(expected)}; only in the "
                                       f"database: {missing}; only in the lake: {extra}")


def _row(rng: random.Random, i: int) -> dict[str, Any]:
    return {"ID": i, "NAME": rng.choice(["a", "café", None, "x" * 40]),
            "AMOUNT": Decimal(rng.randint(-10**6, 10**6)) / 100,
            "TS": dt.datetime(2025, 1, 1) + dt.timedelta(microseconds=rng.randint(0, 10**12)),
            "D": dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(0, 9000)), "B": rng.randbytes(rng.randint(0, 8)),
            "BODY": rng.choice([None, "", "short", "clob " * rng.randint(1, 4000)])}


def _small(i: int, **more: Any) -> dict[str, Any]:
    return {"ID": i, "V": f"v{i}", "AMOUNT": Decimal(i) / 4, "TS": dt.datetime(2025, 1, 1, 12, 0, i, 123456), **more}


_KINDS = ["insert", "update", "clob", "key", "delete"]


def _interleaved_window(live: LiveDb2, tables: list[str], rng: random.Random, next_id: int) -> int:
    """Three transactions open at once, their statements interleaved over both tables (inserts, updates, CLOB
    updates, key changes, deletes); two commit, the one in the middle rolls back. Each works on keys of its own,
    so that none waits on another's locks. Returns the next free key."""
    owned: list[dict[str, set[int]]] = [{t: set() for t in tables} for _ in range(3)]
    for t in tables:
        for n, key in enumerate(sorted(live.keys(t))):
            owned[n % 3][t].add(key)
    # every kind in every window (the rolled-back transaction too), then random statements
    plan = [(0, "key"), (2, "insert"), (1, "update"), (0, "clob"), (2, "delete"), (1, "delete"), (1, "clob"),
            (0, "delete"), (2, "key"), (1, "insert")]
    plan += [(rng.randrange(3), rng.choice(_KINDS)) for _ in range(40)]
    conns = [live.connect() for _ in range(3)]
    try:
        for n, kind in plan:
            cur = conns[n].cursor()
            table = rng.choice(tables)
            name = live.sql_name(table)
            keys = owned[n][table]
            if kind == "insert" or not keys:
                cur.execute(*live.insert_sql(table, _row(rng, next_id)))
                keys.add(next_id)
                next_id += 1
                continue
            key = rng.choice(sorted(keys))
            if kind == "update":
                cur.execute(f'UPDATE {name} SET "NAME" = ?, "AMOUNT" = ?, "TS" = ? WHERE "ID" = ?',
                            (f"n{rng.randint(0, 99)}", Decimal("1.50"), dt.datetime(2030, 1, 2, 3, 4, 5, 6), key))
            elif kind == "clob":
                cur.execute(f'UPDATE {name} SET "BODY" = ? WHERE "ID" = ?',
                            (rng.choice([None, "updated", "clob2 " * rng.randint(1, 3000)]), key))
            elif kind == "key":  # Capture writes a D + I pair with different keys
                cur.execute(f'UPDATE {name} SET "ID" = ? WHERE "ID" = ?', (next_id, key))
                keys.discard(key)
                keys.add(next_id)
                next_id += 1
            else:
                cur.execute(f'DELETE FROM {name} WHERE "ID" = ?', (key,))
                keys.discard(key)
            cur.close()
        conns[2].commit()
        conns[1].rollback()
        conns[0].commit()
    finally:
        for conn in conns:
            conn.close()
    return next_id


def test_snapshot_then_interleaved_windows_equal_the_database(live: LiveDb2, spark: Any, tmp_path: Path) -> None:
    rng = random.Random(7)
    tables = [live.create("ORDERS", WIDE), live.create("ITEMS", WIDE)]
    live.run(*[live.insert_sql(t, _row(rng, i)) for t in tables for i in range(50)])
    for t in tables:
        live.register(t)
    for t in tables:
        live.wait_capturing(t)
    pipeline = live.pipeline(spark, tmp_path / "lake")
    pipeline.snapshot()
    cols = [c for c, _ in WIDE]
    for t in tables:
        assert_lake_equals(spark, pipeline, live, t, cols)
    next_id = 1000
    for _ in range(3):
        next_id = _interleaved_window(live, tables, rng, next_id)
        live.wait_captured()
        assert pipeline.mine().events > 0
        for t in tables:
            assert_lake_equals(spark, pipeline, live, t, cols)
    live.wait_captured()
    assert pipeline.mine().events == 0


def test_a_column_added_online_lands_at_its_place(live: LiveDb2, spark: Any, tmp_path: Path) -> None:
    """The online procedure (docs/db2.md): rows changed before it keep the old shape, rows after it have the
    column; the schema history has it."""
    t = live.create("ADDCOL", SMALL)
    live.insert(t, [_small(i) for i in range(1, 6)])
    live.register(t)
    live.wait_capturing(t)
    pipeline = live.pipeline(spark, tmp_path / "lake")
    pipeline.snapshot()
    name = live.sql_name(t)
    live.run(f"UPDATE {name} SET \"V\" = 'before' WHERE \"ID\" = 1", live.insert_sql(t, _small(6)))
    live.wait_captured()  # captured before the registration goes inactive
    live.add_column_online(t, '"W" INTEGER')
    live.wait_capturing(t)
    live.run(f'UPDATE {name} SET "W" = 5 WHERE "ID" = 2', live.insert_sql(t, _small(7, W=9)))
    live.wait_captured()
    pipeline.mine()
    cols = ["ID", "V", "AMOUNT", "TS", "W"]
    assert_lake_equals(spark, pipeline, live, t, cols)
    entry = pipeline.control.latest_entries()[live.table_id(t)]
    assert entry.schema is not None and entry.schema.column_names == cols


def test_a_column_renamed_in_the_source_only(live: LiveDb2, spark: Any, tmp_path: Path) -> None:
    """A column renamed in the source: Capture keeps writing the CD table's old column, matched by its place."""
    t = live.create("RENAME", SMALL)
    live.insert(t, [_small(i) for i in range(1, 6)])
    live.register(t)
    live.wait_capturing(t)
    pipeline = live.pipeline(spark, tmp_path / "lake")
    pipeline.snapshot()
    name = live.sql_name(t)
    live.run(f'ALTER TABLE {name} RENAME COLUMN "V" TO "NAME"')
    live.wait_capturing(t)
    live.run(f"UPDATE {name} SET \"NAME\" = 'renamed' WHERE \"ID\" = 3")
    live.wait_captured()
    pipeline.mine()
    cols = ["ID", "NAME", "AMOUNT", "TS"]
    assert_lake_equals(spark, pipeline, live, t, cols)
    entry = pipeline.control.latest_entries()[live.table_id(t)]
    assert entry.schema is not None and entry.schema.column_names == cols


def test_the_offline_procedure_after_the_lake_caught_up(live: LiveDb2, spark: Any, tmp_path: Path) -> None:
    """The offline procedure (docs/db2.md) with the lake caught up: the new CD table's shape becomes a
    schema-history entry, rows after it land in the new shape."""
    t = live.create("OFFLINE", SMALL)
    live.insert(t, [_small(i) for i in range(1, 4)])
    live.register(t)
    live.wait_capturing(t)
    pipeline = live.pipeline(spark, tmp_path / "lake")
    pipeline.snapshot()
    name = live.sql_name(t)
    live.run(f"UPDATE {name} SET \"V\" = 'x' WHERE \"ID\" = 1")
    live.wait_captured()
    pipeline.mine()  # the lake has everything before the CD table is dropped
    live.offline_procedure(t, 'ADD COLUMN "W" INTEGER')
    live.wait_capturing(t)
    live.run(f'UPDATE {name} SET "W" = 7 WHERE "ID" = 2', live.insert_sql(t, _small(4, W=8)))
    live.wait_captured()
    pipeline.mine()
    cols = ["ID", "V", "AMOUNT", "TS", "W"]
    assert_lake_equals(spark, pipeline, live, t, cols)
    entry = pipeline.control.latest_entries()[live.table_id(t)]
    assert entry.schema is not None and entry.schema.column_names == cols


def test_a_cd_table_recreated_before_the_lake_read_it_is_a_lost_range(live: LiveDb2, spark: Any,
                                                                      tmp_path: Path) -> None:
    """A transaction captured but not mined, then REMOVETABLE + ADDTABLE: its CD rows are gone with the old CD
    table. Mining names the lost range and merges nothing."""
    t = live.create("GAP", SMALL)
    live.insert(t, [_small(i) for i in range(1, 4)])
    live.register(t)
    live.wait_capturing(t)
    pipeline = live.pipeline(spark, tmp_path / "lake")
    pipeline.snapshot()
    name = live.sql_name(t)
    live.run(f"UPDATE {name} SET \"V\" = 'x' WHERE \"ID\" = 1")
    live.wait_captured()
    pipeline.mine()
    live.run(f'DELETE FROM {name} WHERE "ID" = 3')
    live.wait_captured()  # captured, not mined
    pipeline.source.close()  # no connection of the pipeline holds the CD table REMOVETABLE drops
    live.remove(t)
    live.register(t)
    live.wait_capturing(t)  # a transaction after the new CD table's creation
    with pytest.raises(PositionLostError) as err:
        pipeline.mine()
    assert str(err.value).startswith(f"{live.table_id(t)}: its CD table "), str(err.value)
    lake = spark.read.format("delta").load(pipeline.layout.target(live.table_id(t)))
    assert 3 in {r[0] for r in lake.select("ID").collect()}, "the window was merged"
