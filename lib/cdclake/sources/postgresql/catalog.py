"""What the PostgreSQL source reads from the catalog on its driver connection: server settings, its role, the
slot, the publication, the captured tables' replica identities, types. (The window's peek and the slot's
confirmation are in :mod:`.stream`, a table's columns in :mod:`.types`.)"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cdclake.sources.postgresql.pgoutput import parse_lsn

SERVER = (
    "SELECT current_setting('wal_level'), current_setting('max_replication_slots')::int, "
    "(SELECT count(*) FROM pg_replication_slots)::int, current_setting('max_wal_senders')::int, "
    "(SELECT count(*) FROM pg_stat_replication)::int, (SELECT system_identifier::text FROM pg_control_system()), "
    "current_setting('server_version_num')::int, pg_encoding_to_char(encoding) "
    "FROM pg_database WHERE datname = current_database()"
)
ROLE = "SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user"
SLOT = (
    "SELECT plugin, slot_type, database, temporary, active, active_pid, restart_lsn::text, confirmed_flush_lsn::text, "
    "wal_status, safe_wal_size FROM pg_replication_slots WHERE slot_name = %s"
)
PUBLICATION = (
    "SELECT puballtables, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot FROM pg_publication "
    "WHERE pubname = %s"
)
PUBLICATION_TABLES = (
    "SELECT schemaname, tablename, attnames IS NOT NULL AND cardinality(attnames) < ("
    "SELECT count(*) FROM pg_attribute a WHERE a.attrelid = format('%%I.%%I', schemaname, tablename)::regclass "
    "AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''), rowfilter IS NOT NULL "
    "FROM pg_publication_tables WHERE pubname = %s"
)
#: ordinary and partitioned tables (not partitions) with their replica identity and whether a key backs it
TABLES = (
    "SELECT n.nspname, c.relname, c.relkind, c.relreplident, "
    "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary), "
    "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident), c.oid::bigint "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'"
)
WAL_LSN = "SELECT pg_current_wal_flush_lsn()::text"
#: every partition (a leaf, or a partitioned one below the root) with the root of its tree; its object id
PARTITIONS = (
    "SELECT n.nspname, c.relname, rn.nspname, r.relname, c.oid::bigint FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class r ON r.oid = pg_partition_root(c.oid) "
    "JOIN pg_namespace rn ON rn.oid = r.relnamespace WHERE c.relispartition ORDER BY 1, 2"
)
#: a partitioned table's partitions, at every level below it (None: not a partitioned table)
PARTITION_TREE = (
    "SELECT CASE WHEN c.relkind = 'p' THEN coalesce((SELECT array_agg(t.relid::oid::bigint ORDER BY "
    "t.relid::oid::bigint) FROM pg_partition_tree(c.oid) t WHERE t.relid::oid <> c.oid), '{}') END "
    "FROM pg_class c WHERE c.oid = %s"
)
#: whether a relation still exists, and whether the publication publishes it under its own name (not a partition
#: published through its root: ``pg_publication_tables`` lists roots only when ``publish_via_partition_root``)
OWN_RELATION = (
    "SELECT EXISTS (SELECT 1 FROM pg_publication_tables p JOIN pg_class c ON c.relname = p.tablename "
    "JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = p.schemaname WHERE p.pubname = %s AND c.oid = %s) "
    "FROM pg_class WHERE oid = %s"
)
#: generated columns (pgoutput does not send them) of ordinary and partitioned tables
GENERATED = (
    "SELECT n.nspname, c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.attgenerated <> '' AND a.attnum > 0 "
    "AND NOT a.attisdropped AND c.relkind IN ('r', 'p') ORDER BY a.attnum"
)
#: a type: its base type's name and category (a domain's base), its kind, a domain's typmod
TYPE = (
    "SELECT bt.typname, bt.typcategory, t.typtype, CASE WHEN t.typtype = 'd' THEN t.typtypmod END FROM pg_type t "
    "JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END WHERE t.oid = %s"
)
FORMAT_TYPE = "SELECT format_type(%s, %s)"
#: a table's live columns by number (a renamed column keeps its number)
ATTNUMS = (
    "SELECT attname, attnum FROM pg_attribute WHERE attrelid = to_regclass(format('%%I.%%I', %s::text, %s::text)) "
    "AND attnum > 0 AND NOT attisdropped"
)
#: what rows that existed before a column was added hold: the "missing value" an ADD COLUMN with a non-volatile
#: default stores once (no table rewrite, no row in the WAL), and the column's default expression
ADDED_VALUES = (
    "SELECT a.attname, a.atthasmissing, a.attmissingval::text, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
    "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
    "WHERE a.attrelid = to_regclass(format('%%I.%%I', %s::text, %s::text)) AND a.attnum > 0 AND NOT a.attisdropped"
)


@dataclass(frozen=True)
class AddedValue:
    """What the catalog says of a column's value in rows older than the column (see :func:`added_values`)."""

    stored: bool  # a missing value is stored: those rows read ``value``
    value: str | None  # its output text (None: NULL)
    default: str | None  # the column's default expression, if any


