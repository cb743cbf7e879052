"""Every kind of schema change MariaDB accepts, mined: the lake equals the source.

MySQL's statements as the server logs them: whether the DDL parser reads each form right, and the values the
server gives existing rows (defaults, retypes, generated columns, partitions). One workload in the compatible
table mode, shared by the tests of this module. Each group of grammar forms (forms that touch columns of their
own share a group) runs on a table of its own, with DML before and after its statements in the same window and
more DML in the next one; several statements share a window. The forms are written from the MariaDB/MySQL
reference grammar (``ALTER TABLE``, ``CREATE TABLE``, ``RENAME TABLE``...). One test per form checks its table
against the source, values and columns.

How the engine applies each kind of change, in both table modes (the spark mode's metadata-only changes, key
changes, keyless tables, renames and swaps of tables, truncates, a parked table brought back by ``backfill``),
is tested on the fake source: tests/engine/test_schema_changes.py (issue 44); the statements those groups ran
here parse in tests/unit/test_mysql_ddl.py.

A statement cdclake cannot apply (``CREATE TABLE ... LIKE`` a table it does not capture) parks only its
table; the run says so, and the other tables are mined.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cdclake.engine.names import SOURCE_NAME
from cdclake.errors import TablesParkedError
from cdclake.testing.compare import compare_table

from tests.integration.delta_rs_helpers import assert_delta_rs_reads_as_spark
from tests.integration.pipeline_helpers import make_pipeline

BASE = ("CREATE TABLE {t} (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, a INT, b VARCHAR(20), "
        "d DECIMAL(10,2), ts TIMESTAMP NULL DEFAULT NULL, dt DATETIME(3) NULL, e ENUM('x','y') DEFAULT 'x')")
BASE_ROWS = ("INSERT INTO {t} VALUES (1, 1, 10, '11', 1.25, '2020-05-01 10:00:00', '2020-05-01 10:00:00.456', 'x'), "
             "(2, 2, 20, '22', 2.35, NULL, '2021-01-01 00:00:00.999', 'y'), (3, 3, 30, NULL, -3.45, NULL, NULL, 'x')")


@dataclass
class Group:
    """Grammar forms run in one window on one table ``{t}``; ``table``: its name after them."""

    name: str
    forms: dict[str, str]  # form id -> statement (run in order)
    create: str = BASE
    rows: str = BASE_ROWS
    table: str = "{t}"
    session: list[str] = field(default_factory=list)  # before the statements, on their connection
    more_tables: list[str] = field(default_factory=list)  # other tables the forms make, to compare too
    setup: list[str] = field(default_factory=list)  # more statements before the snapshot (tables of its own)
    parked: bool = False
    modes: tuple[str, ...] = ("compatible",)  # the table modes it runs in


MODES = ("compatible",)  # the spark mode's ways of applying them: tests/engine/test_schema_changes.py
COLS = "id, k, a, b, d, ts, dt, e"  # the base table's columns, as the online schema-change tools list them
NEW = ", ".join(f"NEW.{c.strip()}" for c in COLS.split(","))


GROUPS = [
    # the ADD COLUMN forms name columns of their own, so they share a table (one table less to snapshot
    # and MERGE per group): where the column goes, in both modes
    Group("add", {
        "add_first": "ALTER TABLE {t} ADD COLUMN n1 INT FIRST",
        "add_after_default": "ALTER TABLE {t} ADD COLUMN n2 VARCHAR(10) DEFAULT 'x' AFTER a",
        "add_not_null_implicit": "ALTER TABLE {t} ADD COLUMN n3 INT NOT NULL",
        "add_if_not_exists": "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS a INT, ADD COLUMN IF NOT EXISTS n4 BIGINT "
                             "DEFAULT 7",
        "add_virtual": "ALTER TABLE {t} ADD COLUMN g1 INT AS (a + k) VIRTUAL",
        "add_stored": "ALTER TABLE {t} ADD COLUMN g2 VARCHAR(40) AS (CONCAT(b, '-')) STORED",
        "add_odd_name": "ALTER TABLE {t} ADD COLUMN `my col, (x)=1` INT DEFAULT 5",  # docs/schema-changes.md, "Names"
    }),
    # the value existing rows get from each kind of default; the session's zone is the one the temporal
    # literals are read in
    Group("add_defaults", {
        "add_list": "ALTER TABLE {t} ADD (n5 VARCHAR(5) DEFAULT 'q', n6 DECIMAL(6,2) DEFAULT 1.5)",
        "add_timestamp_literal_zone": "ALTER TABLE {t} ADD COLUMN t1 TIMESTAMP NOT NULL DEFAULT '2021-06-01 12:00:00'",
        "add_datetime_fraction": "ALTER TABLE {t} ADD COLUMN t2 DATETIME(3) DEFAULT '2020-01-01 00:00:00.123'",
        "add_current_timestamp": "ALTER TABLE {t} ADD COLUMN t3 TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
        "add_expression_date": "ALTER TABLE {t} ADD COLUMN t4 DATE DEFAULT (CURRENT_DATE + INTERVAL 1 DAY)",
        "add_constant_expression": "ALTER TABLE {t} ADD COLUMN x1 INT DEFAULT (1 + 2)",
        "add_row_expression": "ALTER TABLE {t} ADD COLUMN x2 INT DEFAULT (a * 2)",
        "add_nondeterministic": "ALTER TABLE {t} ADD COLUMN x3 VARCHAR(36) DEFAULT (UUID())",
    }, session=["SET time_zone = '+05:00'"]),
    Group("drop_rename", {
        "drop": "ALTER TABLE {t} DROP COLUMN b",
        "drop_if_exists": "ALTER TABLE {t} DROP COLUMN IF EXISTS zz, DROP COLUMN IF EXISTS dt",
        "rename_column": "ALTER TABLE {t} RENAME COLUMN a TO a2",
        "change_rename_widen": "ALTER TABLE {t} CHANGE d d2 DECIMAL(12,2) DEFAULT 0",
    }),
    Group("modify", {
        "modify_widen": "ALTER TABLE {t} MODIFY a BIGINT",
        "modify_to_text": "ALTER TABLE {t} MODIFY a VARCHAR(20)",
        "modify_text_to_int": "ALTER TABLE {t} MODIFY b INT",
        "modify_decimal_scale": "ALTER TABLE {t} MODIFY d DECIMAL(8,1)",
        "modify_fraction_down": "ALTER TABLE {t} MODIFY dt DATETIME",
    }),
    Group("defaults_order_clauses", {  # columns of their own again: defaults and order on a, b, e; the rest on dt
        "set_default": "ALTER TABLE {t} ALTER COLUMN b SET DEFAULT 'zz'",
        "drop_default": "ALTER TABLE {t} ALTER COLUMN a DROP DEFAULT",
        "modify_enum_first": "ALTER TABLE {t} MODIFY e ENUM('x','y','z') DEFAULT 'z' FIRST",
        "modify_after": "ALTER TABLE {t} MODIFY b VARCHAR(20) AFTER id",
        "multi_clause_algorithm": "ALTER /* c1 */ TABLE {t} ADD COLUMN `select` INT /* c2 */ COMMENT 'it''s', "
                                  "DROP COLUMN dt, ALGORITHM=COPY, LOCK=SHARED",
        "quoted_default": "ALTER TABLE {t} ADD COLUMN `dä-sh` VARCHAR(5) DEFAULT 'a''b', ALGORITHM=INSTANT",
        "convert_charset": "ALTER TABLE {t} CONVERT TO CHARACTER SET latin1",
    }),
    Group("create", {
        "create_plain": "CREATE TABLE {t}_c (id INT PRIMARY KEY, v VARCHAR(10) DEFAULT 'v')",
        "create_like": "CREATE TABLE {t}_l LIKE {t}",
        "create_select": "CREATE TABLE {t}_s AS SELECT id, k, a FROM {t}",
    }, more_tables=["{t}_c", "{t}_l", "{t}_s"]),
    # gh-ost as it alters a table: a ghost copy made LIKE it and altered, a changelog table, the rows copied in
    # chunks while the application writes to the original (each write applied to the copy from the binlog), the
    # sentry table, the atomic cut-over rename, the old table and the changelog dropped
    Group("ghost", {
        "ghost_create": "CREATE TABLE {t}_gho LIKE {t}",
        "ghost_alter": "ALTER TABLE {t}_gho ADD COLUMN w INT DEFAULT 7, ADD INDEX i_k (k)",
        "ghost_changelog": "CREATE TABLE {t}_ghc (id BIGINT AUTO_INCREMENT PRIMARY KEY, hint VARCHAR(64), "
                           "value TEXT)",
        "ghost_state": "INSERT INTO {t}_ghc (hint, value) VALUES ('state', 'migrating')",
        "ghost_chunk_1": f"INSERT IGNORE INTO {{t}}_gho ({COLS}) SELECT {COLS} FROM {{t}} WHERE id BETWEEN 1 AND 2",
        "ghost_write_original": "UPDATE {t} SET a = a + 100 WHERE id = 2",
        "ghost_apply_write": f"REPLACE INTO {{t}}_gho ({COLS}) SELECT {COLS} FROM {{t}} WHERE id = 2",
        "ghost_insert_original": "INSERT INTO {t} (id, k, a) VALUES (20, 20, 20)",
        "ghost_chunk_2": f"INSERT IGNORE INTO {{t}}_gho ({COLS}) SELECT {COLS} FROM {{t}} WHERE id BETWEEN 3 AND 100",
        "ghost_delete_original": "DELETE FROM {t} WHERE id = 1",
        "ghost_apply_delete": "DELETE FROM {t}_gho WHERE id = 1",
        "ghost_sentry": "CREATE TABLE {t}_del (id INT AUTO_INCREMENT PRIMARY KEY) COMMENT='ghost-cut-over-sentry'",
        "ghost_sentry_drop": "DROP TABLE IF EXISTS {t}_del",
        "ghost_cut_over": "RENAME TABLE {t} TO {t}_del, {t}_gho TO {t}",
        "ghost_drop_old": "DROP TABLE IF EXISTS {t}_del",
        "ghost_drop_changelog": "DROP TABLE IF EXISTS {t}_ghc",
    }),
    # pt-online-schema-change: the new table and its triggers on the original (row events of both tables in one
    # transaction), chunked copies while the application writes, the swap, the old table dropped
    Group("ptosc", {
        "ptosc_create": "CREATE TABLE {t}_new LIKE {t}",
        "ptosc_alter": "ALTER TABLE {t}_new ADD COLUMN w VARCHAR(5) DEFAULT 'w', MODIFY a BIGINT",
        "ptosc_trigger_del": "CREATE TRIGGER pt_osc_del AFTER DELETE ON {t} FOR EACH ROW DELETE IGNORE FROM "
                             "{t}_new WHERE {t}_new.id <=> OLD.id",
        "ptosc_trigger_upd": "CREATE TRIGGER pt_osc_upd AFTER UPDATE ON {t} FOR EACH ROW BEGIN DELETE IGNORE "
                             "FROM {t}_new WHERE !(OLD.id <=> NEW.id) AND {t}_new.id <=> OLD.id; REPLACE INTO "
                             f"{{t}}_new ({COLS}) VALUES ({NEW}); END",
        "ptosc_trigger_ins": "CREATE TRIGGER pt_osc_ins AFTER INSERT ON {t} FOR EACH ROW REPLACE INTO {t}_new "
                             f"({COLS}) VALUES ({NEW})",
        "ptosc_chunk_1": f"INSERT LOW_PRIORITY IGNORE INTO {{t}}_new ({COLS}) SELECT {COLS} FROM {{t}} "
                         "FORCE INDEX(PRIMARY) WHERE id >= 1 AND id <= 2 LOCK IN SHARE MODE",
        "ptosc_write_original": "UPDATE {t} SET a = a + 1 WHERE id IN (2, 10)",
        "ptosc_insert_original": "INSERT INTO {t} (id, k) VALUES (21, 21), (22, 22)",
        "ptosc_chunk_2": f"INSERT LOW_PRIORITY IGNORE INTO {{t}}_new ({COLS}) SELECT {COLS} FROM {{t}} "
                         "FORCE INDEX(PRIMARY) WHERE id >= 3 LOCK IN SHARE MODE",
        "ptosc_delete_original": "DELETE FROM {t} WHERE id = 21",
        "ptosc_analyze": "ANALYZE TABLE {t}_new",
        "ptosc_swap": "RENAME TABLE {t} TO {t}_old, {t}_new TO {t}",
        "ptosc_drop_old": "DROP TABLE IF EXISTS {t}_old",
    }),
    # secondary and unique indexes come and go around updates, and an ALTER commits an open transaction
    Group("indexes", {
        "index_add": "ALTER TABLE {t} ADD INDEX i_a (a)",
        "index_update_1": "UPDATE {t} SET b = 'x2' WHERE id = 2",
        "index_create_unique": "CREATE UNIQUE INDEX u_a ON {t} (a)",
        "index_update_2": "UPDATE {t} SET a = 31 WHERE id = 1",
        "index_open_transaction": "BEGIN",
        "index_insert_in_transaction": "INSERT INTO {t} (id, k) VALUES (40, 40)",
        "index_implicit_commit": "ALTER TABLE {t} ADD UNIQUE KEY u_ka (k, a), DROP INDEX i_a",
        "index_update_3": "UPDATE {t} SET a = 32 WHERE id = 40",
        "index_drop": "DROP INDEX u_a ON {t}",
    }),
    # a retype one way and back, in one window, on two columns, in both modes
    Group("retype", {
        "retype_int_to_text": "ALTER TABLE {t} MODIFY a VARCHAR(20)",
        "retype_text_value": "UPDATE {t} SET a = '0042' WHERE id = 2",
        "retype_text_to_int": "ALTER TABLE {t} MODIFY b INT",
        "retype_back": "ALTER TABLE {t} MODIFY a INT",
    }),
    # partitioning that moves no row changes nothing; statements that change rows without row events are re-read
    Group("partitions", {
        "partition_by": "ALTER TABLE {t} PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (3), PARTITION p1 "
                        "VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "partition_by_after_clause": "ALTER TABLE {t} ADD COLUMN pc INT DEFAULT 3 PARTITION BY RANGE (id) "
                                     "(PARTITION p0 VALUES LESS THAN (3), PARTITION p1 VALUES LESS THAN (20), "
                                     "PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "partition_reorganize": "ALTER TABLE {t} REORGANIZE PARTITION p2 INTO (PARTITION p2 VALUES LESS THAN "
                                "(1000), PARTITION p3 VALUES LESS THAN MAXVALUE)",
        "partition_truncate": "ALTER TABLE {t} TRUNCATE PARTITION p0",
        "partition_update": "UPDATE {t} SET a = 77 WHERE id = 10",
        "partition_drop": "ALTER TABLE {t} DROP PARTITION p1",
        "partition_exchange": "ALTER TABLE {t} EXCHANGE PARTITION p2 WITH TABLE {t}_x",
        "partition_remove": "ALTER TABLE {t} REMOVE PARTITIONING",
    }, setup=["CREATE TABLE {t}_x (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, a INT, b VARCHAR(20), "
              "d DECIMAL(10,2), ts TIMESTAMP NULL DEFAULT NULL, dt DATETIME(3) NULL, e ENUM('x','y') DEFAULT 'x', "
              "pc INT DEFAULT 3)",
              "INSERT INTO {t}_x (id, k) VALUES (30, 30), (31, 31)"],
       more_tables=["{t}_x"]),
    # a table made LIKE one cdclake does not capture: its columns are not in the schema history
    # and a table renamed onto a captured name from a database cdclake does not capture
    Group("parked", {
        "create_like_uncaptured": "CREATE TABLE {t}_u LIKE sc_uncaptured.src",
        "rename_from_uncaptured": "RENAME TABLE {t} TO sc_uncaptured.{t}_old, sc_uncaptured.{t}_src TO {t}",
    }, setup=["DROP TABLE IF EXISTS sc_uncaptured.{t}_src", "DROP TABLE IF EXISTS sc_uncaptured.{t}_old",
              "CREATE TABLE sc_uncaptured.{t}_src (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, v INT)",
              "INSERT INTO sc_uncaptured.{t}_src VALUES (1, 1, 1), (2, 2, 2)"],
       table="{t}_u", more_tables=["{t}"], parked=True),
]
FORMS = [(mode, g.name, form) for mode in MODES for g in GROUPS if mode in g.modes and not g.parked
         for form in g.forms]


def _named(sql: str, group: str) -> str:
    """``{t}`` and ``{t}_x`` in a statement as the group's quoted table names."""
    return re.sub(r"\{t\}(_\w+)?", lambda m: f"`{group}{m.group(1) or ''}`", sql)


