"""The fake database itself: tables, transactions, schema changes and the log, with no server and no Spark.

Everything that happens is an entry of an append-only log (one JSON object per line of a file, so a
``cdclake`` process started by a test, or killed by it, sees the same database): ``begin``, ``change``,
``commit``, ``rollback``, ``savepoint`` undo marks and ``ddl``. An entry's number ``n`` (from 1) is its
place in the log; the database's rows at any point are the log replayed up to there (committed work
only), which is what a snapshot read at a position gives. Nothing here knows cdclake's source interface:
:mod:`.source` decodes the log into what the engine takes.

>>> import tempfile, os
>>> db = FakeDatabase(os.path.join(tempfile.mkdtemp(), "db.log"))
>>> db.create_table("shop.t", [("id", "int", False), ("v", "text")], key=["id"])
>>> with db.transaction() as tx:
...     tx.insert("shop.t", {"id": 1, "v": "a"})
...     _ = tx.update("shop.t", {"id": 1}, {"v": "b"})
>>> db.rows("shop.t")
[{'id': 1, 'v': 'b'}]
>>> db.add_column("shop.t", "n", "decimal(6,2)", fill="1.5")
>>> db.rows("shop.t"), FakeDatabase(db.path).rows("shop.t")  # the same log, read again
([{'id': 1, 'v': 'b', 'n': '1.50'}], [{'id': 1, 'v': 'b', 'n': '1.50'}])
"""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext
from pathlib import Path
from typing import Any

from cdclake.schema import Column, TableSchema, UniqueKey

# ---- column types -------------------------------------------------------------------------------------------

# type -> Delta (Spark SQL) type; decimal(p,s) and varchar(n) are parsed
_SPARK = {"int": "INT", "bigint": "BIGINT", "text": "STRING", "double": "DOUBLE", "boolean": "BOOLEAN",
          "date": "DATE", "datetime": "TIMESTAMP_NTZ"}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_VARCHAR = re.compile(r"varchar\((\d+)\)")
_INT_RANGE = {"int": 2**31, "bigint": 2**63}
_INTEGER_TEXT = re.compile(r"\s*[+-]?\d+\s*")
Where = Mapping[str, Any] | Callable[[dict[str, Any]], bool]  # rows with these values, or for which it is true


def spark_type(type_text: str) -> str:
    """The Delta type of a fake column type.

    >>> spark_type("decimal(10,2)"), spark_type("varchar(5)"), spark_type("int")
    ('DECIMAL(10,2)', 'STRING', 'INT')
    """
    text = type_text.strip().lower()
    if m := _DECIMAL.fullmatch(text):
        return f"DECIMAL({m.group(1)},{m.group(2)})"
    if _VARCHAR.fullmatch(text):
        return "STRING"
    if text not in _SPARK:
        raise ValueError(f"the fake database has no type {type_text!r} (int, bigint, text, varchar(n), "
                         "decimal(p,s), double, boolean, date, datetime)")
    return _SPARK[text]


def canonical(type_text: str, value: Any) -> Any:
    """``value`` as the fake keeps and logs it: ints, floats, booleans, and text for text, decimals (at the
    column's scale), dates and datetimes.

    >>> canonical("decimal(6,2)", 1.5), canonical("date", dt.date(2024, 2, 3)), canonical("int", "7")
    ('1.50', '2024-02-03', 7)
    """
    if value is None:
        return None
    text = type_text.strip().lower()
    if m := _DECIMAL.fullmatch(text):
        with localcontext(Context(prec=80)):
            return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-int(m.group(2))), rounding=ROUND_HALF_UP))
    if text in _INT_RANGE:
        return int(value)
    if text == "double":
        return float(value)
    if text == "boolean":
        return bool(value)
    if text == "date":
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if text == "datetime":
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else str(value)
    return str(value)


