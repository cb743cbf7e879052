"""pgoutput messages -> the engine's log records (:mod:`cdclake.spi.records`), with the schema history.

Logical decoding carries no DDL. pgoutput sends a Relation message (the table's columns, their types and
type modifiers) before a relation's first change in each peek and again after any ALTER TABLE; a Relation
whose columns differ from the schema in force becomes a :class:`~cdclake.spi.records.Ddl` at the start of the
transaction that first shows it, and the rows after it are decoded with its columns. A Relation that repeats
the schema in force (every peek re-sends them; an ALTER of a default re-sends too) changes nothing.

Values stay their output text (the canonical value, :mod:`.types`). An unchanged TOASTed value is not sent:
the column is listed as unavailable and the lake keeps its value. A key change (an Update carrying the old
key) is an update whose before image has the old key; the MERGE deletes the old row and writes the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from cdclake.schema import Column, TableSchema
from cdclake.sources.postgresql.catalog import AddedValue, TypeInfo
from cdclake.sources.postgresql.pgoutput import (
    UNCHANGED_TOAST,
    Begin,
    Commit,
    Decoded,
    Delete,
    Insert,
    Relation,
    Truncate,
    Update,
    Value,
    commit_time,
)
from cdclake.sources.postgresql.position import LsnPosition
from cdclake.sources.postgresql.types import column_from_catalog
from cdclake.spi import records as R
from cdclake.spi.logrows import UNAVAILABLE_KEY
from cdclake.spi.types import FILL

#: TableSchema.attrs: the table's object id (pg_class.oid), which a table dropped and created again does not keep
RELID = "relid"
#: TableSchema.attrs of a partitioned table: its partitions' object ids (sorted), to see one attached or detached
PARTITIONS = "partitions"
#: why the rows of a table the window starts capturing are read from the table: the WAL has only what was written
#: after it was published
NEW_TABLE = ("the table is new to the capture: the rows it had before it was published are not in the WAL")


class ChangeDecoder:
    """Turns one window's messages into log records. ``schemas``/``versions``: the registry at the window's start;
    ``type_info``: OID -> :class:`TypeInfo` (the catalog, cached by the caller); ``captures``: whether a table
    (``schema.table``) is captured; ``floors``: tables whose changes and column changes at or below an ordinal
    are in the lake already."""

    def __init__(self, schemas: dict[str, TableSchema], versions: dict[str, int], next_version: int,
                 type_info: Callable[[int], TypeInfo], captures: Callable[[str], bool],
                 floors: dict[str, int] | None = None, system: str | None = None,
                 attnums: Callable[[str], dict[str, int]] | None = None,
                 added_values: Callable[[str], dict[str, AddedValue]] | None = None,
                 own_relation: Callable[[int], bool | None] | None = None,
                 partition_tree: Callable[[int], list[int] | None] | None = None) -> None:
        self.schemas = dict(schemas)
        self.versions = dict(versions)
        self.next_version = next_version
        self.type_info = type_info
        self.captures = captures
        self.floors = floors or {}
        self.system = system
        self.attnums = attnums or (lambda table: {})
        self.added_values = added_values or (lambda table: {})
        # relid -> whether the publication publishes it under its own name now (None: gone). With
        # publish_via_partition_root pgoutput sends a partition's Relation after its root's (before a change it
        # publishes as the root's): a partition is no table of the capture.
        self.own_relation = own_relation or (lambda relid: True)
        self.partition_tree = partition_tree or (lambda relid: None)
        self._own: dict[int, bool | None] = {}
        self.relations: dict[int, tuple[str, Relation]] = {}
        self._txid = ""
        self._begin_lsn = 0

    def records(self, messages: Iterable[Decoded]) -> Iterator[R.LogRecord]:
        for m in messages:
            if isinstance(m, Begin):
                self._txid, self._begin_lsn = str(m.xid), m.final_lsn
                yield R.Begin(self._txid, LsnPosition(m.final_lsn, self.system))
            elif isinstance(m, Commit):
                yield R.Commit(self._txid, LsnPosition(m.end_lsn, self.system), commit_time(m.commit_time_us))
            elif isinstance(m, Relation):
                ddl = self._relation(m)
                if ddl is not None:
                    yield ddl
            elif isinstance(m, (Insert, Update, Delete)):
                change = self._row(m)
                if change is not None:
                    yield change
            elif isinstance(m, Truncate):
                yield from self._truncate(m)

    def control(self, txid: str, begin_lsn: int, message: Relation | Truncate) -> list[R.LogRecord]:
        """The records of a Relation or Truncate met in transaction ``txid`` (its commit record at ``begin_lsn``):
        what :meth:`records` gives for it, when the row messages are decoded elsewhere (:mod:`.tasks`)."""
        self._txid, self._begin_lsn = txid, begin_lsn
        if isinstance(message, Truncate):
            return list(self._truncate(message))
        ddl = self._relation(message)
        return [] if ddl is None else [ddl]

    def row_form(self, relid: int) -> tuple[str, list[str], int] | None:
        """How a row message of ``relid`` is decoded now: its table, the columns in force, their schema version
        (None: not captured)."""
        table = self.relations.get(relid, ("", None))[0]
        schema = self.schemas.get(table)
        if schema is None:
            return None
        return table, [c.name for c in schema.columns], self.versions.get(table, 0)

    def _truncate(self, m: Truncate) -> Iterator[R.LogRecord]:
        for relid in m.relids:
            table = self.relations.get(relid, ("", None))[0]
            if table in self.schemas:
                yield R.RowChange(self._txid, table, "t", None, None, self.versions.get(table, 0))

    # -- schema --------------------------------------------------------------------------------------------

    def _relation(self, rel: Relation) -> R.Ddl | None:
        table = f"{rel.namespace}.{rel.name}"
        self.relations[rel.relid] = (table, rel)
        if not self.captures(table):
            return None
        old = self.schemas.get(table)
        if old is not None and old.attrs.get(RELID) not in (None, rel.relid):
            old = None  # dropped and created again: a new table
        if old is None:
            if rel.relid not in self._own:
                self._own[rel.relid] = self.own_relation(rel.relid)
            if self._own[rel.relid] is False:
                return None  # a partition (its changes come as its root's), or not published as itself
        new = self._schema(table, rel, old)
        position = LsnPosition(self._begin_lsn, self.system)
        if old is None:
            return self.created(table, new, position)
        if _shape(old) == _shape(new):
            if RELID not in old.attrs:  # (a schema from before object ids were kept)
                self.schemas[table] = replace(old, attrs={**old.attrs, RELID: rel.relid})
            return None
        if self._begin_lsn <= self.floors.get(table, -1):
            self.schemas[table] = new  # the snapshot already has this shape
            return None
        # a rename keeps the column's number (Relation messages carry none: the catalog's numbers, looked up by
        # the new names, against the numbers the schema in force recorded)
        by_number = {c.attrs["attnum"]: c.name for c in old.columns if "attnum" in c.attrs} if old else {}
        renames = {by_number[c.attrs["attnum"]]: c.name for c in new.columns
                   if c.attrs.get("attnum") in by_number and by_number[c.attrs["attnum"]] != c.name}
        reread: dict[str, str] = {}
        new, why = self._existing_rows(table, old, new, renames)
        if why:
            reread[table] = why
        self.schemas[table] = new
        self.versions[table] = self.next_version
        self.next_version += 1
        text = (f"-- {table} now has " + ", ".join(f"{c.name} {c.source_type}" for c in new.columns)
                + (f"; renamed {', '.join(f'{a} to {b}' for a, b in renames.items())}" if renames else ""))
        return R.Ddl(position, text, rel.namespace, {table: new}, None,
                     column_renames={table: renames} if renames else {}, reread=reread)

    def created(self, table: str, schema: TableSchema, position: LsnPosition) -> R.Ddl:
        """``table`` starts being captured at ``position``: a new entry (a created table starts empty), its rows read
        from the table after the window."""
        self.schemas[table] = schema
        self.versions[table] = self.next_version
        self.next_version += 1
        text = f"CREATE TABLE {table} -- captured from here: " + ", ".join(f"{c.name} {c.source_type}"
                                                                           for c in schema.columns)
        return R.Ddl(position, text, schema.database, {table: schema}, None, reread={table: NEW_TABLE})

    def dropped(self, table: str, position: LsnPosition) -> R.Ddl:
        """``table`` is gone from the catalog, with no change after ``position``: its mirror empties."""
        self.schemas.pop(table, None)
        self.versions[table] = self.next_version
        self.next_version += 1
        return R.Ddl(position, f"DROP TABLE {table} -- gone from the catalog", table.split(".", 1)[0], {table: None})

    def repartitioned(self, table: str, tree: list[int], position: LsnPosition, why: str | None) -> R.Ddl:
        """Partitioned ``table`` has the partitions ``tree`` now (as of ``position``): an entry recording them,
        and, with ``why`` (a partition attached or detached: its rows joined or left the table without a row
        change in the WAL), the table is read again after the window."""
        schema = self.schemas[table]
        schema = replace(schema, attrs={**schema.attrs, PARTITIONS: tree})
        self.schemas[table] = schema
        self.versions[table] = self.next_version
        self.next_version += 1
        text = f"-- {table}: {why or 'its partitions recorded'}"
        return R.Ddl(position, text, schema.database, {table: schema}, None, reread={table: why} if why else {})

    def _existing_rows(self, table: str, old: TableSchema, new: TableSchema,
                       renames: dict[str, str]) -> tuple[TableSchema, str | None]:
        """What the change did to the rows that existed before it, which the WAL does not carry: an added column's
        value in them (the missing value PostgreSQL stored, put in the column's FILL), or why they must be read
        again (a column added with a volatile default or retyped: PostgreSQL rewrote the rows, maybe with a
        ``USING`` expression)."""
        before = {renames.get(c.name, c.name): c for c in old.columns}
        columns, reasons = [], []
        values: dict[str, AddedValue] | None = None
        for col in new.columns:
            was = before.get(col.name)
            if was is None:
                values = self.added_values(table) if values is None else values
                added = values.get(col.name)
                if added is not None and added.stored:
                    if added.value is not None:
                        col = replace(col, default=added.default, attrs={**col.attrs, FILL: added.value})
                elif added is None or (added.default is not None and not _null_default(added.default)):
                    reasons.append(f"column {col.name} was added with a default PostgreSQL computed per row "
                                   f"({added.default if added else 'unknown now'}): the rows it rewrote are not "
                                   "in the WAL")
            elif not _same_values(was, col):
                reasons.append(f"column {col.name} changed type from {was.source_type} to {col.source_type}: "
                               "PostgreSQL rewrote the rows (maybe with a USING expression) without logging them")
            columns.append(col)
        schema = TableSchema(new.database, new.table, columns, new.primary_key, new.unique_keys, attrs=new.attrs)
        return schema, "; ".join(reasons) or None

    def _schema(self, table: str, rel: Relation, old: TableSchema | None) -> TableSchema:
        previous = {c.name: c for c in old.columns} if old is not None else {}
        numbers = self.attnums(table)
        columns: list[Column] = []
        for rc in rel.columns:
            info = self.type_info(rc.type_oid)
            typmod = info.domain_typmod if info.domain_typmod is not None else rc.typmod
            was = previous.get(rc.name)
            col = column_from_catalog(rc.name, info.base, rc.type_oid, info.declared(rc.typmod), info.kind, typmod,
                                      not (was.nullable if was is not None else True),
                                      was.default if was is not None else None, "", None, info.category,
                                      # a name the catalog no longer has (renamed since): the column of that name
                                      # in the schema before is this one
                                      numbers.get(rc.name, was.attrs.get("attnum") if was is not None else None))
            columns.append(col)
        names = [c.name for c in columns]
        if old is not None and old.primary_key and all(k in names for k in old.primary_key):
            key = list(old.primary_key)
        elif rel.replica_identity in ("d", "i"):
            key = [rc.name for rc in rel.columns if rc.key]
        else:
            key = []
        schema, name = table.split(".", 1)
        attrs: dict[str, Any] = {RELID: rel.relid}
        # the partitions the schema in force records (a Relation message does not tell them), else the catalog's
        tree = old.attrs.get(PARTITIONS) if old is not None and PARTITIONS in old.attrs \
            else self.partition_tree(rel.relid)
        if tree is not None:
            attrs[PARTITIONS] = tree
        return TableSchema(schema, name, columns, key, attrs=attrs)

    # -- rows ----------------------------------------------------------------------------------------------

    def _row(self, m: Insert | Update | Delete) -> R.RowChange | None:
        form = self.row_form(m.relid)
        if form is None:
            return None
        table, names, version = form
        op, before, after = row_images(m, names)
        return R.RowChange(self._txid, table, op, before, after, version)


def row_images(m: Insert | Update | Delete, names: list[str]) -> tuple[str, dict[str, Any] | None,
                                                                       dict[str, Any] | None]:
    """A row message as (op, before image, after image) with the columns ``names`` (the schema in force)."""
    if isinstance(m, Insert):
        return "c", None, _image(names, m.new)
    if isinstance(m, Update):
        after = _image(names, m.new)
        before = None
        if m.old is not None:
            before = _image(names, m.old, missing_unavailable=m.old_kind == "K")
            if m.old_kind == "O":  # REPLICA IDENTITY FULL: the old row has the value the new one lacks
                after = _fill(after, before)
        return "u", before, after
    return "d", _image(names, m.old, missing_unavailable=m.old_kind == "K"), None


def _image(names: list[str], values: tuple[Value, ...], missing_unavailable: bool = False) -> dict[str, Any]:
    """A row image by column name; unchanged TOASTed values listed under UNAVAILABLE_KEY. A key-only old image
    (``missing_unavailable``) keeps its key columns only: the others are sent as NULL but are not known."""
    out: dict[str, Any] = {}
    unavailable = []
    for name, value in zip(names, values, strict=False):
        if missing_unavailable and value.kind == "n":
            continue
        if value.kind == UNCHANGED_TOAST:
            unavailable.append(name)
        else:
            out[name] = value.text
    if unavailable:
        out[UNAVAILABLE_KEY] = unavailable
    return out


def _fill(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    missing = after.get(UNAVAILABLE_KEY)
    if not missing:
        return after
    out = {k: v for k, v in after.items() if k != UNAVAILABLE_KEY}
    still = []
    for name in missing:
        if name in before:
            out[name] = before[name]
        else:
            still.append(name)
    if still:
        out[UNAVAILABLE_KEY] = still
    return out


def _null_default(expr: str) -> bool:
    """Whether a default expression is a NULL (``NULL::numeric``)."""
    return expr.upper() == "NULL" or expr.upper().startswith("NULL::")


def _same_values(old: Column, new: Column) -> bool:
    """Whether a column's type change leaves every stored value's text as it was (PostgreSQL does not rewrite the
    table): the same type with a longer ``varchar``/``varbit`` or a ``numeric`` of more precision and the same
    scale, or the type modifier dropped."""
    a, b = old.attrs, new.attrs
    if a.get("oid") != b.get("oid"):
        return False
    if a.get("typmod") == b.get("typmod"):
        return True
    old_mod, new_mod = int(a.get("typmod", -1)), int(b.get("typmod", -1))
    if a.get("base") in ("varchar", "varbit"):
        return new_mod == -1 or (old_mod != -1 and new_mod >= old_mod)
    if a.get("base") == "numeric":
        if new_mod == -1:
            return True
        return old_mod != -1 and (new_mod - 4) & 0xFFFF == (old_mod - 4) & 0xFFFF and new_mod >= old_mod
    return False


def _shape(schema: TableSchema) -> list[tuple[str, Any, Any]]:
    return [(c.name, c.attrs.get("oid"), c.attrs.get("typmod")) for c in schema.columns]
