"""Oracle DDL: evolve the table schemas with the DDL statements LogMiner (or DBMS_METADATA) gives.

:func:`apply_ddl` takes one statement — a LogMiner ``DDL`` row's text, or ``DBMS_METADATA.GET_DDL``
output for the snapshot — and returns the schemas it changes, as the MySQL parser does
(:class:`cdclake.spi.DdlOutcome`). Column types come from
:func:`cdclake.sources.oracle.types.column_from_oracle`.

Table keys are ``"OWNER.TABLE"`` with Oracle's identifier rules: unquoted names are upper-cased,
quoted names keep their case and may hold spaces, lower case, ``$`` and ``#``; lookups are exact.

Why a small hand-written parser and not sqlglot: sqlglot 30 (dialect ``oracle``) rejects
``DBMS_METADATA`` output (``NOT NULL ENABLE``, ``SUPPLEMENTAL LOG DATA (ALL) COLUMNS``), ``GENERATED
ALWAYS AS (...) VIRTUAL`` and identity columns with options, and falls back to an opaque ``Command``
for ``ALTER TABLE ... MODIFY (...)``, ``DROP (a, b)``, ``SET UNUSED`` and ``RENAME a TO b``. Only
table-shaping statements are parsed; physical clauses (storage, tablespace, LOB storage,
partitioning, compression, logging) are skipped, and anything unexpected inside a column definition
raises :class:`~cdclake.errors.DdlParseError` instead of being guessed.

The tokenizer and token cursor are shared with the MySQL parser (:mod:`cdclake.sqltokens`);
Oracle's lexical rules are ``ORACLE_DIALECT`` below.

>>> out = apply_ddl('ALTER TABLE "HR"."EMP" ADD (BONUS NUMBER(8,2) DEFAULT 0)',
...                 {"HR.EMP": TableSchema("HR", "EMP", [column_from_oracle("ID", "NUMBER(9)")], ["ID"])},
...                 "HR")
>>> [(c.name, c.spark_type) for c in out.changes["HR.EMP"].columns]
[('ID', 'INT'), ('BONUS', 'DECIMAL(8,2)')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cdclake.kit.ddl import SchemaRegistry, apply_statement
from cdclake.schema import Column, TableSchema, UniqueKey
from cdclake.sources.oracle.types import column_from_oracle
from cdclake.spi import UNLOGGED, DdlOutcome
from cdclake.sqltokens import SqlDialect, SqlParseError, Token, TokenCursor

__all__ = ["ORACLE_DIALECT", "DdlOutcome", "apply_ddl"]


# ---- tokens --------------------------------------------------------------------------------------

# Oracle's lexical rules for the shared tokenizer: unquoted names are stored upper-cased, "quoted"
# ones as written; q'[...]' and N'...' strings; a trailing ';' or SQL*Plus '/' ends the statement.
ORACLE_DIALECT = SqlDialect(
    doubled_quote_in_names=False,
    empty_quoted_names=False,
    unquoted_case="upper",
    word_re=re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$#\u0080-\uffff]*"),
    number_re=re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"),
    q_quotes=True,
    national_prefix=True,
    terminators=";/",
)


# ---- column definitions --------------------------------------------------------------------------

# Words that end a column's type (the start of its options).
_COLUMN_OPTION_WORDS = {
    "DEFAULT", "NOT", "NULL", "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "REFERENCES", "GENERATED", "AS",
    "VISIBLE", "INVISIBLE", "ENCRYPT", "DECRYPT", "COLLATE", "SORT", "ENABLE", "DISABLE", "DROP", "USING",
    "RELY", "NORELY", "VALIDATE", "NOVALIDATE", "DEFERRABLE", "INITIALLY", "EXCEPTIONS", "SUBSTITUTABLE",
    "ANNOTATIONS", "DOMAIN", "VIRTUAL", "IDENTITY",
}
# Words that end a DEFAULT expression.
_DEFAULT_STOP = {
    "NOT", "NULL", "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "REFERENCES", "ENABLE", "DISABLE", "USING",
    "RELY", "NORELY", "VALIDATE", "NOVALIDATE", "DEFERRABLE", "INITIALLY", "ENCRYPT", "DECRYPT", "GENERATED",
    "VISIBLE", "INVISIBLE", "COLLATE", "SORT", "ANNOTATIONS", "EXCEPTIONS",
}
# Words that end a USING INDEX clause (index properties are skipped).
_USING_INDEX_STOP = {
    "ENABLE", "DISABLE", "VALIDATE", "NOVALIDATE", "RELY", "NORELY", "CONSTRAINT", "NOT", "NULL", "PRIMARY",
    "UNIQUE", "CHECK", "REFERENCES", "EXCEPTIONS", "DEFERRABLE", "INITIALLY", "DEFAULT",
}
_IDENTITY_OPTIONS = {
    "START", "WITH", "LIMIT", "VALUE", "INCREMENT", "BY", "MAXVALUE", "NOMAXVALUE", "MINVALUE", "NOMINVALUE",
    "CYCLE", "NOCYCLE", "CACHE", "NOCACHE", "ORDER", "NOORDER", "KEEP", "NOKEEP", "SCALE", "NOSCALE",
    "EXTEND", "NOEXTEND", "SHARD", "NOSHARD", "SESSION", "GLOBAL",
}


@dataclass
class _ColumnDef:
    name: str
    type_text: str | None
    nullable: bool | None = None  # None: not stated
    default: str | None = None
    default_given: bool = False
    primary_key: bool = False
    virtual: bool = False
    identity: bool = False
    unique: str | None = None  # an inline UNIQUE constraint: its name ('' when unnamed)

    def column(self) -> Column:
        if self.type_text is None:
            if not self.virtual:
                raise SqlParseError(f"column {self.name!r} has no type")
            # A virtual column may leave its type to the expression: unknown here, so unsupported.
            col = column_from_oracle(self.name, "UNDEFINED")
        else:
            try:
                col = column_from_oracle(self.name, self.type_text)
            except ValueError as exc:
                raise SqlParseError(str(exc)) from exc
        nullable = self.nullable if self.nullable is not None else not (self.primary_key or self.identity)
        # LogMiner logs no value of a virtual column: it does not land (UNLOGGED)
        attrs = {**col.attrs, "virtual": True, UNLOGGED: True} if self.virtual else col.attrs
        return replace(col, nullable=nullable, default=self.default, attrs=attrs)


def _is_type_start(tok: Token | None) -> bool:
    return tok is not None and tok.is_name and not (tok.kind == "word" and tok.up in _COLUMN_OPTION_WORDS)


def _parse_column_def(sql: str, toks: list[Token], *, modify: bool = False) -> _ColumnDef:
    """One column definition (or, with ``modify``, a MODIFY item whose type and options are optional)."""
    cur = TokenCursor(sql, toks)
    d = _ColumnDef(cur.name(), None)
    # The type: names, dots and argument groups up to the first option word.
    if _is_type_start(cur.peek()):
        first = cur.peek()
        last = first
        while not cur.at_end():
            t = cur.peek()
            assert t is not None
            if t.is_punct("(") or t.is_punct("."):
                if t.is_punct("("):
                    cur.skip_group()
                else:
                    cur.next()
            elif _is_type_start(t):
                cur.next()
            else:
                break
            last = cur.toks[cur.i - 1]
        assert first is not None and last is not None
        d.type_text = cur.text(first, last)
    while not cur.at_end():
        if cur.accept("DEFAULT"):
            if cur.accept("ON", "NULL"):
                d.nullable = False
                cur.accept("FOR", "INSERT", "ONLY") or cur.accept("FOR", "INSERT", "AND", "UPDATE")
            first = cur.peek()
            if first is None:
                raise SqlParseError(f"column {d.name!r}: DEFAULT without a value")
            cur.skip_one()
            while not cur.at_end() and not cur.peek_is(*_DEFAULT_STOP):
                cur.skip_one()
            text = cur.text(first, cur.toks[cur.i - 1]).strip()
            d.default = None if text.upper() == "NULL" else text
            d.default_given = True
        elif cur.accept("GENERATED"):
            if not (cur.accept("ALWAYS") or cur.accept("BY", "DEFAULT")):
                raise SqlParseError(f"column {d.name!r}: expected ALWAYS or BY DEFAULT after GENERATED")
            if cur.accept("ON", "NULL"):
                cur.accept("FOR", "INSERT", "ONLY") or cur.accept("FOR", "INSERT", "AND", "UPDATE")
            if not cur.accept("AS"):
                raise SqlParseError(f"column {d.name!r}: expected AS after GENERATED")
            _generated_body(cur, d)
        elif cur.accept("AS"):
            _generated_body(cur, d)
        elif cur.accept("VIRTUAL"):
            d.virtual = True
        elif cur.accept_any("VISIBLE", "INVISIBLE", "SORT", "DECRYPT"):
            pass
        elif cur.accept("COLLATE"):
            cur.name()
        elif cur.accept("ENCRYPT"):
            while True:
                if cur.accept("USING") or cur.accept("IDENTIFIED", "BY"):
                    cur.next()
                elif cur.accept("NO", "SALT") or cur.accept("SALT"):
                    pass
                elif (t := cur.peek()) is not None and t.kind == "str":
                    cur.next()  # integrity algorithm
                else:
                    break
        elif cur.accept("ANNOTATIONS"):
            cur.skip_group()
        elif cur.accept("DOMAIN"):
            cur.qualified_name()
        elif modify and cur.accept("DROP", "IDENTITY"):
            pass
        elif cur.accept("NOT", "SUBSTITUTABLE") or cur.accept("SUBSTITUTABLE"):
            cur.accept("AT", "ALL", "LEVELS")
        elif _inline_constraint(cur, d):
            pass
        else:
            raise SqlParseError(f"column {d.name!r}: unexpected {cur.peek_text()!r}")
    if d.type_text is None and not d.virtual and not modify:
        raise SqlParseError(f"column {d.name!r} has no type")
    return d


def _generated_body(cur: TokenCursor, d: _ColumnDef) -> None:
    """After ``[GENERATED ...] AS``: ``IDENTITY [(options) | options]`` or ``(expr) [VIRTUAL]``."""
    if cur.accept("IDENTITY"):
        d.identity = True
        if cur.peek_punct("("):
            cur.skip_group()
        while (t := cur.peek()) is not None and (t.up in _IDENTITY_OPTIONS or t.kind == "num" or t.is_punct("-")):
            cur.next()
        return
    if not cur.peek_punct("("):
        raise SqlParseError(f"column {d.name!r}: expected IDENTITY or (expression) after AS")
    cur.skip_group()
    d.virtual = True


def _inline_constraint(cur: TokenCursor, d: _ColumnDef) -> bool:
    """Consume one inline constraint or constraint-state word; False if none comes next."""
    start = cur.i
    name = cur.name() if cur.accept("CONSTRAINT") else ""
    if cur.accept("NOT", "NULL"):
        d.nullable = False
    elif cur.accept("NULL"):
        d.nullable = True
    elif cur.accept("PRIMARY", "KEY"):
        d.primary_key = True
        d.nullable = False if d.nullable is None else d.nullable
    elif cur.accept("UNIQUE"):
        d.unique = name
    elif cur.accept("CHECK"):
        cur.skip_group()
    elif cur.accept("REFERENCES"):
        cur.qualified_name()
        if cur.peek_punct("("):
            cur.skip_group()
        if cur.accept("ON", "DELETE") and not (cur.accept("CASCADE") or cur.accept("SET", "NULL")):
            raise SqlParseError(f"column {d.name!r}: unexpected ON DELETE {cur.peek_text()!r}")
    elif cur.i > start:
        raise SqlParseError(f"column {d.name!r}: unexpected {cur.peek_text()!r} after CONSTRAINT")
    elif not _constraint_state(cur):
        return False
    return True


def _constraint_state(cur: TokenCursor) -> bool:
    if cur.accept_any("ENABLE", "DISABLE", "VALIDATE", "NOVALIDATE", "RELY", "NORELY", "NOT DEFERRABLE",
                      "DEFERRABLE", "INITIALLY IMMEDIATE", "INITIALLY DEFERRED"):
        return True
    if cur.accept("USING", "INDEX"):
        if cur.peek_punct("("):
            cur.skip_group()  # (CREATE INDEX ...)
        else:
            cur.take_until(lambda c: c.peek_is(*_USING_INDEX_STOP))
        return True
    if cur.accept("EXCEPTIONS", "INTO"):
        cur.qualified_name()
        return True
    return False


def _key_columns(items: list[list[Token]]) -> list[str]:
    names = []
    for item in items:
        if len(item) != 1 or not item[0].is_name:
            raise SqlParseError("unsupported primary key column list")
        names.append(item[0].name)
    return names


def _constraint_item(cur: TokenCursor) -> list[str] | UniqueKey | None:
    """An out-of-line constraint at the cursor: its primary key columns, an enforced unique key
    (name ``''`` when the statement leaves naming to Oracle), or None for other kinds.

    The cursor must be at ``CONSTRAINT``/``PRIMARY``/``UNIQUE``/``FOREIGN``/``CHECK``; the rest of
    the constraint (state, USING INDEX, references) is left for the caller to skip.
    """
    name = cur.name() if cur.accept("CONSTRAINT") else ""
    if cur.accept("PRIMARY", "KEY"):
        return _key_columns(cur.split_group())
    if cur.accept("UNIQUE"):
        columns = tuple(_key_columns(cur.split_group()))
        # DISABLE/NOVALIDATE: rows need not be unique, so not a row key.
        state = {t.up for t in cur.toks[cur.i:] if t.kind == "word"}
        return None if state & {"DISABLE", "NOVALIDATE"} else UniqueKey(name, columns)
    if cur.accept("FOREIGN", "KEY") or cur.accept("CHECK"):
        return None
    raise SqlParseError(f"unsupported constraint {cur.peek_text()!r}")


def _forget_unique(keys: list[UniqueKey], name: str) -> list[UniqueKey]:
    """Keys left after constraint ``name`` is dropped or disabled. Oracle names an unnamed constraint
    itself (``SYS_C...``), so an unknown name may be one of the unnamed keys: those go too (a table
    with no key left is kept as a multiset, which is exact for any table)."""
    if any(k.name == name for k in keys):
        return [k for k in keys if k.name != name]
    return [k for k in keys if k.name]


_CONSTRAINT_START = ("CONSTRAINT", "PRIMARY", "UNIQUE", "FOREIGN", "CHECK")


# ---- registry ------------------------------------------------------------------------------------


def _resolve(reg: SchemaRegistry, owner: str | None, table: str) -> tuple[str, str, str]:
    """The key of ``owner.table`` (the parsing schema's when unqualified), its owner and its table name."""
    key = reg.resolve(owner, table)
    return key, owner or str(reg.default_namespace), table


# ---- CREATE TABLE --------------------------------------------------------------------------------


def _create(cur: TokenCursor, reg: SchemaRegistry) -> None:
    cur.accept("OR", "REPLACE")
    if cur.accept("GLOBAL", "TEMPORARY") or cur.accept("PRIVATE", "TEMPORARY"):
        return  # session data, never captured
    while cur.accept_any("SHARDED", "DUPLICATED", "IMMUTABLE", "BLOCKCHAIN"):
        pass
    if not cur.accept("TABLE"):
        return  # CREATE INDEX/SEQUENCE/VIEW/SYNONYM/PROCEDURE/USER/...: no table schema
    cur.accept("IF", "NOT", "EXISTS")
    key, owner, table = _resolve(reg, *cur.qualified_name())
    if cur.accept("SHARING"):
        cur.expect_punct("=")
        cur.next()
    if cur.accept("OF"):
        raise SqlParseError("object tables (CREATE TABLE ... OF type) are not supported")
    if not cur.peek_punct("("):
        raise SqlParseError("CREATE TABLE without a column list (CREATE TABLE ... AS SELECT) is not supported: "
                          "its column types are not in the statement; re-snapshot the table")
    items = cur.split_group()
    # Everything after the column list is physical (segment, storage, tablespace, LOB storage,
    # partitioning, compression, logging...), except AS SELECT.
    rest = cur.toks[cur.i :]
    depth = 0
    for k, t in enumerate(rest[:-1]):
        depth += 1 if t.is_punct("(") else -1 if t.is_punct(")") else 0
        after, before = rest[k + 1], rest[k - 1] if k else None
        if (
            depth == 0
            and t.is_("AS")
            and not (before is not None and before.is_("STORE"))  # LOB (c) STORE AS (...)
            and (after.is_("SELECT", "WITH") or after.is_punct("("))
        ):
            raise SqlParseError("CREATE TABLE ... AS SELECT is not supported: its column types are not in the "
                              "statement; re-snapshot the table")
    columns: list[Column] = []
    pk: list[str] = []
    unique: list[UniqueKey] = []
    for item in items:
        c = TokenCursor(cur.sql, item)
        if c.peek_is(*_CONSTRAINT_START):
            found = _constraint_item(c)
            if isinstance(found, UniqueKey):
                unique.append(found)
            elif found is not None:
                pk = found
        elif c.accept("SUPPLEMENTAL", "LOG") or c.accept("PERIOD", "FOR") or c.accept("SCOPE", "FOR"):
            pass
        elif c.peek_is("REF") and (t := c.peek(1)) is not None and t.is_punct("("):
            pass  # out-of-line REF constraint
        else:
            d = _parse_column_def(cur.sql, item)
            if any(col.name == d.name for col in columns):
                raise SqlParseError(f"duplicate column {d.name!r}")
            columns.append(d.column())
            if d.primary_key:
                pk = [d.name]
            if d.unique is not None:
                unique.append(UniqueKey(d.unique, (d.name,)))
    if not columns:
        raise SqlParseError("CREATE TABLE has no columns")
    reg.create(key, TableSchema(owner, table, _not_null_key(columns, pk), _check_key(columns, pk),
                             _check_unique(columns, unique)))


def _check_unique(columns: list[Column], keys: list[UniqueKey]) -> list[UniqueKey]:
    names = {c.name for c in columns}
    for k in keys:
        if not set(k.columns) <= names:
            raise SqlParseError(f"unique constraint {k.name or ''} names unknown column(s) {', '.join(k.columns)}")
    return list(keys)


def _check_key(columns: list[Column], pk: list[str]) -> list[str]:
    names = {c.name for c in columns}
    for p in pk:
        if p not in names:
            raise SqlParseError(f"primary key names unknown column {p!r}")
    return list(pk)


def _not_null_key(columns: list[Column], pk: list[str]) -> list[Column]:
    return [replace(c, nullable=False) if c.name in pk and c.nullable else c for c in columns]


# ---- ALTER TABLE ---------------------------------------------------------------------------------

# Clauses that do not change the columns or the key (or their effect is not tracked).
_IGNORED_ALTER_WORDS = {
    "ENABLE", "DISABLE", "MOVE", "SHRINK", "SPLIT", "MERGE", "COALESCE", "PCTFREE", "PCTUSED", "INITRANS",
    "MAXTRANS", "STORAGE", "TABLESPACE", "LOGGING", "NOLOGGING", "COMPRESS", "NOCOMPRESS", "ROW", "COLUMN",
    "CACHE", "NOCACHE", "PARALLEL", "NOPARALLEL", "MONITORING", "NOMONITORING", "READ", "INMEMORY", "NO",
    "FLASHBACK", "UPGRADE", "RESULT_CACHE", "ILM", "ALLOCATE", "DEALLOCATE", "LOB", "XMLTYPE", "VARRAY",
    "NESTED", "MEMOPTIMIZE", "OVERFLOW", "MAPPING", "NOMAPPING", "DEFAULT", "ATTRIBUTE", "SEGMENT",
    "CLUSTERING", "NOROWDEPENDENCIES", "ROWDEPENDENCIES", "UPDATE", "INVALIDATE", "ONLINE", "KEEP",
    "CASCADE", "DEDUPLICATE", "PARAMETERS", "REJECT", "LOCATION", "ACCESS", "ORGANIZATION", "IMMUTABLE",
    "BLOCKCHAIN", "VALIDATE", "NOVALIDATE", "ANNOTATIONS", "USAGE", "SHARING", "CONVERT",
}
_DATA_PARTITION_OPS = {"TRUNCATE", "EXCHANGE"}


def _at_clause(c: TokenCursor) -> bool:
    """Does a new ALTER TABLE clause start at the cursor?"""
    t = c.peek()
    if t is None or t.kind != "word":
        return False
    up = t.up
    if up in ("ADD", "MODIFY", "RENAME"):
        return True
    if up == "DROP":
        return not (n := c.peek(1)) or not n.is_("IDENTITY")
    if up == "SET":
        return (n := c.peek(1)) is not None and n.is_("UNUSED")
    if up in _DATA_PARTITION_OPS:
        return (n := c.peek(1)) is not None and n.is_("PARTITION", "SUBPARTITION")
    if up == "LOB" or up == "VARRAY":
        return (n := c.peek(1)) is not None and (n.is_punct("(") or n.is_name)
    if up == "XMLTYPE":
        return (n := c.peek(1)) is not None and n.is_("COLUMN")
    if up == "NESTED":
        return (n := c.peek(1)) is not None and n.is_("TABLE")
    return False


def _partition_rows(c: TokenCursor, reg: SchemaRegistry, key: str) -> None:
    """``TRUNCATE``/``EXCHANGE PARTITION``: rows change without row changes in the redo, so the table (and the
    table a partition is exchanged with, if captured) is read again."""
    start = c.i
    _skip_clause(c)
    while c.accept("DROP", "STORAGE") or c.accept("DROP", "ALL", "STORAGE"):  # TRUNCATE's storage clause
        c.take_until(_at_clause)
    words = c.toks[start:c.i]
    why = f"{words[0].up} {words[1].up if len(words) > 1 else ''} changed rows without row changes in the redo"
    reg.outcome.reread[key] = why
    for k in range(len(words) - 2):
        if words[k].is_("WITH") and words[k + 1].is_("TABLE"):
            other, _, _ = _resolve(reg, *TokenCursor(c.sql, words[k + 2:]).qualified_name())
            if reg.known(other):
                reg.put(other, reg.current[other])
                reg.outcome.reread[other] = why


def _skip_clause(c: TokenCursor) -> None:
    c.skip_one()
    c.take_until(_at_clause)


def _alter(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if not cur.accept("TABLE"):
        return  # ALTER INDEX/SEQUENCE/SESSION/SYSTEM/USER/VIEW/...
    cur.accept("IF", "EXISTS")
    key, owner, _table = _resolve(reg, *cur.qualified_name())
    if not reg.known(key):
        return  # not captured: nothing to evolve
    schema = reg.current[key]
    st = _AlterState(list(schema.columns), list(schema.primary_key), list(schema.unique_keys))
    new_name: tuple[str, str, str] | None = None
    while not cur.at_end():
        if cur.accept("ADD"):
            _alter_add(cur, st)
        elif cur.accept("MODIFY"):
            _alter_modify(cur, st)
        elif cur.accept("DROP"):
            _alter_drop(cur, st)
        elif cur.accept("SET", "UNUSED"):
            names = cur.split_group() if cur.peek_punct("(") else None
            if names is None:
                if not cur.accept("COLUMN"):
                    raise SqlParseError("SET UNUSED needs COLUMN or a column list")
                st.drop([cur.name()])
            else:
                st.drop(_key_columns(names))
            cur.take_until(_at_clause)  # CASCADE CONSTRAINTS, ONLINE
        elif cur.accept("RENAME"):
            if cur.accept("COLUMN"):
                old = cur.name()
                if not cur.accept("TO"):
                    raise SqlParseError("RENAME COLUMN needs TO")
                st.rename(old, cur.name())
            elif cur.accept("TO"):
                new_owner, new_table = cur.qualified_name()
                new_name = _resolve(reg, new_owner or owner, new_table)
            elif cur.accept("CONSTRAINT"):
                old = cur.name()
                if not cur.accept("TO"):
                    raise SqlParseError("RENAME CONSTRAINT needs TO")
                new = cur.name()
                if any(k.name == old for k in st.unique):
                    st.unique = [UniqueKey(new, k.columns) if k.name == old else k for k in st.unique]
                    st.changed = True
            elif cur.peek_is("PARTITION", "SUBPARTITION"):
                _skip_clause(cur)
            else:
                raise SqlParseError(f"unsupported RENAME {cur.peek_text()!r}")
        elif cur.peek_is("DISABLE"):
            _alter_disable(cur, st)
        elif (t := cur.peek()) is not None and t.up in _DATA_PARTITION_OPS and _at_clause(cur):
            _partition_rows(cur, reg, key)
        elif (t := cur.peek()) is not None and t.up in _IGNORED_ALTER_WORDS:
            _skip_clause(cur)
        else:
            raise SqlParseError(f"unsupported ALTER TABLE clause at {cur.peek_text()!r}")
    if st.reread:
        reg.outcome.reread[key] = st.reread
    if st.changed:
        reg.put(key, schema.with_columns(_not_null_key(st.columns, st.pk), _check_key(st.columns, st.pk),
                                         _check_unique(st.columns, st.unique)))
    elif key in reg.outcome.reread:
        reg.put(key, schema)  # the same shape: its rows are what changed
    if st.renames:
        reg.outcome.column_renames[key] = st.renames
    if new_name is not None and new_name[0] != key:
        reg.rename(key, *new_name)


@dataclass
class _AlterState:
    columns: list[Column]
    pk: list[str]
    unique: list[UniqueKey]
    changed: bool = False
    reread: str | None = None  # why the table's rows changed without row changes in the redo

    def __post_init__(self) -> None:
        self.renames: dict[str, str] = {}

    def index(self, name: str) -> int:
        for k, c in enumerate(self.columns):
            if c.name == name:
                return k
        return -1

    def add(self, d: _ColumnDef) -> None:
        if self.index(d.name) >= 0:
            raise SqlParseError(f"ADD {d.name!r}: the column exists already")
        self.columns.append(d.column())
        if d.primary_key:
            self.pk = [d.name]
        if d.unique is not None:
            self.unique.append(UniqueKey(d.unique, (d.name,)))
        self.changed = True

    def constraint(self, found: list[str] | UniqueKey | None) -> None:
        if isinstance(found, UniqueKey):
            self.unique.append(found)
            self.changed = True
        elif found is not None:
            self.pk, self.changed = found, True

    def forget_unique(self, name: str | None = None, columns: tuple[str, ...] | None = None) -> None:
        before = self.unique
        if columns is not None:
            self.unique = [k for k in self.unique if k.columns != columns]
        elif name is not None:
            self.unique = _forget_unique(self.unique, name)
        self.changed = self.changed or self.unique != before

    def drop(self, names: list[str]) -> None:
        for name in names:
            k = self.index(name)
            if k < 0:
                raise SqlParseError(f"DROP names unknown column {name!r}")
            del self.columns[k]
            if name in self.pk:
                self.pk = []  # dropping a key column drops the primary key (CASCADE CONSTRAINTS)
            self.unique = [u for u in self.unique if name not in u.columns]  # and its unique constraints
            self.renames = {o: n for o, n in self.renames.items() if n != name}
        self.changed = True

    def rename(self, old: str, new: str) -> None:
        k = self.index(old)
        if k < 0:
            raise SqlParseError(f"RENAME COLUMN names unknown column {old!r}")
        if self.index(new) >= 0:
            raise SqlParseError(f"RENAME COLUMN to an existing column name {new!r}")
        self.columns[k] = replace(self.columns[k], name=new)
        self.pk = [new if p == old else p for p in self.pk]
        self.unique = [UniqueKey(u.name, tuple(new if c == old else c for c in u.columns)) for u in self.unique]
        origin = next((o for o, n in self.renames.items() if n == old), old)
        self.renames.pop(origin, None)
        if origin != new:
            self.renames[origin] = new
        self.changed = True

    def modify(self, d: _ColumnDef) -> None:
        k = self.index(d.name)
        if k < 0:
            raise SqlParseError(f"MODIFY names unknown column {d.name!r}")
        old = self.columns[k]
        col = old
        if d.type_text is not None:
            try:
                col = column_from_oracle(old.name, d.type_text)
            except ValueError as exc:
                raise SqlParseError(str(exc)) from exc
            if old.attrs.get("virtual"):
                col = replace(col, attrs={**col.attrs, "virtual": True})
        nullable = old.nullable if d.nullable is None else d.nullable
        default = d.default if d.default_given else old.default
        self.columns[k] = replace(col, nullable=nullable, default=default)
        if d.primary_key:
            self.pk = [d.name]
        if d.unique is not None:
            self.unique.append(UniqueKey(d.unique, (d.name,)))
        self.changed = True


def _column_tokens(cur: TokenCursor) -> list[Token]:
    """An unparenthesised column definition in ALTER TABLE: up to the next clause."""
    toks = cur.take_until(_at_clause)
    if not toks:
        raise SqlParseError("missing column definition")
    return toks


def _alter_add(cur: TokenCursor, st: _AlterState) -> None:
    cur.accept("IF", "NOT", "EXISTS")
    if cur.peek_punct("("):
        for item in cur.split_group():
            c = TokenCursor(cur.sql, item)
            if c.peek_is(*_CONSTRAINT_START):
                st.constraint(_constraint_item(c))
            else:
                st.add(_parse_column_def(cur.sql, item))
        cur.take_until(_at_clause)  # column properties (LOB storage ...) are separate clauses
    elif cur.peek_is(*_CONSTRAINT_START):
        clause = TokenCursor(cur.sql, cur.take_until(_at_clause))
        st.constraint(_constraint_item(clause))
    elif cur.peek_is("SUPPLEMENTAL", "PARTITION", "SUBPARTITION", "PERIOD", "ATTRIBUTE", "OVERFLOW", "VALUES"):
        _skip_clause(cur)
    else:
        st.add(_parse_column_def(cur.sql, _column_tokens(cur)))


def _alter_modify(cur: TokenCursor, st: _AlterState) -> None:
    if cur.peek_punct("("):
        for item in cur.split_group():
            st.modify(_parse_column_def(cur.sql, item, modify=True))
        cur.take_until(_at_clause)
    elif cur.accept("CONSTRAINT"):
        name = cur.name()
        state = {t.up for t in cur.take_until(_at_clause) if t.kind == "word"}
        if state & {"DISABLE", "NOVALIDATE"}:
            st.forget_unique(name=name)
    elif cur.peek_is("PRIMARY", "UNIQUE", "PARTITION", "SUBPARTITION", "LOB", "DEFAULT", "NESTED",
                     "VARRAY", "COLUMN", "OPAQUE", "CLUSTERING", "SHARING"):
        if cur.accept("UNIQUE"):
            columns = tuple(_key_columns(cur.split_group()))
            state = {t.up for t in cur.take_until(_at_clause) if t.kind == "word"}
            if state & {"DISABLE", "NOVALIDATE"}:
                st.forget_unique(columns=columns)
            return
        _skip_clause(cur)
    else:
        st.modify(_parse_column_def(cur.sql, _column_tokens(cur), modify=True))


def _alter_disable(cur: TokenCursor, st: _AlterState) -> None:
    """``DISABLE [VALIDATE|NOVALIDATE] CONSTRAINT name | UNIQUE (cols) ...``: duplicates may come."""
    cur.accept("DISABLE")
    cur.accept("VALIDATE") or cur.accept("NOVALIDATE")
    if cur.accept("CONSTRAINT"):
        st.forget_unique(name=cur.name())
    elif cur.accept("UNIQUE"):
        st.forget_unique(columns=tuple(_key_columns(cur.split_group())))
    cur.take_until(_at_clause)


def _alter_drop(cur: TokenCursor, st: _AlterState) -> None:
    if cur.accept("COLUMN"):
        st.drop([cur.name()])
        cur.take_until(_at_clause)  # CASCADE CONSTRAINTS, INVALIDATE, CHECKPOINT n, ONLINE
    elif cur.peek_punct("("):
        st.drop(_key_columns(cur.split_group()))
        cur.take_until(_at_clause)
    elif cur.accept("PRIMARY", "KEY"):
        st.pk, st.changed = [], True
        cur.take_until(_at_clause)  # CASCADE, KEEP/DROP INDEX, ONLINE
    elif cur.peek_is("PARTITION", "SUBPARTITION"):
        st.reread = "DROP PARTITION changed rows without row changes in the redo"
        _skip_clause(cur)
    elif cur.accept("CONSTRAINT"):
        # A primary key dropped by name stays the merge key (its columns still identify rows); a
        # unique key is no longer relied on.
        st.forget_unique(name=cur.name())
        cur.take_until(_at_clause)
    elif cur.accept("UNIQUE"):
        st.forget_unique(columns=tuple(_key_columns(cur.split_group())))
        cur.take_until(_at_clause)
    elif cur.peek_is("SUPPLEMENTAL", "PERIOD", "INDEX", "UNUSED", "COLUMNS", "CHECK",
                     "FOREIGN", "CLUSTERING", "ATTRIBUTE"):
        _skip_clause(cur)
    else:
        raise SqlParseError(f"unsupported DROP {cur.peek_text()!r}")


# ---- DROP / TRUNCATE / RENAME / FLASHBACK --------------------------------------------------------


def _drop(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if not cur.accept("TABLE"):
        return  # DROP INDEX/VIEW/SEQUENCE/USER/...
    cur.accept("IF", "EXISTS")
    key, _owner, _table = _resolve(reg, *cur.qualified_name())
    # CASCADE CONSTRAINTS, PURGE, and LogMiner's 'AS "BIN$..."' (the recycle-bin name) follow.
    if reg.known(key):
        reg.drop(key)


def _truncate(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if not cur.accept("TABLE"):
        return  # TRUNCATE CLUSTER
    key, _owner, _table = _resolve(reg, *cur.qualified_name())
    if reg.known(key):
        reg.outcome.truncated.append(key)


def _rename(cur: TokenCursor, reg: SchemaRegistry) -> None:
    old, old_owner, _t = _resolve(reg, *cur.qualified_name())
    if not cur.accept("TO"):
        raise SqlParseError("RENAME needs TO")
    new_owner, new_table = cur.qualified_name()
    new = _resolve(reg, new_owner or old_owner, new_table)
    if not cur.at_end():
        raise SqlParseError(f"unexpected {cur.peek_text()!r} after RENAME")
    if reg.known(old) and new[0] != old:
        reg.rename(old, *new)


def _flashback(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if not cur.accept("TABLE"):
        return  # FLASHBACK DATABASE is not a table change the redo shows
    while not cur.at_end() and not cur.peek_is("TO"):
        cur.next()
    if cur.accept("TO", "BEFORE", "DROP"):
        raise SqlParseError("FLASHBACK TABLE ... TO BEFORE DROP restores a table and its rows without row "
                          "changes in the redo; re-snapshot the table")
    # TO SCN/TIMESTAMP/RESTORE POINT: the rows it changes are logged as DML; no schema change.


# Statements that never change a table's columns.
_NON_SCHEMA_VERBS = {
    "COMMENT", "GRANT", "REVOKE", "ANALYZE", "AUDIT", "NOAUDIT", "ASSOCIATE", "DISASSOCIATE", "PURGE", "LOCK",
    "CALL", "BEGIN", "DECLARE", "ADMINISTER", "EXPLAIN", "SET",
}


def apply_ddl(statement: str, schemas: dict[str, TableSchema], default_schema: str | None) -> DdlOutcome:
    """Apply one Oracle DDL statement to ``schemas`` (not mutated) and return what it changed.

    ``schemas`` is keyed ``"OWNER.TABLE"``; ``default_schema`` owns unqualified names (the DDL's
    parsing schema). Statements that do not shape tables (COMMENT, GRANT, CREATE INDEX/SEQUENCE,
    ALTER INDEX, ANALYZE, ...) and ALTERs of unknown tables come back with ``ignored=True``. A
    table-shaping statement this parser cannot read, or any unrecognised statement, raises
    :class:`DdlParseError` (``position`` is filled in by the caller).
    """
    return apply_statement(statement, ORACLE_DIALECT, SchemaRegistry(schemas, default_schema), {
        "CREATE": _create, "ALTER": _alter, "DROP": _drop, "TRUNCATE": _truncate, "RENAME": _rename,
        "FLASHBACK": _flashback}, _not_schema_changing)


def _not_schema_changing(cur: TokenCursor) -> None:
    """Oracle's log names every statement's kind: one this parser does not know is an error, not ignored."""
    if cur.at_end():
        raise SqlParseError("empty statement")
    if not cur.peek_is(*_NON_SCHEMA_VERBS):
        raise SqlParseError(f"not a DDL statement this parser knows (starts with {cur.peek_text()!r})")