def _run(conn, statements: list[str]) -> None:  # type: ignore[no-untyped-def]
    with conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def _dml(t: str, ids: tuple[int, int, int]) -> list[str]:
    """An insert of defaults, an update and a delete (columns every form keeps: id and k)."""
    new, upd, gone = ids
    return [f"INSERT IGNORE INTO {t} (id) VALUES ({new})", f"UPDATE {t} SET k = k + 1 WHERE id = {upd}",
            f"DELETE FROM {t} WHERE id = {gone}"]


@dataclass
class Outcome:
    pipeline: object
    tables: dict[str, str]  # group -> database.table after its forms
    extra: dict[str, list[str]]  # group -> other tables its forms made
    parked_error: str | None
    states: dict  # table -> its state after the two windows


def _mine(spark, mariadb, tmp_path_factory, mode: str) -> Outcome:  # type: ignore[no-untyped-def]
    """The mode's workload: its groups' tables snapshotted, then two windows."""
    groups = [g for g in GROUPS if mode in g.modes]
    db = f"sc_{mode}"
    mariadb.execute(f"DROP DATABASE IF EXISTS `{db}`")
    mariadb.execute(f"CREATE DATABASE `{db}` CHARACTER SET utf8mb4")
    lake = tmp_path_factory.mktemp(f"schema_changes_{mode}")
    pipeline = make_pipeline(spark, mariadb, db, lake, f"sc_{mode}", extra=f"  table_features: {mode}\n")
    conn = mariadb.connect(database=db)
    try:
        mariadb.execute("CREATE DATABASE IF NOT EXISTS sc_uncaptured")
        mariadb.execute("CREATE TABLE IF NOT EXISTS sc_uncaptured.src (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0, "
                        "v INT)")
        mariadb.execute("INSERT IGNORE INTO sc_uncaptured.src VALUES (1, 1, 1)")
        for g in groups:
            _run(conn, [_named(sql, g.name) for sql in [g.create, g.rows, *g.setup]])
        _run(conn, ["CREATE TABLE `bystander` (id INT PRIMARY KEY, v INT)", "INSERT INTO `bystander` VALUES (1, 1)"])
        pipeline.snapshot()
        for g in groups:  # window 1: DML, the forms, DML
            c = mariadb.connect(database=db)
            _run(c, _dml(_named("{t}", g.name), (10, 1, 3)))
            _run(c, g.session + [_named(sql, g.name) for sql in g.forms.values()])
            _run(c, _dml(_named(g.table, g.name), (11, 2, 99)))
            for extra in g.more_tables:
                _run(c, [f"INSERT IGNORE INTO {_named(extra, g.name)} (id) VALUES (500)"])
            c.close()
        _run(conn, ["UPDATE `bystander` SET v = v + 1"])
        parked_error = None
        try:
            pipeline.mine()
        except TablesParkedError as exc:
            parked_error = str(exc)
        for g in groups:  # window 2: more DML
            _run(conn, _dml(_named(g.table, g.name), (12, 10, 11)))
        _run(conn, ["UPDATE `bystander` SET v = v + 1"])
        try:
            pipeline.mine()
        except TablesParkedError:
            pass
    finally:
        conn.close()
    return Outcome(pipeline, {g.name: f"{db}.{g.table.format(t=g.name)}" for g in groups},
                   {g.name: [f"{db}.{x.format(t=g.name)}" for x in g.more_tables] for g in groups},
                   parked_error, pipeline.control.table_states())


