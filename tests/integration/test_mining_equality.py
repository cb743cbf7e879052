"""The lake equals the source after a random workload, windows of random size, DDL mid-stream."""

from __future__ import annotations

import random

import pytest
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline

SEED = 20261121


def _random_transactions(db, database: str, rng: random.Random, n: int, next_id: list[int]) -> None:  # type: ignore[no-untyped-def]
    conn = db.connect(database=database)
    conn.autocommit(False)
    try:
        _run_transactions(conn, rng, n, next_id)
    finally:
        conn.close()  # an open transaction would hold metadata locks past the test


def _run_transactions(conn, rng: random.Random, n: int, next_id: list[int]) -> None:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        for _ in range(n):
            for _ in range(rng.randint(1, 5)):  # multi-statement transactions
                action = rng.random()
                key = rng.randint(1, max(1, next_id[0]))
                if action < 0.35:
                    next_id[0] += 1
                    cur.execute("INSERT INTO acct (id, balance, flag, updated) VALUES (%s, %s, %s, NOW(6))",
                                (next_id[0], rng.randint(0, 10**6) / 100, rng.randint(0, 1)))
                elif action < 0.6:
                    cur.execute("UPDATE acct SET balance = balance + 1.25, flag = 1 - flag WHERE id = %s", (key,))
                elif action < 0.7:
                    cur.execute("DELETE FROM acct WHERE id = %s", (key,))
                    # delete and re-insert the same key
                    cur.execute("INSERT IGNORE INTO acct (id, balance, flag, updated) "
                                "VALUES (%s, 1, 0, NOW(6))", (key,))
                elif action < 0.78:
                    next_id[0] += 1  # primary-key update
                    cur.execute("UPDATE IGNORE acct SET id = %s WHERE id = %s", (next_id[0], key))
                elif action < 0.85:
                    cur.execute("DELETE FROM acct WHERE id = %s", (key,))
                else:
                    k = f"k{rng.randint(1, 40)}"
                    cur.execute("INSERT INTO kv (k, region, v) VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE v = v + 1",
                                (k, rng.choice(["eu", "us"]), rng.randint(0, 2**64 - 1)))
            if rng.random() < 0.15:
                conn.rollback()  # never reaches the binlog
            else:
                conn.commit()


# Windows decoded on the driver, and in Spark tasks over splits of a few KiB (many per window, cut at the DDL).
@pytest.mark.parametrize("decoder", ["driver", "executors"])
def test_random_workload_with_ddl_equals_source(spark, mariadb, fresh_database, tmp_path,  # type: ignore[no-untyped-def]
                                                decoder: str) -> None:
    rng = random.Random(SEED)
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, owner VARCHAR(40) DEFAULT 'anon', "
                    f"balance DECIMAL(12,2), flag TINYINT(1), updated DATETIME(6))")
    mariadb.execute(f"CREATE TABLE `{db}`.kv (k VARCHAR(20), region CHAR(2), v BIGINT UNSIGNED, "
                    f"PRIMARY KEY (k, region))")
    next_id = [0]
    _random_transactions(mariadb, db, rng, 40, next_id)
    # flushes of 100 rows: the larger windows stage rows before bronze, the smaller ones do not
    mining = "mining:\n  flush_rows: 100\n"
    if decoder == "executors":
        mining += "  decoder: executors\n  split_bytes: 4096\n"
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", f"eq{decoder}", extra=mining)
    snap = pipeline.snapshot()
    assert sorted(snap.tables) == [f"{db}.acct", f"{db}.kv"]
    tables = [f"{db}.acct", f"{db}.kv"]

    ddl_rounds = [
        [f"ALTER TABLE `{db}`.acct ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n/a'"],
        [f"ALTER TABLE `{db}`.acct CHANGE owner holder VARCHAR(60), MODIFY balance DECIMAL(14,2)",
         f"TRUNCATE TABLE `{db}`.kv"],
        [f"ALTER TABLE `{db}`.acct DROP COLUMN note, ADD COLUMN score INT DEFAULT 7 AFTER id",
         f"CREATE TABLE `{db}`.born (id INT PRIMARY KEY, label VARCHAR(10))",
         f"INSERT INTO `{db}`.born VALUES (1, 'a'), (2, 'b')",
         f"UPDATE `{db}`.born SET id = 3 WHERE id = 1"],
    ]
    for round_no, statements in enumerate(ddl_rounds, start=1):
        _random_transactions(mariadb, db, rng, 25, next_id)
        for sql in statements:
            mariadb.execute(sql)
        if round_no == 3:
            tables.append(f"{db}.born")
        _random_transactions(mariadb, db, rng, 25, next_id)
        # a window of random size, then one that catches up with the log end seen at its start
        pipeline.mine(max_events=rng.randint(5, 60))
        last = pipeline.mine()
        assert not last.resumed
        assert_lake_equals_source(spark, mariadb, pipeline, tables)

    # the schema history holds every DDL with its position
    history = pipeline.control.history()
    assert any("CHANGE owner holder" in e.ddl and e.column_renames == {"owner": "holder"} for e in history)
    assert any(e.table == f"{db}.born" and e.kind == "create" for e in history)
    # an idle re-run changes nothing and still advances the window
    again = pipeline.mine()
    assert again.events == 0
    assert_lake_equals_source(spark, mariadb, pipeline, tables)
    status = {t["source_table"]: t for t in pipeline.status()}
    assert status[f"{db}.acct"]["state"] == "streaming"
    assert status[f"{db}.acct"]["position"] == again.end


