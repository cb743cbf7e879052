"""The MySQL/MariaDB source: JDBC snapshots (:mod:`.snapshot`) and binlog mining over the replication protocol.

Binlog rows are decoded with the schema the schema history holds at their position: the TableMap
columns are renamed/typed from it before a row is read, never from today's information_schema.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

import pymysql

from cdclake.errors import CdcError, DdlParseError
from cdclake.schema import TableSchema
from cdclake.sources.mysql import lag, preflight, splits
from cdclake.sources.mysql.config import MySqlSourceConfig
from cdclake.sources.mysql.connection import MySqlConnector
from cdclake.sources.mysql.ddl import apply_ddl, tables_named
from cdclake.sources.mysql.position import BinlogPosition
from cdclake.sources.mysql.schema_change import NotEvaluable, evaluation_sql, existing_rows
from cdclake.sources.mysql.snapshot import MySqlSnapshotReader
from cdclake.sources.mysql.types import MySqlTypeMapper, table_map_overrides
from cdclake.spi import (
    Begin,
    Commit,
    CommittedWindow,
    Ddl,
    LogRecord,
    PendingChanges,
    Position,
    RecordLogReader,
    Rollback,
    RowChange,
    Source,
    SourceContext,
    WindowEnd,
    WindowRequest,
    WindowSink,
)
from cdclake.spi.window import PENDING_SCAN_EVENTS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_T = TypeVar("_T")
SYSTEM_DATABASES = {"mysql", "information_schema", "performance_schema", "sys"}
_TXN_CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|XA\s|SAVEPOINT|ROLLBACK\s+TO|RELEASE\s+SAVEPOINT)", re.I)
FL_STANDALONE = 1  # MariaDB GTID flag: the group has no BEGIN/COMMIT (DDL)


def _utc(ts: int | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).replace(tzinfo=None)


class MySqlSource(Source):
    position_type = BinlogPosition

    def __init__(self, config: MySqlSourceConfig, context: SourceContext) -> None:
        super().__init__(config, context, MySqlTypeMapper())
        self.connector = config.type
        self.skip_unparsable_ddl = context.skip_unparsable_ddl
        self.connection = MySqlConnector(config)
        self.snapshot = MySqlSnapshotReader(self.connection, self.types)
        self.log = MySqlLogReader(self)
        self._flavor: str | None = None

    def connection_settings(self) -> dict[str, Any]:
        return self.connection.settings()

    def connect(self) -> pymysql.connections.Connection:
        return self.connection.connect()

    def split_server_id_base(self) -> int:
        """The first server id of the connections split tasks open (one per split)."""
        if self.config.split_server_id_base is not None:
            return self.config.split_server_id_base
        return (self.config.server_id + 1_000_000) % (2**32 - 1000) or 1

    @property
    def flavor(self) -> str:
        if self._flavor is None:
            conn = self.connect()
            try:
                self._flavor = preflight.detect_flavor(conn)
            finally:
                conn.close()
        return self._flavor

    def preflight(self) -> None:
        conn = self.connect()
        try:
            info = preflight.check_server(conn, self.config.server_id)
            self._flavor = info.flavor
        finally:
            conn.close()

    def captured_tables(self) -> list[str]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_type = 'BASE TABLE' ORDER BY table_schema, table_name"
                )
                names = [f"{db}.{t}" for db, t in cur.fetchall() if db.lower() not in SYSTEM_DATABASES]
        finally:
            conn.close()
        return [n for n in names if self.config.captures(n)]


class MySqlLogReader(RecordLogReader):
    """The binlog, read over the replication protocol: on the driver, or split by split in Spark tasks."""

    def __init__(self, source: MySqlSource) -> None:
        self.source = source
        self.config = source.config

    def current_position(self) -> BinlogPosition:
        conn = self.source.connect()
        try:
            return preflight.binlog_end(conn)
        finally:
            conn.close()

    def check_available(self, start: Position) -> None:
        assert isinstance(start, BinlogPosition)
        conn = self.source.connect()
        try:
            preflight.check_binlog_available(conn, start, self.source.flavor, resume_by=self.config.position_mode)
        finally:
            conn.close()

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """Binlog bytes to the log end and each table's oldest pending commit (:mod:`.lag`)."""
        return lag.pending_changes(self.source, positions, max_events)  # windows end on commits: nothing is carried

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        """A window large enough is decoded by Spark tasks, split by split (:mod:`.splits`); others, and a
        window that starts with a statement of a captured table, by the driver."""
        planned = splits.plan(self.source, request)
        if planned.plan is None:
            return super().mine_window(spark, _first_transaction(request) if planned.driver_first else request, sink)
        plan = planned.plan
        log.info("window %s: %d bytes of binlog in %d splits decoded by Spark tasks", request.window_id,
                 plan.total_bytes, len(plan.splits))
        closing = self._close(spark, plan, request)  # pass 1: what ends the window, and its counts
        if closing.end is None:
            log.info("window %s: %s starts the window: the driver decodes that transaction", request.window_id,
                     closing.reason)
            return super().mine_window(spark, _first_transaction(request), sink)
        if closing.cut:
            log.info("window %s ends at %s, before %s", request.window_id, closing.end.describe(), closing.reason)
            plan = splits.until(plan, closing.end)
            closing = self._close(spark, plan, request)  # the counts up to the cut (no image is built)
            assert closing.end is not None and closing.stats is not None
        # Pass 2: the committed changes, decoded by the tasks straight into the bronze commit.
        rows = splits.read(spark, plan, "changes").drop("kind", "raw")
        end, stats = closing.end, closing.stats
        return self._split_job(lambda: sink.committed(CommittedWindow(end, rows, stats)))

    def _close(self, spark: SparkSession, plan: splits.SplitPlan, request: WindowRequest) -> splits.Closing:
        """Pass 1 over ``plan``'s splits (statements, misfits, counts: no image is built), judged."""
        controls = self._split_job(lambda: splits.read(spark, plan, "controls").where("kind <> 'change'").select(
            "kind", "source_table", "seq", "position", "before", "after", "raw").collect())
        return splits.close(self.source, plan, request, controls)

    def _split_job(self, job: Callable[[], _T]) -> _T:
        """Run a Spark job over splits; a task's failure (the JVM's trace) becomes which split failed and why."""
        try:
            return job()
        except Exception as exc:
            failure = splits.split_failure(exc)
            if failure is None:
                raise
            raise CdcError(failure, "check that the binlog from the window's start is still on the server "
                           "('cdclake status'), that the tasks can reach it and that the server ids "
                           f"{self.source.split_server_id_base()}.. are free (source.split_server_id_base); "
                           "or decode on the driver: mining.decoder: driver") from None

    def records(self, request: WindowRequest) -> Iterator[LogRecord]:
        assert isinstance(request.start, BinlogPosition) and isinstance(request.end_limit, BinlogPosition)
        reader = _BinlogWindow(self.source, request.start, request.end_limit, dict(request.schemas),
                               request.next_schema_version, request.max_events, dict(request.floors))
        yield from reader.run()


