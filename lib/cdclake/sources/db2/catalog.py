"""What the Db2 source reads on its driver connection: registrations, catalog schemas, Capture's progress.

Captured tables are found in ``IBMSNAP_REGISTER`` (never by a naming convention), and each table's schema
is its CD table's columns (what Capture writes, in the CD table's order), with the names, nullability and
primary key of the source table: a column renamed in the source keeps its old name in the CD table until the
DBA alters or recreates it, and is matched by its place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cdclake.errors import CdcError, command, table_regex
from cdclake.schema import Column, TableSchema
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.position import seq_hex
from cdclake.sources.db2.types import column_from_catalog, quote_identifier

CD_PREFIX_COLUMNS = ("IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION")


@dataclass(frozen=True)
class Registration:
    """One ``IBMSNAP_REGISTER`` row of a source table."""

    source_owner: str
    source_table: str
    cd_owner: str
    cd_table: str
    state: str
    state_info: str | None
    chg_upd_to_del_ins: str
    before_img_prefix: str | None
    cd_old_synchpoint: str | None
    cd_new_synchpoint: str | None

    @property
    def table(self) -> str:
        return f"{self.source_owner}.{self.source_table}"

    @property
    def cd_sql(self) -> str:
        """The CD table as a delimited two-part name."""
        return f"{quote_identifier(self.cd_owner)}.{quote_identifier(self.cd_table)}"


@dataclass(frozen=True)
class CatalogTable:
    """A table's ``SYSCAT.TABLES`` facts: a CD table recreated has a new ``created``."""

    schema: str
    name: str
    created: datetime | None
    altered: datetime | None


def _text(value: Any) -> str | None:
    return None if value is None else str(value).strip()


def _seq(value: Any) -> str | None:
    return None if value is None else seq_hex(bytes(value))


def fetch(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    try:
        cur.execute(sql, tuple(params)) if params else cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]
    finally:
        cur.close()


def execute(conn: Any, sql: str) -> None:
    """A statement without a result (the snapshot's locks)."""
    cur = conn.cursor()
    try:
        cur.execute(sql)
    finally:
        cur.close()


def registrations(conn: Any, control_schema: str) -> dict[str, Registration]:
    """Every registration, by source table ``SCHEMA.TABLE``."""
    out = {}
    for r in fetch(conn, Q.REGISTRATIONS.format(cs=control_schema)):
        reg = Registration(_text(r[0]) or "", _text(r[1]) or "", _text(r[2]) or control_schema, _text(r[3]) or "",
                           _text(r[4]) or "I", _text(r[5]), _text(r[6]) or "Y", _text(r[7]), _seq(r[8]), _seq(r[9]))
        out[reg.table] = reg
    return out


@dataclass(frozen=True)
class Synchpoint:
    """Capture's high-water mark: every transaction committed at or below ``seq`` is in the CD tables;
    ``time``: the register's ``SYNCHTIME`` with it (ISO text, None if Capture has not set one)."""

    seq: str
    time: str | None


def high_water_mark(conn: Any, control_schema: str) -> Synchpoint | None:
    """Capture's synchpoint, or None when Capture has never committed a cycle."""
    rows = fetch(conn, Q.HIGH_WATER_MARK.format(cs=control_schema))
    seq = _seq(rows[0][0]) if rows else None
    if seq is None:
        return None
    time = rows[0][1]
    return Synchpoint(seq, None if time is None else time.isoformat())


def catalog_table(conn: Any, schema: str, name: str) -> CatalogTable | None:
    rows = fetch(conn, Q.TABLE, (schema, name))
    if not rows:
        return None
    r = rows[0]
    return CatalogTable(schema, name, r[3], r[4])


def columns(conn: Any, schema: str, name: str) -> list[Column]:
    return [column_from_catalog(_text(r[0]) or "", _text(r[2]) or "", r[3], r[4], r[5], r[6], r[7], r[8])
            for r in fetch(conn, Q.COLUMNS, (schema, name))]


def table_schema(conn: Any, reg: Registration) -> TableSchema:
    """The captured schema of ``reg``'s source table (module docstring)."""
    source = columns(conn, reg.source_owner, reg.source_table)
    if not source:
        raise CdcError(f"{reg.table} is registered for capture but the catalog has no such table",
                       f"remove the registration (CALL {reg.cd_owner}.REMOVETABLE('{reg.source_owner}', "
                       f"'{reg.source_table}')) or exclude the table (source.exclude_tables)", permanent=True)
    cd = columns(conn, reg.cd_owner, reg.cd_table)
    if [c.name for c in cd[:3]] != list(CD_PREFIX_COLUMNS):
        raise CdcError(f"the CD table {reg.cd_owner}.{reg.cd_table} of {reg.table} does not start with "
                       f"{', '.join(CD_PREFIX_COLUMNS)} (found: {', '.join(c.name for c in cd[:3]) or 'no table'})",
                       f"recreate it: CALL {reg.cd_owner}.REMOVETABLE / ADDTABLE('{reg.source_owner}', "
                       f"'{reg.source_table}'), then "
                       f"{command('snapshot', '--force', '--tables', table_regex(reg.table))}",
                       permanent=True)
    data = cd[3:]
    by_name = {c.name: c for c in source}
    out: list[Column] = []
    for i, c in enumerate(data):
        src = by_name.get(c.name)
        if src is None and len(data) == len(source) and source[i].spark_type == c.spark_type:
            src = source[i]  # renamed in the source; the CD table still carries the old name at this place
        name = src.name if src is not None else c.name
        attrs = dict(c.attrs, cd_name=c.name)
        if src is not None and "keyseq" in src.attrs:
            attrs["keyseq"] = src.attrs["keyseq"]
        else:
            attrs.pop("keyseq", None)
        out.append(Column(name, c.source_type, c.spark_type, src.nullable if src else True,
                          src.default if src else None, attrs))
    key = [c.name for c in sorted((c for c in out if "keyseq" in c.attrs), key=lambda c: c.attrs["keyseq"])]
    return TableSchema(reg.source_owner, reg.source_table, out, key)
