"""The conformance workload: logical operations on logical tables, and the driver each source implements.

:class:`Workload` generates, from a seeded :class:`random.Random`, what happens in a source: tables
created with a few rows, then rounds of single-row DML in two interleaved transactions (committed or
rolled back), primary-key updates, delete + re-insert of a key, re-use of deleted keys, and one DDL
statement per round. It keeps a model of the committed rows and of what each open transaction holds,
so every operation it emits is valid in any source (no duplicate keys, and never a row, key or table
another open transaction holds: two sessions of one test never wait for each other).

Nothing here knows a database: a :class:`Driver` writes each operation in its source's own SQL or API
and compares the lake with the source. Logical tables and columns have lower-case names (``t1``,
``qty``); a driver maps them to its own (``APP.T1``/``QTY`` for Oracle).

Logical column types (:data:`TYPES`) are a small set every relational source has: an integer key, an
integer, a big integer, a ``decimal(12,2)``, a short and a longer ``varchar``, a date. Widening turns
an integer into a big integer or the short string into the longer one (:data:`WIDENINGS`); values
generated afterwards use the wider range (integers beyond 32 bits, strings beyond 20 characters), so a
lake that kept the narrow type cannot pass.
"""

from __future__ import annotations

import abc
import datetime as dt
import random
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from cdclake.engine.pipeline import Pipeline

# ---- logical types -----------------------------------------------------------------------------------

KEY = "key"  # the integer primary key (never NULL)
INT = "int"  # fits 32 bits
BIGINT = "bigint"
DEC = "decimal(12,2)"
STR = "varchar(20)"
WIDE_STR = "varchar(40)"
DATE = "date"
TYPES = (KEY, INT, BIGINT, DEC, STR, WIDE_STR, DATE)
WIDENINGS = {INT: BIGINT, STR: WIDE_STR}
STRING_LENGTH = {STR: 20, WIDE_STR: 40}
ADDABLE = (INT, DEC, STR, DATE)  # types of columns added or created mid-stream

# ---- operations --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Create:
    """``CREATE TABLE`` (``columns``: (name, logical type) in order; ``key``: the primary key)."""

    kind: ClassVar[str] = "create_table"
    table: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]


@dataclass(frozen=True)
class Begin:
    """Transaction ``tx`` (0 or 1: two sessions) starts; it may interleave with the other one."""

    tx: int


@dataclass(frozen=True)
class Insert:
    tx: int
    table: str
    values: Mapping[str, Any]  # every column, None for NULL


@dataclass(frozen=True)
class Update:
    """Update of non-key columns of the row with key ``key``."""

    tx: int
    table: str
    key: Mapping[str, Any]
    changes: Mapping[str, Any]


@dataclass(frozen=True)
class UpdateKey:
    """A primary-key change: the row with ``key`` gets ``new_key``."""

    tx: int
    table: str
    key: Mapping[str, Any]
    new_key: Mapping[str, Any]


@dataclass(frozen=True)
class Delete:
    tx: int
    table: str
    key: Mapping[str, Any]


@dataclass(frozen=True)
class Commit:
    tx: int


@dataclass(frozen=True)
class Rollback:
    tx: int


@dataclass(frozen=True)
class AddColumn:
    """``ADD COLUMN`` (nullable) with a literal default: rows that exist get ``default``."""

    kind: ClassVar[str] = "add_column"
    table: str
    column: str
    type: str
    default: Any


@dataclass(frozen=True)
class DropColumn:
    kind: ClassVar[str] = "drop_column"
    table: str
    column: str


@dataclass(frozen=True)
class RenameColumn:
    kind: ClassVar[str] = "rename_column"
    table: str
    column: str
    new_name: str


@dataclass(frozen=True)
class WidenColumn:
    """The column's type becomes ``new_type`` (:data:`WIDENINGS`); it stays nullable, values kept."""

    kind: ClassVar[str] = "widen_column"
    table: str
    column: str
    old_type: str
    new_type: str


@dataclass(frozen=True)
class Truncate:
    kind: ClassVar[str] = "truncate"
    table: str


@dataclass(frozen=True)
class DropTable:
    kind: ClassVar[str] = "drop_table"
    table: str