@pytest.fixture(scope="module")
def mined(spark, mariadb, tmp_path_factory) -> Iterator[Callable[[str], Outcome]]:  # type: ignore[no-untyped-def]
    """The outcome of a mode's workload, run once on the worker that first asks for it (the tests of a mode
    stay on one worker: tests/conftest.py, TOGETHER)."""
    outcomes: dict[str, Outcome] = {}

    def outcome(mode: str) -> Outcome:
        if mode not in outcomes:
            outcomes[mode] = _mine(spark, mariadb, tmp_path_factory, mode)
        return outcomes[mode]

    yield outcome
    for mode in outcomes:
        mariadb.execute(f"DROP DATABASE IF EXISTS `sc_{mode}`")


_CHECKED: set[tuple[str, str]] = set()  # (lake, table) found equal already: the forms of a group share a table


def _assert_equal(spark, pipeline, table: str, mode: str) -> None:  # type: ignore[no-untyped-def]
    """``table`` equals the source, values and columns; in the compatible mode delta-rs reads it as Spark does."""
    if (pipeline.layout.root, table) in _CHECKED:
        return
    result = compare_table(spark, pipeline, table)
    assert result.equal, f"{table}: {result.summary()}"
    source_columns = pipeline.source.snapshot.start([table]).schemas[table].column_names
    pipeline.source.snapshot.end()
    lake_columns = [f.metadata.get(SOURCE_NAME, f.name)  # a name Delta cannot store lands mapped
                    for f in spark.read.format("delta").load(pipeline.layout.target(table)).schema.fields
                    if not f.name.startswith("__")]
    assert lake_columns == source_columns, f"{table}: lake columns {lake_columns}, source {source_columns}"
    if mode == "compatible":
        assert_delta_rs_reads_as_spark(spark, Path(pipeline.layout.target(table)))
    _CHECKED.add((pipeline.layout.root, table))


