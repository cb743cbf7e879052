"""MySQL / MariaDB DDL: evolve the table schemas with the statements found in the binlog.

:func:`apply_ddl` takes one statement (a binlog QUERY event, or ``SHOW CREATE TABLE`` output for the
snapshot) and returns the schemas it changes. Column types come from
:func:`cdclake.sources.mysql.types.column_from_definition`, so the snapshot's ``SHOW CREATE TABLE``
and the binlog's ``CREATE TABLE`` give identical columns.

Why a small hand-written parser and not sqlglot's grammar: sqlglot 30 (dialect ``mysql``) rejects
spatial column types (``POINT``), ``ALTER TABLE ... ADD (a INT, b INT)``, ``CONVERT TO CHARACTER
SET`` and ``RENAME TABLE`` (falls back to an opaque ``Command``), parses ``SAVEPOINT x`` as an alias,
and re-renders types (losing the exact spelling the type mapper needs); its tokenizer swallows the
rest of a statement after ``RENAME`` as one string. Only the table-shaping statements are parsed
here; they are small and regular, and anything this parser does not understand in them raises
:class:`~cdclake.errors.DdlParseError` instead of being skipped.

The tokenizer and token cursor are shared with the Oracle parser (:mod:`cdclake.sqltokens`);
MySQL's lexical rules are ``MYSQL_DIALECT`` below.

>>> out = apply_ddl("ALTER TABLE t ADD COLUMN b INT AFTER a",
...                 {"shop.t": TableSchema("shop", "t", [column_from_definition("a", "int")])}, "shop")
>>> out.changes["shop.t"].column_names
['a', 'b']
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from cdclake.kit.ddl import SchemaRegistry, apply_statement
from cdclake.schema import Column, TableSchema, UniqueKey
from cdclake.sources.mysql.types import column_from_definition
from cdclake.spi import DdlOutcome
from cdclake.sqltokens import SqlDialect, SqlParseError, Token, TokenCursor, tokenize

__all__ = ["MYSQL_DIALECT", "DdlOutcome", "apply_ddl", "tables_named"]


# ---- tokens ------------------------------------------------------------------------------------

# MySQL's lexical rules for the shared tokenizer. Unquoted names keep their case (lookups of tables and
# columns are case-insensitive below instead).
MYSQL_DIALECT = SqlDialect(
    ident_quote="`",
    string_quotes="'\"",
    backslash_escapes=True,
    word_re=re.compile(r"[A-Za-z0-9_$\u0080-\uffff]+"),
    number_re=re.compile(r"(?:0x[0-9A-Fa-f]+|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"),
    digit_led_names=True,
    hash_comments=True,
    dash_comment_needs_space=True,
    executable_comments=True,
    lenient_comments=True,
    bit_hex_literals=True,
)


# ---- column definitions ------------------------------------------------------------------------

_TYPE_MODIFIERS = {"UNSIGNED", "SIGNED", "ZEROFILL", "BINARY", "ASCII", "UNICODE", "BYTE"}


@dataclass
class _ColumnDef:
    column: Column
    primary_key: bool = False
    position: tuple[str, str | None] | None = None  # ('first', None) | ('after', name)
    charset_explicit: bool = False
    unique: bool = False  # column-level UNIQUE [KEY]


def _skip_expr(cur: TokenCursor) -> None:
    """Skip one default/ON UPDATE expression: literal, signed number, function call or group."""
    tok = cur.peek()
    if tok is None:
        raise SqlParseError("missing expression")
    if tok.kind == "punct" and tok.text == "(":
        cur.skip_group()
        return
    if tok.kind == "punct" and tok.text in "+-":
        cur.next()
        _skip_expr(cur)
        return
    cur.next()
    if tok.kind == "word" and tok.text.startswith("_") and (nxt := cur.peek()) and nxt.kind in ("str", "lit"):
        cur.next()  # charset introducer: _utf8mb4'x'
        return
    nxt = cur.peek()
    if tok.kind == "word" and nxt is not None and nxt.kind == "punct" and nxt.text == "(":
        cur.skip_group()  # function call: current_timestamp(6), uuid()


def _default_text(cur: TokenCursor, first: Token, last: Token) -> str | None:
    if first is last and first.kind == "str":
        return "'" + first.text.replace("\\", "\\\\").replace("'", "''") + "'"
    if first is last and first.is_("NULL"):
        return None
    return cur.text(first, last)


def _parse_column_def(
    sql: str, toks: list[Token], table_charset: str | None, *, in_alter: bool = False
) -> _ColumnDef:
    cur = TokenCursor(sql, toks)
    name = cur.name()
    if cur.at_end():
        raise SqlParseError(f"column {name!r} has no type")
    type_first = cur.next()
    if not type_first.kind == "word":
        raise SqlParseError(f"column {name!r}: expected a type, found {type_first.text!r}")
    serial = type_first.is_("SERIAL")
    # multi-word type names: double precision, national varchar, long varchar, character varying
    while (t := cur.peek()) is not None and t.is_("PRECISION", "VARYING", "VARCHAR", "CHAR", "CHARACTER",
                                                        "VARBINARY", "NCHAR"):
        if t.is_("CHARACTER", "CHAR") and (n2 := cur.peek(1)) is not None and n2.is_("SET"):
            break
        cur.next()
    if (t := cur.peek()) is not None and t.kind == "punct" and t.text == "(":
        cur.skip_group()
    type_last = cur.toks[cur.i - 1]
    extra: list[str] = []
    charset_explicit = False

    def charset_clause() -> bool:
        nonlocal charset_explicit
        if cur.accept("CHARACTER", "SET") or cur.accept("CHAR", "SET") or cur.accept("CHARSET"):
            cur.accept_punct("=")
            extra.append(f"CHARACTER SET {cur.name()}")
            charset_explicit = True
            return True
        if cur.accept("COLLATE"):
            cur.accept_punct("=")
            extra.append(f"COLLATE {cur.name()}")
            charset_explicit = True
            return True
        return False

    while (t := cur.peek()) is not None and (t.up in _TYPE_MODIFIERS or t.is_("CHARACTER", "CHAR", "CHARSET",
                                                                               "COLLATE")):
        if not charset_clause():
            extra.append(cur.next().text)
    nullable, default, pk, json_check, unique = True, None, False, False, False
    generation: str | None = None  # a generated column's expression
    position: tuple[str, str | None] | None = None
    while not cur.at_end():
        if charset_clause():
            continue
        if cur.accept("NOT", "NULL"):
            nullable = False
        elif cur.accept("NULL"):
            nullable = True
        elif cur.accept("DEFAULT"):
            first = cur.peek()
            _skip_expr(cur)
            assert first is not None
            default = _default_text(cur, first, cur.toks[cur.i - 1])
        elif cur.accept("ON", "UPDATE"):
            _skip_expr(cur)
        elif cur.accept("AUTO_INCREMENT") or cur.accept("INVISIBLE") or cur.accept("VISIBLE"):
            pass
        elif cur.accept("PRIMARY", "KEY") or cur.accept("KEY"):
            pk, nullable = True, False
        elif cur.accept("UNIQUE"):
            cur.accept("KEY")
            unique = True
        elif cur.accept_any("COMMENT", "COLUMN_FORMAT", "STORAGE", "SRID"):
            cur.next()
        elif cur.accept("COMPRESSED"):
            if cur.accept_punct("="):
                cur.next()
        elif cur.accept("CONSTRAINT") or cur.accept("CHECK"):
            if cur.toks[cur.i - 1].is_("CONSTRAINT"):
                if (t := cur.peek()) is not None and not t.is_("CHECK"):
                    cur.name()
                if not cur.accept("CHECK"):
                    raise SqlParseError(f"column {name!r}: expected CHECK after CONSTRAINT")
            start = cur.i
            cur.skip_group()
            body = [t.text.lower() if t.kind == "word" else t.text for t in cur.toks[start:cur.i]]
            if body == ["(", "json_valid", "(", name, ")", ")"]:
                json_check = True  # how MariaDB's SHOW CREATE TABLE spells a JSON column
        elif cur.accept("REFERENCES"):
            cur.qualified_name()
            if (t := cur.peek()) is not None and t.kind == "punct" and t.text == "(":
                cur.skip_group()
            while True:
                if cur.accept("MATCH"):
                    cur.next()
                elif cur.accept("ON", "DELETE") or cur.accept("ON", "UPDATE"):
                    if not cur.accept_any("SET NULL", "SET DEFAULT", "NO ACTION"):
                        cur.next()
                else:
                    break
        elif cur.accept("GENERATED", "ALWAYS"):
            pass  # AS (expr) follows
        elif cur.accept("AS"):
            if cur.accept("ROW"):  # MariaDB system-versioning: AS ROW START / AS ROW END
                cur.next()
            else:
                start = cur.i
                cur.skip_group()
                generation = cur.text(cur.toks[start], cur.toks[cur.i - 1])
        elif cur.accept_any(
            "VIRTUAL", "STORED", "PERSISTENT", "WITH SYSTEM VERSIONING", "WITHOUT SYSTEM VERSIONING"
        ):
            pass
        elif cur.accept("ENGINE_ATTRIBUTE") or cur.accept("SECONDARY_ENGINE_ATTRIBUTE"):
            cur.accept_punct("=")
            cur.next()
        elif in_alter and cur.accept("FIRST"):
            position = ("first", None)
        elif in_alter and cur.accept("AFTER"):
            position = ("after", cur.name())
        else:
            raise SqlParseError(f"column {name!r}: unexpected {cur.peek_text()!r}")
    if serial:
        type_text, nullable = "bigint unsigned", False
    else:
        type_text = " ".join([cur.text(type_first, type_last), *extra])
    try:
        col = column_from_definition(name, type_text, nullable, default, charset=table_charset)
        if json_check and col.attrs.get("base") == "longtext":
            col = column_from_definition(
                name, "json", nullable=nullable, default=default, charset=col.attrs.get("charset")
            )
    except ValueError as exc:
        raise SqlParseError(str(exc)) from exc
    if generation is not None:
        col.attrs.update(generated=True, generation=generation)
    return _ColumnDef(col, pk, position, charset_explicit, unique)


def _key_columns(items: list[list[Token]]) -> list[str]:
    """Names in an index column list ``(a, b(10) DESC)``."""
    names = []
    for item in items:
        if not item or not item[0].is_name:
            raise SqlParseError("unsupported index part (expression index on a primary key?)")
        names.append(item[0].text)
    return names


def _unique_index(cur: TokenCursor, symbol: str | None) -> tuple[str | None, list[str], bool]:
    """After ``UNIQUE``: ``[KEY|INDEX] [name] [USING t] (parts) [options]`` -> name (the index name,
    else the constraint symbol), columns, and whether a part is a prefix (``name(10)``)."""
    cur.accept("KEY") or cur.accept("INDEX")
    cur.accept("IF", "NOT", "EXISTS")  # then a key of that name stays as it is (_Keys.add)
    name = symbol
    while (t := cur.peek()) is not None and not (t.kind == "punct" and t.text == "("):
        if cur.accept("USING"):
            cur.next()
        else:
            name = cur.name()
    items = cur.split_group()
    prefix = any(len(item) > 1 and item[1].kind == "punct" and item[1].text == "(" for item in items)
    cur.i = len(cur.toks)  # index options (COMMENT, USING, INVISIBLE...) do not matter here
    return name, _key_columns(items), prefix


class _Keys:
    """A table's unique keys while a statement changes them (names as MySQL gives them)."""

    def __init__(self, keys: list[UniqueKey]) -> None:
        self.keys = list(keys)

    def add(self, name: str | None, columns: list[str], prefix: bool = False) -> None:
        taken = {k.name.lower() for k in self.keys} | {"primary"}
        if name is not None and name.lower() in taken:
            return  # ADD UNIQUE ... IF NOT EXISTS of a key that exists (the server refuses it otherwise)
        if name is None:  # MySQL names an unnamed index after its first column: a, a_2, a_3...
            name, n = columns[0], 2
            while name.lower() in taken:
                name, n = f"{columns[0]}_{n}", n + 1
        self.keys.append(UniqueKey(name, tuple(columns), prefix))

    def drop(self, name: str) -> bool:
        """Drop the unique key ``name``; False if there is none (a plain index, a foreign key...)."""
        kept = [k for k in self.keys if k.name.lower() != name.lower()]
        dropped, self.keys = len(kept) != len(self.keys), kept
        return dropped

    def rename_index(self, old: str, new: str) -> bool:
        if not any(k.name.lower() == old.lower() for k in self.keys):
            return False
        self.keys = [UniqueKey(new, k.columns, k.prefix) if k.name.lower() == old.lower() else k for k in self.keys]
        return True

    def rename_column(self, old: str, new: str) -> None:
        self.keys = [UniqueKey(k.name, tuple(new if c.lower() == old.lower() else c for c in k.columns), k.prefix)
                     for k in self.keys]