Op = Create | Begin | Insert | Update | UpdateKey | Delete | Commit | Rollback | AddColumn | DropColumn | \
    RenameColumn | WidenColumn | Truncate | DropTable

# The DDL kinds, in the order rounds cycle through them (a created table exists before one is dropped).
DDL_KINDS: tuple[str, ...] = (
    AddColumn.kind, WidenColumn.kind, Create.kind, RenameColumn.kind, Truncate.kind, DropColumn.kind,
    DropTable.kind,
)

# Crash points every mining window passes (cdclake.engine.mining / apply: crash_point(...)). A frame
# source's windows also pass "inflight"; "merge" needs rows in the window (every round has some).
CRASH_POINTS: tuple[str, ...] = ("planned", "staged", "history", "bronze", "merge", "applied")


# ---- the driver --------------------------------------------------------------------------------------


class Driver(abc.ABC):
    """What a source provides to run the workload (one module per source: ``tests/conformance/<source>.py``
    with ``make_driver(request) -> Driver``)."""

    #: the plug-in's name (the test id)
    name: ClassVar[str]
    #: the workload's seed for this source (fixed: a failure replays exactly)
    seed: ClassVar[int]
    #: DDL kinds (:data:`DDL_KINDS`) the source captures; every one is exercised
    supported_ddl: ClassVar[frozenset[str]] = frozenset(DDL_KINDS)
    #: crash points a window of this source always passes
    crash_points: ClassVar[tuple[str, ...]] = CRASH_POINTS
    #: whether ``Pipeline.mine(max_events=n)`` bounds a window
    supports_max_events: ClassVar[bool] = True
    #: whether a transaction is left open while the pipeline mines and the lake is compared (windows of
    #: a frame source may end inside it; a driver whose comparison would wait for it says False)
    open_transactions_across_windows: ClassVar[bool] = False

    @abc.abstractmethod
    def apply(self, op: Op) -> None:
        """Run one logical operation in the source (its own SQL or API), now."""

    @abc.abstractmethod
    def source_table(self, table: str) -> str:
        """The captured name of a logical table (what the pipeline's control tables and reports say)."""

    @abc.abstractmethod
    def pipeline(self, spark: Any, lake_path: Path) -> Pipeline:
        """A new pipeline object over the source and the lake at ``lake_path``; called again after a kill,
        it must carry nothing over from the previous object (only the lake persists)."""

    @abc.abstractmethod
    def assert_lake_equals_source(self, pipeline: Pipeline, tables: list[str]) -> None:
        """Every logical table in ``tables`` (all existing now) equals the source's committed rows, row by
        row, with the schema the source has now."""

    def close(self) -> None:  # noqa: B027 (optional)
        """End open transactions and connections (before the fixtures drop the source's objects)."""


# ---- the model ---------------------------------------------------------------------------------------


@dataclass
class _Table:
    name: str
    columns: dict[str, str]  # name -> logical type, in order; the key first
    key: str = "id"
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)  # committed rows by key
    free: set[int] = field(default_factory=set)  # deleted keys (committed): inserts may use them again
    next_key: int = 1

    @property
    def value_columns(self) -> list[str]:
        return [c for c in self.columns if c != self.key]


@dataclass
class _Tx:
    slot: int
    remaining: int  # statements before it ends
    commits: bool  # else it rolls back
    pending: dict[str, dict[int, dict[str, Any] | None]] = field(default_factory=dict)  # table -> key -> row

    def touched(self, table: str) -> bool:
        return bool(self.pending.get(table))