def _first_transaction(request: WindowRequest) -> WindowRequest:
    """``request`` bounded to its first transaction (the driver path stops at the first commit past its end)."""
    start = request.start
    assert isinstance(start, BinlogPosition)
    return replace(request, end_limit=BinlogPosition(start.file, start.pos + 1))


class _BinlogWindow:
    """Reads one window of the binlog and turns events into log records."""

    def __init__(self, source: MySqlSource, start: BinlogPosition, end: BinlogPosition,
                 schemas: dict[str, TableSchema], next_version: int, max_events: int | None,
                 floors: dict[str, int]) -> None:
        self.source = source
        self.start = start
        self.end = end
        self.schemas = schemas
        self.versions = {t: next_version - 1 for t in schemas}  # bronze schema_version per table
        self.next_version = next_version
        self.max_events = max_events
        self.floors = floors
        self.mariadb = source.flavor == "mariadb"
        self.gtid = _GtidTracker(self.mariadb, start.gtid)
        self.row_events = 0
        self.txid: str | None = None
        self.in_group = False  # a MariaDB GTID began a group with BEGIN..COMMIT semantics
        self._conn: pymysql.connections.Connection | None = None  # evaluates defaults of added columns

    def _position(self, stream: Any) -> BinlogPosition:
        return BinlogPosition(stream.log_file, int(stream.log_pos), self.gtid.text())

    def run(self) -> Iterator[LogRecord]:
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent, XidEvent
        from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

        settings = self.source.connection_settings()
        by_gtid = self.source.config.position_mode == "gtid" and bool(self.start.gtid)
        stream = BinLogStreamReader(
            connection_settings=settings,
            server_id=self.source.config.server_id,
            blocking=False,
            resume_stream=True,
            log_file=self.start.file,
            log_pos=self.start.pos,
            auto_position=self.start.gtid if by_gtid else None,
            only_events=[GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent, RotateEvent, TableMapEvent,
                         WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
            # The library's MariaDB mode always dumps from the first binlog unless resuming by
            # GTID; a plain COM_BINLOG_DUMP at file/offset works on both flavours.
            is_mariadb=self.mariadb and by_gtid,
            freeze_schema=True,
            enable_logging=False,
        )
        ops = {WriteRowsEvent: "c", UpdateRowsEvent: "u", DeleteRowsEvent: "d"}
        boundary = self.start
        try:
            for event in stream:
                kind = type(event)
                if kind is MariadbGtidEvent:
                    self.gtid.pending = event.gtid
                    self.txid = event.gtid
                    self.in_group = not event.flags & FL_STANDALONE
                    if self.in_group:
                        yield Begin(self.txid, self._position(stream))
                    continue
                if kind is GtidEvent:
                    self.gtid.pending = event.gtid
                    self.txid = event.gtid
                    continue
                if kind is TableMapEvent:
                    parked = self._patch_table_map(stream, event)
                    if parked is not None:
                        yield parked
                    continue
                if kind in ops:
                    table = f"{event.schema}.{event.table}"
                    if table not in self.schemas or not self.source.config.captures(table):
                        continue
                    here = BinlogPosition(stream.log_file, int(stream.log_pos)).ordinal
                    if here <= self.floors.get(table, -1):
                        continue
                    if self.txid is None:
                        self.txid = f"{stream.log_file}:{stream.log_pos}"
                        yield Begin(self.txid, self._position(stream))
                    yield from self._rows(event, ops[kind], table)
                    continue
                if kind is XidEvent:
                    self.gtid.commit()
                    boundary = self._position(stream)
                    yield Commit(self.txid or f"xid:{event.xid}", boundary, _utc(event.timestamp))
                    self.txid = None
                    if self._should_stop(boundary):
                        break
                    continue
                if kind is QueryEvent:
                    stop, records = self._query(event, stream)
                    yield from records
                    if stop is not None:
                        boundary = self._position(stream)
                        if self._should_stop(boundary):
                            break
                    continue
                if kind is RotateEvent and self.txid is None:
                    boundary = self._position(stream)
                    if self._should_stop(boundary):
                        break
            else:
                if self.txid is None:
                    boundary = self._position(stream)
        finally:
            stream.close()
            if self._conn is not None:
                self._conn.close()
        yield WindowEnd(boundary)

    def _should_stop(self, at: BinlogPosition) -> bool:
        if at.ordinal >= self.end.ordinal:
            return True
        return self.max_events is not None and self.row_events >= self.max_events

    def _patch_table_map(self, stream: Any, event: Any) -> Ddl | None:
        """Type the table map's columns from the schema history; if the server's shape of the table
        (column count, and names when ``binlog_row_metadata=FULL`` logs them) is not the history's,
        the table is parked here (a record saying so), since its rows cannot be decoded."""
        table = f"{event.schema}.{event.table}"
        schema = self.schemas.get(table)
        here = BinlogPosition(stream.log_file, int(stream.log_pos)).ordinal
        if schema is None or here <= self.floors.get(table, -1):
            return None
        mapped = stream.table_map[event.table_id].columns
        logged = list(getattr(getattr(event, "optional_metadata", None), "column_name_list", None) or [])
        problem = None
        if len(mapped) != len(schema.columns):
            problem = f"{len(mapped)} columns"
        elif logged and [n.lower() for n in logged] != [c.name.lower() for c in schema.columns]:
            problem = f"the columns ({', '.join(logged)})"
        if problem is not None:
            position = self._position(stream)
            reason = (f"binlog rows at {position.describe()} have {problem} but the schema history says "
                      f"{len(schema.columns)} ({', '.join(schema.column_names)}): a DDL was skipped or misread, or "
                      "the table changed outside the binlog")
            self.schemas.pop(table, None)
            return Ddl(position, f"/* rows of {table} that do not fit its schema */", event.schema, {},
                       _utc(event.timestamp), parked={table: reason})
        for col, source_col in zip(mapped, schema.columns):
            for attr, value in table_map_overrides(source_col).items():
                setattr(col, attr, value)
        return None

    def _rows(self, event: Any, op: str, table: str) -> Iterator[RowChange]:
        schema = self.schemas[table]
        convert = self.source.types.canonical_from_binlog
        columns = schema.columns
        version = self.versions.get(table, self.next_version - 1)
        txid = self.txid or ""
        for row in event.rows:
            self.row_events += 1
            # none_sources tells an empty SET (canonical '') from a real NULL.
            if op == "u":
                before = _canonical(convert, columns, row["before_values"], row.get("before_none_sources"))
                after = _canonical(convert, columns, row["after_values"], row.get("after_none_sources"))
            elif op == "c":
                before, after = None, _canonical(convert, columns, row["values"], row.get("none_sources"))
            else:
                before, after = _canonical(convert, columns, row["values"], row.get("none_sources")), None
            yield RowChange(txid, table, op, before, after, version)

    def _query(self, event: Any, stream: Any) -> tuple[str | None, list[LogRecord]]:
        """Handle a query event; returns (group end marker or None, records)."""
        sql = event.query if isinstance(event.query, str) else event.query.decode("utf-8", "replace")
        position = self._position(stream)
        head = sql.lstrip().upper()
        if head.startswith("BEGIN"):
            if self.txid is None:
                self.txid = f"{stream.log_file}:{stream.log_pos}"
            return None, [Begin(self.txid, position)]
        if head.startswith("COMMIT"):  # non-transactional engines end their group this way
            self.gtid.commit()
            position = self._position(stream)
            txid, self.txid = self.txid, None
            return "commit", [Commit(txid or f"{position}", position, _utc(event.timestamp))]
        if head.startswith("ROLLBACK") and not head.startswith("ROLLBACK TO"):
            txid, self.txid = self.txid, None
            self.gtid.pending = None
            return "rollback", [Rollback(txid or "", position)]
        if _TXN_CONTROL.match(sql):
            return None, []
        database = event.schema.decode() if isinstance(event.schema, bytes) else (event.schema or None)
        zone = getattr(event, "time_zone", None)
        session = (zone.decode() if isinstance(zone, bytes) else zone, event.timestamp)
        if self.in_group and self.txid is not None:
            # MariaDB logs CREATE TABLE ... SELECT inside the group of its rows: the group goes on.
            return None, self._ddl(sql, database, position, _utc(event.timestamp), session)
        # A DDL statement: its own group, committed implicitly.
        self.gtid.commit()
        position = self._position(stream)
        self.txid = None
        return "ddl", self._ddl(sql, database, position, _utc(event.timestamp), session)

    def _evaluate(self, session: tuple[str | None, int]) -> Any:
        """``evaluate(default, column)`` for :func:`.schema_change.existing_rows`: the server computes
        the default again in the statement's session time zone and at its instant."""

        def evaluate(default: str, column: Any) -> Any:
            sql = evaluation_sql(default, column, self.source.types)
            if self._conn is None:
                self._conn = self.source.connect()
            zone, ts = session
            try:
                with self._conn.cursor() as cur:
                    cur.execute("SET @@session.time_zone = " + ("%s" if zone else "@@global.time_zone"),
                                (zone,) if zone else None)
                    cur.execute("SET @@session.timestamp = %s", (ts,))
                    cur.execute(sql)
                    row = cur.fetchone()
            except pymysql.err.MySQLError as exc:  # e.g. a default naming a column: per row
                raise NotEvaluable(f"the server cannot evaluate it alone ({exc.args[-1] if exc.args else exc})"
                                   ) from None
            value = row[0] if row else None
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return value if value is None or isinstance(value, (int, float, str)) else str(value)

        return evaluate

    def _ddl(self, sql: str, database: str | None, position: BinlogPosition,
             commit_ts: datetime | None, session: tuple[str | None, int] = (None, 0)) -> list[LogRecord]:
        captured = self.source.config.captures
        try:
            outcome = apply_ddl(sql, self.schemas, database)
        except DdlParseError as exc:
            reason = exc.problem.split(": ", 1)[-1]
            if self.source.skip_unparsable_ddl:
                return [Ddl(position, sql, database, {}, commit_ts, skipped_reason=exc.problem)]
            # Only the tables the statement names stop; a statement naming none cannot change them.
            tables = [t for t in tables_named(sql, database, self.schemas)
                      if captured(t) and position.ordinal > self.floors.get(t, -1)]
            if not tables:
                log.warning("a DDL statement at %s does not parse and names no captured table; it is ignored "
                            "(%s): %s", position.describe(), reason, sql[:300])
                return []
            for t in tables:
                self.schemas.pop(t, None)
            return [Ddl(position, sql, database, {}, commit_ts,
                        parked={t: f"cdclake cannot apply the statement ({reason})" for t in tables})]
        records: list[LogRecord] = []
        for table in outcome.truncated:
            if table in self.schemas and position.ordinal > self.floors.get(table, -1):
                txid = f"truncate:{position}"
                records += [
                    Begin(txid, position),
                    RowChange(txid, table, "t", None, None, self.versions.get(table, self.next_version - 1)),
                    Commit(txid, position, commit_ts),
                ]
        parked = {t: f"cdclake cannot follow the table: {why}" for t, why in outcome.unknown.items()
                  if captured(t) and position.ordinal > self.floors.get(t, -1)}
        for t in parked:
            self.schemas.pop(t, None)
        if (outcome.ignored or not outcome.changes) and not parked:
            return records
        changes: dict[str, TableSchema | None] = {}
        reread: dict[str, str] = {}
        before = dict(self.schemas)
        for table, schema in outcome.changes.items():
            if table in parked or (not captured(table) and table not in self.schemas):
                continue
            if position.ordinal <= self.floors.get(table, -1):
                continue
            if schema is None or not captured(table):
                self.schemas.pop(table, None)
                changes[table] = None
            else:
                old = before.get(outcome.renamed_from.get(table, table))
                if old is not None and table not in outcome.created:  # a new table is empty
                    schema, why = existing_rows(old, schema, outcome.column_renames.get(table, {}),
                                                self._evaluate(session))
                    if why:
                        reread[table] = why
                self.schemas[table] = schema
                changes[table] = schema
            self.versions[table] = self.next_version
            self.next_version += 1
        reread.update({t: why for t, why in outcome.reread.items() if changes.get(t) is not None})
        if changes or parked:
            renames = {new: old for new, old in outcome.renamed_from.items() if new in changes}
            column_renames = getattr(outcome, "column_renames", {}) or {}
            records.append(Ddl(position, sql, database, changes, commit_ts, renames,
                               {t: r for t, r in column_renames.items() if t in changes}, reread=reread,
                               created=[t for t in outcome.created if t in changes], parked=parked))
        return records


def _canonical(convert: Any, columns: list[Any], values: dict[str, Any],
               none_sources: dict[str, str] | None) -> dict[str, Any]:
    if not none_sources:
        return {c.name: convert(c, values[c.name]) for c in columns}
    return {c.name: convert(c, values[c.name], none_sources.get(c.name)) for c in columns}


class _GtidTracker:
    """The GTID position as transactions commit (MariaDB domain list or MySQL GTID set)."""

    def __init__(self, mariadb: bool, initial: str | None) -> None:
        self.mariadb = mariadb
        self.pending: str | None = None
        self.domains: dict[int, str] = {}
        self.mysql_set: Any = None
        if mariadb:
            for part in (initial or "").split(","):
                part = part.strip()
                if part:
                    self.domains[int(part.split("-", 1)[0])] = part
        elif initial:
            from pymysqlreplication.gtid import GtidSet

            self.mysql_set = GtidSet(initial)

    def commit(self) -> None:
        if self.pending is None:
            return
        if self.mariadb:
            self.domains[int(self.pending.split("-", 1)[0])] = self.pending
        else:
            from pymysqlreplication.gtid import Gtid, GtidSet

            if self.mysql_set is None:
                self.mysql_set = GtidSet(self.pending)
            else:
                self.mysql_set = self.mysql_set + Gtid(self.pending)
        self.pending = None

    def text(self) -> str | None:
        if self.mariadb:
            return ",".join(self.domains[d] for d in sorted(self.domains)) or None
        return str(self.mysql_set) if self.mysql_set is not None else None

