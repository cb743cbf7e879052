"""The schema registry a source's DDL parser applies one statement to: what the statement did, as a DdlOutcome.

A parser reads the statement and calls :meth:`SchemaRegistry.put`, :meth:`~SchemaRegistry.create`,
:meth:`~SchemaRegistry.drop` and :meth:`~SchemaRegistry.rename` for what it does to each table; it notes rows
changed without row events in ``outcome.reread``, column renames in ``outcome.column_renames``, truncates in
``outcome.truncated`` and tables it cannot shape in ``outcome.unknown``. :meth:`~SchemaRegistry.finish` gives
the :class:`~cdclake.spi.DdlOutcome`: a table's notes follow it through the statement's renames, and names the
statement only passed through (a swap's spare name) are left out.

>>> from cdclake.schema import Column, TableSchema
>>> t = TableSchema("shop", "t", [Column("id", "int", "INT")], ["id"])
>>> reg = SchemaRegistry({"shop.t": t}, "shop", fold_case=True)
>>> reg.outcome.column_renames[reg.resolve(None, "T")] = {"a": "b"}
>>> reg.rename("shop.t", "shop.tmp"); reg.rename("shop.tmp", "shop.t2")
>>> out = reg.finish()
>>> sorted(out.changes), out.renamed_from, out.column_renames
(['shop.t', 'shop.t2'], {'shop.t2': 'shop.t'}, {'shop.t2': {'a': 'b'}})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cdclake.errors import DdlParseError
from cdclake.schema import TableSchema
from cdclake.spi.records import DdlOutcome
from cdclake.sqltokens import SqlDialect, SqlParseError, TokenCursor, tokenize

#: parses the rest of a statement whose first word it is registered under, into the registry
VerbParser = Callable[[TokenCursor, "SchemaRegistry"], None]


class SchemaRegistry:
    """The schemas by ``namespace.table`` key (a database or an owner), and the changes one statement makes.

    ``fold_case``: names match whatever their case (MySQL's table names on most systems); else exactly
    (Oracle's, folded to upper case by the parser where unquoted). ``default_namespace`` owns unqualified names.
    """

    def __init__(self, schemas: dict[str, TableSchema], default_namespace: str | None, *,
                 fold_case: bool = False) -> None:
        self.current: dict[str, TableSchema] = dict(schemas)
        self.default_namespace = default_namespace
        self.fold_case = fold_case
        self.outcome = DdlOutcome()
        self._before = {self._fold(k) for k in schemas}
        self._origin: dict[str, str] = {}  # name now -> its name before the statement

    def _fold(self, key: str) -> str:
        return key.lower() if self.fold_case else key

    def resolve(self, namespace: str | None, table: str) -> str:
        """The key of ``namespace.table`` (the default namespace if None): a known table's own spelling."""
        namespace = namespace or self.default_namespace
        if namespace is None:
            raise SqlParseError(f"table {table!r} is not qualified and there is no default database or schema")
        qualified = f"{namespace}.{table}"
        if self.fold_case:
            return next((k for k in self.current if k.lower() == qualified.lower()), qualified)
        return qualified

    def known(self, key: str) -> bool:
        return key in self.current

    def put(self, key: str, schema: TableSchema) -> None:
        """``key`` has the shape ``schema`` after the statement."""
        self.current[key] = schema
        self.outcome.changes[key] = schema

    def create(self, key: str, schema: TableSchema) -> None:
        """``key`` made anew by the statement: it starts empty, whatever a table of that name held."""
        self.put(key, schema)
        if key not in self.outcome.created:
            self.outcome.created.append(key)

    def drop(self, key: str) -> None:
        del self.current[key]
        self.outcome.changes[key] = None
        self._origin.pop(key, None)

    def rename(self, old: str, new: str, namespace: str | None = None, table: str | None = None) -> None:
        """``old`` is called ``new`` from here on (``namespace``/``table``: ``new``'s parts, when its namespace
        may itself hold a dot); what the statement noted of ``old`` goes with it."""
        if new in self.current:
            raise SqlParseError(f"rename to {new!r}: that table exists already")
        if namespace is None or table is None:
            namespace, _, table = new.partition(".")
        schema = self.current.pop(old)
        origin = self._origin.pop(old, old)
        self.current[new] = schema.renamed(namespace, table)
        self._origin[new] = origin
        self.outcome.changes[new] = self.current[new]
        if self._fold(old) in self._before and old not in self.current:
            self.outcome.changes[old] = None
        self.outcome.renamed_from[new] = origin
        self.outcome.renamed_from.pop(old, None)
        for notes in (self.outcome.column_renames, self.outcome.reread):
            if old in notes:
                notes[new] = notes.pop(old)  # type: ignore[assignment]

    def finish(self) -> DdlOutcome:
        """The statement's :class:`DdlOutcome`, tables by their names after it."""
        out = self.outcome
        for key in list(out.changes):
            if key in self.current:
                out.changes[key] = self.current[key]
            elif self._fold(key) in self._before:
                out.changes[key] = None
            else:
                del out.changes[key]  # existed neither before nor after (a rename's spare name)
        out.renamed_from = {k: v for k, v in out.renamed_from.items() if k != v and k in self.current}
        out.created = [k for k in out.created if k in self.current and k not in out.renamed_from]
        out.reread = {k: v for k, v in out.reread.items() if k in self.current}
        out.column_renames = {k: v for k, v in out.column_renames.items() if k in self.current}
        out.unknown = {k: v for k, v in out.unknown.items() if k not in self.current}
        out.ignored = not out.changes and not out.truncated
        return out


def apply_statement(statement: str, dialect: SqlDialect, registry: SchemaRegistry, verbs: Mapping[str, VerbParser],
                    other: Callable[[TokenCursor], None] | None = None) -> DdlOutcome:
    """Apply one DDL statement to ``registry`` and return what it did: its first word picks the parser of
    ``verbs`` (``CREATE``, ``ALTER``...); a statement none takes goes to ``other`` (which may raise), else it
    changes nothing. A statement that cannot be read raises :class:`DdlParseError` (the caller fills in
    ``position``).

    >>> out = apply_statement("GRANT SELECT ON t TO u", SqlDialect(), SchemaRegistry({}, "db"), {})
    >>> out.ignored
    True
    """
    try:
        cur = TokenCursor(statement, tokenize(statement, dialect))
        parse = next((p for verb, p in verbs.items() if cur.accept(verb)), None)
        if parse is not None:
            parse(cur, registry)
        elif other is not None:
            other(cur)
        return registry.finish()
    except SqlParseError as exc:
        raise DdlParseError(statement, position="?", reason=str(exc)) from exc
