"""Schema changes as the engine applies them, mined from the fake source: the lake equals the source (moved from
integration/test_schema_changes.py, issue 44, where MySQL's statements are mined in the compatible table mode and
the engine's compatible rewrites with them; delta-rs reads a compatible lake after each kind of change in
test_delta_readers.py).

One workload, in the spark table mode (``lake.table_features``), shared by the tests of this module: every kind of
change whose apply differs there (column placement, drops and renames in the metadata, type widening and retypes
in place, in ``ALTER`` statements of several changes; tables swapped by gh-ost and pt-online-schema-change), and
those that apply alike in both modes, whose statements need no server to be parsed right (the primary key added,
changed, dropped and added again to a table keyless at the snapshot; a table renamed twice, then swapped with
another through a spare name in one statement; a truncate). Each group's changes run on a table of its own, with
row changes before, between and after them in the same window and more in the next one. One test per group checks
its tables against the source: values, and the columns in the source's order (a generated column, which the log
never carries, does not land).

A change cdclake cannot follow (a table made like, or renamed from, one it does not capture) parks only its
table; the run says so, the other tables are mined, and ``backfill`` brings the table back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from cdclake.engine.names import SOURCE_NAME
from cdclake.errors import TablesParkedError
from cdclake.testing.compare import compare_table
from cdclake.testing.fake import FakeDatabase, Transaction

from tests.engine.helpers import make_pipeline

BASE = [("id", "int", False), ("k", "int", False, 0), ("a", "int"), ("b", "text"), ("d", "decimal(10,2)"),
        ("dt", "datetime"), ("e", "text", True, "x")]
BASE_ROWS = [{"id": 1, "k": 1, "a": 10, "b": "11", "d": "1.25", "dt": "2020-05-01 10:00:00.456", "e": "x"},
             {"id": 2, "k": 2, "a": 20, "b": "22", "d": "2.35", "dt": "2021-01-01 00:00:00.999", "e": "y"},
             {"id": 3, "k": 3, "a": 30, "b": None, "d": "-3.45", "dt": None, "e": "x"}]
MODES = ("spark",)  # the compatible mode's rewrites: integration/test_schema_changes.py, test_delta_readers.py
ODD = "my col, (x)=1"  # docs/schema-changes.md, "Names"


@dataclass
class Group:
    """Changes run in one window on one table (``shop.<name>``); ``table``: its name after them."""

    name: str
    changes: Callable[[FakeDatabase, str], None]  # (database, table)
    columns: list = field(default_factory=lambda: list(BASE))
    key: tuple[str, ...] = ("id",)
    rows: list = field(default_factory=lambda: list(BASE_ROWS))
    table: str = "{t}"
    more_tables: list[str] = field(default_factory=list)  # other tables the changes make, to compare too
    setup: Callable[[FakeDatabase, str], None] | None = None  # before the snapshot
    parked: bool = False


def _columns(db: FakeDatabase, t: str) -> None:
    """Every change to columns, in statements of several changes as MySQL's ``ALTER TABLE`` takes them: where an
    added column goes and what older rows get, drops, renames, retypes (widening, to text and back, a lossy one,
    a scale down, a rename and a retype of one column), moves."""
    with db.alter(t) as a:
        a.add_column("n1", "int", at="first")
        a.add_column("n2", "text", default="x", at="a")
        a.add_column("n3", "int", False, default=0)
        a.add_column("n4", "bigint", default=7)
        a.add_column("g1", "int", generated=True)  # never logged: it does not land
        a.add_column(ODD, "int", default=5)
        a.add_column("x2", "int", per_row=lambda r: (r["a"] or 0) * 2)  # a value per row: re-read
    db.update(t, {"id": 1}, {"n4": 8})
    with db.alter(t) as a:
        a.drop_column("b")
        a.rename_column("a", "a2")
        a.rename_column("d", "d2")
        a.retype_column("d2", "decimal(12,2)")  # widened (CHANGE d d2 DECIMAL(12,2))
        a.retype_column("n4", "text")
        a.retype_column("n2", "int")  # text to int: 'x' gives NULL, as the lake's cast
        a.retype_column("dt", "date")
        a.move_column("e", "first")
        a.move_column("k", "a2")
    db.update(t, {"id": 2}, {"n2": 42})
    with db.alter(t) as a:
        a.retype_column("d2", "decimal(12,1)")  # a scale down rounds
        a.retype_column("n3", "text")  # there and back
    db.update(t, {"id": 1}, {"n3": "0042"})
    db.retype_column(t, "n3", "int")
    db.retype_column(t, "n4", "double")  # a retype the lake's cast does not follow: re-read


def _keys(db: FakeDatabase, t: str) -> None:
    """Keyless at the snapshot; a primary key added, changed, dropped (keyless again, with updates and deletes),
    added again with a unique key."""
    db.set_key(t, ["id"])
    db.update(t, {"id": 2}, {"a": 25})
    db.set_key(t, ["id", "k"])
    db.update(t, {"id": 2}, {"a": 26})
    db.set_key(t, [])
    db.update(t, {"id": 2}, {"a": lambda r: r["a"] + 5})
    db.delete(t, {"id": 1})
    db.set_key(t, ["id", "k"], unique_keys={"uk_a": ["a"]})


def _renames(db: FakeDatabase, t: str) -> None:
    """A table renamed twice, with rows between; then it trades names with another through a spare name (in one
    statement), and the other is truncated."""
    db.rename_tables((t, f"{t}_r"))
    db.update(f"{t}_r", {"id": 2}, {"a": 21})
    db.rename_tables((f"{t}_r", f"{t}_r2"))
    db.update(f"{t}_r2", {"id": 2}, {"a": 22})
    db.rename_tables((f"{t}_r2", f"{t}_tmp"), (f"{t}_b", f"{t}_r2"), (f"{t}_tmp", f"{t}_b"))
    db.update(f"{t}_b", {"id": 2}, {"a": 23})
    db.truncate(f"{t}_b")
    db.insert(f"{t}_b", {"id": 30, "k": 30})


def _renames_setup(db: FakeDatabase, t: str) -> None:
    db.create_table(f"{t}_b", [("id", "int", False), ("k", "int", False, 0), ("v", "text")], key=["id"])
    db.insert(f"{t}_b", {"id": 1, "k": 100, "v": "b1"}, {"id": 2, "k": 200, "v": "b2"}, {"id": 7, "k": 700, "v": "b7"})


def _copy(db: FakeDatabase, source: str, copy: str, low: int, high: int) -> None:
    """``INSERT IGNORE INTO copy SELECT ... FROM source WHERE id BETWEEN low AND high``."""
    have = {r["id"] for r in db.rows(copy)}
    db.insert(copy, *[r for r in db.rows(source) if low <= r["id"] <= high and r["id"] not in have])


def _replace(tx: Transaction, source: str, copy: str, keys: list[int]) -> None:
    """What a trigger or a row copier does with the source's rows ``keys`` as the transaction sees them:
    ``REPLACE INTO copy`` (a row gone from the source goes from the copy)."""
    current = {r["id"]: r for r in tx.rows(source)}
    for key in keys:
        tx.delete(copy, {"id": key})
        if key in current:
            tx.insert(copy, current[key])


def _ghost(db: FakeDatabase, t: str) -> None:
    """gh-ost altering a table: a ghost copy made like it and altered, a changelog table, the rows copied in chunks
    while the application writes to the original (each write applied to the copy), the atomic cut-over rename,
    the old table and the changelog dropped."""
    ghost, changelog = f"{t}_gho", f"{t}_ghc"
    db.create_like(ghost, t)
    db.add_column(ghost, "w", "int", default=7)
    db.create_table(changelog, [("id", "bigint", False), ("hint", "text"), ("value", "text")], key=["id"])
    db.insert(changelog, {"id": 1, "hint": "state", "value": "migrating"})
    _copy(db, t, ghost, 1, 2)
    db.update(t, {"id": 2}, {"a": lambda r: r["a"] + 100})
    with db.transaction() as tx:  # the write applied to the copy from the log
        _replace(tx, t, ghost, [2])
    db.insert(t, {"id": 20, "k": 20, "a": 20})
    _copy(db, t, ghost, 3, 100)
    db.delete(t, {"id": 1})
    db.delete(ghost, {"id": 1})
    db.rename_tables((t, f"{t}_del"), (ghost, t))  # the cut-over
    db.drop_table(f"{t}_del")
    db.drop_table(changelog)


def _ptosc(db: FakeDatabase, t: str) -> None:
    """pt-online-schema-change: the new table, whose triggers on the original put row changes of both tables in
    one transaction; chunked copies while the application writes; the swap; the old table dropped."""
    new = f"{t}_new"
    db.create_like(new, t)
    db.add_column(new, "w", "text", default="w")
    db.retype_column(new, "a", "bigint")
    _copy(db, t, new, 1, 2)
    with db.transaction() as tx:  # an application write and what the triggers do with it
        tx.update(t, lambda r: r["id"] in (2, 10), {"a": lambda r: (r["a"] or 0) + 1})
        _replace(tx, t, new, [2, 10])
    with db.transaction() as tx:
        tx.insert(t, {"id": 21, "k": 21})
        tx.insert(t, {"id": 22, "k": 22})
        _replace(tx, t, new, [21, 22])
    _copy(db, t, new, 3, 10**6)
    with db.transaction() as tx:
        tx.delete(t, {"id": 21})
        _replace(tx, t, new, [21])
    db.rename_tables((t, f"{t}_old"), (new, t))  # the swap
    db.drop_table(f"{t}_old")


def _parked(db: FakeDatabase, t: str) -> None:
    db.create_like(f"{t}_u", "other.src")  # its columns are not in the schema history
    db.rename_tables((t, f"other.{t.split('.')[1]}_old"), (f"other.{t.split('.')[1]}_src", t))


def _parked_setup(db: FakeDatabase, t: str) -> None:
    name = t.split(".")[1]
    db.create_table("other.src", [("id", "int", False), ("k", "int", False, 0), ("v", "int")], key=["id"])
    db.insert("other.src", {"id": 1, "k": 1, "v": 1})
    db.create_table(f"other.{name}_src", [("id", "int", False), ("k", "int", False, 0), ("v", "int")], key=["id"])
    db.insert(f"other.{name}_src", {"id": 1, "k": 1, "v": 1}, {"id": 2, "k": 2, "v": 2})


GROUPS = [
    Group("columns", _columns),
    Group("keys", _keys, key=()),
    Group("renames", _renames, table="{t}_b", setup=_renames_setup, more_tables=["{t}_r2"]),
    Group("ghost", _ghost),
    Group("ptosc", _ptosc),
    Group("parked", _parked, setup=_parked_setup, table="{t}_u", more_tables=["{t}"], parked=True),
]
FORMS = [(mode, g.name) for mode in MODES for g in GROUPS if not g.parked]


def _dml(db: FakeDatabase, t: str, ids: tuple[int, int, int]) -> None:
    """An insert of defaults, an update and a delete (columns every change keeps: id and k)."""
    new, upd, gone = ids
    if not any(r["id"] == new for r in db.rows(t)):
        db.insert(t, {"id": new})
    db.update(t, {"id": upd}, {"k": lambda r: r["k"] + 1}, limit=1)
    db.delete(t, {"id": gone})


@dataclass
class Outcome:
    pipeline: object
    tables: dict[str, str]  # group -> table after its changes
    extra: dict[str, list[str]]  # group -> other tables its changes made
    parked_error: str | None
    states: dict  # table -> its state after the two windows


def _mine(spark, tmp_path_factory, mode: str) -> Outcome:  # type: ignore[no-untyped-def]
    """The mode's workload: its groups' tables snapshotted, then two windows."""
    groups = GROUPS
    root = tmp_path_factory.mktemp(f"schema_changes_{mode}")
    db = FakeDatabase(root / "db.log")
    named = {g.name: f"shop.{g.name}" for g in groups}
    for g in groups:
        t = named[g.name]
        db.create_table(t, g.columns, key=g.key)
        db.insert(t, *g.rows)
        if g.setup:
            g.setup(db, t)
    db.create_table("shop.bystander", [("id", "int", False), ("v", "int")], key=["id"])
    db.insert("shop.bystander", {"id": 1, "v": 1})
    pipeline = make_pipeline(spark, db, root / "lake", f"sc_{mode}", extra=f"  table_features: {mode}\n")
    pipeline.snapshot()
    for g in groups:  # window 1: row changes, the schema changes, row changes
        t = named[g.name]
        _dml(db, t, (10, 1, 3))
        g.changes(db, t)
        _dml(db, g.table.format(t=t), (11, 2, 99))
        for extra in g.more_tables:
            table = extra.format(t=t)
            if not any(r["id"] == 500 for r in db.rows(table)):
                db.insert(table, {"id": 500, "k": 0} if db.schema(table).has_column("k") else {"id": 500})
    db.update("shop.bystander", {}, {"v": lambda r: r["v"] + 1})
    parked_error = None
    try:
        pipeline.mine()
    except TablesParkedError as exc:
        parked_error = str(exc)
    for g in groups:  # window 2: more row changes
        _dml(db, g.table.format(t=named[g.name]), (12, 10, 11))
    db.update("shop.bystander", {}, {"v": lambda r: r["v"] + 1})
    try:
        pipeline.mine()
    except TablesParkedError:
        pass
    return Outcome(pipeline, {g.name: g.table.format(t=named[g.name]) for g in groups},
                   {g.name: [x.format(t=named[g.name]) for x in g.more_tables] for g in groups},
                   parked_error, pipeline.control.table_states())


@pytest.fixture(scope="module")
def mined(spark, tmp_path_factory) -> Iterator[Callable[[str], Outcome]]:  # type: ignore[no-untyped-def]
    """The outcome of a mode's workload, run once on the worker that first asks for it (the tests of a mode
    stay on one worker: tests/conftest.py, TOGETHER)."""
    outcomes: dict[str, Outcome] = {}

    def outcome(mode: str) -> Outcome:
        if mode not in outcomes:
            outcomes[mode] = _mine(spark, tmp_path_factory, mode)
        return outcomes[mode]

    yield outcome


def _assert_equal(spark, pipeline, table: str, mode: str) -> None:  # type: ignore[no-untyped-def]
    """``table`` equals the source, values and columns (as the lake keeps them: a generated column never lands,
    a name Delta cannot store lands mapped)."""
    result = compare_table(spark, pipeline, table)
    assert result.equal, f"{table}: {result.summary()}"
    schema = pipeline.source.snapshot.start([table]).schemas[table]
    source_columns = pipeline.ctx.columns.lake_schema(schema).column_names
    lake_columns = [f.metadata.get(SOURCE_NAME, f.name)
                    for f in spark.read.format("delta").load(pipeline.layout.target(table)).schema.fields
                    if not f.name.startswith("__")]
    assert lake_columns == source_columns, f"{table}: lake columns {lake_columns}, source {source_columns}"


@pytest.mark.parametrize(("mode", "group"), FORMS, ids=[f"{m}-{g}" for m, g in FORMS])
def test_change_is_applied_exactly(spark, mined, mode: str, group: str) -> None:  # type: ignore[no-untyped-def]
    out = mined(mode)
    assert out.states[out.tables[group]].status == "streaming", out.states[out.tables[group]]
    for table in [out.tables[group], *out.extra[group]]:
        _assert_equal(spark, out.pipeline, table, mode)
    if group == "columns":
        lake = spark.read.format("delta").load(out.pipeline.layout.target(out.tables[group]))
        assert "g1" not in lake.columns  # UNLOGGED
        history = [e for e in out.pipeline.control.history() if e.table == out.tables[group]]
        assert any(e.kind == "reread" for e in history)  # the value per row, the lossy retype
        assert any(e.column_renames.get("a") == "a2" for e in history)


@pytest.mark.parametrize("mode", ["spark"])
def test_unappliable_change_parks_only_its_table(spark, mined, mode: str) -> None:  # type: ignore[no-untyped-def]
    out = mined(mode)
    table, renamed = out.tables["parked"], out.extra["parked"][0]
    assert out.parked_error is not None and table in out.parked_error and "backfill" in out.parked_error
    states = out.pipeline.control.table_states()
    assert states[table].status == "parked" and "LIKE other.src" in states[table].detail["parked_reason"]
    assert states[renamed].status == "parked" and "renamed from" in states[renamed].detail["parked_reason"]
    # the others' positions moved on in the runs that parked it: to the last window's end
    assert states["shop.bystander"].status == "streaming"
    assert states["shop.bystander"].window_id == out.pipeline.control.last_window().window_id
    _assert_equal(spark, out.pipeline, "shop.bystander", mode)  # mined on, both windows
    status = {t["source_table"]: t for t in out.pipeline.status()}
    assert status[table]["parked"]["remedy"].startswith(f"cdclake backfill --table {table}")
    for parked in (table, renamed):
        out.pipeline.backfill(parked)
        assert out.pipeline.control.table_states()[parked].status == "streaming"
        _assert_equal(spark, out.pipeline, parked, mode)
