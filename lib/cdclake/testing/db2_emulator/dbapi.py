"""An ``ibm_db_dbi``-shaped connection to the emulated Db2, answering exactly the statements of
:mod:`cdclake.sources.db2.queries` (matched on whitespace-normalised text, ``{...}`` parts by pattern).
Anything else raises :class:`UnknownStatementError`, naming the statement. Values come back as
``ibm_db_dbi`` returns them: ``int``, ``Decimal`` for DECIMAL, ``str`` for DECFLOAT and text, ``bytes``
for binary strings, ``datetime``/``date``/``time`` for temporal columns.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from cdclake.sources.db2 import queries as Q
from cdclake.testing.db2_emulator.values import EPOCH, EmulatorError, date_from_hybrid_days, db2_timestamp_text


class Error(Exception):
    """``ibm_db_dbi.Error``: ``str()`` is ``ibm_db_dbi::<Class>: <CLI message>``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"ibm_db_dbi::{type(self).__name__}: {self.message}"


class ProgrammingError(Error):
    pass


class OperationalError(Error):
    pass


class UnknownStatementError(AssertionError):
    """The source sent a statement the emulator does not answer (not in ``cdclake.sources.db2.queries``)."""


def _error(exc: EmulatorError) -> Error:
    return (OperationalError if exc.sqlstate.startswith("08") else ProgrammingError)(str(exc))


def normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _pattern(template: str) -> re.Pattern[str]:
    """``template``'s text as a pattern: each ``{name}`` matches any text (a name repeated, the same text)."""
    seen: set[str] = set()

    def group(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in seen:
            return f"(?P={name})"
        seen.add(name)
        return f"(?P<{name}>.+?)"

    text = re.sub(r"\\\{(\w+)\\\}", group, re.escape(normalise(template)))
    return re.compile(f"^{text}$", re.S)


def db2_text_time(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    date, clock, frac = text[:10], text[11:19].replace(".", ":"), text[20:]
    micro = int((frac + "000000")[:6]) if frac else 0
    return dt.datetime.fromisoformat(f"{date}T{clock}").replace(microsecond=micro)


class Cursor:
    arraysize = 1000

    def __init__(self, conn: EmulatedConnection) -> None:
        self.conn = conn
        self.rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> bool:
        self.conn.check()
        text = normalise(sql)
        db = self.conn.db
        db.session_statements.append(text)
        for pattern, handler in self.conn.handlers:
            m = pattern.match(text)
            if m:
                try:
                    rows = handler(m.groupdict(), tuple(params or ()))
                except EmulatorError as exc:
                    raise _error(exc) from None
                self.rows = list(rows)
                self.rowcount = len(self.rows)
                width = len(self.rows[0]) if self.rows else 0
                self.description = [(f"C{i}", None, None, None, None, None, True) for i in range(width)]
                return True
        raise UnknownStatementError(f"the emulated Db2 does not answer this statement: {text}")

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows.pop(0) if self.rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = size or self.arraysize
        out, self.rows = self.rows[:n], self.rows[n:]
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        out, self.rows = self.rows, []
        return out

    def close(self) -> None:
        self.rows = []


class EmulatedConnection:
    """What ``ibm_db_dbi.connect`` returns, on the emulated database."""

    def __init__(self, db: Any) -> None:  # an EmulatedDb2
        self.db = db
        self.closed = False
        cs = db.control_schema
        direct = self._direct
        self.handlers: list[tuple[re.Pattern[str], Callable[[dict[str, str], tuple[Any, ...]], list[tuple[Any, ...]]]]]
        def control(name: str, times: tuple[int, ...] = (), sqlite: str | None = None) -> tuple[Any, Any]:
            """A statement on the control schema: another schema than the emulated one has no such tables."""
            template = getattr(Q, name)
            run = direct(sqlite or template.format(cs=cs), times)

            def handler(groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
                if groups["cs"] != cs:
                    table = re.search(r"\{cs\}\.(\w+)", template)
                    raise EmulatorError(-204, "42704", f'"{groups["cs"]}.{table.group(1) if table else ""}" is an '
                                                       "undefined name.")
                return run(groups, params)
            return _pattern(template), handler

        self.handlers = [
            control("REGISTRATIONS"),
            control("HIGH_WATER_MARK", times=(1,)),
            control("RESTART", times=(1, 3)),
            self._server_clock(control("RETENTION", times=(2,), sqlite=Q.RETENTION.format(cs=cs).replace(
                "CURRENT TIMESTAMP", "?"))),
            control("PRUNE_POINTS"),
            (_pattern(Q.TABLE), self._table),
            (_pattern(Q.COLUMNS), self._columns),
            control("UOW_COUNT"),
            self._uow_last_before(control("UOW_LAST_BEFORE")),
            control("UOW_TIME", times=(0,)),
            (_pattern(Q.CD_COUNT), lambda g, p: direct(Q.CD_COUNT.format(cd=g["cd"]))(g, p)),
            (_pattern(Q.CD_OLDEST), lambda g, p: direct(Q.CD_OLDEST.format(cd=g["cd"]))(g, p)),
            (_pattern(Q.KEY_RANGE), self._key_range),
            (_pattern(Q.LOCK_TIMEOUT), lambda g, p: []),
            (_pattern(Q.LOCK_TABLE), self._lock_table),
        ]

    def check(self) -> None:
        if self.closed:
            raise ProgrammingError("[IBM][CLI Driver] CLI0106E  Connection is closed. SQLSTATE=08003")

    def _direct(self, sql: str, times: tuple[int, ...] = ()) -> Callable[[dict[str, str], tuple[Any, ...]],
                                                                            list[tuple[Any, ...]]]:
        def run(groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            try:
                rows = self.db.select(sql, tuple(bytes(p) if isinstance(p, (bytearray, memoryview)) else p
                                                  for p in params))
            except Exception as exc:
                if "no such table" in str(exc):
                    name = str(exc).rsplit(":", 1)[-1].strip()
                    raise EmulatorError(-204, "42704", f'"{name}" is an undefined name.') from None
                raise
            return [tuple(db2_text_time(v) if i in times else v for i, v in enumerate(r)) for r in rows]
        return run

    def _server_clock(self, entry: tuple[Any, Any]) -> tuple[Any, Any]:
        """``CURRENT TIMESTAMP``: the emulated clock."""
        pattern, handler = entry

        def run(groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return handler(groups, (db2_timestamp_text(self.db.now(), 6), *params))
        return pattern, run

    @staticmethod
    def _uow_last_before(entry: tuple[Any, Any]) -> tuple[Any, Any]:
        """``IBMSNAP_LOGMARKER <= ?`` with a datetime: the emulator keeps LOGMARKER as Db2's sortable text."""
        pattern, handler = entry

        def run(groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return handler(groups, (db2_timestamp_text(params[0], 6), *params[1:]))
        return pattern, run

    def _table(self, groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        t = self.db.tables.get((params[0], params[1]))
        return [] if t is None else [(t.schema, t.name, "T", t.created, t.altered)]

    def _columns(self, groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        t = self.db.tables.get((params[0], params[1]))
        if t is None:
            return []
        out = []
        for i, (name, ctype, nullable) in enumerate(t.columns):
            keyseq = t.primary_key.index(name) + 1 if name in t.primary_key else None
            out.append((name, i, ctype.typename, ctype.length, ctype.scale, "Y" if nullable else "N",
                        ctype.codepage, t.defaults.get(name), keyseq))
        return out

    def _key_range(self, groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        lo, hi, n = self.db.select(Q.KEY_RANGE.format(key=groups["key"], table=groups["table"]))[0]
        return [(lo, hi, n)]

    def _lock_table(self, groups: dict[str, str], params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """``LOCK TABLE ... IN SHARE MODE``: held until this connection's transaction ends; a table an open
        transaction is writing cannot be locked (the wait times out)."""
        schema, _, name = groups["table"].partition(".")
        key = (schema.strip('"'), name.strip('"'))
        self.db.table(*key)
        if any(k[:2] == key for k in self.db.locks):
            raise EmulatorError(-911, "40001", "The current transaction has been rolled back because of a deadlock "
                                               "or timeout.  Reason code \"68\".")
        self.db.table_locks[key] = id(self)
        return []

    def _release(self) -> None:
        for key in [k for k, owner in self.db.table_locks.items() if owner == id(self)]:
            del self.db.table_locks[key]

    # DB-API
    def cursor(self) -> Cursor:
        self.check()
        return Cursor(self)

    def commit(self) -> None:
        self.check()
        self._release()

    def rollback(self) -> None:
        self.check()
        self._release()

    def close(self) -> None:
        self._release()
        self.closed = True


def to_python(value: Any, typename: str) -> Any:
    """A stored value as ``ibm_db_dbi`` returns the column type (for tests reading source rows)."""
    if value is None:
        return None
    if typename == "DECIMAL":
        return Decimal(value)
    if typename == "DATE":
        return date_from_hybrid_days(value // 86_400_000)
    if typename == "TIME":
        return (EPOCH + dt.timedelta(milliseconds=value)).time()
    return value