class Workload:
    """A seeded generator of operations with a model of the source's committed state.

    ``supported_ddl``: the DDL kinds :meth:`round` may be given; ``open_across_windows``: leave one
    transaction open at the end of each round (it goes on in the next round).
    """

    def __init__(self, rng: random.Random, supported_ddl: Collection[str], open_across_windows: bool) -> None:
        unknown = set(supported_ddl) - set(DDL_KINDS)
        assert not unknown, f"unknown DDL kinds {unknown}"
        self.rng = rng
        self.supported_ddl = frozenset(supported_ddl)
        self.open_across_windows = open_across_windows
        self._tables: dict[str, _Table] = {}
        self.dropped: list[str] = []
        self._txs: dict[int, _Tx] = {}
        self._names = 0
        self.stats: Counter[str] = Counter()

    # ---- what exists -------------------------------------------------------------------------------

    @property
    def tables(self) -> list[str]:
        """The logical tables that exist now."""
        return sorted(self._tables)

    def rows(self, table: str) -> dict[int, dict[str, Any]]:
        """The committed rows of ``table`` by key (the model: what the source must hold)."""
        return {k: dict(v) for k, v in self._tables[table].rows.items()}

    def columns(self, table: str) -> dict[str, str]:
        return dict(self._tables[table].columns)

    def ddl_schedule(self) -> list[str]:
        """One DDL kind per round: every supported kind once, in :data:`DDL_KINDS` order."""
        return [k for k in DDL_KINDS if k in self.supported_ddl]

    # ---- the start ---------------------------------------------------------------------------------

    def setup(self, rows: int = 5) -> list[Op]:
        """Two tables with a few committed rows (what the snapshot reads)."""
        ops: list[Op] = [
            self._create("t1", [("qty", INT), ("amount", DEC), ("label", STR), ("born_on", DATE)]),
            self._create("t2", [("n", INT), ("name", STR), ("price", DEC)]),
        ]
        tx = self._begin(0, commits=True, remaining=0)
        ops.append(Begin(0))
        for table in ("t1", "t2"):
            for _ in range(rows):
                ops.append(self._insert(tx, self._tables[table]))
        ops.append(self._end(tx))
        return ops

    # ---- a round -----------------------------------------------------------------------------------

    def round(self, ddl: str | None, statements: int = 24, keep_open: bool = True) -> list[Op]:
        """``statements`` DML statements in two interleaved transactions, ``ddl`` (a kind) among them.

        Transactions end when their planned length is reached (20% roll back); at the end of the round
        every transaction ends too, except, with ``open_across_windows`` and ``keep_open``, one that
        stays open (into the next round).
        """
        assert ddl is None or ddl in self.supported_ddl, ddl
        ops: list[Op] = []
        ddl_at = self.rng.randrange(statements // 3, 2 * statements // 3) if ddl else -1
        for i in range(statements):
            if i == ddl_at:
                assert ddl is not None
                ops += self._ddl(ddl)
            ops += self._statement(self.rng.randrange(2))
        keep = None
        if self.open_across_windows and keep_open:
            keep = next((s for s in sorted(self._txs) if any(self._txs[s].pending.values())), None)
            if keep is None:  # open one, so that a transaction is always cut by the window
                keep = self.rng.randrange(2)
                tx = self._begin(keep, commits=self.rng.random() > 0.2, remaining=self.rng.randint(2, 5))
                ops.append(Begin(keep))
                ops += self._dml(tx)
            self.stats["open_across_window"] += 1
        for slot in sorted(self._txs):
            if slot != keep:
                ops.append(self._end(self._txs[slot]))
        return ops

    def _statement(self, slot: int) -> list[Op]:
        ops: list[Op] = []
        tx = self._txs.get(slot)
        if tx is None:
            tx = self._begin(slot, commits=self.rng.random() > 0.2, remaining=self.rng.randint(1, 6))
            ops.append(Begin(slot))
        other = self._txs.get(1 - slot)
        if other is not None and any(other.pending.values()):
            self.stats["interleaved"] += 1
        ops += self._dml(tx)
        tx.remaining -= 1
        if tx.remaining <= 0:
            ops.append(self._end(tx))
        return ops

    # ---- transactions --------------------------------------------------------------------------------

    def _begin(self, slot: int, commits: bool, remaining: int) -> _Tx:
        assert slot not in self._txs
        tx = self._txs[slot] = _Tx(slot, remaining, commits)
        return tx

    def _end(self, tx: _Tx) -> Op:
        del self._txs[tx.slot]
        if not tx.commits:
            self.stats["rollback"] += 1
            return Rollback(tx.slot)
        for name, changes in tx.pending.items():
            table = self._tables[name]  # a table an open transaction holds is never dropped
            for key, row in changes.items():
                if row is None:
                    if table.rows.pop(key, None) is not None:
                        table.free.add(key)
                else:
                    table.rows[key] = row
                    table.free.discard(key)
        self.stats["commit"] += 1
        return Commit(tx.slot)

    def _view(self, tx: _Tx, table: _Table) -> dict[int, dict[str, Any]]:
        """The rows ``tx`` sees: the committed ones with its own changes."""
        rows = dict(table.rows)
        for key, row in tx.pending.get(table.name, {}).items():
            if row is None:
                rows.pop(key, None)
            else:
                rows[key] = row
        return rows

    def _held_by_others(self, tx: _Tx, table: _Table) -> set[int]:
        held: set[int] = set()
        for other in self._txs.values():
            if other is not tx:
                held |= set(other.pending.get(table.name, {}))
        return held

    # ---- DML -------------------------------------------------------------------------------------------

    def _dml(self, tx: _Tx) -> list[Op]:
        table = self._tables[self.rng.choice(sorted(self._tables))]
        view = self._view(tx, table)
        mine = [k for k in sorted(view) if k not in self._held_by_others(tx, table)]
        r = self.rng.random()
        if r < 0.35 or not mine:
            return [self._insert(tx, table)]
        key = self.rng.choice(mine)
        if r < 0.65:
            return [self._update(tx, table, key)]
        if r < 0.75:
            return [self._update_key(tx, table, key)]
        if r < 0.88:
            return [self._delete(tx, table, key)]
        # delete and insert the same key again, in one transaction
        self.stats["reinsert"] += 1
        return [self._delete(tx, table, key), self._insert(tx, table, key)]

    def _set(self, tx: _Tx, table: _Table, key: int, row: dict[str, Any] | None) -> None:
        tx.pending.setdefault(table.name, {})[key] = row

    def _insert(self, tx: _Tx, table: _Table, key: int | None = None) -> Insert:
        if key is None:
            reusable = sorted(table.free - set(self._view(tx, table)) - self._held_by_others(tx, table))
            if reusable and self.rng.random() < 0.3:
                key = self.rng.choice(reusable)
                self.stats["insert_reused_key"] += 1
            else:
                key = table.next_key
                table.next_key += 1
        row = {c: key if c == table.key else self.value(t) for c, t in table.columns.items()}
        self._set(tx, table, key, row)
        self.stats["insert"] += 1
        return Insert(tx.slot, table.name, dict(row))

    def _update(self, tx: _Tx, table: _Table, key: int) -> Update:
        names = table.value_columns
        chosen = sorted(self.rng.sample(names, self.rng.randint(1, len(names))), key=names.index)
        changes = {c: self.value(table.columns[c]) for c in chosen}
        self._set(tx, table, key, {**self._view(tx, table)[key], **changes})
        self.stats["update"] += 1
        for c in chosen:
            self.stats[f"update {table.columns[c]}"] += 1
        return Update(tx.slot, table.name, {table.key: key}, changes)

    def _update_key(self, tx: _Tx, table: _Table, key: int) -> UpdateKey:
        new = table.next_key
        table.next_key += 1
        row = self._view(tx, table)[key]
        self._set(tx, table, key, None)
        self._set(tx, table, new, {**row, table.key: new})
        self.stats["update_key"] += 1
        return UpdateKey(tx.slot, table.name, {table.key: key}, {table.key: new})

    def _delete(self, tx: _Tx, table: _Table, key: int) -> Delete:
        self._set(tx, table, key, None)
        self.stats["delete"] += 1
        return Delete(tx.slot, table.name, {table.key: key})

    # ---- values ------------------------------------------------------------------------------------------

    _ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,'é"

    def value(self, logical_type: str, nullable: bool = True) -> Any:
        """A random value of the type: Python int, Decimal (2 places), str or datetime.date; None (NULL)
        one time in ten when ``nullable``."""
        rng = self.rng
        if nullable and rng.random() < 0.1:
            return None
        if logical_type == INT:
            return rng.randint(-10**6, 10**6)
        if logical_type == BIGINT:  # beyond 32 bits: a lake that kept INT cannot hold them
            return rng.choice([-1, 1]) * rng.randint(2**31, 10**15)
        if logical_type == DEC:
            return (Decimal(rng.randint(-(10**12) + 1, 10**12 - 1)) / 100).quantize(Decimal("0.01"))
        if logical_type in STRING_LENGTH:
            limit = STRING_LENGTH[logical_type]
            # up to the full width (past the narrow one once widened), at least one non-blank character
            size = rng.randint(1, limit) if rng.random() < 0.5 else rng.randint(1, 8)
            text = "".join(rng.choice(self._ALPHABET) for _ in range(size - 1))
            return rng.choice("xyz") + text
        if logical_type == DATE:
            return dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 20_000))
        raise ValueError(f"no values for {logical_type!r}")

    # ---- DDL ---------------------------------------------------------------------------------------------

    def _name(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}{self._names}"

    def _create(self, name: str, columns: list[tuple[str, str]]) -> Create:
        self._tables[name] = _Table(name, {"id": KEY, **dict(columns)})
        self.stats[Create.kind] += 1
        return Create(name, (("id", KEY), *columns), ("id",))

    def _free_tables(self) -> list[_Table]:
        """Tables no open transaction holds (a DDL on one would wait for it)."""
        return [t for n, t in sorted(self._tables.items()) if not any(tx.touched(n) for tx in self._txs.values())]

    def _ddl(self, kind: str) -> list[Op]:
        if kind == Create.kind:
            columns = [(self._name("c"), self.rng.choice(ADDABLE)) for _ in range(self.rng.randint(2, 3))]
            return [self._create(self._name("t"), columns)]
        ops: list[Op] = []
        candidates = [t for t in self._free_tables() if self._applies(kind, t)]
        if not candidates:
            for slot in sorted(self._txs):  # end the transactions that hold the tables
                ops.append(self._end(self._txs[slot]))
            candidates = [t for t in self._free_tables() if self._applies(kind, t)]
        if not candidates:
            raise AssertionError(f"the workload has no table to apply {kind} to: {self._tables}")
        if kind in (AddColumn.kind, DropColumn.kind, RenameColumn.kind, WidenColumn.kind):
            # the table with the most rows: rows no later change rewrites show what the DDL did to them
            table = max(candidates, key=lambda t: (len(t.rows), self.rng.random()))
        else:
            table = self.rng.choice(candidates)
        self.stats[kind] += 1
        if kind == AddColumn.kind:
            column, logical_type = self._name("c"), self.rng.choice(ADDABLE)
            default = self.value(logical_type, nullable=False)
            table.columns[column] = logical_type
            for row in table.rows.values():
                row[column] = default
            ops.append(AddColumn(table.name, column, logical_type, default))
        elif kind == DropColumn.kind:
            column = self.rng.choice(table.value_columns)
            del table.columns[column]
            for row in table.rows.values():
                del row[column]
            ops.append(DropColumn(table.name, column))
        elif kind == RenameColumn.kind:
            column, new_name = self.rng.choice(table.value_columns), self._name("c")
            table.columns = {new_name if c == column else c: t for c, t in table.columns.items()}
            table.rows = {k: {new_name if c == column else c: v for c, v in row.items()}
                          for k, row in table.rows.items()}
            ops.append(RenameColumn(table.name, column, new_name))
        elif kind == WidenColumn.kind:
            # an integer if there is one: its lake type changes too (a string's stays STRING)
            widenable = [c for c in table.value_columns if table.columns[c] in WIDENINGS]
            column = self.rng.choice([c for c in widenable if table.columns[c] == INT] or widenable)
            old = table.columns[column]
            table.columns[column] = WIDENINGS[old]
            ops.append(WidenColumn(table.name, column, old, WIDENINGS[old]))
        elif kind == Truncate.kind:
            table.free |= set(table.rows)
            table.rows.clear()
            ops.append(Truncate(table.name))
        elif kind == DropTable.kind:
            del self._tables[table.name]
            self.dropped.append(table.name)
            ops.append(DropTable(table.name))
        else:
            raise ValueError(f"unknown DDL kind {kind!r}")
        return ops

    def _applies(self, kind: str, table: _Table) -> bool:
        if kind in (DropColumn.kind, RenameColumn.kind):
            return len(table.value_columns) >= (2 if kind == DropColumn.kind else 1)
        if kind == WidenColumn.kind:
            return any(table.columns[c] in WIDENINGS for c in table.value_columns)
        if kind == DropTable.kind:
            return len(self._tables) >= 3  # two tables stay
        return True
