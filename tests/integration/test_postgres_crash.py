"""PostgreSQL end to end under a pgbench-style workload: a snapshot taken while writers run, then windows each
killed at a random instant (before a random Delta write or Spark statement, or part-way through the slot's
read) and run again by a new pipeline object; updates of every column, key changes, deletes, rollbacks,
TOASTed values left unchanged, a partitioned table, TRUNCATE and each kind of column change; the second round's
windows decoded in Spark tasks. After every round every Delta table equals the source, and every window is in
bronze once."""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.faults import SimulatedKill
from cdclake.sources.postgresql import stream, tasks
from cdclake.testing.compare import compare_table
from cdclake.testing.postgres import PostgresServer

from tests.integration.kill_helpers import kill_at_write
from tests.integration.oracle_helpers import bronze_markers
from tests.integration.postgres_helpers import postgres_pipeline

pytestmark = pytest.mark.integration

TABLES = ["public.accounts", "public.history", "public.events"]
SCHEMA = [
    # pgbench's accounts, with a TOASTed column (stored out of line: an update that leaves it is sent without it)
    "CREATE TABLE accounts (aid int PRIMARY KEY, bid int NOT NULL, abalance numeric(12,2), filler text, "
    "note varchar(40), seen date)",
    "ALTER TABLE accounts ALTER COLUMN filler SET STORAGE EXTERNAL",
    # no primary key: REPLICA IDENTITY FULL (old rows are sent whole)
    "CREATE TABLE history (tid int NOT NULL, aid int NOT NULL, delta numeric(12,2), mtime timestamptz)",
    "ALTER TABLE history REPLICA IDENTITY FULL",
    # partitioned: published through its root (a row moving between partitions is a delete and an insert there)
    "CREATE TABLE events (id bigint PRIMARY KEY, kind int NOT NULL, payload jsonb) PARTITION BY RANGE (id)",
    "CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (MINVALUE) TO (1000)",
    "CREATE TABLE events_high PARTITION OF events FOR VALUES FROM (1000) TO (MAXVALUE)",
]
# the column changes of the second round, each kind once, one after the other amid its transactions
COLUMN_CHANGES = [
    "ALTER TABLE accounts ADD COLUMN tier int NOT NULL DEFAULT 3",
    "ALTER TABLE accounts RENAME COLUMN note TO remark",
    "ALTER TABLE accounts ALTER COLUMN bid TYPE bigint",
    "ALTER TABLE history DROP COLUMN mtime",
    "TRUNCATE history",
]


class Workload:
    """Random pgbench-style transactions on their own connection; 20% roll back."""

    def __init__(self, pg: PostgresServer, rng: random.Random, base: int = 10_000) -> None:
        self.conn = pg.connect()
        self.rng = rng
        self.base = base  # its keys: base + n (inserts), base + 500_000 + n (key changes)
        self.next_aid = 1
        self.next_event = 0 if base == 10_000 else base  # the first workload's events start in the low partition
        self.note = "note"  # the columns as COLUMN_CHANGES leave them, once they ran
        self.history_mtime = True

    def transaction(self) -> None:
        rng, c = self.rng, self.conn
        c.execute("BEGIN")
        for _ in range(rng.randint(1, 5)):
            self._statement()
        c.execute("ROLLBACK" if rng.random() < 0.2 else "COMMIT")

    def _statement(self) -> None:
        rng, c = self.rng, self.conn
        note = self.note
        aid = c.execute("SELECT aid FROM accounts ORDER BY random() LIMIT 1").fetchone()
        r = rng.random()
        if r < 0.25 or aid is None:
            self.next_aid += 1
            c.execute(f"INSERT INTO accounts (aid, bid, abalance, filler, {note}, seen) VALUES "
                      f"(%s, %s, %s, %s, %s, %s)",
                      (self.base + self.next_aid, rng.randint(1, 9), Decimal(rng.randint(-99999, 99999)) / 100,
                       secrets.token_hex(rng.choice([8, 5000])), rng.choice([None, "n"]), "2024-02-29"))
        elif r < 0.45:  # every column but the TOASTed one, which stays as it was
            c.execute(f"UPDATE accounts SET abalance = abalance + 1, {note} = %s, seen = seen + 1, bid = bid + 1 "
                      "WHERE aid = %s", (secrets.token_hex(3), aid[0]))
        elif r < 0.55:
            c.execute("UPDATE accounts SET filler = %s WHERE aid = %s", (secrets.token_hex(4000), aid[0]))
        elif r < 0.62:  # a key change (a row may move again and again in one window, its TOASTed value unchanged)
            self.next_aid += 1
            c.execute("UPDATE accounts SET aid = %s WHERE aid = %s", (self.base + 500_000 + self.next_aid, aid[0]))
        elif r < 0.7:
            c.execute("DELETE FROM accounts WHERE aid = %s", (aid[0],))
        elif r < 0.85:
            c.execute("INSERT INTO history VALUES (%s, %s, %s, now())" if self.history_mtime else
                      "INSERT INTO history VALUES (%s, %s, %s)", (rng.randint(1, 3), aid[0], Decimal("1.50")))
            c.execute("UPDATE history SET delta = delta + 1 WHERE ctid IN (SELECT ctid FROM history LIMIT 1)")
        else:
            self.next_event += 1
            c.execute("INSERT INTO events VALUES (%s, %s, %s)",
                      (self.next_event, rng.randint(1, 5), '{"k": [1, "two"]}'))
            shift = 1000 if self.next_event < 1000 else 10**9  # across partitions (the first workload's ids)
            c.execute("UPDATE events SET id = id + %s, kind = kind + 1 WHERE id = %s", (shift, self.next_event - 1))