def convert(value: Any, old: str, new: str) -> tuple[Any, bool]:
    """A stored value of type ``old`` retyped to ``new``, and whether that is what Spark's ``try_cast`` of the
    lake's value gives (else the rows must be read again: the log does not say what the retype did to them).

    >>> convert(42, "int", "text"), convert(" 0042", "text", "int"), convert("x", "text", "int")
    (('42', True), (42, True), (None, True))
    >>> convert("1.25", "decimal(6,2)", "decimal(6,1)"), convert(1.5, "double", "text")
    (('1.3', True), ('1.5', False))
    """
    if value is None:
        return None, True
    o, n = old.strip().lower(), new.strip().lower()
    if spark_type(o) == spark_type(n):
        return canonical(n, value), True
    n_decimal = _DECIMAL.fullmatch(n)
    if n in _INT_RANGE and (o in _INT_RANGE or spark_type(o) == "STRING"):
        if o not in _INT_RANGE and not _INTEGER_TEXT.fullmatch(str(value)):
            return None, True
        number = int(str(value).strip())
        return (number if -_INT_RANGE[n] <= number < _INT_RANGE[n] else None), True
    if o == "datetime" and n == "date":
        return str(value)[:10], True
    if spark_type(n) == "STRING" and (o in _INT_RANGE or _DECIMAL.fullmatch(o)):
        return str(value), True
    if n_decimal and (o in _INT_RANGE or _DECIMAL.fullmatch(o)):
        try:
            with localcontext(Context(prec=80)):
                number = Decimal(str(value)).quantize(Decimal(1).scaleb(-int(n_decimal.group(2))),
                                                      rounding=ROUND_HALF_UP)
        except InvalidOperation:
            return None, True
        fits = len(number.as_tuple().digits) <= int(n_decimal.group(1)) or number == 0
        return (str(number) if fits else None), True
    return canonical(n, str(value) if spark_type(n) == "STRING" else value), False


def column(name: str, type_text: str, nullable: bool = True, default: Any = None, *, generated: bool = False,
           toast: bool = False) -> Column:
    """A fake column: ``generated`` ones are never in the log (the database computes them on read),
    ``toast`` ones are left out of an update's images when the update does not change them."""
    attrs = {k: True for k, on in (("generated", generated), ("toast", toast)) if on}
    return Column(name, type_text.strip().lower(), spark_type(type_text), nullable,
                  None if default is None else repr(canonical(type_text, default)), attrs)


def default_of(c: Column) -> Any:
    """The value a column's default gives (its text is the value's Python literal)."""
    return None if c.default is None else ast.literal_eval(c.default)


def _column(spec: Column | Sequence[Any] | Mapping[str, Any]) -> Column:
    if isinstance(spec, Column):
        return spec
    if isinstance(spec, Mapping):
        return column(**spec)
    return column(*spec)


# ---- what a schema change does to table schemas (the store's catalog, or a source's registry) ----------------


@dataclass
class Outcome:
    """What one schema change did to a set of table schemas (those it did not know of are ``unknown``)."""

    changes: dict[str, TableSchema | None] = field(default_factory=dict)
    renamed_from: dict[str, str] = field(default_factory=dict)
    column_renames: dict[str, dict[str, str]] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    reread: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    added: dict[str, dict[str, Any]] = field(default_factory=dict)  # table -> {added column: value old rows got}


def _split(table: str) -> tuple[str, str]:
    database, _, name = table.partition(".")
    return database, name


def evolve(action: Mapping[str, Any], schemas: dict[str, TableSchema]) -> Outcome:
    """Apply ``action`` (a logged schema change) to ``schemas`` in place; what it did.

    A table the action names that ``schemas`` does not hold is one the reader does not follow: a table
    renamed from it, or made ``LIKE`` it, is ``unknown``; other actions on it change nothing.
    """
    out = Outcome()
    kind = action["action"]
    if kind == "create_table":
        table = action["table"]
        schema = _new_schema(table, action)
        schemas[table] = out.changes[table] = schema
        out.created.append(table)
    elif kind == "create_like":
        table, like = action["table"], action["like"]
        if like not in schemas:
            schemas.pop(table, None)
            out.unknown[table] = f"it was made LIKE {like}, which is not captured (its columns are unknown)"
        else:
            schemas[table] = out.changes[table] = schemas[like].renamed(*_split(table))
            out.created.append(table)
    elif kind == "drop_table":
        for table in action["tables"]:
            if schemas.pop(table, None) is not None:
                out.changes[table] = None
    elif kind == "rename_tables":
        before = set(schemas)
        origin: dict[str, str] = {}  # a name the statement moved a table to -> the table's name before it
        for old, new in action["pairs"]:  # one after the other, as RENAME TABLE a TO b, c TO a does
            moved = schemas.pop(old, None)
            source = origin.pop(old, old)
            out.unknown.pop(old, None)
            if moved is None:
                out.unknown[new] = f"it was renamed from {old}, which is not captured (its shape is unknown)"
                continue
            schemas[new] = moved.renamed(*_split(new))
            origin[new] = source
        for name in sorted(before | set(schemas) | set(out.unknown)):
            if name in out.unknown:
                continue
            if name not in schemas:
                out.changes[name] = None
            elif origin.get(name, name) != name or name not in before:
                out.changes[name] = schemas[name]
                out.renamed_from[name] = origin.get(name, name)
    elif kind == "truncate":
        if action["table"] in schemas:
            out.truncated.append(action["table"])
    elif kind == "reread":
        if action["table"] in schemas:
            out.changes[action["table"]] = schemas[action["table"]]
            out.reread[action["table"]] = action["why"]
    elif kind == "alter":
        table = action["table"]
        if table not in schemas:
            return out
        for change in action["changes"]:
            schemas[table] = _alter(schemas[table], {**change, "table": table}, out)
        out.changes[table] = schemas[table]
    else:
        table = action["table"]
        schema = schemas.get(table)
        if schema is None:
            return out
        new = _alter(schema, action, out)
        schemas[table] = out.changes[table] = new
    return out


