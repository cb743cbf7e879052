"""The random workload generator: typed tables, random values and interleaved transactions, per seed."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cdclake.testing.logminer_sim.database import OracleDatabase, SimulatedTransaction, TableDef
from cdclake.testing.logminer_sim.errors import RowLockedError
from cdclake.testing.logminer_sim.values import OracleType, _float32, _fmt_date, store_value

# ---- workload -------------------------------------------------------------------------------------------

_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.-_"
_SPICY = ["'", "''", "||", "\\", '"', "%", "\n", "\t"]
_UNICODE = ["é", "ß", "ü", "ñ", "Ω", "日本", "中文", "😀", "€", "ø", "Ä"]
_OFFSETS = ["+00:00", "+02:00", "-05:30", "+05:45", "-08:00", "+14:00"]


def _rand_text(rng: random.Random, n: int, unicode: bool) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        r = rng.random()
        if r < 0.08:
            piece = rng.choice(_SPICY)
        elif unicode and r < 0.3:
            piece = rng.choice(_UNICODE)
        else:
            piece = "".join(rng.choices(_ASCII, k=rng.randint(1, 12)))
        out.append(piece)
        size += len(piece)
    text = "".join(out)[:n]
    return text.strip("\n") or "x"


def random_value(rng: random.Random, t: OracleType, *, lob_long: bool = False) -> Any:
    """A random value valid for the type (quotes, ``||``, backslashes, non-ASCII, long strings...)."""
    k = t.kind
    if k == "NUMBER":
        if t.precision is not None and t.scale is not None:
            digits = min(t.precision, 15)
            n = rng.randint(-(10 ** digits - 1), 10 ** digits - 1)
            if rng.random() < 0.2:
                n = rng.randint(-99, 99)
            return Decimal(n).scaleb(-t.scale) if t.scale > 0 else n * 10 ** (-t.scale)
        return rng.choice([rng.randint(-10**20, 10**20), Decimal("0.000123"), Decimal("-12.5"), Decimal("0.5"),
                           Decimal(f"{rng.randint(0, 10**8)}.{rng.randint(0, 10**12):012d}"), 0, 10**30])
    if k == "FLOAT":
        return Decimal(f"{rng.uniform(-1e6, 1e6):.6f}")
    if k in ("BINARY_DOUBLE", "BINARY_FLOAT"):
        v = rng.choice([rng.uniform(-1e6, 1e6), 1.5, -2.25e-10, 1e21, 0.1, 0.0, 123456.789])
        return _float32(v) if k == "BINARY_FLOAT" else v
    if k in ("VARCHAR2", "NVARCHAR2"):
        n = t.length or 30
        size = rng.randint(1, min(n, 40))
        if n >= 1000 and rng.random() < 0.05:
            size = n
        return _rand_text(rng, size, unicode=(k == "NVARCHAR2" or rng.random() < 0.2))
    if k in ("CHAR", "NCHAR"):
        return "".join(rng.choice("ABCDEFGH") for _ in range(rng.randint(1, t.length or 1)))
    if k in ("CLOB", "NCLOB"):
        size = rng.randint(1200, 5000) if lob_long else rng.randint(1, 200)
        return _rand_text(rng, size, unicode=rng.random() < 0.3)
    if k == "BLOB":
        return rng.randbytes(rng.randint(1100, 4000) if lob_long else rng.randint(1, 100))
    if k == "RAW":
        return rng.randbytes(rng.randint(1, t.length or 16))
    if k == "DATE":
        return dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
    if k in ("TIMESTAMP", "TSLTZ"):
        base = dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
        p = t.precision if t.precision is not None else 6
        if p > 6:
            return f"{_fmt_date(base)}.{rng.randint(0, 10**9 - 1):09d}"
        return base.replace(microsecond=rng.choice([0, rng.randint(0, 999_999)]))
    if k == "TSTZ":
        base = dt.datetime(2000, 1, 1) + dt.timedelta(seconds=rng.randint(0, 30 * 365 * 86400))
        return f"{_fmt_date(base)}.{rng.randint(0, 999_999):06d} {rng.choice(_OFFSETS)}"
    if k == "IYM":
        return f"{rng.choice('+-')}{rng.randint(0, 99):02d}-{rng.randint(0, 11):02d}"
    if k == "IDS":
        return (f"{rng.choice('+-')}{rng.randint(0, 99):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                f"{rng.randint(0, 59):02d}.{rng.choice([0, 500000, rng.randint(0, 999_999)]):06d}")
    return None


def create_typed_tables(db: OracleDatabase, owner: str = "APP", *, lob: bool = True) -> list[tuple[str, str]]:
    """A few tables covering the interesting Oracle types; returns their ``(owner, table)``."""
    db.create_table(owner, "ACCOUNTS", [
        ("ID", "NUMBER(10)"), ("AMOUNT", "NUMBER(12,2)"), ("RATIO", "NUMBER"), ("NAME", "VARCHAR2(100)"),
        ("LABEL", "NVARCHAR2(50)"), ("CODE", "CHAR(5)"), ("NOTE", "VARCHAR2(4000)")], ["ID"])
    db.create_table(owner, "EVENTS", [
        ("ID", "NUMBER(10)"), ("HAPPENED", "DATE"), ("TS6", "TIMESTAMP(6)"), ("TS9", "TIMESTAMP(9)"),
        ("TSTZ", "TIMESTAMP(6) WITH TIME ZONE"), ("LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("HASH", "RAW(16)"),
        ("SCORE", "BINARY_DOUBLE"), ("YM", "INTERVAL YEAR(2) TO MONTH"), ("DS", "INTERVAL DAY(2) TO SECOND(6)")],
        ["ID"])
    db.create_table(owner, "ORDER_LINES", [
        ("ORDER_ID", "NUMBER(10)"), ("LINE_NO", "NUMBER(5)"), ("QTY", "NUMBER(10)"), ("PRICE", "NUMBER(12,2)"),
        ("SKU", "VARCHAR2(30)")], ["ORDER_ID", "LINE_NO"])
    tables = [(owner, "ACCOUNTS"), (owner, "EVENTS"), (owner, "ORDER_LINES")]
    if lob:
        db.create_table(owner, "DOCS", [("ID", "NUMBER(10)"), ("TITLE", "VARCHAR2(200)"), ("BODY", "CLOB"),
                                        ("DATA", "BLOB")], ["ID"])
        tables.append((owner, "DOCS"))
    return tables


@dataclass
class WorkloadStats:
    transactions: int = 0
    committed: int = 0
    rolled_back: int = 0
    partial_rollbacks: int = 0
    statement_rollbacks: int = 0
    changes: int = 0
    pk_updates: int = 0
    reinserts: int = 0
    lob_writes: int = 0
    long_transactions: int = 0
    log_switches: int = 0
    scn_jumps: int = 0
    same_scn_commits: int = 0
    ddl: int = 0
    lock_conflicts: int = 0
    commit_scns: list[int] = field(default_factory=list)


@dataclass
class _Work:
    tx: SimulatedTransaction
    budget: int
    long: bool


class _Keys:
    """Known keys per table, sampled at random (stale entries dropped lazily)."""

    def __init__(self, db: OracleDatabase, tables: Sequence[tuple[str, str]]) -> None:
        self.keys: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self.next: dict[tuple[str, str], int] = {}
        for t in tables:
            state = db._state(*t)
            self.keys[t] = list(state.pk_index)
            ints = [k[0] for k in state.pk_index if k and isinstance(k[0], int)]
            self.next[t] = max(ints, default=0) + 1

    def pick(self, rng: random.Random, db: OracleDatabase, t: tuple[str, str],
             tx: SimulatedTransaction) -> tuple[Any, ...] | None:
        keys = self.keys[t]
        state = db._state(*t)
        for _ in range(6):
            if not keys:
                return None
            i = rng.randrange(len(keys))
            k = keys[i]
            rid = state.pk_index.get(k)
            if rid is None:
                holder = state.key_locks.get(k)
                if holder is None:
                    keys[i] = keys[-1]
                    keys.pop()
                continue
            holder = state.locks.get(rid) or state.key_locks.get(k)
            if holder is None or holder is tx:
                return k
        return None


def random_workload(
    db: OracleDatabase,
    rng: random.Random,
    tables: Sequence[tuple[str, str]],
    *,
    transactions: int = 200,
    max_open: int = 6,
    p_rollback: float = 0.1,
    p_partial_rollback: float = 0.1,
    long_txn_every: int = 50,
    lob: bool = True,
    ddl: bool = False,
    threads: Sequence[int] | None = None,
    changes_per_txn: tuple[int, int] = (1, 6),
    p_switch: float = 0.02,
    p_archive: float = 0.5,
    p_jump: float = 0.01,
    p_pk_update: float = 0.05,
    p_reinsert: float = 0.05,
    p_statement_rollback: float = 0.02,
    p_same_scn_commit: float = 0.05,
    p_ddl: float = 0.01,
    usernames: Sequence[str] = ("APP", "BATCH"),
) -> WorkloadStats:
    """Drive ``tables`` (primary keys whose first column is numeric) with interleaved transactions.

    Deterministic for a given ``rng`` state and database. Several transactions are open at once across
    ``threads`` (default: all); some roll back, some roll back to a savepoint, every
    ``long_txn_every``-th one stays open long; changes include primary-key updates, delete + re-insert of
    one key, statement-level rollbacks, LOB writes (``lob``), ``ADD COLUMN`` DDL (``ddl``); logs switch
    and get archived along the way; SCNs jump now and then; some commits share one SCN.
    """
    stats = WorkloadStats()
    thread_list = list(threads) if threads is not None else sorted(db._threads)
    keys = _Keys(db, tables)
    open_: list[_Work] = []
    started = 0
    extra_cols = 0
    while started < transactions or open_:
        if started < transactions and len(open_) < max_open and (not open_ or rng.random() < 0.35):
            tx = db.begin(thread=rng.choice(thread_list), username=rng.choice(list(usernames)))
            long = bool(long_txn_every) and started % long_txn_every == long_txn_every - 1
            budget = rng.randint(*changes_per_txn) * (6 if long else 1)
            open_.append(_Work(tx, budget, long))
            stats.transactions += 1
            stats.long_transactions += long
            started += 1
        else:
            w = rng.choice(open_)
            if w.long and rng.random() < 0.85 and (len(open_) > 1 or started < transactions):
                pass  # long transactions advance slowly
            elif w.budget > 0:
                w.budget -= 1
                _random_change(db, rng, w.tx, tables, keys, stats, lob, p_pk_update, p_reinsert,
                               p_partial_rollback, p_statement_rollback)
            else:
                ready = [o for o in open_ if o.budget <= 0 and not o.long and o is not w]
                if ready and rng.random() < p_same_scn_commit:
                    group = [w] + ready[: rng.randint(1, min(3, len(ready)))]
                    with db.hold_scn():
                        for o in group:
                            scn = o.tx.commit()
                            if scn is not None:
                                stats.commit_scns.append(scn)
                            stats.committed += 1
                            open_.remove(o)
                    stats.same_scn_commits += len(group)
                elif rng.random() < p_rollback:
                    w.tx.rollback()
                    stats.rolled_back += 1
                    open_.remove(w)
                else:
                    scn = w.tx.commit()
                    if scn is not None:
                        stats.commit_scns.append(scn)
                    stats.committed += 1
                    open_.remove(w)
        if rng.random() < p_switch:
            db.switch_log(rng.choice(thread_list))
            stats.log_switches += 1
            if rng.random() < p_archive:
                db.archive_logs()
        if rng.random() < p_jump:
            db.jump_scn(rng.randint(1_000_000, 3_000_000))
            stats.scn_jumps += 1
        if ddl and rng.random() < p_ddl:
            t = rng.choice(list(tables))
            state = db._state(*t)
            if not (state.locks or state.key_locks or state.table_locks):
                extra_cols += 1
                db.add_column(t[0], t[1], f"EXTRA_{extra_cols}", rng.choice(["VARCHAR2(20)", "NUMBER", "DATE"]))
                stats.ddl += 1
    return stats


def _new_row(rng: random.Random, defn: TableDef, keys: _Keys, t: tuple[str, str], lob: bool) -> dict[str, Any]:
    n = keys.next[t]
    keys.next[t] = n + 1
    row: dict[str, Any] = {}
    for i, c in enumerate(defn.columns):
        if c.name in defn.primary_key:
            row[c.name] = n if c.name == defn.primary_key[0] else (1 + n % 7 if c.type.kind == "NUMBER"
                                                                   else random_value(rng, c.type))
        elif (c.type.is_lob and not lob) or (rng.random() < 0.1 and i > 0):
            row[c.name] = None
        else:
            row[c.name] = random_value(rng, c.type, lob_long=lob and rng.random() < 0.3)
    return row


def _random_change(db: OracleDatabase, rng: random.Random, tx: SimulatedTransaction, tables: Sequence[tuple[str, str]],
                   keys: _Keys, stats: WorkloadStats, lob: bool, p_pk_update: float, p_reinsert: float,
                   p_partial: float, p_stmt: float) -> None:
    t = rng.choice(list(tables))
    defn = db.table(*t)
    pk = defn.primary_key

    def key_dict(k: tuple[Any, ...]) -> dict[str, Any]:
        return dict(zip(pk, k))

    def insert() -> None:
        row = _new_row(rng, defn, keys, t, lob)
        tx.insert(t[0], t[1], row)
        keys.keys[t].append(defn.key_of(store_row(defn, row)))
        stats.changes += 1

    def update() -> None:
        k = keys.pick(rng, db, t, tx)
        if k is None:
            return insert()
        cols = [c for c in defn.columns if c.name not in pk and (lob or not c.type.is_lob)]
        chosen = rng.sample(cols, k=min(len(cols), rng.randint(1, 3))) if cols else []
        tx.update(t[0], t[1], key_dict(k), {c.name: (None if rng.random() < 0.1 else random_value(
            rng, c.type, lob_long=lob and rng.random() < 0.3)) for c in chosen})
        stats.changes += 1

    try:
        r = rng.random()
        if r < p_partial:
            tx.savepoint("SP1")
            for _ in range(rng.randint(1, 3)):
                rng.choice([insert, update])()
            tx.rollback_to("SP1")
            stats.partial_rollbacks += 1
        elif r < p_partial + p_stmt:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                row = db._state(*t).rows[db._state(*t).pk_index[k]]
                tx.failed_insert(t[0], t[1], row)
                stats.statement_rollbacks += 1
        elif r < p_partial + p_stmt + p_pk_update:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                n = keys.next[t]
                keys.next[t] = n + 1
                tx.update(t[0], t[1], key_dict(k), {pk[0]: n})
                keys.keys[t].append((n,) + tuple(k[1:]))
                stats.pk_updates += 1
                stats.changes += 1
        elif r < p_partial + p_stmt + p_pk_update + p_reinsert:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                tx.delete(t[0], t[1], key_dict(k))
                row = _new_row(rng, defn, keys, t, lob)
                row.update(key_dict(k))
                tx.insert(t[0], t[1], row)
                stats.reinserts += 1
                stats.changes += 2
        elif lob and r < 0.45 and any(c.type.is_lob for c in defn.columns):
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                c = rng.choice([c for c in defn.columns if c.type.is_lob])
                tx.lob_write(t[0], t[1], key_dict(k), c.name, random_value(rng, c.type, lob_long=rng.random() < 0.6))
                stats.lob_writes += 1
                stats.changes += 1
        elif r < 0.6:
            insert()
        elif r < 0.9:
            update()
        else:
            k = keys.pick(rng, db, t, tx)
            if k is not None:
                tx.delete(t[0], t[1], key_dict(k))
                stats.changes += 1
    except RowLockedError:
        stats.lock_conflicts += 1


def store_row(defn: TableDef, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` normalised per column type (as the table stores it)."""
    return {c.name: store_value(c.type, row.get(c.name)) for c in defn.columns}