@pytest.mark.parametrize(("mode", "group", "form"), FORMS, ids=[f"{m}-{f}" for m, _, f in FORMS])
def test_change_is_applied_exactly(spark, mined, mode: str, group: str, form: str) -> None:  # type: ignore[no-untyped-def]
    out = mined(mode)
    assert out.states[out.tables[group]].status == "streaming", out.states[out.tables[group]]
    for table in [out.tables[group], *out.extra[group]]:
        _assert_equal(spark, out.pipeline, table, mode)


@pytest.mark.parametrize("mode", MODES)
def test_unappliable_change_parks_only_its_table(spark, mined, mode: str) -> None:  # type: ignore[no-untyped-def]
    out = mined(mode)
    table, renamed = out.tables["parked"], out.extra["parked"][0]
    assert out.parked_error is not None and table in out.parked_error and "backfill" in out.parked_error
    states = out.pipeline.control.table_states()
    assert states[table].status == "parked" and "LIKE sc_uncaptured.src" in states[table].detail["parked_reason"]
    assert states[renamed].status == "parked" and "does not capture" in states[renamed].detail["parked_reason"]
    bystander = table.rsplit(".", 1)[0] + ".bystander"
    # the others' positions moved on in the runs that parked it: to the last window's end
    assert states[bystander].status == "streaming"
    assert states[bystander].window_id == out.pipeline.control.last_window().window_id
    _assert_equal(spark, out.pipeline, bystander, mode)  # mined on, both windows
    # (the backfill that brings a parked table back, and the control tables read by delta-rs after every kind
    # of change: tests/engine/test_schema_changes.py)
