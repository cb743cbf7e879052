"""The DB-API face: statement matching, the contents query's WHERE compiler, LogMiner sessions, cursor, connection."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cdclake.sources.oracle import queries as Q
from cdclake.testing.logminer_sim.database import (
    COLUMNS,
    I_CSF,
    I_OP,
    I_ROW_ID,
    I_SQL_REDO,
    I_XID,
    LogFile,
    OracleDatabase,
    SimulatedTransaction,
    TableDef,
    _Fault,
    _TableState,
)
from cdclake.testing.logminer_sim.errors import SimulatedOperationalError, UnknownStatementError, _db_error
from cdclake.testing.logminer_sim.values import _normalise

MAX_SCN = 18446744073709551615  # NEXT_CHANGE# of a CURRENT online log

_SYSTEM_TABLES = (("SYS", "OBJ$"), ("SYS", "TAB$"), ("SYS", "COL$"), ("SYSTEM", "HELP"), ("XDB", "XDB$CONFIG"),
                  ("MDSYS", "SDO_GEOR_XMLSCHEMA_TABLE"), ("AUDSYS", "AUD$UNIFIED"))


# ---- statements --------------------------------------------------------------------------------------

_HANDLED = (
    "CURRENT_SCN", "DATABASE_INFO", "VERSION", "SESSION_PRIVILEGES", "SESSION_ROLES", "SESSION_USER",
    "MAX_STRING_SIZE", "ALL_COLUMN_LOGGING", "TABLES", "TABLE_DDL", "LOCK_TABLE", "OLDEST_OPEN_TRANSACTION",
    "THREADS", "ARCHIVE_DESTINATIONS", "ONLINE_LOGS", "ARCHIVED_LOGS", "OLDEST_ARCHIVED_SCN", "SCN_TIMES",
    "FLUSH_TABLE_EXISTS", "FLUSH_TABLE_CREATE", "FLUSH_TABLE_INIT", "FLUSH", "ADD_LOGFILE", "START_LOGMNR",
    "END_LOGMNR", "BUILD_DICTIONARY", "DATABASE_ROLE", "DICTIONARY_LOGS", "DICTIONARY_CLAIM_CREATE",
    "DICTIONARY_CLAIM_READ", "DICTIONARY_CLAIM_INSERT",
)
_STATEMENT_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|BEGIN|DECLARE|LOCK|MERGE|TRUNCATE)\b",
                              re.IGNORECASE)


def unhandled_statements() -> list[str]:
    """Names of statement constants in :mod:`queries` that the simulator does not answer (should be [])."""
    names = [n for n in dir(Q) if n.isupper() and not n.startswith("_") and isinstance(getattr(Q, n), str)
             and _STATEMENT_START.match(getattr(Q, n))]
    return [n for n in names if n not in _HANDLED]


def _template_regex(template: str) -> re.Pattern[str]:
    text = re.escape(_normalise(template))
    text = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?P<{m.group(1)}>.+?)", text)
    text = text.replace(r"\ ", " ")
    return re.compile(text, re.IGNORECASE | re.DOTALL)


_TEMPLATES: list[tuple[str, re.Pattern[str]]] = [
    (name, _template_regex(getattr(Q, name))) for name in _HANDLED if isinstance(getattr(Q, name, None), str)
]
_RE_CONTENTS = re.compile(r"SELECT (?P<select>.+?) FROM V\$LOGMNR_CONTENTS(?: WHERE (?P<where>.+))?", re.I | re.S)


def _select_names(sql: str) -> list[str]:
    m = re.match(r"SELECT (.+?) FROM ", _normalise(sql), re.I | re.S)
    if not m:
        return []
    names = []
    for item in _split_top(m.group(1)):
        item = item.strip()
        mm = re.fullmatch(r"\w+\.([\w#$]+)", item)
        names.append(mm.group(1).upper() if mm else re.sub(r"\s+", "", item).upper())
    return names


def _split_top(text: str) -> list[str]:
    out, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == "'" :
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        elif not quote and ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def _literal_list(text: str) -> list[str]:
    return [m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", text)]


def _table_name(text: str, default_owner: str) -> tuple[str, str]:
    parts = [p.strip() for p in re.findall(r'"[^"]+"|[^.]+', text.strip())]
    parts = [p[1:-1] if p.startswith('"') else p.upper() for p in parts]
    return (parts[0], parts[1]) if len(parts) == 2 else (default_owner, parts[-1])


# ---- the WHERE compiler of the contents query ------------------------------------------------------------

_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<bind>:\w+)
  | (?P<op><=|>=|<>|!=|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_$#]*)
  )""", re.X)