def test_split_window_killed_at_each_step_then_rerun_is_exact(spark, mariadb, fresh_database, tmp_path,  # type: ignore[no-untyped-def]
                                                              monkeypatch) -> None:
    """A window decoded in Spark tasks, killed after staging, after the schema history and after bronze, then
    finished by a fresh run: the lake equals the source and bronze holds the window once."""
    rng = random.Random(SEED + 1)
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, owner VARCHAR(40) DEFAULT 'anon', "
                    f"balance DECIMAL(12,2), flag TINYINT(1), updated DATETIME(6))")
    mariadb.execute(f"CREATE TABLE `{db}`.kv (k VARCHAR(20), region CHAR(2), v BIGINT UNSIGNED, "
                    f"PRIMARY KEY (k, region))")
    next_id = [1000]  # fresh inserts above the keys the workload re-inserts
    lake = tmp_path / "lake"
    extra = "mining:\n  decoder: executors\n  split_bytes: 4096\n"
    make_pipeline(spark, mariadb, db, lake, "splitkill", extra=extra).snapshot()
    tables = [f"{db}.acct", f"{db}.kv"]
    _random_transactions(mariadb, db, rng, 60, next_id)
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    for point in ("staged", "history", "bronze", "applied"):
        monkeypatch.setenv(CRASH_ENV, point)
        with pytest.raises(SimulatedKill):
            make_pipeline(spark, mariadb, db, lake, "splitkill", extra=extra).mine()
    monkeypatch.delenv(CRASH_ENV)
    pipeline = make_pipeline(spark, mariadb, db, lake, "splitkill", extra=extra)
    finished = pipeline.mine()
    assert finished.resumed and finished.window_id == 1
    assert_lake_equals_source(spark, mariadb, pipeline, tables)
    bronze = spark.read.format("delta").load(pipeline.layout.bronze)
    assert bronze.where("op = 'w'").groupBy("window_id").count().where("count > 1").count() == 0
    changes = bronze.where("op <> 'w'")
    marker = pipeline.ctx.bronze.marker(1)
    assert changes.count() == changes.select("seq").distinct().count() == marker["events"] > 0


def test_split_window_with_a_type_change_mid_window_is_exact(spark, mariadb, fresh_database,  # type: ignore[no-untyped-def]
                                                             tmp_path) -> None:
    """A column's type changes in the middle of a window decoded over many splits: splits after the ALTER
    meet values that do not convert with the window's starting schema. The window ends before the ALTER, the
    next one decodes the rest with the new schema, and the lake equals the source."""
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT, pad VARCHAR(200))")
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", "typechange",
                             extra="mining:\n  decoder: executors\n  split_bytes: 4096\n")
    pipeline.snapshot()
    pad = "x" * 150
    for i in range(1, 61):
        mariadb.execute(f"INSERT INTO `{db}`.t VALUES ({i}, {i}, '{pad}')")
    mariadb.execute(f"ALTER TABLE `{db}`.t MODIFY v VARCHAR(20)")
    for i in range(61, 121):
        mariadb.execute(f"INSERT INTO `{db}`.t VALUES ({i}, 'v{i}', '{pad}')")
    mariadb.execute(f"UPDATE `{db}`.t SET v = concat('w', id) WHERE id % 7 = 0")
    while pipeline.mine().events:
        pass
    assert any("MODIFY v VARCHAR" in e.ddl for e in pipeline.control.history())
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.t"])