def _new_schema(table: str, action: Mapping[str, Any]) -> TableSchema:
    database, name = _split(table)
    columns = [Column(**c) for c in action["columns"]]
    keys = [UniqueKey(k, tuple(cols)) for k, cols in action.get("unique_keys") or []]
    return TableSchema(database, name, columns, list(action.get("key") or []), keys)


def _alter(schema: TableSchema, action: Mapping[str, Any], out: Outcome) -> TableSchema:
    kind, table = action["action"], action["table"]
    columns = list(schema.columns)
    names = [c.name.lower() for c in columns]
    if kind == "add_column":
        new = Column(**action["column"])
        at = action.get("at")
        index = len(columns) if at is None else 0 if at == "first" else names.index(str(at).lower()) + 1
        columns.insert(index, new)
        out.added.setdefault(table, {})[new.name] = action.get("fill")
        if action.get("per_row"):
            out.reread[table] = f"the value rows older than {new.name} got differs per row"
        return schema.with_columns(columns)
    if kind == "set_key":
        key = list(action["key"])
        uniques = [UniqueKey(k, tuple(cols)) for k, cols in action["unique_keys"]] \
            if action.get("unique_keys") is not None else None
        return schema.with_columns(columns, key, uniques)
    index = names.index(action["column"].lower())
    old = columns[index]
    if kind == "drop_column":
        del columns[index]
        key = [k for k in schema.primary_key if k.lower() != old.name.lower()]
        return schema.with_columns(columns, key)
    if kind == "rename_column":
        columns[index] = replace(old, name=action["to"])
        renames = out.column_renames.setdefault(table, {})
        origin = next((k for k, v in renames.items() if v == old.name), old.name)  # renamed twice: from the first
        renames[origin] = action["to"]
        key = [action["to"] if k.lower() == old.name.lower() else k for k in schema.primary_key]
        uniques = [replace(u, columns=tuple(action["to"] if c.lower() == old.name.lower() else c for c in u.columns))
                   for u in schema.unique_keys]
        return schema.with_columns(columns, key, uniques)
    if kind == "retype_column":
        new_type = action["type"]
        nullable = old.nullable if action.get("nullable") is None else action["nullable"]
        default = convert(default_of(old), old.source_type, new_type)[0]  # as the server converts it
        columns[index] = replace(old, source_type=new_type, spark_type=spark_type(new_type), nullable=nullable,
                                 default=None if default is None else repr(default))
        if not action.get("exact", True):
            out.reread[table] = f"{old.name} {old.source_type} -> {new_type} changed values the log does not carry"
        return schema.with_columns(columns)
    if kind == "move_column":
        del columns[index]
        at = action["at"]
        columns.insert(0 if at == "first" else [c.name.lower() for c in columns].index(at.lower()) + 1, old)
        return schema.with_columns(columns)
    raise ValueError(f"unknown schema change {kind!r}")


# ---- the database ----------------------------------------------------------------------------------------------


class FakeError(Exception):
    """What the fake database refuses (a duplicate key, a write another open transaction holds...)."""


@dataclass
class _Table:
    schema: TableSchema
    rows: dict[int, dict[str, Any]]  # row id -> values (insertion order)