# ---- statement handlers -------------------------------------------------------------------------


def _create_table(cur: TokenCursor, reg: SchemaRegistry) -> None:
    or_replace = cur.accept("OR", "REPLACE")
    if cur.accept("TEMPORARY"):
        return  # session-local, never row-logged
    cur.accept("ONLINE") or cur.accept("OFFLINE")
    if cur.accept("UNIQUE"):
        _create_unique_index(cur, reg, or_replace)
        return
    if not cur.accept("TABLE"):
        return  # CREATE DATABASE/INDEX/VIEW/USER/... do not shape tables
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    db, table = cur.qualified_name()
    key = reg.resolve(db, table)
    if reg.known(key) and if_not_exists and not or_replace:
        return
    name_db, _, name_table = key.partition(".")
    # CREATE TABLE a LIKE b  /  CREATE TABLE a (LIKE b)
    like = cur.accept("LIKE")
    if not like and (t := cur.peek()) is not None and t.kind == "punct" and t.text == "(":
        t2 = cur.peek(1)
        if t2 is not None and t2.is_("LIKE"):
            cur.next()
            cur.next()
            like = True
    if like:
        src = reg.resolve(*cur.qualified_name())
        if not reg.known(src):
            # The copied shape is not in the history (the table is not captured): the new table needs
            # a snapshot of its own.
            raise SqlParseError(f"CREATE TABLE ... LIKE {src}: {src} is not a captured table, so its columns "
                                "are not known")
        reg.create(key, reg.current[src].renamed(name_db, name_table))
        return
    t = cur.peek()
    if t is None or not (t.kind == "punct" and t.text == "("):
        raise SqlParseError("CREATE TABLE without a column list (CREATE ... SELECT) is not supported")
    elements = cur.split_group()
    table_charset = _table_charset(cur.toks[cur.i :])
    columns: list[Column] = []
    pk: list[str] = []
    keys = _Keys([])
    json_checks: set[str] = set()
    for item in elements:
        head = TokenCursor(cur.sql, item)
        symbol = None
        if head.accept("CONSTRAINT"):
            nxt = head.peek()
            if nxt is not None and not nxt.is_("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                symbol = head.name()
        if head.accept("UNIQUE"):
            keys.add(*_unique_index(head, symbol))
        elif head.accept("PRIMARY", "KEY"):
            while (t := head.peek()) is not None and not (t.kind == "punct" and t.text == "("):
                head.next()  # index name, USING BTREE
            pk = _key_columns(head.split_group())
        elif head.accept("CHECK"):
            body = [t.text.lower() if t.kind == "word" else t.text for t in item[1:]]
            if len(body) == 6 and body[:3] == ["(", "json_valid", "("] and body[4:] == [")", ")"]:
                json_checks.add(body[3].lower())
        elif head.peek_is(
            "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "PERIOD"
        ):
            continue
        else:
            cdef = _parse_column_def(cur.sql, item, table_charset)
            columns.append(cdef.column)
            if cdef.primary_key:
                pk = [cdef.column.name]
            if cdef.unique:
                keys.add(None, [cdef.column.name])
    columns = [
        column_from_definition(c.name, "json", c.nullable, c.default, c.attrs.get("charset"))
        if c.name.lower() in json_checks and c.attrs.get("base") == "longtext"
        else c
        for c in columns
    ]
    if not columns:
        raise SqlParseError("CREATE TABLE has no columns")
    reg.create(key, TableSchema(name_db, name_table, columns, _pk_spelling(columns, pk),
                             _key_spelling(columns, keys.keys)))


def _create_unique_index(cur: TokenCursor, reg: SchemaRegistry, or_replace: bool) -> None:
    """``CREATE UNIQUE INDEX [IF NOT EXISTS] name [USING t] ON tbl (parts)``: a unique key."""
    if not cur.accept("INDEX"):
        return
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    name = cur.name()
    if cur.accept("USING"):
        cur.next()
    if not cur.accept("ON"):
        raise SqlParseError("CREATE UNIQUE INDEX needs ON")
    key = reg.resolve(*cur.qualified_name())
    if not reg.known(key):
        return
    schema = reg.current[key]
    keys = _Keys(schema.unique_keys)
    if any(k.name.lower() == name.lower() for k in keys.keys):
        if if_not_exists and not or_replace:
            return
        keys.drop(name)
    _, columns, prefix = _unique_index(cur, name)
    keys.add(name, columns, prefix)
    reg.put(key, schema.with_columns(schema.columns, None, _key_spelling(schema.columns, keys.keys)))


def _drop_index(cur: TokenCursor, reg: SchemaRegistry) -> None:
    """``DROP INDEX [IF EXISTS] name ON tbl``: a unique key may go."""
    cur.accept("IF", "EXISTS")
    name = cur.name()
    if not cur.accept("ON"):
        return
    key = reg.resolve(*cur.qualified_name())
    if reg.known(key) and any(k.name.lower() == name.lower() for k in reg.current[key].unique_keys):
        schema = reg.current[key]
        keys = _Keys(schema.unique_keys)
        keys.drop(name)
        reg.put(key, schema.with_columns(schema.columns, None, keys.keys))


def _table_charset(toks: list[Token]) -> str | None:
    """DEFAULT CHARSET / COLLATE from the table options after the column list."""
    charset: str | None = None
    for k, t in enumerate(toks):
        nxt = toks[k + 1 : k + 4]
        if t.is_("CHARSET") or (t.is_("CHARACTER") and nxt and nxt[0].is_("SET")):
            rest = nxt[1:] if t.is_("CHARACTER") else nxt
            rest = rest[1:] if rest and rest[0].text == "=" else rest
            if rest:
                charset = rest[0].text.lower()
        elif t.is_("COLLATE") and charset is None:
            rest = nxt[1:] if nxt and nxt[0].text == "=" else nxt
            if rest:
                charset = rest[0].text.lower().split("_", 1)[0]
    return charset


def _pk_spelling(columns: list[Column], pk: list[str]) -> list[str]:
    by_lower = {c.name.lower(): c.name for c in columns}
    out = []
    for name in pk:
        if name.lower() not in by_lower:
            raise SqlParseError(f"primary key names unknown column {name!r}")
        out.append(by_lower[name.lower()])
    return out


def _key_spelling(columns: list[Column], keys: list[UniqueKey]) -> list[UniqueKey]:
    """Unique keys with their columns spelled as the table's columns; keys naming unknown columns
    (an expression index) are left out."""
    by_lower = {c.name.lower(): c.name for c in columns}
    return [UniqueKey(k.name, tuple(by_lower[c.lower()] for c in k.columns), k.prefix) for k in keys
            if k.columns and all(c.lower() in by_lower for c in k.columns)]


def _guess_table_charset(schema: TableSchema, old: Column | None) -> str:
    """The table's default charset is not kept in TableSchema: take the replaced column's charset,
    else the most common charset among the table's text columns, else utf8mb4."""
    if old is not None and old.attrs.get("charset") not in (None, "binary"):
        return str(old.attrs["charset"])
    counts = Counter(
        c.attrs.get("charset") for c in schema.columns if c.attrs.get("charset") not in (None, "binary")
        and c.spark_type == "STRING"
    )
    return str(counts.most_common(1)[0][0]) if counts else "utf8mb4"


def _index_of(columns: list[Column], name: str) -> int:
    for k, c in enumerate(columns):
        if c.name.lower() == name.lower():
            return k
    return -1


def _place(columns: list[Column], col: Column, position: tuple[str, str | None] | None, at: int) -> None:
    if position is None:
        columns.insert(at, col)
    elif position[0] == "first":
        columns.insert(0, col)
    else:
        k = _index_of(columns, position[1] or "")
        if k < 0:
            raise SqlParseError(f"AFTER names unknown column {position[1]!r}")
        columns.insert(k + 1, col)


def _alter_table(cur: TokenCursor, reg: SchemaRegistry) -> None:
    cur.accept("ONLINE")
    cur.accept("IGNORE")
    if not cur.accept("TABLE"):
        return  # ALTER DATABASE/USER/VIEW/EVENT/...
    cur.accept("IF", "EXISTS")
    key = reg.resolve(*cur.qualified_name())
    if not reg.known(key):
        return  # not captured: nothing to evolve
    if cur.accept("WAIT"):
        cur.next()
    cur.accept("NOWAIT")
    schema = reg.current[key]
    columns = list(schema.columns)
    pk = list(schema.primary_key)
    keys = _Keys(schema.unique_keys)
    new_key: str | None = None
    renames: dict[str, str] = {}
    changed = False
    # the partition options end the statement, after the last clause and without a comma: they move rows
    # between partitions but change none (PARTITION BY, REMOVE PARTITIONING)
    depth = 0
    for k in range(cur.i, len(cur.toks)):
        tok = cur.toks[k]
        depth += 1 if tok.is_punct("(") else -1 if tok.is_punct(")") else 0
        if depth == 0 and k > cur.i and not cur.toks[k - 1].is_punct(",") and (
                (tok.is_("PARTITION") and k + 1 < len(cur.toks) and cur.toks[k + 1].is_("BY"))
                or (tok.is_("REMOVE") and k + 1 < len(cur.toks) and cur.toks[k + 1].is_("PARTITIONING"))):
            cur.toks = cur.toks[:k]
            break
    partition_names = False  # after DROP/TRUNCATE/ANALYZE... PARTITION a: the specs ", b" name more partitions
    for spec in cur.split_rest():
        c = TokenCursor(cur.sql, spec)
        if partition_names and len(spec) == 1 and spec[0].kind in ("word", "ident"):
            continue
        partition_names = len(spec) > 1 and spec[1].is_("PARTITION")
        if c.accept("ADD"):
            if c.accept("COLUMN") or _starts_column(c):
                if_not_exists = c.accept("IF", "NOT", "EXISTS")
                t = c.peek()
                if t is not None and t.kind == "punct" and t.text == "(":
                    defs = [_parse_column_def(cur.sql, item, None, in_alter=True) for item in c.split_group()]
                    c.i = len(c.toks)
                else:
                    defs = [_parse_column_def(cur.sql, c.toks[c.i :], None, in_alter=True)]
                    c.i = len(c.toks)
                for d in defs:
                    col = _with_table_charset(d, schema, None)
                    if _index_of(columns, col.name) >= 0:
                        if if_not_exists:
                            continue
                        raise SqlParseError(f"ADD COLUMN {col.name!r}: the column exists already")
                    _place(columns, col, d.position, len(columns))
                    if d.primary_key:
                        pk = [col.name]
                    if d.unique:
                        keys.add(None, [col.name])
                changed = True
            else:
                symbol = None
                if c.accept("CONSTRAINT"):
                    t = c.peek()
                    if t is not None and not t.is_("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                        symbol = c.name()
                if c.accept("UNIQUE"):
                    keys.add(*_unique_index(c, symbol))
                    changed = True
                elif c.accept("PRIMARY", "KEY"):
                    while (t := c.peek()) is not None and not (t.kind == "punct" and t.text == "("):
                        c.next()
                    pk = _pk_spelling(columns, _key_columns(c.split_group()))
                    columns = [replace(col, nullable=False) if col.name in pk else col for col in columns]
                    changed = True
                elif c.peek_is(
                    "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PARTITION",
                    "PERIOD", "SYSTEM",
                ):
                    pass
                else:
                    raise SqlParseError(f"unsupported ADD clause {cur.text(spec[0], spec[-1])!r}")
        elif c.accept("DROP"):
            if c.accept("PRIMARY", "KEY"):
                pk, changed = [], True
            elif c.accept("INDEX") or c.accept("KEY") or c.accept("CONSTRAINT"):
                c.accept("IF", "EXISTS")
                changed = keys.drop(c.name()) or changed
            elif c.peek_is("FOREIGN", "CHECK", "SYSTEM", "PERIOD"):
                pass
            elif c.accept("PARTITION"):
                reg.outcome.reread[key] = "DROP PARTITION changed rows without row events"
                c.i = len(c.toks)
            else:
                c.accept("COLUMN")
                if_exists = c.accept("IF", "EXISTS")
                name = c.name()
                k = _index_of(columns, name)
                if k < 0:
                    if if_exists:
                        continue
                    raise SqlParseError(f"DROP COLUMN names unknown column {name!r}")
                dropped = columns.pop(k).name
                pk = [p for p in pk if p != dropped]
                c.accept("RESTRICT") or c.accept("CASCADE")
                changed = True
        elif c.accept("MODIFY") or c.accept("CHANGE"):
            is_change = spec[0].is_("CHANGE")
            c.accept("COLUMN")
            if_exists = c.accept("IF", "EXISTS")
            old_name = c.name() if is_change else c.peek_text()
            d = _parse_column_def(cur.sql, c.toks[c.i :], None, in_alter=True)
            c.i = len(c.toks)
            k = _index_of(columns, old_name)
            if k < 0:
                if if_exists:
                    continue
                raise SqlParseError(f"{spec[0].up} names unknown column {old_name!r}")
            old = columns.pop(k)
            col = _with_table_charset(d, schema, old)
            if _index_of(columns, col.name) >= 0:
                raise SqlParseError(f"CHANGE to an existing column name {col.name!r}")
            _place(columns, col, d.position, k)
            if col.name != old.name:
                renames[old.name] = col.name
                keys.rename_column(old.name, col.name)
            pk = [col.name if p == old.name else p for p in pk]
            if d.primary_key:
                pk = [col.name]
            if d.unique:
                keys.add(None, [col.name])
            changed = True
        elif c.accept("RENAME"):
            if c.accept("COLUMN"):
                old_name = c.name()
                if not c.accept("TO"):
                    raise SqlParseError("RENAME COLUMN needs TO")
                new_name = c.name()
                k = _index_of(columns, old_name)
                if k < 0:
                    raise SqlParseError(f"RENAME COLUMN names unknown column {old_name!r}")
                old = columns[k]
                columns[k] = replace(old, name=new_name)
                renames[old.name] = new_name
                keys.rename_column(old.name, new_name)
                pk = [new_name if p == old.name else p for p in pk]
                changed = True
            elif c.accept("INDEX") or c.accept("KEY"):
                old_index = c.name()
                if not c.accept("TO"):
                    raise SqlParseError("RENAME INDEX needs TO")
                changed = keys.rename_index(old_index, c.name()) or changed
            else:
                c.accept("TO") or c.accept("AS")
                new_key = reg.resolve(*c.qualified_name())
        elif c.accept("ALTER"):
            if c.peek_is("INDEX", "KEY", "CONSTRAINT", "CHECK"):
                c.i = len(c.toks)
                continue
            c.accept("COLUMN")
            c.accept("IF", "EXISTS")
            name = c.name()
            k = _index_of(columns, name)
            if k < 0:
                raise SqlParseError(f"ALTER COLUMN names unknown column {name!r}")
            if c.accept("SET", "DEFAULT"):
                first = c.peek()
                _skip_expr(c)
                assert first is not None
                columns[k] = replace(columns[k], default=_default_text(c, first, c.toks[c.i - 1]))
            elif c.accept("DROP", "DEFAULT"):
                columns[k] = replace(columns[k], default=None)
            elif c.accept("SET", "VISIBLE") or c.accept("SET", "INVISIBLE"):
                pass
            else:
                raise SqlParseError(f"unsupported ALTER COLUMN clause {cur.text(spec[0], spec[-1])!r}")
            changed = True
        elif c.accept("CONVERT", "TO"):
            # Text columns take the new charset (what the binlog decoder needs); types stay STRING.
            if not (c.accept("CHARACTER", "SET") or c.accept("CHARSET")):
                raise SqlParseError("CONVERT TO needs CHARACTER SET")
            charset = c.name().lower()
            if charset != "default":
                columns = [
                    replace(col, attrs={**col.attrs, "charset": charset})
                    if col.spark_type == "STRING" and col.attrs.get("charset") not in (None, "binary")
                    else col
                    for col in columns
                ]
                changed = True
        elif (t := c.peek()) is not None and t.up in _PARTITION_DATA_OPS and (
                (p := c.peek(1)) is not None and p.is_("PARTITION", "TABLE")):
            _partition_rows(c, reg, key, t.up)
        elif (t := c.peek()) is not None and t.up in _IGNORED_ALTER_WORDS:
            pass  # table options, algorithm/lock, partitioning, keys, tablespaces
        else:
            raise SqlParseError(f"unsupported ALTER TABLE clause {cur.text(spec[0], spec[-1])!r}")
        if not c.at_end() and _strict_spec(c, spec):
            raise SqlParseError(f"unexpected {c.peek_text()!r} in {cur.text(spec[0], spec[-1])!r}")
    if changed:
        reg.put(key, schema.with_columns(columns, _pk_spelling(columns, pk), keys.keys))
    elif key in reg.outcome.reread:
        reg.put(key, schema)  # the same shape: its rows are what changed
    if new_key is not None and new_key != key:
        reg.rename(key, new_key)
    if renames:
        # Chained renames in one statement (a->b, b->c) collapse to a->c.
        final: dict[str, str] = {}
        for old, new in renames.items():
            origin = next((o for o, n in final.items() if n == old), old)
            final.pop(origin, None)
            final[origin] = new
        reg.outcome.column_renames[new_key or key] = final


def _strict_spec(c: TokenCursor, spec: list[Token]) -> bool:
    """Specs whose whole text this parser reads (leftover tokens there mean a misread)."""
    head = " ".join(t.up for t in spec[:2])
    if head.startswith(("DROP FOREIGN", "DROP CHECK", "DROP SYSTEM", "DROP PERIOD")):
        return False
    return spec[0].up in ("DROP", "RENAME")


def _partition_rows(c: TokenCursor, reg: SchemaRegistry, key: str, op: str) -> None:
    """A partition statement that moves rows without row events: every table whose rows it changes is read
    again (``TRUNCATE``/``EXCHANGE PARTITION``, and MariaDB's ``CONVERT PARTITION p TO TABLE t`` /
    ``CONVERT TABLE t TO PARTITION p``, which make and drop a table)."""
    what = c.peek(1)
    why = f"{op} {what.up if what is not None else ''} changed rows without row events"
    reg.outcome.reread[key] = why
    c.next()
    if c.accept("PARTITION"):
        c.name()
        if op == "CONVERT" and c.accept("TO"):
            c.accept("TABLE")
            other = reg.resolve(*c.qualified_name())
            reg.create(other, reg.current[key].renamed(*other.split(".", 1)))
            reg.outcome.reread[other] = why
        elif op == "EXCHANGE" and c.accept("WITH", "TABLE"):
            other = reg.resolve(*c.qualified_name())
            if reg.known(other):
                reg.put(other, reg.current[other])
                reg.outcome.reread[other] = why
    elif op == "CONVERT" and c.accept("TABLE"):
        other = reg.resolve(*c.qualified_name())
        if reg.known(other):
            reg.drop(other)
    c.i = len(c.toks)


_PARTITION_DATA_OPS = {"TRUNCATE", "EXCHANGE", "CONVERT"}
_IGNORED_ALTER_WORDS = {
    "ENGINE", "ALGORITHM", "LOCK", "FORCE", "AUTO_INCREMENT", "COMMENT", "ROW_FORMAT", "KEY_BLOCK_SIZE",
    "DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "ORDER", "PARTITION", "REMOVE", "COALESCE", "REORGANIZE",
    "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR", "DISCARD", "IMPORT", "ENABLE", "DISABLE",
    "AVG_ROW_LENGTH", "CHECKSUM", "COMPRESSION", "CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE",
    "ENCRYPTED", "ENCRYPTION", "ENCRYPTION_KEY_ID", "INSERT_METHOD", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS",
    "PAGE_CHECKSUM", "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "PASSWORD", "STATS_AUTO_RECALC",
    "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TABLESPACE", "TRANSACTIONAL", "UNION", "IETF_QUOTES",
    "SEQUENCE", "WITH", "WITHOUT", "VALIDATION", "UPGRADE", "SECONDARY_ENGINE", "SECONDARY_LOAD",
    "SECONDARY_UNLOAD", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "STORAGE", "AUTOEXTEND_SIZE",
}


def _starts_column(c: TokenCursor) -> bool:
    """After ADD without COLUMN: a column definition (or a parenthesised list of them)?"""
    t = c.peek()
    if t is None:
        return False
    if t.kind == "punct" and t.text == "(":
        return True
    if t.is_("IF"):
        return True
    return t.is_name and not t.is_(
        "INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "CONSTRAINT", "PRIMARY",
        "PARTITION", "PERIOD", "SYSTEM",
    )


_CHARSET_BASES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}


def _with_table_charset(d: _ColumnDef, schema: TableSchema, old: Column | None) -> Column:
    """A text column added/changed by ALTER without its own charset takes the table default."""
    col = d.column
    if d.charset_explicit or col.attrs.get("base") not in _CHARSET_BASES:
        return col
    return replace(col, attrs={**col.attrs, "charset": _guess_table_charset(schema, old)})


def _drop_table(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if cur.accept("TEMPORARY"):
        return
    cur.accept("ONLINE") or cur.accept("OFFLINE")
    if cur.accept("INDEX"):
        _drop_index(cur, reg)
        return
    if cur.accept("DATABASE") or cur.accept("SCHEMA"):
        cur.accept("IF", "EXISTS")
        db = cur.name().lower()
        for key in [k for k in reg.current if k.partition(".")[0].lower() == db]:
            reg.drop(key)
        return
    if not cur.accept("TABLE"):
        return  # DROP DATABASE/VIEW/...: no table schema change we track
    cur.accept("IF", "EXISTS")
    while True:
        key = reg.resolve(*cur.qualified_name())
        if reg.known(key):
            reg.drop(key)
        if not cur.accept_punct(","):
            break
    cur.accept("RESTRICT") or cur.accept("CASCADE")


def _rename_table(cur: TokenCursor, reg: SchemaRegistry) -> None:
    if not cur.accept("TABLE"):
        return  # RENAME USER
    while True:
        old = reg.resolve(*cur.qualified_name())
        if cur.accept("WAIT"):
            cur.next()
        cur.accept("NOWAIT")
        if not cur.accept("TO"):
            raise SqlParseError("RENAME TABLE needs TO")
        new = reg.resolve(*cur.qualified_name())
        if reg.known(old):
            reg.rename(old, new)
        else:  # e.g. an online schema-change tool's copy whose name include_tables does not match
            reg.outcome.unknown[new] = (f"it was renamed from {old}, which cdclake does not capture, so its columns "
                                        "and rows are not known")
        if not cur.accept_punct(","):
            break


def _truncate(cur: TokenCursor, reg: SchemaRegistry) -> None:
    cur.accept("TABLE")
    key = reg.resolve(*cur.qualified_name())
    if reg.known(key):
        reg.outcome.truncated.append(key)


def tables_named(statement: str, default_database: str | None, schemas: dict[str, TableSchema]) -> list[str]:
    """The tables a table-shaping statement changes, read from its head alone (the rest may not
    parse): ALTER/TRUNCATE/CREATE TABLE's table, DROP TABLE's list, RENAME TABLE's pairs, the table
    of CREATE/DROP INDEX, and a DROP DATABASE's captured tables. Those a statement cdclake cannot
    apply may have changed (to park them).

    >>> s = {"shop.t": TableSchema("shop", "t", [column_from_definition("a", "int")])}
    >>> tables_named("ALTER TABLE `t` FROB x", "shop", s), tables_named("CREATE TABLE shop.n (x WEIRD)", None, s)
    (['shop.t'], ['shop.n'])
    """
    try:
        toks = tokenize(statement, MYSQL_DIALECT)
    except SqlParseError:
        return []
    cur = TokenCursor(statement, toks)
    known = {k.lower(): k for k in schemas}
    found: list[str] = []

    def take() -> None:
        db, table = cur.qualified_name()
        db = db or default_database
        if db is not None:
            key = f"{db}.{table}"
            key = known.get(key.lower(), key)
            if key not in found:
                found.append(key)


    try:
        verb = cur.next().up if not cur.at_end() else ""
        for word in ("ONLINE", "OFFLINE", "IGNORE", "OR", "REPLACE", "TEMPORARY", "UNIQUE", "FULLTEXT", "SPATIAL"):
            cur.accept(word)
        if cur.accept("DATABASE") or cur.accept("SCHEMA"):
            cur.accept("IF", "EXISTS")
            db = cur.name().lower()
            return [k for k in schemas if k.partition(".")[0].lower() == db] if verb == "DROP" else []
        if cur.accept("INDEX"):
            while not cur.at_end() and not cur.accept("ON"):
                cur.next()
            take()
        elif verb == "RENAME" and cur.accept("TABLE"):
            while True:
                take()
                cur.accept("TO")
                take()
                if not cur.accept_punct(","):
                    break
        elif cur.accept("TABLE") or verb == "TRUNCATE":
            cur.accept("IF", "NOT", "EXISTS") or cur.accept("IF", "EXISTS")
            take()
            while verb == "DROP" and cur.accept_punct(","):
                take()
            if verb == "ALTER":  # ... RENAME [TO|AS] new, anywhere among the clauses
                rest = [t.up for t in toks[cur.i:]]
                for k, word in enumerate(rest):
                    if word == "RENAME" and k + 1 < len(rest) and rest[k + 1] not in ("COLUMN", "INDEX", "KEY"):
                        cur.i += k + 1
                        cur.accept("TO") or cur.accept("AS")
                        take()
                        break
    except SqlParseError:
        pass
    return found


def apply_ddl(statement: str, schemas: dict[str, TableSchema], default_database: str | None) -> DdlOutcome:
    """Apply one DDL statement to ``schemas`` (not mutated) and return what it changed.

    Statements that do not shape tables (GRANT, SET, CREATE DATABASE/INDEX/VIEW, SAVEPOINT, ...)
    and ALTERs of unknown tables come back with ``ignored=True``. A table-shaping statement this
    parser cannot read raises :class:`DdlParseError` (``position`` is filled in by the caller).
    """
    return apply_statement(statement, MYSQL_DIALECT, SchemaRegistry(schemas, default_database, fold_case=True), {
        "CREATE": _create_table, "ALTER": _alter_table, "DROP": _drop_table, "RENAME": _rename_table,
        "TRUNCATE": _truncate})