def added_values(conn: Any, table: str) -> dict[str, AddedValue]:
    """``schema.table``'s columns by name with their :class:`AddedValue` (empty if the table is gone)."""
    schema, name = table.split(".", 1)
    return {str(n): AddedValue(bool(stored), None if text is None else array_element(str(text)),
                               None if default is None else str(default))
            for n, stored, text, default in fetch(conn, ADDED_VALUES, (schema, name))}


def array_element(literal: str) -> str | None:
    """The one element of a one-element array literal (``attmissingval``'s text), unquoted.

    >>> array_element('{5}'), array_element('{"x \\\\"y\\\\" z"}'), array_element('{NULL}'), array_element('{"{1,2}"}')
    ('5', 'x "y" z', None, '{1,2}')
    """
    inner = literal[1:-1]
    if inner.startswith('"'):
        return re.sub(r"\\(.)", r"\1", inner[1:-1])
    return None if inner == "NULL" else inner


def attnums(conn: Any, table: str) -> dict[str, int]:
    """``schema.table``'s column numbers by name, as the catalog has them now (empty if the table is gone; no
    error, so that it may run inside the window's read transaction)."""
    schema, name = table.split(".", 1)
    return {str(n): int(a) for n, a in fetch(conn, ATTNUMS, (schema, name))}


def fetch(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(sql, tuple(params) or None).fetchall()]


@dataclass(frozen=True)
class Server:
    wal_level: str
    max_slots: int
    slots_used: int
    max_senders: int
    senders_used: int
    system: str
    version: int
    encoding: str


@dataclass(frozen=True)
class Slot:
    plugin: str | None
    slot_type: str
    database: str | None
    temporary: bool
    active: bool
    active_pid: int | None
    restart_lsn: int | None
    confirmed_flush_lsn: int | None
    wal_status: str | None
    safe_wal_size: int | None


@dataclass(frozen=True)
class Publication:
    all_tables: bool
    insert: bool
    update: bool
    delete: bool
    truncate: bool
    via_root: bool
    #: ``schema.table`` -> (published with a column list, published with a row filter)
    tables: dict[str, tuple[bool, bool]]


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    partitioned: bool
    replica_identity: str  # d, n, f, i
    has_primary_key: bool
    has_identity_index: bool
    relid: int = 0  # the table's object id: a table dropped and created again under its name has another

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def identity_lacks_key(self) -> bool:
        """Updates and deletes of this table fail once it is published (PostgreSQL refuses them): no row
        identity to send."""
        return (self.replica_identity == "n" or (self.replica_identity == "d" and not self.has_primary_key)
                or (self.replica_identity == "i" and not self.has_identity_index))


def server(conn: Any) -> Server:
    r = fetch(conn, SERVER)[0]
    return Server(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), str(r[5]), int(r[6]), str(r[7]))


def role(conn: Any) -> tuple[bool, bool]:
    """(REPLICATION, SUPERUSER) of the connected role."""
    r = fetch(conn, ROLE)[0]
    return bool(r[0]), bool(r[1])