class FakeDatabase:
    """A database in memory whose log is a file (``path``): the one a fake source's pipeline names.

    Tables are named ``database.table``; columns are :func:`column` objects, ``(name, type[, nullable
    [, default]])`` tuples or keyword dicts. Writes go through transactions (:meth:`begin`,
    :meth:`transaction`, or the one-statement helpers :meth:`insert`, :meth:`update`, :meth:`delete`);
    a table whose rows an open transaction changed takes no schema change until it ends. Schema changes
    are the methods named after them; each is one log entry, applied atomically.
    """

    def __init__(self, path: str | os.PathLike[str], start: dt.datetime = dt.datetime(2030, 1, 1)) -> None:
        self.path = Path(path)
        self.entries: list[dict[str, Any]] = []
        self._offset = 0
        self._now = start
        self._tables: dict[str, _Table] = {}  # committed work and that of open transactions
        self._open: dict[str, dict[str, Any]] = {}  # txid -> {"rows": {(table, row id)}, "tables": set}
        self._next_row = 1
        self._next_tx = 1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.refresh()

    # ---- the log -------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read what other processes (or other objects on the same file) logged since."""
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        if not end:
            return
        self._offset += end
        for line in data[:end].splitlines():
            entry = json.loads(line)
            self.entries.append(entry)
            self._play(entry)

    def _log(self, entry: dict[str, Any]) -> dict[str, Any]:
        self.refresh()
        self._now += dt.timedelta(seconds=1)
        entry = {"n": len(self.entries) + 1, "ts": self._now.isoformat(sep=" "), **entry}
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        with self.path.open("ab") as f:
            f.write(line)
        self._offset += len(line)
        self.entries.append(entry)
        self._play(entry)
        return entry

    @property
    def end(self) -> int:
        """The number of the last log entry (0: none)."""
        self.refresh()
        return len(self.entries)

    def advance(self, seconds: float) -> None:
        """Move the database's clock (every entry also moves it one second)."""
        self._now += dt.timedelta(seconds=seconds)

    # ---- replay ----------------------------------------------------------------------------------------------

    def _play(self, entry: dict[str, Any]) -> None:
        """Keep the in-memory state (committed and open work) up to date with one new entry."""
        self._now = max(self._now, dt.datetime.fromisoformat(entry["ts"]))
        op = entry["op"]
        if op == "begin":
            self._open[entry["tx"]] = {"rows": set(), "tables": set()}
            self._next_tx = max(self._next_tx, int(entry["tx"].rsplit("-", 1)[1]) + 1)
        elif op == "change":
            _apply_change(self._tables, entry)
            self._next_row = max(self._next_row, entry["row"] + 1)
            state = self._open[entry["tx"]]
            state["rows"].add((entry["table"], entry["row"]))
            state["tables"].add(entry["table"])
        elif op == "undo":
            self._tables = self.state(None)  # rebuilt without the undone changes
        elif op == "commit":
            self._open.pop(entry["tx"], None)
        elif op == "rollback":
            self._open.pop(entry["tx"], None)
            self._tables = self.state(None)
        elif op == "ddl":
            _apply_ddl(self._tables, entry)

    def state(self, at: int | None) -> dict[str, _Table]:
        """The tables as of log entry ``at`` (committed work only), or now (``None``: open transactions' work
        too, rolled-back and undone work never)."""
        ends = self._ends()
        undone = self._undone()
        tables: dict[str, _Table] = {}
        for entry in self.entries[:at] if at is not None else self.entries:
            op = entry["op"]
            if op == "ddl":
                _apply_ddl(tables, entry)
            elif op == "change" and entry["n"] not in undone:
                end = ends.get(entry["tx"])
                if at is None:
                    if end is None or end[0] == "commit":
                        _apply_change(tables, entry)
                elif end is not None and end[0] == "commit" and end[1] <= at:
                    _apply_change(tables, entry)
        return tables

    def _ends(self) -> dict[str, tuple[str, int]]:
        return {e["tx"]: (e["op"], e["n"]) for e in self.entries if e["op"] in ("commit", "rollback")}

    def _undone(self) -> set[int]:
        return {n for e in self.entries if e["op"] == "undo" for n in e["changes"]}

    # ---- reading ---------------------------------------------------------------------------------------------

    def tables(self) -> list[str]:
        self.refresh()
        return sorted(self._tables)

    def schema(self, table: str, at: int | None = None) -> TableSchema:
        self.refresh()
        return (self._tables if at is None else self.state(at))[table].schema

    def schemas(self, at: int | None = None) -> dict[str, TableSchema]:
        self.refresh()
        return {t: s.schema for t, s in (self._tables if at is None else self.state(at)).items()}

    def rows(self, table: str, at: int | None = None) -> list[dict[str, Any]]:
        """The table's committed rows (as of log entry ``at``), as the fake keeps them (:func:`canonical`)."""
        self.refresh()
        if at is None:
            at = len(self.entries)
        return [dict(r) for r in self.state(at)[table].rows.values()]

    def open_transactions(self) -> dict[str, int]:
        """Open transaction -> the number of its first entry."""
        self.refresh()
        firsts: dict[str, int] = {}
        for e in self.entries:
            if e["op"] == "begin" and e["tx"] in self._open:
                firsts[e["tx"]] = e["n"]
        return firsts

    # ---- writing ---------------------------------------------------------------------------------------------

    def begin(self) -> Transaction:
        self.refresh()
        txid = f"tx-{self._next_tx}"
        self._next_tx += 1
        self._log({"op": "begin", "tx": txid})
        return Transaction(self, txid)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """A transaction committed at the end of the block (rolled back if it raises)."""
        tx = self.begin()
        try:
            yield tx
        except BaseException:
            tx.rollback()
            raise
        tx.commit()

    def insert(self, table: str, *rows: Mapping[str, Any]) -> None:
        with self.transaction() as tx:
            for row in rows:
                tx.insert(table, row)

    def update(self, table: str, where: Where, values: Mapping[str, Any], limit: int | None = None) -> int:
        with self.transaction() as tx:
            return tx.update(table, where, values, limit)

    def delete(self, table: str, where: Where, limit: int | None = None) -> int:
        with self.transaction() as tx:
            return tx.delete(table, where, limit)

    # ---- schema changes ----------------------------------------------------------------------------------

    def _ddl(self, statement: str, action: dict[str, Any], names: Sequence[str], **more: Any) -> None:
        self.refresh()
        for tx, state in self._open.items():
            if set(names) & state["tables"]:
                raise FakeError(f"{statement}: transaction {tx} holds rows of {sorted(set(names) & state['tables'])}")
        self._log({"op": "ddl", "statement": statement, "action": action, **more})

    def _known(self, table: str) -> _Table:
        self.refresh()
        if table not in self._tables:
            raise FakeError(f"no table {table}")
        return self._tables[table]

    def create_table(self, table: str, columns: Sequence[Any], key: Sequence[str] = (),
                     unique_keys: Mapping[str, Sequence[str]] | None = None) -> None:
        if table in self.tables():
            raise FakeError(f"table {table} exists")
        cols = [_column(c) for c in columns]
        action = {"action": "create_table", "table": table, "columns": [_column_dict(c) for c in cols],
                  "key": list(key), "unique_keys": [[k, list(v)] for k, v in (unique_keys or {}).items()]}
        self._ddl(f"CREATE TABLE {table}", action, [table])

    def create_like(self, table: str, like: str) -> None:
        self._known(like)
        self._ddl(f"CREATE TABLE {table} LIKE {like}", {"action": "create_like", "table": table, "like": like},
                  [table])

    def drop_table(self, *tables: str) -> None:
        for t in tables:
            self._known(t)
        self._ddl(f"DROP TABLE {', '.join(tables)}", {"action": "drop_table", "tables": list(tables)}, tables)

    def rename_tables(self, *pairs: tuple[str, str]) -> None:
        """``RENAME TABLE a TO b, c TO d``: one statement, renamed one after the other (swaps through a spare
        name work); a name renamed to must be free at its turn."""
        names = {t for t in self.tables()}
        for old, new in pairs:
            if old not in names or new in names:
                raise FakeError(f"cannot rename {old} to {new}")
            names.remove(old)
            names.add(new)
        self._ddl("RENAME TABLE " + ", ".join(f"{o} TO {n}" for o, n in pairs),
                  {"action": "rename_tables", "pairs": [list(p) for p in pairs]}, [n for p in pairs for n in p])

    def truncate(self, table: str) -> None:
        self._known(table)
        self._ddl(f"TRUNCATE TABLE {table}", {"action": "truncate", "table": table}, [table])

    @contextlib.contextmanager
    def alter(self, table: str) -> Iterator[Alter]:
        """One ``ALTER TABLE`` statement of several changes (each method of :class:`Alter`), logged at the end of the
        block: the source sees them as one schema change."""
        statement = Alter(self, table)
        yield statement
        if statement.actions:
            self._ddl(f"ALTER TABLE {table} " + ", ".join(statement.clauses),
                      {"action": "alter", "table": table, "changes": statement.actions}, [table])

    def add_column(self, table: str, name: str, type_text: str, nullable: bool = True, default: Any = None, *,
                   fill: Any = None, per_row: Any = None, at: str | None = None, generated: bool = False,
                   toast: bool = False) -> None:
        """``ADD COLUMN`` alone (:meth:`Alter.add_column`)."""
        with self.alter(table) as a:
            a.add_column(name, type_text, nullable, default, fill=fill, per_row=per_row, at=at, generated=generated,
                         toast=toast)

    def drop_column(self, table: str, name: str) -> None:
        with self.alter(table) as a:
            a.drop_column(name)

    def rename_column(self, table: str, name: str, to: str) -> None:
        with self.alter(table) as a:
            a.rename_column(name, to)

    def retype_column(self, table: str, name: str, type_text: str, nullable: bool | None = None) -> None:
        """``MODIFY`` alone (:meth:`Alter.retype_column`)."""
        with self.alter(table) as a:
            a.retype_column(name, type_text, nullable)

    def move_column(self, table: str, name: str, at: str) -> None:
        with self.alter(table) as a:
            a.move_column(name, at)

    def set_key(self, table: str, key: Sequence[str], unique_keys: Mapping[str, Sequence[str]] | None = None) -> None:
        with self.alter(table) as a:
            a.set_key(key, unique_keys)

    def purge(self, through: int) -> None:
        """The log up to entry ``through`` is gone (a position that needs it is lost)."""
        self._log({"op": "purge", "through": through})

    def change_rows_silently(self, table: str, why: str, where: Mapping[str, Any] | None = None,
                             values: Mapping[str, Any] | None = None, delete: bool = False) -> None:
        """A statement that changes rows without row events (``TRUNCATE PARTITION``...): the rows matching
        ``where`` are deleted or given ``values``; the log says only that the table must be read again."""
        t = self._known(table)
        rows = {}
        for rid, row in t.rows.items():
            if _matches(row, where or {}):
                if delete:
                    continue
                row = {**row, **{k: canonical(t.schema.column(k).source_type, v) for k, v in (values or {}).items()}}
            rows[str(rid)] = row
        self._ddl(f"/* rows of {table} changed: {why} */", {"action": "reread", "table": table, "why": why},
                  [table], rows=rows)


