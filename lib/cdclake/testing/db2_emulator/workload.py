"""Workloads for the emulated Db2: typed tables, and interleaved transactions over them, per seed.

:func:`create_typed_tables` makes tables with every column type the Db2 source reads (``TYPED_COLUMNS``) and
registers them with Capture; :func:`random_workload` runs transactions that interleave (several open at once),
insert, update every column, change keys, delete, delete and re-insert, and roll back.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

from cdclake.testing.db2_emulator.database import EmulatedDb2, Transaction

TYPED_COLUMNS: list[tuple[str, str, bool]] = [
    ("ID", "INTEGER", False), ("SI", "SMALLINT", True), ("BI", "BIGINT", True), ("DEC", "DECIMAL(31,8)", True),
    ("DF16", "DECFLOAT(16)", True), ("DF34", "DECFLOAT(34)", True), ("R", "REAL", True), ("DBL", "DOUBLE", True),
    ("C", "CHAR(5)", True), ("VC", "VARCHAR(60)", True), ("G", "GRAPHIC(4)", True), ("VG", "VARGRAPHIC(20)", True),
    ("CB", "CHAR(4) FOR BIT DATA", True), ("VB", "VARCHAR(16) FOR BIT DATA", True), ("BIN", "BINARY(3)", True),
    ("VBIN", "VARBINARY(10)", True), ("D", "DATE", True), ("T", "TIME", True), ("TS0", "TIMESTAMP(0)", True),
    ("TS6", "TIMESTAMP(6)", True), ("TS12", "TIMESTAMP(12)", True), ("CL", "CLOB(1M)", True),
    ("DBCL", "DBCLOB(1M)", True), ("BL", "BLOB(1M)", True), ("X", "XML", True),
]

_TEXT = ["", "a", "café", "ção", "漢字", "quote ' and \\ backslash", "x" * 60]


def value(rng: random.Random, name: str, kind: str) -> Any:
    """A random value of a TYPED_COLUMNS column (None one time in eight)."""
    if rng.random() < 0.125 and name != "ID":
        return None
    k = kind.split("(")[0].split(" ")[0]
    if k == "SMALLINT":
        return rng.randint(-32768, 32767)
    if k == "BIGINT":
        return rng.choice([-(2**63), 2**63 - 1, rng.randint(-(10**12), 10**12)])
    if k == "INTEGER":
        return rng.randint(-(2**31), 2**31 - 1)
    if k == "DECIMAL":
        return Decimal(rng.randint(-(10**30), 10**30)).scaleb(-8)
    if k == "DECFLOAT":
        digits = 16 if "16" in kind else 34
        return rng.choice(["0", "-0", "1E+2", "Infinity", "-Infinity", "NaN",
                           str(Decimal(rng.randint(-(10**digits) + 1, 10**digits - 1)).scaleb(-rng.randint(0, 20)))])
    if k == "REAL":
        return float(int(rng.uniform(-1e6, 1e6)))  # exact in 32 bits
    if k == "DOUBLE":
        return rng.uniform(-1e300, 1e300)
    if k in ("CHAR", "VARCHAR", "CLOB") and "BIT DATA" not in kind:
        text = rng.choice(_TEXT)
        return text[:5] if k == "CHAR" else text
    if k in ("GRAPHIC", "VARGRAPHIC", "DBCLOB"):
        return rng.choice(["", "ab", "漢字", "ção"])[:4]
    if "BIT DATA" in kind or k in ("BINARY", "VARBINARY", "BLOB"):
        size = {"CHAR": 4, "BINARY": 3}.get(k, rng.randint(0, 10))
        return rng.randbytes(size)
    if k == "DATE":  # not 1582-10-05..14: java.sql.Date's calendar has no such days (docs/types-db2.md)
        day = dt.date(1, 1, 1) + dt.timedelta(days=rng.randint(0, 3_652_000))
        return day if not dt.date(1582, 10, 5) <= day < dt.date(1582, 10, 15) else dt.date(1582, 10, 4)
    if k == "TIME":
        return dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    if k == "TIMESTAMP":
        base = dt.datetime(1900, 1, 1) + dt.timedelta(seconds=rng.randint(0, 4_000_000_000))
        digits = "".join(rng.choice("0123456789") for _ in range(12))
        return f"{base.isoformat(timespec='seconds')}.{digits}"
    if k == "XML":
        return f"<r n=\"{rng.randint(0, 99)}\">{rng.choice(_TEXT[:4])}</r>"
    raise ValueError(kind)


def create_typed_tables(db: EmulatedDb2, schema: str = "APP", names: tuple[str, ...] = ("TYPED", "ACCOUNTS")
                        ) -> list[tuple[str, str]]:
    """Tables with :data:`TYPED_COLUMNS`, registered with Capture (``ADDTABLE``)."""
    for name in names:
        db.create_table(schema, name, TYPED_COLUMNS, ["ID"])
        db.add_table(schema, name)
    return [(schema, n) for n in names]


def random_row(rng: random.Random, key: int) -> dict[str, Any]:
    return {name: key if name == "ID" else value(rng, name, kind) for name, kind, _ in TYPED_COLUMNS}


def random_workload(db: EmulatedDb2, rng: random.Random, tables: list[tuple[str, str]], transactions: int,
                    open_at_once: int = 3, changes: int = 4, p_rollback: float = 0.15,
                    cycle: bool = True) -> None:
    """``transactions`` transactions, ``open_at_once`` open at a time, their changes interleaved; then a Capture
    cycle (``cycle``)."""
    next_key = [max([r["ID"] for s, t in tables for r in db.rows(s, t)] + [0]) + 1]
    open_txns: list[tuple[Transaction, int]] = []
    started = 0
    while started < transactions or open_txns:
        while started < transactions and len(open_txns) < open_at_once:
            open_txns.append((db.begin(), 0))
            started += 1
        i = rng.randrange(len(open_txns))
        tx, done = open_txns[i]
        if done >= changes:
            open_txns.pop(i)
            tx.rollback() if rng.random() < p_rollback else tx.commit()
            continue
        _change(db, rng, tx, rng.choice(tables), next_key)
        open_txns[i] = (tx, done + 1)
    if cycle:
        db.capture.cycle()


def _change(db: EmulatedDb2, rng: random.Random, tx: Transaction, table: tuple[str, str], next_key: list[int]) -> None:
    schema, name = table
    free = [r["ID"] for r in db.rows(schema, name)
            if db.locks.get((schema, name, (r["ID"],)), tx.txid) == tx.txid
            and tx.current(schema, name, {"ID": r["ID"]}) is not None]
    kind = rng.random()
    if kind < 0.35 or not free:
        tx.insert(schema, name, random_row(rng, next_key[0]))
        next_key[0] += 1
    elif kind < 0.65:  # update every column but the key
        key = rng.choice(free)
        tx.update(schema, name, {"ID": key}, {k: v for k, v in random_row(rng, key).items() if k != "ID"})
    elif kind < 0.75:  # a key change
        tx.update(schema, name, {"ID": rng.choice(free)}, {"ID": next_key[0]})
        next_key[0] += 1
    elif kind < 0.85:  # delete, then the same key again
        key = rng.choice(free)
        tx.delete(schema, name, {"ID": key})
        tx.insert(schema, name, random_row(rng, key))
    else:
        tx.delete(schema, name, {"ID": rng.choice(free)})