_WHERE_COLUMNS = {name: f"r[{i}]" for i, name in enumerate(COLUMNS) if name != "XID"}
_WHERE_COLUMNS["SRC_CON_NAME"] = "c"
_NUMERIC_COLUMNS = {"SCN", "START_SCN", "COMMIT_SCN", "OPERATION_CODE", "ROLLBACK", "SSN", "CSF", "THREAD#"}


class _WhereCompiler:
    """Compiles a ``V$LOGMNR_CONTENTS`` WHERE clause into ``lambda r, c: ...`` (``r`` the row tuple,
    ``c`` SRC_CON_NAME) plus SCN bounds taken from the top-level conjuncts (for bisect)."""

    def __init__(self, where: str, binds: Mapping[str, Any], statement: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        where = where.strip()
        while pos < len(where):
            m = _TOKEN.match(where, pos)
            if m is None or m.end() == pos:
                raise UnknownStatementError(f"cannot parse the WHERE of: {statement}")
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m.group(kind)))
            pos = m.end()
            while pos < len(where) and where[pos].isspace():
                pos += 1
        self.i = 0
        self.binds = binds
        self.ns: dict[str, Any] = {}
        self.statement = statement
        self.lower: tuple[int, bool] | None = None  # (value, inclusive)
        self.upper: tuple[int, bool] | None = None

    def fail(self) -> UnknownStatementError:
        return UnknownStatementError(f"the simulator cannot evaluate this V$LOGMNR_CONTENTS WHERE: {self.statement}")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        self.i += 1
        return tok

    def kw(self, *words: str) -> bool:
        tok = self.peek()
        if tok and tok[0] == "word" and tok[1].upper() in words:
            self.i += 1
            return True
        return False

    def expect(self, value: str) -> None:
        tok = self.take()
        if tok[1].upper() != value:
            raise self.fail()

    def compile(self) -> Callable[[tuple[Any, ...], Any], bool] | None:
        groups = [self.conjuncts(top=True)]
        while self.kw("OR"):
            groups.append(self.conjuncts(top=False))
        if self.peek() is not None:
            raise self.fail()
        if len(groups) == 1:
            parts = [p for p, bound in groups[0] if not self.take_bound(bound)]
        else:
            parts = ["(" + " and ".join(p for p, _b in g) + ")" for g in groups]
            parts = ["(" + " or ".join(parts) + ")"]
        if not parts:
            return None
        return eval("lambda r, c: " + " and ".join(parts), {"__builtins__": {}, **self.ns})

    def take_bound(self, bound: tuple[str, int] | None) -> bool:
        if bound is None:
            return False
        op, v = bound
        if op in (">", ">="):
            lo = v if op == ">" else v - 1  # as "SCN > lo"
            self.lower = (lo, False) if self.lower is None else (max(self.lower[0], lo), False)
        else:
            hi = v if op == "<=" else v - 1  # as "SCN <= hi"
            self.upper = (hi, True) if self.upper is None else (min(self.upper[0], hi), True)
        return True

    def conjuncts(self, top: bool) -> list[tuple[str, tuple[str, int] | None]]:
        parts = [self.atom()]
        while self.kw("AND"):
            parts.append(self.atom())
        return parts

    def expr(self) -> str:
        groups = ["(" + " and ".join(p for p, _b in self.conjuncts(False)) + ")"]
        while self.kw("OR"):
            groups.append("(" + " and ".join(p for p, _b in self.conjuncts(False)) + ")")
        return "(" + " or ".join(groups) + ")"

    def const(self, value: Any) -> str:
        name = f"_k{len(self.ns)}"
        self.ns[name] = value
        return name

    def value(self, numeric: bool) -> Any:
        kind, text = self.take()
        if kind == "str":
            v: Any = text[1:-1].replace("''", "'")
        elif kind == "num":
            v = Decimal(text)
            v = int(v) if v == v.to_integral_value() else v
        elif kind == "bind":
            key = text[1:].lower()
            if key not in self.binds:
                raise _db_error(f'DPY-4010: a bind variable replacement value for placeholder "{text}" '
                                "was not provided")
            v = self.binds[key]
        elif kind == "word" and text.upper() == "NULL":
            v = None
        else:
            raise self.fail()
        if numeric and isinstance(v, str):
            try:
                v = int(v)
            except ValueError:
                raise _db_error("ORA-01722: invalid number") from None
        return v

    def atom(self) -> tuple[str, tuple[str, int] | None]:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        if tok == ("punct", "("):
            self.i += 1
            inner = self.expr()
            self.expect(")")
            return inner, None
        kind, name = self.take()
        if kind != "word" or name.upper() not in _WHERE_COLUMNS:
            raise self.fail()
        col = name.upper()
        acc = _WHERE_COLUMNS[col]
        numeric = col in _NUMERIC_COLUMNS
        if self.kw("IS"):
            neg = self.kw("NOT")
            if not self.kw("NULL"):
                raise self.fail()
            return f"({acc} is {'not ' if neg else ''}None)", None
        neg = self.kw("NOT")
        if self.kw("IN"):
            self.expect("(")
            values = [self.value(numeric)]
            while self.peek() == ("punct", ","):
                self.i += 1
                values.append(self.value(numeric))
            self.expect(")")
            if len(values) > 1000:
                raise _db_error("ORA-01795: maximum number of expressions in a list is 1000")
            s = self.const(frozenset(v for v in values if v is not None))
            return f"({acc} is not None and {acc} {'not in' if neg else 'in'} {s})", None
        if self.kw("LIKE"):
            pattern = self.value(False)
            rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in str(pattern))
            r = self.const(re.compile(rx + r"\Z", re.S))
            return f"({acc} is not None and {'not ' if neg else ''}{r}.match({acc}))", None
        if neg:
            raise self.fail()
        kind, op = self.take()
        if kind != "op":
            raise self.fail()
        v = self.value(numeric)
        if v is None:
            return "False", None
        pyop = {"=": "==", "<>": "!=", "!=": "!="}.get(op, op)
        bound = (op, int(v)) if col == "SCN" and op in ("<", "<=", ">", ">=") else None
        return f"({acc} is not None and {acc} {pyop} {self.const(v)})", bound


