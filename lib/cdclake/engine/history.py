"""The schema history's logic: which table schema is valid where (pure; the Delta table is in :mod:`.control`).

Every DDL a window meets, and every snapshot, is one :class:`HistoryEntry` per table: its sequence
(where in the log it takes effect), the statement and the schema it leaves. Rows are decoded with
the schema valid at their position, never with today's.

>>> from cdclake.schema import Column, TableSchema
>>> t1 = TableSchema("shop", "t", [Column("id", "int", "INT")])
>>> t2 = t1.with_columns([*t1.columns, Column("v", "int", "INT")])
>>> entries = [HistoryEntry(1, "shop.t", 10, "p1", "snap", "snapshot", t1, None, {}, None),
...            HistoryEntry(2, "shop.t", 50, "p2", "ALTER", "ddl", t2, None, {}, 3)]
>>> registry_before(entries, 3).schemas["shop.t"].column_names, registry_before(entries, 4).next_version
(['id'], 3)
"""

from __future__ import annotations

from dataclasses import dataclass

from cdclake.engine.events import event_seq
from cdclake.schema import TableSchema
from cdclake.spi import Ddl

SKIPPED = "skipped"  # kind of an unparsable DDL skipped by configuration (recorded, never applied)
PARKED = "parked"  # the table's capture stops here until it is re-snapshotted (reason in column_renames)
REREAD = "reread"  # the table's rows before here must be read again from the source (reason in column_renames)
CREATED = "create"  # the table is made anew here: it starts empty, whatever a table of its name held


@dataclass
class HistoryEntry:
    """One row of the schema history: ``table``'s schema from ``seq`` on (``None``: dropped)."""

    version: int
    table: str
    seq: int
    position: str
    ddl: str
    kind: str  # "snapshot" | "ddl" | "create" | "drop" | "skipped" | "parked" | "reread"
    schema: TableSchema | None
    renamed_from: str | None
    column_renames: dict[str, str]
    window_id: int | None  # None: written by a snapshot

    @property
    def reason(self) -> str | None:
        """Why the table was parked or must be re-read here (those entries), else None."""
        return self.column_renames.get("reason", "") if self.kind in (PARKED, REREAD) else None


@dataclass
class Registry:
    """The table schemas valid at one point of the log, their versions, and the next free version."""

    schemas: dict[str, TableSchema]
    versions: dict[str, int]
    next_version: int


def entries_for_ddl(ddl: Ddl, first_version: int, window_id: int) -> list[HistoryEntry]:
    """The history entries one mined DDL statement makes, numbered from ``first_version``."""
    seq = event_seq(ddl.position.ordinal, 0)
    out: list[HistoryEntry] = []
    if ddl.skipped_reason:  # recorded, never applied: the operator sees what was skipped and why
        out.append(HistoryEntry(
            version=first_version, table=ddl.database or "", seq=seq, position=ddl.position.describe(),
            ddl=ddl.statement, kind=SKIPPED, schema=None, renamed_from=None, column_renames={},
            window_id=window_id,
        ))
    for table, reason in ddl.parked.items():
        out.append(HistoryEntry(
            version=first_version + len(out), table=table, seq=seq, position=ddl.position.describe(),
            ddl=ddl.statement, kind=PARKED, schema=None, renamed_from=None, column_renames={"reason": reason},
            window_id=window_id,
        ))
    for table, schema in ddl.changes.items():  # the source already dropped DDL at/below floors
        out.append(HistoryEntry(
            version=first_version + len(out), table=table, seq=seq, position=ddl.position.describe(),
            ddl=ddl.statement, kind="drop" if schema is None else CREATED if table in ddl.created else "ddl",
            schema=schema,
            renamed_from=ddl.renamed_from.get(table), column_renames=ddl.column_renames.get(table, {}),
            window_id=window_id,
        ))
        if schema is not None and table in ddl.reread:  # same schema; a mark the apply step leaves alone
            out.append(HistoryEntry(
                version=first_version + len(out), table=table, seq=seq, position=ddl.position.describe(),
                ddl=ddl.statement, kind=REREAD, schema=schema, renamed_from=None,
                column_renames={"reason": ddl.reread[table]}, window_id=window_id,
            ))
    return out


def before_window(entries: list[HistoryEntry], window_id: int) -> list[HistoryEntry]:
    """Snapshot entries and those of windows before ``window_id``."""
    return [e for e in entries if e.window_id is None or e.window_id < window_id]


def latest_per_table(entries: list[HistoryEntry]) -> dict[str, HistoryEntry]:
    """The newest entry per table (by sequence, then version); skipped statements changed nothing."""
    latest: dict[str, HistoryEntry] = {}
    for e in entries:
        if e.kind == SKIPPED:
            continue
        cur = latest.get(e.table)
        if cur is None or (e.seq, e.version) >= (cur.seq, cur.version):
            latest[e.table] = e
    return latest


def registry_before(entries: list[HistoryEntry], window_id: int) -> Registry:
    """The schemas valid at the start of window ``window_id``. Versions continue from the entries
    before it, so a window mined again numbers its DDL alike."""
    earlier = before_window(entries, window_id)
    live = {t: e for t, e in latest_per_table(earlier).items() if e.schema is not None}
    return Registry({t: e.schema for t, e in live.items()},  # type: ignore[misc]
                    {t: e.version for t, e in live.items()},
                    max((e.version for e in earlier), default=0) + 1)


def schema_at(entries: list[HistoryEntry], table: str, floor_seq: int, window_id: int) -> HistoryEntry | None:
    """``table``'s entry in force when window ``window_id`` starts, for a table whose snapshot is at
    ``floor_seq`` (snapshots after it are not in force yet)."""
    valid = [e for e in entries if e.table == table and e.kind != SKIPPED and (
        (e.window_id is None and e.seq <= floor_seq) or (e.window_id is not None and e.window_id < window_id))]
    return max(valid, key=lambda e: (e.seq, e.version), default=None)


def window_ddl(entries: list[HistoryEntry], window_id: int, table: str | None = None) -> list[HistoryEntry]:
    """The applied DDL of window ``window_id`` (of ``table`` only, if given), in history order."""
    return [e for e in entries if e.window_id == window_id and e.kind != SKIPPED
            and (table is None or e.table == table)]
