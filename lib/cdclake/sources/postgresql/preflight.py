"""The PostgreSQL source's preflight: every setting, privilege and object logical decoding needs, each
failure naming the problem and the statement that fixes it (docs/postgresql-design.md, section 8)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cdclake.errors import PreflightError
from cdclake.sources.postgresql import catalog


def check(conn: Any, captured: list[str], slot_name: str, publication_name: str, create_publication: bool,
          all_tables: dict[str, catalog.Table] | None = None) -> None:
    """Raise :class:`PreflightError` for the first thing that stops capture of ``captured`` (``schema.table``)."""
    server = catalog.server(conn)
    if server.wal_level != "logical":
        raise PreflightError(f"wal_level is {server.wal_level}: logical decoding needs wal_level = logical",
                             "ALTER SYSTEM SET wal_level = logical; then restart the server")
    if server.encoding != "UTF8":
        raise PreflightError(f"the database's encoding is {server.encoding}: pgoutput's text values are read as "
                             "UTF-8", "capture a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8')")
    replication, superuser = catalog.role(conn)
    if not (replication or superuser):
        raise PreflightError("the source's user has neither REPLICATION nor SUPERUSER: it cannot use a replication "
                             "slot", "ALTER ROLE <user> REPLICATION (as a superuser)")
    slot = catalog.slot(conn, slot_name)
    if slot is None:
        if server.max_slots - server.slots_used < 2:
            raise PreflightError(
                f"{server.slots_used} of max_replication_slots = {server.max_slots} are in use: cdclake needs one "
                "for its slot and one more (temporary) for each snapshot",
                "ALTER SYSTEM SET max_replication_slots = <more>; restart, or drop unused slots "
                "(pg_drop_replication_slot)")
        if server.max_senders - server.senders_used < 1:
            raise PreflightError(
                f"{server.senders_used} of max_wal_senders = {server.max_senders} are in use: creating the slot "
                "with its snapshot needs one for a moment", "ALTER SYSTEM SET max_wal_senders = <more>; restart")
    else:
        if slot.slot_type != "logical" or slot.plugin != "pgoutput":
            raise PreflightError(f"replication slot {slot_name} is {slot.slot_type} with plugin {slot.plugin}, not a "
                                 "logical slot of pgoutput", "set source.slot to another name, or drop the slot")
        current = catalog.fetch(conn, "SELECT current_database()")[0][0]
        if slot.database != current:
            raise PreflightError(f"replication slot {slot_name} decodes database {slot.database}, not {current}",
                                 "set source.slot to a slot of this database (or another name)")
    tables = catalog.tables(conn) if all_tables is None else all_tables
    missing = [t for t in captured if t not in tables]
    if missing:
        raise PreflightError(f"no such table (or a partition, captured through its root): {', '.join(missing)}",
                             "check source.include_tables")
    no_identity = [t for t in captured if tables[t].identity_lacks_key]
    if no_identity:
        raise PreflightError(
            f"{', '.join(no_identity)} {'has' if len(no_identity) == 1 else 'have'} no replica identity (no primary "
            "key, REPLICA IDENTITY NOTHING, or an identity index that is gone): once published, the application's "
            "UPDATE and DELETE of it fail, and no change could name its row",
            "; ".join(f"ALTER TABLE {_quoted(tables[t])} REPLICA IDENTITY FULL" for t in no_identity)
            + " (or add a primary key); or exclude it (source.exclude_tables)")
    pub = catalog.publication(conn, publication_name)
    if pub is None:
        if not create_publication:
            raise PreflightError(f"publication {publication_name} does not exist (source.create_publication is "
                                 "false)", f"CREATE PUBLICATION {publication_name} FOR TABLE "
                                 + ", ".join(_quoted(tables[t]) for t in captured) + " WITH (publish_via_partition_"
                                 "root = true)")
        return
    actions = [a for a, on in (("insert", pub.insert), ("update", pub.update), ("delete", pub.delete),
                               ("truncate", pub.truncate)) if not on]
    if actions:
        raise PreflightError(f"publication {publication_name} does not publish {', '.join(actions)}: those changes "
                             "would never reach the lake",
                             f"ALTER PUBLICATION {publication_name} SET (publish = 'insert, update, delete, truncate')")
    if not pub.via_root and any(tables[t].partitioned for t in captured):
        raise PreflightError(f"publication {publication_name} publishes partitions under their own names: a "
                             "partitioned table's changes would not reach its lake table",
                             f"ALTER PUBLICATION {publication_name} SET (publish_via_partition_root = true)")
    partial = [t for t in captured if t in pub.tables and any(pub.tables[t])]
    if partial:
        raise PreflightError(f"publication {publication_name} publishes only some columns or rows of "
                             f"{', '.join(partial)} (a column list or a row filter): the lake would lack the rest",
                             f"ALTER PUBLICATION {publication_name} SET TABLE ... without column lists or WHERE")
    uncovered = [t for t in captured if not pub.all_tables and t not in pub.tables]
    if uncovered and not create_publication:
        raise PreflightError(f"publication {publication_name} does not cover {', '.join(uncovered)}",
                             f"ALTER PUBLICATION {publication_name} ADD TABLE "
                             + ", ".join(_quoted(tables[t]) for t in uncovered))


def check_partitions(partitions: Mapping[str, catalog.Partition], captures: Callable[[str], bool]) -> None:
    """A partition that ``include_tables`` selects while its root is left out would land empty: PostgreSQL publishes
    a partition's changes as its root's (``publish_via_partition_root``), so they reach only the root's table.
    Debezium's connector, with the same publication, emits them under the root's name too. Stop, and name the root
    to capture instead (its table holds the rows of all its partitions).

    >>> from cdclake.sources.postgresql.catalog import Partition
    >>> check_partitions({"public.p_low": Partition("public.p_low", "public.p", 1)},
    ...                  lambda t: t != "public.p")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cdclake.errors.PreflightError: public.p_low is a partition of public.p, which ... would stay empty
      fix: capture the root: add 'public\\.p' to source.include_tables ...
    """
    orphans = {name: p.root for name, p in sorted(partitions.items()) if captures(name) and not captures(p.root)}
    if not orphans:
        return
    roots = sorted(set(orphans.values()))
    described = "; ".join(f"{name} is a partition of {root}" for name, root in orphans.items())
    raise PreflightError(
        f"{described}, which source.include_tables/exclude_tables leave out: PostgreSQL publishes a partition's "
        f"changes as its root's (publish_via_partition_root), so {'its' if len(orphans) == 1 else 'their'} own "
        f"table{'' if len(orphans) == 1 else 's'} would stay empty",
        "capture the root: add " + ", ".join(f"'{re.escape(r)}'" for r in roots) + " to source.include_tables (the "
        "rows of all its partitions land there, once), or leave the partitions out in source.exclude_tables")


def warnings(conn: Any, captured: list[str], slot_name: str) -> list[str]:
    """What does not stop capture but loses something or soon may: each with what to do."""
    out = []
    slot = catalog.slot(conn, slot_name)
    # (extended without max_slot_wal_keep_size only costs disk: status shows it)
    if slot is not None and (slot.wal_status == "unreserved"
                             or (slot.wal_status == "extended" and slot.safe_wal_size is not None)):
        out.append(slot_warning(slot_name, slot.wal_status, slot.safe_wal_size))
    generated = catalog.generated_columns(conn)
    for table in captured:
        if table in generated:
            out.append(f"{table}: pgoutput does not send generated columns, so {', '.join(generated[table])} will "
                       "not be in the lake (compute them downstream, or exclude the table: source.exclude_tables)")
    return out


def slot_warning(slot_name: str, wal_status: str, safe_wal_size: int | None) -> str:
    """The warning for a slot whose retained WAL is past ``max_slot_wal_keep_size`` (``unreserved``: the next
    checkpoint may remove it and invalidate the slot), or past ``max_wal_size`` with such a limit (``extended``).

    >>> slot_warning("cdclake", "unreserved", -1024)
    'replication slot cdclake is unreserved: it retains more WAL than max_slot_wal_keep_size allows, and the next \
checkpoint may remove it, which loses the changes not yet in the lake; mine now (cdclake mine), then mine more often \
or raise max_slot_wal_keep_size'
    """
    if wal_status == "unreserved":
        return (f"replication slot {slot_name} is unreserved: it retains more WAL than max_slot_wal_keep_size "
                "allows, and the next checkpoint may remove it, which loses the changes not yet in the lake; mine now "
                "(cdclake mine), then mine more often or raise max_slot_wal_keep_size")
    left = "" if safe_wal_size is None else f"; {max(0, safe_wal_size) // 2**20} MiB more and max_slot_wal_keep_size " \
        "invalidates it"
    return (f"replication slot {slot_name} retains more WAL than max_wal_size (wal_status {wal_status}{left}): "
            "mine more often, or raise max_slot_wal_keep_size")


def _quoted(table: catalog.Table) -> str:
    return f'{_ident(table.schema)}.{_ident(table.name)}'


def _ident(name: str) -> str:
    plain = name.isidentifier() and name == name.lower() and name.isascii()
    return name if plain else '"' + name.replace('"', '""') + '"'