def _killed_read(monkeypatch: pytest.MonkeyPatch, after: int, in_tasks: bool) -> None:
    """The slot's read raises after ``after`` messages (the process dies while it reads); with the window decoded in
    Spark tasks, once the read is staged."""
    if in_tasks:
        stage = tasks.stage

        def staged_then_killed(*args: Any, **kwargs: Any) -> Any:
            stage(*args, **kwargs)
            raise SimulatedKill("killed once the window's messages were staged")

        monkeypatch.setattr(tasks, "stage", staged_then_killed)
        return
    read = stream.read_window

    def dying(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for n, message in enumerate(read(*args, **kwargs), start=1):
            if n > after:
                raise SimulatedKill(f"killed after {after} messages of the slot")
            yield message

    monkeypatch.setattr(stream, "read_window", dying)


def _assert_equal(spark: Any, pipeline: Any, pg: PostgresServer) -> None:
    for table in TABLES:
        result = compare_table(spark, pipeline, table)
        if not result.equal and table == "public.accounts":
            keys = [r["aid"] for r in result.only_in_lake[:3]]
            lake = [{k: v for k, v in r.items() if k != "filler"} for r in result.only_in_lake[:3]]
            source = pg.query("SELECT * FROM accounts WHERE aid = ANY(%s)", (keys,))
            raise AssertionError(f"{table}: lake {lake}; the source has {[r[:3] + r[4:] for r in source]}")
        assert result.equal, f"{table}: {result.summary()}"


def test_snapshot_under_writes_then_killed_windows_end_equal(spark: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(19)
    lake = tmp_path / "lake"
    with PostgresServer() as pg, pg.connect() as owner:  # the tables' owner: the source's user
        for sql in SCHEMA:
            owner.execute(sql)
        work = Workload(pg, rng)
        for _ in range(30):
            work.transaction()

        # the snapshot while a writer commits transactions of its own
        stop = threading.Event()
        writer = Workload(pg, random.Random(7), base=2_000_000)

        def write() -> None:  # until the snapshot ends (at most 60 transactions: the first window stays small)
            for _ in range(60):
                if stop.is_set():
                    break
                writer.transaction()

        thread = threading.Thread(target=write)
        thread.start()
        try:
            postgres_pipeline(spark, pg, lake, name="crash").snapshot()
        finally:
            stop.set()
            thread.join()
        writer.conn.close()

        killed = []
        for round_, changes in enumerate([[], COLUMN_CHANGES]):
            # the second round's windows are decoded in Spark tasks (mining.decoder), killed the same ways
            decoder = "mining:\n  decoder: executors\n" if round_ else ""
            for _ in range(rng.randint(4, 8)):
                work.transaction()
            for change in changes:
                owner.execute(change)
            if changes:
                work.note, work.history_mtime = "remark", False
            for _ in range(rng.randint(4, 8)):
                work.transaction()
            with monkeypatch.context() as m:
                if rng.random() < 0.5:
                    kill = f"write {rng.randint(1, 12)}"
                    with kill_at_write(spark, m, int(kill.split()[1])):
                        try:
                            postgres_pipeline(spark, pg, lake, name="crash", extra=decoder).mine()
                        except SimulatedKill:
                            killed.append(kill)
                else:
                    kill = f"read {rng.randint(0, 20)}"
                    _killed_read(m, int(kill.split()[1]), in_tasks=bool(decoder))
                    try:
                        postgres_pipeline(spark, pg, lake, name="crash", extra=decoder).mine()
                    except SimulatedKill:
                        killed.append(kill)
            pipeline = postgres_pipeline(spark, pg, lake, name="crash", extra=decoder)  # only the lake carries over
            pipeline.mine()
            try:
                _assert_equal(spark, pipeline, pg)
            except AssertionError as exc:
                raise AssertionError(f"round {round_} ({changes}, killed at {kill}): {exc}") from None
        work.conn.close()
        windows = [m["window_id"] for m in bronze_markers(spark, pipeline)]
        assert len(windows) == len(set(windows)), "a window is in bronze twice"
        assert killed, "no run was killed"
        # the partitions land in events only (include_tables matches them too)
        assert not {"public.events_low", "public.events_high"} & set(pipeline.control.table_states())
        entries = pipeline.control.latest_entries()
        assert entries["public.accounts"].schema.column_names == [  # type: ignore[union-attr]
            "aid", "bid", "abalance", "filler", "remark", "seen", "tier"]
