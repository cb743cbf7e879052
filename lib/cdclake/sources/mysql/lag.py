"""What a MySQL/MariaDB source committed that the lake does not hold yet (``cdclake status``'s lag).

:func:`pending_changes` answers :meth:`cdclake.spi.Source.pending_changes`:

1. One connection reads the log end (``SHOW MASTER STATUS``) and every binlog's size (``SHOW BINARY
   LOGS``). That gives each table's **distance**: binlog bytes from its position to the log end,
   exact. A table whose position is the log end is caught up: nothing more is read for it.
2. For the tables behind, the binlog is read **once**, from the lowest of their positions to the log
   end as it was in step 1 (not one read per table or position). A transaction is pending for a
   table when it has row events of the table (or is a DDL statement naming it) and its commit (the
   ``Xid`` event, or the ``COMMIT`` query of a non-transactional engine) lies after the table's
   position; its commit time is the commit event's timestamp, the same the mining run writes to
   bronze (whole seconds). Only tables the source configuration captures count: changes of other
   tables, a binlog rotation (``FLUSH BINARY LOGS``) or a server restart are no lag.
3. The read stops as soon as every table behind has its oldest pending commit, at the log end, or
   after ``max_events`` events (``complete=False``: a table not reached by then has no exact lag,
   only a bound). Row images are never decoded.

The binlog is read over the replication protocol like mining, but with **server_id 0**, not the
pipeline's ``source.server_id``: when a binlog dump (``COM_BINLOG_DUMP``) starts, MariaDB and MySQL
end any other dump connection with the same server_id (a reconnecting replica replaces its stale
connection), so ``status`` with the pipeline's server_id would kill a ``mine`` running at that moment.
Server_id 0 is what ``mysqlbinlog`` sends: the server exempts it from that rule and ends the dump at
the log end (non-blocking). The client registers no replica (no ``COM_REGISTER_SLAVE``), so nothing
appears in ``SHOW SLAVE HOSTS``. It needs the privileges mining has (``REPLICATION SLAVE``,
``BINLOG MONITOR``/``REPLICATION CLIENT``).

XA transactions (``XA PREPARE`` groups) are not counted until their ``XA COMMIT``. A transaction
longer than the bound whose commit is not reached leaves its tables with a bound only. A position
whose binlog file is not on the server (purged, or taken on another server before a GTID failover)
raises :class:`~cdclake.errors.PositionLostError`: no lag can be told until mining moves on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, Protocol

from cdclake.errors import PositionLostError
from cdclake.sources.mysql import preflight
from cdclake.sources.mysql.ddl import MYSQL_DIALECT
from cdclake.sources.mysql.position import BinlogPosition
from cdclake.spi import PendingChanges
from cdclake.sqltokens import SqlParseError, TokenCursor, tokenize

#: the binlog client's server_id: 0 never ends another dump connection (see the module docstring)
STATUS_SERVER_ID = 0
DISTANCE_UNIT = "bytes"
_DDL_VERBS = ("CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE")
_NAME_BEFORE = ("TABLE", "TABLES", "ON", "TO", "LIKE")  # keywords a table name follows in DDL


class BinlogSource(Protocol):
    """What :func:`pending_changes` needs of :class:`~cdclake.sources.mysql.source.MySqlSource`."""

    config: Any  # MySqlSourceConfig: captures(table)

    def connect(self) -> Any: ...

    def connection_settings(self) -> dict[str, Any]: ...


def pending_changes(source: BinlogSource, positions: Mapping[str, BinlogPosition],
                    max_events: int) -> PendingChanges:
    """See the module docstring; ``positions`` maps tables to their positions."""
    asked = {t: p for t, p in positions.items() if source.config.captures(t)}
    conn = source.connect()
    try:
        end = preflight.binlog_end(conn)
        logs = binlog_sizes(conn)
    finally:
        conn.close()
    distance = {t: d for t, p in asked.items() if (d := bytes_between(p, end, logs)) is not None}
    behind = {t: p for t, p in asked.items() if p.ordinal < end.ordinal}
    if not behind:
        return PendingChanges(True, end, {}, True, None, distance, DISTANCE_UNIT)
    start = min(behind.values(), key=lambda p: p.ordinal)
    sizes = dict(logs)
    if start.file not in sizes or start.pos > sizes[start.file]:
        held = f"{logs[0][0]}..{logs[-1][0]}" if logs else "none"
        raise PositionLostError(
            f"binlog {start.describe()} is not on the server (its binlogs: {held}), so how far the lake is "
            "behind cannot be told",
            "run 'cdclake mine': it resumes (by GTID after a failover, with source.position_mode: gtid) or names "
            "the remedy",
        )
    scan = BinlogScan(behind, end)
    scan.read(source.connection_settings(), start, max_events)
    return PendingChanges(True, end, dict(scan.found), scan.complete, _utc(scan.last_ts) if not scan.complete
                          else None, distance, DISTANCE_UNIT, scan.events)


def binlog_sizes(conn: Any) -> list[tuple[str, int]]:
    """``SHOW BINARY LOGS``: (file, size) in log order."""
    with conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        rows = cur.fetchall()
    return [(_text(r[0]), int(r[1])) for r in rows]


def bytes_between(position: BinlogPosition, end: BinlogPosition, logs: list[tuple[str, int]]) -> int | None:
    """Binlog bytes from ``position`` to ``end`` (``logs``: :func:`binlog_sizes`); None if a file is gone.

    >>> logs = [("b.000001", 1000), ("b.000002", 700), ("b.000003", 400)]
    >>> bytes_between(BinlogPosition("b.000001", 900), BinlogPosition("b.000003", 300), logs)
    1100
    >>> bytes_between(BinlogPosition("b.000003", 300), BinlogPosition("b.000003", 300), logs)
    0
    """
    if position.file == end.file:
        return max(end.pos - position.pos, 0)
    names = [f for f, _ in logs]
    if position.file not in names or end.file not in names:
        return None
    first, last = names.index(position.file), names.index(end.file)
    if first > last:
        return 0
    return (max(logs[first][1] - position.pos, 0) + sum(size for _, size in logs[first + 1:last]) + end.pos)


def ddl_tables(sql: str, database: str | None) -> set[str]:
    """The tables a DDL statement names, as ``database.table`` (lower case); may name more than it
    changes (``CREATE TABLE a LIKE b`` names ``b``), never fewer of the statements mining applies.

    >>> sorted(ddl_tables("RENAME TABLE a TO x.b, c TO d", "s"))
    ['s.a', 's.c', 's.d', 'x.b']
    >>> sorted(ddl_tables("TRUNCATE `S`.`T`", None)), sorted(ddl_tables("CREATE INDEX i ON t (a)", "db"))
    (['s.t'], ['db.t'])
    >>> ddl_tables("GRANT SELECT ON *.* TO u", "db")
    set()
    """
    try:
        toks = tokenize(sql, MYSQL_DIALECT)
    except SqlParseError:
        return set()
    if not toks or not toks[0].is_(*_DDL_VERBS):
        return set()
    cur = TokenCursor(sql, toks)
    out: set[str] = set()
    truncate = cur.accept("TRUNCATE")
    while not cur.at_end():
        if not truncate:
            tok = cur.next()
            if not tok.is_(*_NAME_BEFORE):
                continue
        truncate = False
        if not cur.accept("IF", "NOT", "EXISTS"):
            cur.accept("IF", "EXISTS")
        while True:
            tok = cur.peek()
            if tok is None or not tok.is_name or tok.is_(*_NAME_BEFORE):
                break
            try:
                db, name = cur.qualified_name()
            except SqlParseError:
                break
            if db or database:
                out.add(f"{db or database}.{name}".lower())
            if not cur.accept_punct(","):
                break
    return out


class BinlogScan:
    """One read of the binlog for the tables ``behind`` (table -> position), up to ``end``."""

    def __init__(self, behind: Mapping[str, BinlogPosition], end: BinlogPosition) -> None:
        self.behind = {t: p.ordinal for t, p in behind.items()}
        self.lower = {t.lower(): t for t in behind}  # DDL names are matched case-insensitively
        self.end = end.ordinal
        self.found: dict[str, datetime] = {}
        self.group: set[str] = set()
        self.events = 0
        self.last_ts: int | None = None
        self.complete = True

    def commit(self, tables: Iterable[str], at: int, ts: int | None) -> None:
        """A transaction touching ``tables`` committed, its commit event ending at ordinal ``at``."""
        when = _utc(ts)
        for table in tables:
            if table not in self.found and self.behind[table] < at and when is not None:
                self.found[table] = when

    def read(self, settings: dict[str, Any], start: BinlogPosition, max_events: int) -> None:
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent
        from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

        rows = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
        stream = BinLogStreamReader(
            connection_settings=settings, server_id=STATUS_SERVER_ID, blocking=False, resume_stream=True,
            log_file=start.file, log_pos=start.pos,
            only_events=[GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent, RotateEvent, TableMapEvent, *rows],
            freeze_schema=True, enable_logging=False,
        )
        try:
            for event in stream:
                self.events += 1
                if event.timestamp:
                    self.last_ts = event.timestamp
                here = BinlogPosition(stream.log_file, int(stream.log_pos)).ordinal
                if isinstance(event, rows):
                    table = f"{event.schema}.{event.table}"
                    if table in self.behind:
                        self.group.add(table)
                elif isinstance(event, XidEvent):
                    self.commit(self.group, here, event.timestamp)
                    self.group = set()
                elif isinstance(event, QueryEvent):
                    self._query(event, here)
                elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
                    self.group = set()  # a new transaction (or standalone DDL) starts
                if here >= self.end or len(self.found) == len(self.behind):
                    break
                if self.events >= max_events:
                    self.complete = False
                    break
        finally:
            stream.close()

    def _query(self, event: Any, here: int) -> None:
        sql = event.query if isinstance(event.query, str) else event.query.decode("utf-8", "replace")
        head = sql.lstrip().upper()
        if head.startswith("BEGIN") or head.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK TO")):
            if head.startswith("BEGIN"):
                self.group = set()
            return
        if head.startswith("COMMIT"):  # a non-transactional engine's group
            self.commit(self.group, here, event.timestamp)
            self.group = set()
            return
        if head.startswith(("ROLLBACK", "XA ")):  # XA: counted at its XA COMMIT, which has no rows here
            self.group = set()
            return
        database = event.schema.decode() if isinstance(event.schema, bytes) else (event.schema or None)
        named = [self.lower[t] for t in ddl_tables(sql, database) if t in self.lower]
        self.commit(named, here, event.timestamp)  # DDL commits implicitly, as its own group
        self.group = set()


def _utc(ts: int | None) -> datetime | None:
    return None if not ts else datetime.fromtimestamp(ts, timezone.utc).replace(tzinfo=None)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