def _column_dict(c: Column) -> dict[str, Any]:
    return {"name": c.name, "source_type": c.source_type, "spark_type": c.spark_type, "nullable": c.nullable,
            "default": c.default, "attrs": dict(c.attrs)}


def _matches(row: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    return all(row.get(k) == v for k, v in where.items())


def _apply_change(tables: dict[str, _Table], entry: Mapping[str, Any]) -> None:
    rows = tables[entry["table"]].rows
    if entry["kind"] == "d":
        rows.pop(entry["row"], None)
    else:
        rows[entry["row"]] = dict(entry["after"])


def _apply_ddl(tables: dict[str, _Table], entry: Mapping[str, Any]) -> None:
    action = entry["action"]
    if action["action"] == "alter":
        for change in action["changes"]:
            _apply_ddl(tables, {**entry, "action": {**change, "table": action["table"]}})
        return
    schemas = {t: s.schema for t, s in tables.items()}
    out = evolve(action, schemas)
    kind = action["action"]
    if kind == "rename_tables":
        for old, new in action["pairs"]:
            tables[new] = tables.pop(old)
    elif kind == "create_like" or kind == "create_table":
        tables[action["table"]] = _Table(schemas[action["table"]], {})
    elif kind == "drop_table":
        for t in action["tables"]:
            tables.pop(t, None)
    elif kind == "truncate":
        tables[action["table"]].rows.clear()
    elif kind == "reread":
        tables[action["table"]].rows = {int(k): v for k, v in entry["rows"].items()}
    else:
        table = tables[action["table"]]
        if kind == "add_column":
            name = action["column"]["name"]
            fill = out.added[action["table"]][name]
            per_row = action.get("per_row")
            for rid, row in table.rows.items():
                row[name] = per_row[str(rid)] if per_row else fill
        elif kind == "drop_column":
            for row in table.rows.values():
                row.pop(action["column"], None)
        elif kind == "rename_column":
            for rid, row in list(table.rows.items()):
                table.rows[rid] = {action["to"] if k == action["column"] else k: v for k, v in row.items()}
        elif kind == "retype_column":
            old = table.schema.column(action["column"]).source_type
            for row in table.rows.values():
                row[action["column"]] = convert(row.get(action["column"]), old, action["type"])[0]
        order = [c.name for c in schemas[action["table"]].columns]
        table.rows = {rid: {c: row.get(c) for c in order} for rid, row in table.rows.items()}
    for t, s in schemas.items():
        if t in tables:
            tables[t].schema = s


class Alter:
    """The changes of one ``ALTER TABLE`` statement (:meth:`FakeDatabase.alter`), each checked against the table as
    the statement's earlier changes left it."""

    def __init__(self, db: FakeDatabase, table: str) -> None:
        self.table = table
        self.actions: list[dict[str, Any]] = []
        self.clauses: list[str] = []
        known = db._known(table)  # noqa: SLF001 - the database's own
        self._scratch = {table: _Table(known.schema, {rid: dict(r) for rid, r in known.rows.items()})}

    @property
    def _now(self) -> _Table:
        return self._scratch[self.table]

    def _add(self, clause: str, action: dict[str, Any]) -> None:
        _apply_ddl(self._scratch, {"action": {**action, "table": self.table}})
        self.actions.append(action)
        self.clauses.append(clause)

    def add_column(self, name: str, type_text: str, nullable: bool = True, default: Any = None, *, fill: Any = None,
                   per_row: Any = None, at: str | None = None, generated: bool = False, toast: bool = False) -> None:
        """``ADD COLUMN``: rows existing before it get ``fill`` (default: the default), or ``per_row(row)`` each (a
        value the log does not carry: the table's rows are read again); ``at``: ``"first"`` or the column it goes
        after (default: last); ``generated``: never logged; ``toast``: left out of updates that leave it alone."""
        if self._now.schema.has_column(name):
            raise FakeError(f"{self.table} has a column {name}")
        col = column(name, type_text, nullable, default, generated=generated, toast=toast)
        values = None
        if per_row is not None:
            values = {str(rid): canonical(type_text, per_row(dict(row))) for rid, row in self._now.rows.items()}
        where = "" if at is None else " FIRST" if at == "first" else f" AFTER {at}"
        self._add(f"ADD COLUMN {name} {type_text}{where}",
                  {"action": "add_column", "column": _column_dict(col), "at": at,
                   "fill": canonical(type_text, default if fill is None else fill), "per_row": values})

    def drop_column(self, name: str) -> None:
        self._now.schema.column(name)
        self._add(f"DROP COLUMN {name}", {"action": "drop_column", "column": name})

    def rename_column(self, name: str, to: str) -> None:
        self._now.schema.column(name)
        self._add(f"RENAME COLUMN {name} TO {to}", {"action": "rename_column", "column": name, "to": to})

    def retype_column(self, name: str, type_text: str, nullable: bool | None = None) -> None:
        """``MODIFY``: existing values converted (:func:`convert`); when that is not what the lake's cast gives, the
        change says the table's rows must be read again. ``nullable``: NULL / NOT NULL."""
        old = self._now.schema.column(name)
        exact = all(convert(r.get(old.name), old.source_type, type_text)[1] for r in self._now.rows.values())
        self._add(f"MODIFY {name} {type_text}", {"action": "retype_column", "column": name,
                                                  "type": type_text.strip().lower(), "exact": exact,
                                                  "nullable": nullable})

    def move_column(self, name: str, at: str) -> None:
        """``MODIFY c ... FIRST`` / ``AFTER d``: the column moves (``at``: ``"first"`` or the column it follows)."""
        self._now.schema.column(name)
        self._add(f"MODIFY {name} {'FIRST' if at == 'first' else 'AFTER ' + at}",
                  {"action": "move_column", "column": name, "at": at})

    def set_key(self, key: Sequence[str], unique_keys: Mapping[str, Sequence[str]] | None = None) -> None:
        """The primary key (``[]``: none) and, if given, the unique keys."""
        for k in key:
            self._now.schema.column(k)
        self._add(f"PRIMARY KEY ({', '.join(key)})", {
            "action": "set_key", "key": list(key),
            "unique_keys": None if unique_keys is None else [[k, list(v)] for k, v in unique_keys.items()]})


class Transaction:
    """One transaction of a :class:`FakeDatabase` (its changes are in the log as they are made)."""

    def __init__(self, db: FakeDatabase, txid: str) -> None:
        self.db, self.txid = db, txid
        self.ended = False

    def _table(self, table: str) -> _Table:
        if self.ended:
            raise FakeError(f"transaction {self.txid} has ended")
        return self.db._known(table)  # noqa: SLF001 - the transaction is the database's own

    def _change(self, table: str, kind: str, row_id: int, before: dict[str, Any] | None,
                after: dict[str, Any] | None) -> None:
        for tx, state in self.db._open.items():  # noqa: SLF001
            if tx != self.txid and (table, row_id) in state["rows"]:
                raise FakeError(f"row {row_id} of {table} is held by transaction {tx}")
        self.db._log({"op": "change", "tx": self.txid, "table": table, "kind": kind,  # noqa: SLF001
                      "row": row_id, "before": before, "after": after})

    def insert(self, table: str, values: Mapping[str, Any]) -> None:
        t = self._table(table)
        unknown = [k for k in values if not t.schema.has_column(k)]
        if unknown:
            raise FakeError(f"{table} has no column(s) {unknown}")
        row = {}
        for c in t.schema.columns:
            given = next((v for k, v in values.items() if k.lower() == c.name.lower()), default_of(c))
            value = canonical(c.source_type, given)
            if value is None and not c.nullable:
                raise FakeError(f"{table}.{c.name} cannot be null")
            row[c.name] = value
        self._check_keys(t, row, None)
        row_id = self.db._next_row  # noqa: SLF001
        self._change(table, "c", row_id, None, row)

    def _check_keys(self, t: _Table, row: dict[str, Any], skip: int | None) -> None:
        keys = [tuple(t.schema.primary_key)] if t.schema.primary_key else []
        keys += [u.columns for u in t.schema.unique_keys]
        for key in keys:
            value = tuple(row.get(t.schema.column(k).name) for k in key)
            if None in value:
                continue
            for rid, other in t.rows.items():
                if rid != skip and tuple(other.get(t.schema.column(k).name) for k in key) == value:
                    raise FakeError(f"duplicate key {dict(zip(key, value))} in {t.schema.qualified_name}")

    def _matching(self, t: _Table, where: Mapping[str, Any] | Callable[[dict[str, Any]], bool],
                  limit: int | None) -> list[int]:
        if callable(where):
            found = [rid for rid, row in t.rows.items() if where(dict(row))]
            return found[:limit] if limit is not None else found
        values = {t.schema.column(k).name: canonical(t.schema.column(k).source_type, v) for k, v in where.items()}
        found = [rid for rid, row in t.rows.items() if _matches(row, values)]
        return found[:limit] if limit is not None else found

    def update(self, table: str, where: Where, values: Mapping[str, Any], limit: int | None = None) -> int:
        """Set ``values`` on the rows matching ``where`` (column values, or a test of a row; at most ``limit``):
        each row is one change. A value may be a function of the row before."""
        t = self._table(table)
        ids = self._matching(t, where, limit)
        for rid in ids:
            before = dict(t.rows[rid])
            after = dict(before)
            for k, v in values.items():
                c = t.schema.column(k)
                after[c.name] = canonical(c.source_type, v(before) if callable(v) else v)
                if after[c.name] is None and not c.nullable:
                    raise FakeError(f"{table}.{c.name} cannot be null")
            self._check_keys(t, after, rid)
            self._change(table, "u", rid, before, after)
        return len(ids)

    def delete(self, table: str, where: Where, limit: int | None = None) -> int:
        t = self._table(table)
        ids = self._matching(t, where, limit)
        for rid in ids:
            self._change(table, "d", rid, dict(t.rows[rid]), None)
        return len(ids)

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The table's rows as this transaction sees them (its own changes too; the fake has no isolation
        from other open transactions' changes: a test keeps them apart)."""
        return [dict(r) for r in self._table(table).rows.values()]

    def savepoint(self) -> int:
        """A savepoint: :meth:`rollback_to` it undoes the changes made since."""
        return self.db.end

    def rollback_to(self, savepoint: int) -> None:
        """Undo this transaction's changes after ``savepoint`` (newest first)."""
        self._table  # noqa: B018 - (checks the transaction is open)
        undone = [e["n"] for e in self.db.entries if e["op"] == "change" and e["tx"] == self.txid
                  and e["n"] > savepoint and e["n"] not in self.db._undone()]  # noqa: SLF001
        self.db._log({"op": "undo", "tx": self.txid, "changes": sorted(undone, reverse=True)})  # noqa: SLF001

    def commit(self) -> int:
        """Commit; the commit's log entry number."""
        self._end("commit")
        return self.db.entries[-1]["n"]

    def rollback(self) -> None:
        self._end("rollback")

    def _end(self, op: str) -> None:
        if self.ended:
            raise FakeError(f"transaction {self.txid} has ended")
        self.db._log({"op": op, "tx": self.txid})  # noqa: SLF001
        self.ended = True