def slot(conn: Any, name: str) -> Slot | None:
    rows = fetch(conn, SLOT, (name,))
    if not rows:
        return None
    r = rows[0]
    return Slot(r[0], str(r[1]), r[2], bool(r[3]), bool(r[4]), r[5], None if r[6] is None else parse_lsn(r[6]),
                None if r[7] is None else parse_lsn(r[7]), r[8], None if r[9] is None else int(r[9]))


def publication(conn: Any, name: str) -> Publication | None:
    rows = fetch(conn, PUBLICATION, (name,))
    if not rows:
        return None
    r = rows[0]
    tables = {f"{s}.{t}": (bool(cols), bool(filt)) for s, t, cols, filt in fetch(conn, PUBLICATION_TABLES, (name,))}
    return Publication(bool(r[0]), bool(r[1]), bool(r[2]), bool(r[3]), bool(r[4]), bool(r[5]), tables)


def tables(conn: Any) -> dict[str, Table]:
    out = {}
    for s, t, kind, ident, pk, ident_index, relid in fetch(conn, TABLES):
        table = Table(str(s), str(t), kind == "p", str(ident), bool(pk), bool(ident_index), int(relid))
        out[table.qualified] = table
    return out


@dataclass(frozen=True)
class Partition:
    """A partition (``schema.table``), the root of its tree, and its object id."""

    name: str
    root: str
    relid: int


def partitions(conn: Any) -> dict[str, Partition]:
    """Every partition by name (leaves and partitioned partitions alike), with the root that publishes it."""
    return {f"{s}.{t}": Partition(f"{s}.{t}", f"{rs}.{rt}", int(relid))
            for s, t, rs, rt, relid in fetch(conn, PARTITIONS)}


def partition_tree(conn: Any, relid: int) -> list[int] | None:
    """The object ids of partitioned table ``relid``'s partitions, sorted (None: not a partitioned table)."""
    rows = fetch(conn, PARTITION_TREE, (relid,))
    return None if not rows or rows[0][0] is None else [int(r) for r in rows[0][0]]


def published_as_itself(conn: Any, publication: str, relid: int) -> bool | None:
    """Whether ``publication`` publishes relation ``relid`` under its own name now (False for a partition, whose
    changes it publishes through its root); None when the relation is gone."""
    rows = fetch(conn, OWN_RELATION, (publication, relid, relid))
    return bool(rows[0][0]) if rows else None


def generated_columns(conn: Any) -> dict[str, list[str]]:
    """``schema.table`` -> its generated columns (tables without any are left out)."""
    out: dict[str, list[str]] = {}
    for s, t, a in fetch(conn, GENERATED):
        out.setdefault(f"{s}.{t}", []).append(str(a))
    return out


def flush_lsn(conn: Any) -> int:
    return parse_lsn(fetch(conn, WAL_LSN)[0][0])


@dataclass(frozen=True)
class TypeInfo:
    """What the catalog says of a type OID: its base type's name and category, the declared text, its kind and
    (for a domain) the base's typmod."""

    base: str
    category: str
    kind: str
    declared: Callable[[int], str]  # typmod -> format_type text
    domain_typmod: int | None = None


class TypeCatalog:
    """Type OIDs as :class:`TypeInfo`, read once per OID (and type text once per OID and typmod)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._types: dict[int, Any] = {}
        self._texts: dict[tuple[int, int], str] = {}

    def declared(self, oid: int, typmod: int) -> str:
        key = (oid, typmod)
        if key not in self._texts:
            self._texts[key] = str(fetch(self.conn, FORMAT_TYPE, key)[0][0])
        return self._texts[key]

    def __call__(self, oid: int) -> TypeInfo:
        if oid not in self._types:
            rows = fetch(self.conn, TYPE, (oid,))
            if not rows:
                raise KeyError(f"type OID {oid} is not in pg_type (dropped since the change was written?)")
            base, category, kind, domain_typmod = rows[0]
            self._types[oid] = TypeInfo(str(base), str(category), str(kind),
                                        lambda typmod, _oid=oid: self.declared(_oid, typmod),
                                        None if domain_typmod is None else int(domain_typmod))
        return self._types[oid]