# ---- LogMiner session, results, cursor, connection ---------------------------------------------------

@dataclass
class _Session:
    files: dict[int, LogFile] = field(default_factory=dict)  # file key -> log
    started: bool = False
    startscn: int = 0
    endscn: int = MAX_SCN
    options: frozenset[str] = frozenset()
    stale: dict[int, TableDef | None] = field(default_factory=dict)
    online: dict[int, int] = field(default_factory=dict)  # file key -> group, for files added by member name


@dataclass
class _Result:
    columns: list[str]
    rows: Iterable[tuple[Any, ...]] | None = None  # None: not a query
    rowcount: int = 0
    fault: _Fault | None = None


class SimulatedLob:
    """What a CLOB column fetches as (python-oracledb's ``LOB``): ``read()``, ``size()``, ``str()``."""

    def __init__(self, value: str) -> None:
        self._value = value

    def read(self, offset: int = 1, amount: int | None = None) -> str:
        end = None if amount is None else offset - 1 + amount
        return self._value[offset - 1:end]

    def size(self) -> int:
        return len(self._value)

    def __str__(self) -> str:
        return self._value


def _type_code(value: Any) -> str:
    if isinstance(value, (bool, int, float, Decimal)):
        return "DB_TYPE_NUMBER"
    if isinstance(value, dt.datetime):
        return "DB_TYPE_DATE"
    if isinstance(value, bytes):
        return "DB_TYPE_RAW"
    if isinstance(value, SimulatedLob):
        return "DB_TYPE_CLOB"
    return "DB_TYPE_VARCHAR"


_CONTENTS_TYPES = {"SCN": "DB_TYPE_NUMBER", "START_SCN": "DB_TYPE_NUMBER", "COMMIT_SCN": "DB_TYPE_NUMBER",
                   "TIMESTAMP": "DB_TYPE_DATE", "COMMIT_TIMESTAMP": "DB_TYPE_DATE", "OPERATION_CODE": "DB_TYPE_NUMBER",
                   "ROLLBACK": "DB_TYPE_NUMBER", "SSN": "DB_TYPE_NUMBER", "CSF": "DB_TYPE_NUMBER",
                   "THREAD#": "DB_TYPE_NUMBER", "XID": "DB_TYPE_RAW"}


class SimulatedCursor:
    """A DB-API cursor answering the miner's statements (see :class:`SimulatedConnection`)."""

    def __init__(self, connection: SimulatedConnection) -> None:
        self.connection = connection
        self.arraysize = 100
        self.prefetchrows = 2
        self.rowcount = -1
        self.description: list[tuple[Any, ...]] | None = None
        self.statement: str | None = None
        self._it: Iterator[tuple[Any, ...]] | None = None
        self._fault: _Fault | None = None
        self._fetched = 0
        self._closed = False

    def __enter__(self) -> SimulatedCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._it = None

    def _check(self) -> None:
        if self._closed:
            raise _db_error("DPY-1006: cursor is not open")
        self.connection._check()

    def execute(self, statement: str, parameters: Mapping[str, Any] | Sequence[Any] | None = None,
                **keyword_parameters: Any) -> SimulatedCursor | None:
        self._check()
        binds: dict[str, Any] = {}
        if isinstance(parameters, Mapping):
            binds.update({str(k).lstrip(":").lower(): v for k, v in parameters.items()})
        elif parameters is not None:
            names = list(dict.fromkeys(n.lower() for n in re.findall(r":(\w+)", statement)))
            binds.update(dict(zip(names, parameters)))
        binds.update({k.lstrip(":").lower(): v for k, v in keyword_parameters.items()})
        placeholders = {n.lower() for n in re.findall(r":(\w+)", re.sub(r"'(?:[^']|'')*'", "", statement))}
        for name in binds:
            if name not in placeholders:
                raise _db_error(f'DPY-4008: no bind placeholder named ":{name}" was found in the SQL text')
        self.statement = statement
        self._it, self._fault, self._fetched, self.description = None, None, 0, None
        result = self.connection._db_execute(statement, binds)
        if result.rows is None:
            self.rowcount = result.rowcount
            return None
        self.rowcount = 0
        types = dict(_CONTENTS_TYPES) if result.columns and result.columns[0] == "SCN" else {}
        rows = result.rows
        if not types and isinstance(rows, list) and rows:
            types = {c: _type_code(v) for c, v in zip(result.columns, rows[0])}
        self.description = [(c, types.get(c, "DB_TYPE_VARCHAR"), None, None, None, None, True) for c in result.columns]
        self._it = iter(rows)
        self._fault = result.fault
        return self

    def _fetch(self, n: int | None) -> list[tuple[Any, ...]]:
        self._check()
        if self._it is None:
            raise _db_error("DPY-1003: the executed statement does not return rows")
        rows = list(self._it) if n is None else list(itertools.islice(self._it, n))
        f = self._fault
        if f is not None and f.action is not None and f.after_rows is not None \
                and self._fetched + len(rows) > f.after_rows:
            self._fault = None
            f.action()
        elif f is not None and f.after_rows is not None and self._fetched + len(rows) > f.after_rows:
            self._it = None
            self.connection._raise(f.message)
        self._fetched += len(rows)
        self.rowcount += len(rows)
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._fetch(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        return self._fetch(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._fetch(None)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while True:
            rows = self._fetch(self.arraysize)
            if not rows:
                return
            yield from rows

    def setinputsizes(self, *args: Any, **kwargs: Any) -> None:
        return None


class SimulatedConnection:
    """A DB-API connection (one Oracle session) to a :class:`SimulatedOracle`.

    Holds a LogMiner session (``ADD_LOGFILE``/``START_LOGMNR``/``END_LOGMNR``), an implicit transaction
    for its own DML (the flush table), ``LOCK TABLE`` locks. A lost connection (an injected DPY-4011,
    ORA-03113...) rolls its transaction back and makes every later call raise ``DPY-1001``.
    """

    def __init__(self, db: OracleDatabase, user: str, thread: int, container: str | None) -> None:
        self._db = db
        self.username = user
        self.thread = thread
        self.container = container
        self.autocommit = False
        self.call_timeout = 0
        self.stmtcachesize = 20
        self.outputtypehandler: Any = None
        self.inputtypehandler: Any = None
        self.module: str | None = None
        self.action: str | None = None
        self.client_identifier: str | None = None
        self.current_schema: str | None = None
        self.thin = True
        self.version = db.version
        self._open = True
        self._broken = False
        self._tx: SimulatedTransaction | None = None
        self._session = _Session()
        self._locked: set[_TableState] = set()

    def __enter__(self) -> SimulatedConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open:
            self.close()

    @property
    def logminer_files(self) -> list[LogFile]:
        return list(self._session.files.values())

    def _check(self) -> None:
        if not self._open:
            raise SimulatedOperationalError("DPY-1001: not connected to database")

    def _raise(self, message: str) -> None:
        err = _db_error(message)
        if isinstance(err, SimulatedOperationalError):
            self._drop()
        raise err

    def _drop(self) -> None:
        """The server side of a lost connection: roll back, end the LogMiner session, release locks."""
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()
        self._session = _Session()
        self._open = False
        self._broken = True

    def _release_locks(self) -> None:
        for state in self._locked:
            state.table_locks.discard(self)
        self._locked = set()

    def cursor(self) -> SimulatedCursor:
        self._check()
        return SimulatedCursor(self)

    def commit(self) -> None:
        self._check()
        fault = self._db._take_fault("COMMIT")
        if fault is not None:
            self._raise(fault.message)
        if self._tx is not None:
            self._tx.commit()
            self._tx = None
        self._release_locks()

    def rollback(self) -> None:
        self._check()
        fault = self._db._take_fault("ROLLBACK")
        if fault is not None:
            self._raise(fault.message)
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()

    def ping(self) -> None:
        self._check()
        fault = self._db._take_fault("PING")
        if fault is not None:
            self._raise(fault.message)

    def close(self) -> None:
        self._check()
        if self._tx is not None and self._tx.state == "open":
            self._tx.rollback()
        self._tx = None
        self._release_locks()
        self._session = _Session()
        self._open = False

    def _guard(self) -> None:
        if self._db.database_role == "LOGICAL STANDBY":
            raise _db_error("ORA-16224: Database Guard is enabled")

    def _transaction(self) -> SimulatedTransaction:
        self._guard()
        if self._tx is None or self._tx.state != "open":
            self._tx = self._db.begin(thread=self.thread, username=self.username, pdb=self.container)
        return self._tx

    # ---- dispatch ---------------------------------------------------------------------------------

    def _db_execute(self, statement: str, binds: dict[str, Any]) -> _Result:
        db = self._db
        norm = _normalise(statement)
        db.statements.append(norm)
        kind, groups = None, {}
        for name, rx in _TEMPLATES:
            m = rx.fullmatch(norm)
            if m is not None:
                kind, groups = name, m.groupdict()
                break
        if kind is None:
            m = _RE_CONTENTS.fullmatch(norm)
            if m is not None:
                kind, groups = "CONTENTS", m.groupdict()
        if kind is None:
            if norm.endswith(";") and not norm.upper().startswith(("BEGIN", "DECLARE")):
                raise _db_error("ORA-00933: SQL command not properly ended")
            raise UnknownStatementError(f"the LogMiner simulator does not answer this statement: {norm}")
        fault = db._take_fault(kind, norm)
        if fault is not None and fault.action is not None and fault.after_rows is None:
            fault.action()
            fault = None
        if fault is not None and fault.after_rows is None:
            self._raise(fault.message)
        result = getattr(self, f"_q_{kind.lower()}")(groups, binds)
        result.fault = fault
        return result

    def _bind(self, binds: Mapping[str, Any], name: str) -> Any:
        if name not in binds:
            raise _db_error(f'DPY-4010: a bind variable replacement value for placeholder ":{name}" was not provided')
        return binds[name]

    def _rows(self, columns_of: str, rows: list[tuple[Any, ...]]) -> _Result:
        return _Result(_select_names(getattr(Q, columns_of)), rows)

    def _q_current_scn(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        scn = db._scn
        db._advance(1, dt.timedelta(0))  # reading CURRENT_SCN consumes an SCN
        return self._rows("CURRENT_SCN", [(scn,)])

    def _q_database_info(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("DATABASE_INFO", [(db.name, db.log_mode, db.supplemental_min, db.supplemental_all, db.cdb)])

    def _q_version(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("VERSION", [(self._db.version,)])

    def _q_session_privileges(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_PRIVILEGES", [(p,) for p in self._db.privileges])

    def _q_session_roles(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_ROLES", [(r,) for r in self._db.roles])

    def _q_session_user(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("SESSION_USER", [(self.username,)])

    def _q_max_string_size(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("MAX_STRING_SIZE", [(self._db.max_string_size,)])

    def _q_all_column_logging(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        rows = sorted((s.defn.owner, s.defn.name) for s in self._db._tables.values()
                      if s.defn is not None and s.table_all_logging)
        return self._rows("ALL_COLUMN_LOGGING", rows)

    def _q_tables(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        excluded = set(_literal_list(g["system_schemas"]))
        rows = [(d.owner, d.name) for d in self._db.tables() if d.organization != "IOT"] + list(_SYSTEM_TABLES)
        return self._rows("TABLES", sorted(r for r in rows if r[0] not in excluded))

    def _q_table_ddl(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name, owner = self._bind(b, "name"), self._bind(b, "owner")
        state = self._db._tables.get((owner, name))
        if state is None or state.defn is None:
            raise _db_error(f'ORA-31603: object "{name}" of type TABLE not found in schema "{owner}"')
        text = state.defn.metadata_ddl(state.table_all_logging)
        return self._rows("TABLE_DDL", [(SimulatedLob(text),)])

    def _q_lock_table(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        state = self._db._state(g["owner"], g["table"])
        state.table_locks.add(self)
        self._locked.add(state)
        return _Result([], None, 0)

    def _q_oldest_open_transaction(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("OLDEST_OPEN_TRANSACTION", [(self._db.oldest_open_scn(),)])

    def _q_threads(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        return self._rows("THREADS", [(t, th.status, th.enabled) for t, th in sorted(self._db._threads.items())])

    def _q_archive_destinations(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        rows = [(d.dest_id, d.dest_name) for d in sorted(self._db.archive_dests, key=lambda d: d.dest_id)
                if d.status == "VALID" and d.type == "LOCAL"]
        return self._rows("ARCHIVE_DESTINATIONS", rows)

    def _q_online_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        rows = []
        for t, th in sorted(db._threads.items()):
            for grp in th.groups:
                seq = th.group_seq.get(grp)
                member = db.member_name(grp)
                if seq is None:
                    rows.append((t, 0, 0, 0, "UNUSED", member))
                    continue
                log = th.logs[seq]
                if log is th.current:
                    status, nxt = "CURRENT", MAX_SCN
                else:
                    done = bool(log.archived) or db.log_mode != "ARCHIVELOG"
                    status, nxt = ("INACTIVE" if done else "ACTIVE"), log.next_change
                rows.append((t, seq, log.first_change, nxt, status, member))
        return self._rows("ONLINE_LOGS", sorted(rows, key=lambda r: (r[0], r[1])))

    def _q_archived_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest, lo = int(self._bind(b, "dest_id")), int(self._bind(b, "lo"))
        rows = [(log.thread, log.sequence, log.first_change, log.next_change, log.archived[dest])
                for log in self._db.logs() if dest in log.archived and dest not in log.deleted
                and log.next_change is not None and log.next_change > lo]
        return self._rows("ARCHIVED_LOGS", rows)

    def _q_oldest_archived_scn(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest = int(self._bind(b, "dest_id"))
        oldest: dict[int, int] = {}
        for log in self._db.logs():
            if dest in log.archived and dest not in log.deleted:
                oldest[log.thread] = min(oldest.get(log.thread, log.first_change), log.first_change)
        return self._rows("OLDEST_ARCHIVED_SCN", sorted(oldest.items()))

    def _q_scn_times(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("SCN_TIMES", [(db.scn_to_timestamp(int(self._bind(b, "lo"))),
                                         db.scn_to_timestamp(int(self._bind(b, "hi"))))])

    def _q_flush_table_exists(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name = self._bind(b, "name")
        n = sum(1 for d in self._db.tables() if d.owner == self.username and d.name == name)
        return self._rows("FLUSH_TABLE_EXISTS", [(n,)])

    def _q_flush_table_create(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        self._guard()
        owner, name = _table_name(g["table"], self.username)
        if self._tx is not None and self._tx.state == "open":  # DDL commits the session's transaction
            self._tx.commit()
            self._tx = None
        self._db.create_table(owner, name, [("LAST_SCN", "NUMBER(19,0)")], (), supplemental_all=False,
                              supplemental_pk=False, ddl_text=Q.FLUSH_TABLE_CREATE.format(table=g["table"]),
                              thread=self.thread, username=self.username, pdb=self.container)
        return _Result([], None, 0)

    def _q_flush_table_init(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        self._transaction().insert(owner, name, {"LAST_SCN": 0})
        return _Result([], None, 1)

    def _q_flush(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        scn = self._bind(b, "scn")
        state = self._db._state(owner, name)
        tx = self._transaction()
        rowids = list(state.rows)
        for rid in rowids:
            tx._update(owner, name, None, {"LAST_SCN": scn}, frozenset(), rowid=rid)
        return _Result([], None, len(rowids))

    def _q_add_logfile(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        name = self._bind(b, "name")
        log = self._db._file_by_name(name)
        if log.key in self._session.files:
            raise _db_error(f"ORA-01289: cannot add duplicate logfile {name}")
        self._session.files[log.key] = log
        if name == self._db.member_name(log.group) and self._db.is_online(log):
            self._session.online[log.key] = log.group  # read from the group: it may be overwritten later
        return _Result([], None, 1)

    def _q_start_logmnr(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db, s = self._db, self._session
        options = set()
        for part in g["options"].split("+"):
            m = re.fullmatch(r"\s*(?:SYS\.)?DBMS_LOGMNR\.(\w+)\s*", part, re.I)
            if m is None:
                raise UnknownStatementError(f"unknown START_LOGMNR option {part.strip()!r}")
            options.add(m.group(1).upper())
        known = {"SKIP_CORRUPTION", "NO_SQL_DELIMITER", "NO_ROWID_IN_STMT", "DICT_FROM_ONLINE_CATALOG",
                 "DICT_FROM_REDO_LOGS", "DDL_DICT_TRACKING", "PRINT_PRETTY_SQL", "STRING_LITERALS_IN_STMT"}
        if "CONTINUOUS_MINE" in options:
            raise _db_error("ORA-44609: CONTINOUS_MINE is desupported for use with DBMS_LOGMNR.START_LOGMNR.")
        if options - known:
            raise UnknownStatementError(f"START_LOGMNR options not simulated: {sorted(options - known)}")
        if not s.files:
            raise _db_error("ORA-01292: no log file has been specified for the current LogMiner session")
        lo, hi = int(self._bind(b, "lo")), int(self._bind(b, "hi"))
        if hi < lo:
            raise _db_error("ORA-01281: SCN range specified is invalid")
        missing = [(log.thread, log.sequence) for log in db.logs() if log.covers(lo, hi) and log.key not in s.files]
        if missing:
            err = _db_error("ORA-01291: missing logfile")
            err.missing = missing  # type: ignore[attr-defined]
            raise err
        has_dictionary = any(f.dictionary and f.first_change <= lo for f in s.files.values())
        if "DICT_FROM_REDO_LOGS" in options and not has_dictionary:
            raise _db_error("ORA-01371: Complete LogMiner dictionary not found")
        if "DICT_FROM_REDO_LOGS" in options:  # DDL tracking reads every log of its thread from the dictionary on
            d = max((f for f in s.files.values() if f.dictionary and f.first_change <= lo),
                    key=lambda f: f.first_change)
            gaps = [(log.thread, log.sequence) for log in db.logs(d.thread) if log.covers(d.first_change, hi)
                    and log.key not in s.files]
            if gaps:
                err = _db_error("ORA-01291: missing logfile")
                err.missing = gaps  # type: ignore[attr-defined]
                raise err
        s.started, s.startscn, s.endscn, s.options = True, lo, hi, frozenset(options)
        s.stale = {}
        if db.track_dictionary and "DICT_FROM_REDO_LOGS" not in options:
            for state in db._objects:
                if len(state.versions) > 1:
                    s.stale[state.obj_id] = state.defn
        return _Result([], None, 0)

    def _q_end_logmnr(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        if not self._session.started and not self._session.files:
            raise _db_error("ORA-01307: no LogMiner session is currently active")
        self._session = _Session()
        return _Result([], None, 0)

    def _q_build_dictionary(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        db._advance(10, db.time_step)
        db._threads[self.thread].current.dictionary = True
        return _Result([], None, 0)

    def _q_database_role(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        db = self._db
        return self._rows("DATABASE_ROLE", [(db.dbid, db.database_role, db.open_mode, db.resetlogs_change)])

    def _q_dictionary_logs(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        dest, lo = int(self._bind(b, "dest_id")), int(self._bind(b, "lo"))
        rows = [(log.first_change, log.next_change, "YES", "YES") for log in self._db.logs()
                if log.dictionary and dest in log.archived and dest not in log.deleted
                and log.next_change is not None and log.next_change <= lo]
        return self._rows("DICTIONARY_LOGS", sorted(rows, key=lambda r: -r[0]))

    def _q_dictionary_claim_create(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        self._guard()
        owner, name = _table_name(g["table"], self.username)
        if (owner, name) in self._db._tables:
            raise _db_error("ORA-00955: name is already used by an existing object")
        if self._tx is not None and self._tx.state == "open":  # DDL commits the session's transaction
            self._tx.commit()
            self._tx = None
        self._db.create_table(owner, name, [("SLOT", "NUMBER(1,0)"), ("PIPELINE", "VARCHAR2(1000)")], ["SLOT"],
                              supplemental_all=False, supplemental_pk=False,
                              ddl_text=Q.DICTIONARY_CLAIM_CREATE.format(table=g["table"]), thread=self.thread,
                              username=self.username, pdb=self.container)
        return _Result([], None, 0)

    def _q_dictionary_claim_read(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        rows = [(r["PIPELINE"],) for r in self._db.rows(owner, name) if r["SLOT"] == 1]
        return self._rows("DICTIONARY_CLAIM_READ", rows)

    def _q_dictionary_claim_insert(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        owner, name = _table_name(g["table"], self.username)
        self._transaction().insert(owner, name, {"SLOT": 1, "PIPELINE": self._bind(b, "pipeline")})
        return _Result([], None, 1)

    def _q_contents(self, g: dict[str, str], b: dict[str, Any]) -> _Result:
        s = self._session
        statement = f"SELECT {g['select']} FROM V$LOGMNR_CONTENTS WHERE {g['where']}"
        items = [re.sub(r"\s+", "", i).upper() for i in _split_top(g["select"])]
        names, exprs = [], []
        for item in items:
            if item == "RAWTOHEX(XID)":
                exprs.append(f"r[{I_XID}]")
            elif item == "XID":
                exprs.append(f"bytes.fromhex(r[{I_XID}]) if r[{I_XID}] is not None else None")
            elif item == "SRC_CON_NAME":
                exprs.append("c")
            elif item in COLUMNS:
                exprs.append(f"r[{COLUMNS.index(item)}]")
            else:
                raise UnknownStatementError(f"V$LOGMNR_CONTENTS column {item} is not simulated: {statement}")
            names.append(item)
        proj = None
        if exprs != [f"r[{i}]" for i in range(len(COLUMNS))]:
            proj = eval("lambda r, c: (" + ", ".join(exprs) + ",)", {"bytes": bytes})
        wc = _WhereCompiler(g["where"] or "", b, statement)
        pred = wc.compile() if g["where"] else None
        if not s.started:
            raise _db_error("ORA-01306: dbms_logmnr.start_logmnr() must be invoked before selecting from "
                            "v$logmnr_contents")
        low = s.startscn - 1 if wc.lower is None else max(wc.lower[0], s.startscn - 1)
        high = s.endscn if wc.upper is None else min(wc.upper[0], s.endscn)
        return _Result(names, self._contents(low, high, pred, proj))

    def _contents(self, low: int, high: int, pred: Callable[..., bool] | None,
                  proj: Callable[..., tuple[Any, ...]] | None) -> Iterator[tuple[Any, ...]]:
        """The matching rows, as of now (the range, files and LGWR position are fixed here)."""
        db, s = self._db, self._session
        recs = db._recs
        a, b = bisect.bisect_right(db._scns, low), bisect.bisect_right(db._scns, high)
        files = frozenset(s.files)
        # Files added by an online member name: (group -> sequence map, group, sequence, member).
        online = {k: (db._threads[s.files[k].thread].group_seq, grp, s.files[k].sequence, db.member_name(grp))
                  for k, grp in s.online.items()}
        flushed = db._flushed_eid
        stale = s.stale
        delimiter = "NO_SQL_DELIMITER" not in s.options
        rowid_in = "NO_ROWID_IN_STMT" not in s.options
        plain = not stale and not delimiter and not rowid_in

        def rows() -> Iterator[tuple[Any, ...]]:
            for i in range(a, b):
                rec = recs[i]
                if rec[2] >= flushed or rec[3] not in files:
                    continue
                if online:
                    w = online.get(rec[3])
                    if w is not None and w[0].get(w[1]) != w[2]:  # the group was reused: another sequence
                        raise _db_error(f"ORA-00310: archived log contains sequence {w[0].get(w[1])}; sequence "
                                        f"{w[2]} required\nORA-00334: archived log: '{w[3]}'")
                if plain:
                    out = rec[0]
                    if pred is None or pred(out, rec[4]):
                        yield out if proj is None else proj(out, rec[4])
                    continue
                outs = [rec[0]]
                alt = rec[5]
                if stale and alt is not None and alt[0][0] in stale:
                    current = stale[alt[0][0]]
                    if current is None or current.version != alt[0][1]:
                        outs = db._restale(rec, current)
                for out in outs:
                    out = _decorate(out, delimiter, rowid_in)
                    if pred is None or pred(out, rec[4]):
                        yield out if proj is None else proj(out, rec[4])

        return rows()


def _decorate(out: tuple[Any, ...], delimiter: bool, rowid_in: bool) -> tuple[Any, ...]:
    """Without NO_ROWID_IN_STMT / NO_SQL_DELIMITER LogMiner adds ``and ROWID = '...'`` and ``;``."""
    if out[I_CSF] or out[I_SQL_REDO] is None or out[I_OP] not in (1, 2, 3, 5):
        return out
    sql = out[I_SQL_REDO]
    if rowid_in and out[I_OP] in (2, 3):
        sql += f" and ROWID = '{out[I_ROW_ID]}'" if " where " in sql else f" where ROWID = '{out[I_ROW_ID]}'"
    if delimiter:
        sql += ";"
    o = list(out)
    o[I_SQL_REDO] = sql
    return tuple(o)


class SimulatedOracle(OracleDatabase):
    """The simulated database that DB-API connections are opened to (:meth:`connect`)."""

    def connect(self, user: str | None = None, thread: int = 1, container: str | None = None) -> SimulatedConnection:
        """A new connection (a session on redo thread ``thread``, user ``session_user`` by default)."""
        fault = self._take_fault("CONNECT")
        if fault is not None:
            raise _db_error(fault.message)
        return SimulatedConnection(self, user or self.session_user, thread,
                                   container if container is not None else ("CDB$ROOT" if self.cdb == "YES" else None))
