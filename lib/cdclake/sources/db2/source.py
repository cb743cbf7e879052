"""The Db2 source: ASN Capture's change-data tables, read by Spark in parallel, window by window.

The driver connection (``ibm_db_dbi``) only plans: it reads the register, the catalog and Capture's
synchpoint, and counts. Rows travel from Db2 to bronze through Spark's JDBC reads (:mod:`.reads`).

A window is ``(start, hi]`` in commit sequences, ``hi`` Capture's synchpoint when the run began: Capture
writes a transaction's CD rows, its UOW row and the synchpoint past it in one commit cycle, so every
transaction at or below ``hi`` is complete in the CD tables, and every window ends between transactions.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError, PositionLostError, PreflightError, command, table_regex
from cdclake.kit import ChunkPlan, Connector, JdbcEndpoint, JdbcSnapshotReader, KeyRange
from cdclake.schema import TableSchema
from cdclake.sources.db2 import catalog
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.config import ISOLATION_LEVELS, Db2SourceConfig
from cdclake.sources.db2.position import CommitSeqPosition, clock_after, seq_hex, show
from cdclake.sources.db2.reads import (
    TableRead,
    assemble,
    cd_rows,
    explain_missing_uow,
    jdbc_properties,
    numbered,
    uow_rows,
)
from cdclake.sources.db2.types import NOT_CAPTURED, Db2TypeMapper, quote_identifier
from cdclake.spi import (
    PENDING_SCAN_EVENTS,
    CommittedWindow,
    Ddl,
    LogReader,
    PendingChanges,
    Position,
    SnapshotStart,
    Source,
    SourceContext,
    WindowRequest,
    WindowSink,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: preflight warns when Capture's synchpoint is older than this (Capture stopped, or far behind the log)
CAPTURE_BEHIND_WARN_S = 600

_EMPTY_STATS = {"events": 0, "transactions": 0, "rolled_back": 0, "rows_by_table": {}, "truncates": 0,
                "partial": False}


def schema_ddl(schema: TableSchema) -> str:
    """The CREATE TABLE text a schema-history entry shows for ``schema`` (from the catalog, not the server)."""
    cols = ", ".join(f"{quote_identifier(c.name)} {c.source_type}{'' if c.nullable else ' NOT NULL'}"
                     for c in schema.columns)
    key = f", PRIMARY KEY ({', '.join(quote_identifier(k) for k in schema.primary_key)})" if schema.primary_key else ""
    return f"CREATE TABLE {quote_identifier(schema.database)}.{quote_identifier(schema.table)} ({cols}{key})"


class Db2Connector(Connector):
    system = "Db2"
    fix = "check source.host, port, database, user and password, and that the server accepts TCP/IP connections"

    def __init__(self, config: Db2SourceConfig) -> None:
        self.config = config

    def where(self) -> str:
        return f"{self.config.host}:{self.config.port}/{self.config.database} as {self.config.user}"

    def open(self) -> Any:
        import ibm_db_dbi

        return ibm_db_dbi.connect(self.config.dsn(), self.config.user, self.config.password.get_secret_value())

    def jdbc(self) -> JdbcEndpoint:
        return JdbcEndpoint(self.config.spark_jdbc_url(), jdbc_properties(self.config))


class Db2Server:
    """The source's driver connection (it plans, reads the register and catalog, counts) and Capture's state:
    registrations, synchpoint and the commit clock of positions."""

    def __init__(self, config: Db2SourceConfig, connect: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.cs = config.control_schema
        self.connector = Db2Connector(config)
        self._open = connect
        self._conn: Any = None
        #: positions the lake's tables stand at: the commit clock counts on from them
        self.anchors: list[CommitSeqPosition] = []

    def connect_new(self) -> Any:
        """A connection of its own (e.g. one that holds the snapshot's locks)."""
        return self.connector.connect(self._open)

    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.connect_new()
        return self._conn

    def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = self.conn()
        try:
            return catalog.fetch(conn, sql, params)
        finally:
            conn.rollback()  # no read transaction stays open: it would block REMOVETABLE's DROP

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    # ---- tables -------------------------------------------------------------------------------------------

    def registrations(self) -> dict[str, catalog.Registration]:
        try:
            return catalog.registrations(self.conn(), self.cs)
        except Exception as exc:
            if "SQL0204N" in str(exc):
                raise PreflightError(f"{self.cs}.IBMSNAP_REGISTER does not exist: SQL Replication's Capture control "
                                     f"tables are not in schema {self.cs}",
                                     "create them (asncdctables.sql, docs/db2.md) or set source.control_schema to "
                                     "the schema that has them (ASNCDC in Debezium's set-up, ASN in a classic "
                                     "one)") from None
            raise
        finally:
            self.conn().rollback()

    def capture_behind(self, hwm: catalog.Synchpoint) -> float | None:
        """Seconds from Capture's ``SYNCHTIME`` to the server's clock (None if Capture has not set one)."""
        if hwm.time is None:
            return None
        now = self.fetch(Q.RETENTION.format(cs=self.cs))[0][2]
        return None if now is None else (now - dt.datetime.fromisoformat(hwm.time)).total_seconds()

    def high_water_mark(self, required: bool = True) -> catalog.Synchpoint | None:
        try:
            hwm = catalog.high_water_mark(self.conn(), self.cs)
        finally:
            self.conn().rollback()
        if hwm is None and required:
            raise CdcError(f"Capture has no synchpoint in {self.cs}.IBMSNAP_REGISTER (it has not run)",
                           f"start Capture: VALUES {self.cs}.ASNCDCSERVICES('start','asncdc')", permanent=True)
        return hwm

    # ---- positions ------------------------------------------------------------------------------------------

    def uow_count(self, lo: str, hi: str) -> int:
        rows = self.fetch(Q.UOW_COUNT.format(cs=self.cs), (bytes.fromhex(lo), bytes.fromhex(hi)))
        return int(rows[0][0] or 0)

    def position_at(self, commitseq: str, anchors: list[CommitSeqPosition] | None = None,
                     captured_at: str | None = None) -> CommitSeqPosition:
        return CommitSeqPosition(commitseq, clock_after(self.anchors if anchors is None else anchors, commitseq,
                                                        self.uow_count), captured_at)

    def position_at_hwm(self) -> CommitSeqPosition:
        hwm = self.high_water_mark()
        assert hwm is not None
        return self.position_at(hwm.seq, captured_at=hwm.time)

class Db2Source(Source):
    connector = "db2"
    position_type = CommitSeqPosition

    def __init__(self, config: Db2SourceConfig, context: SourceContext,
                 connect: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.context = context
        self.types = Db2TypeMapper()
        self.server = Db2Server(config, connect)
        self.snapshot = Db2SnapshotReader(self.server, self.types)
        self.log = Db2LogReader(self.server, self.types)

    def close(self) -> None:
        self.snapshot.end()
        self.server.close()

    def captured_tables(self) -> list[str]:
        return sorted(t for t in self.server.registrations() if self.config.captures(t))

    def preflight(self) -> None:
        cs = self.server.cs
        regs = self.server.registrations()
        hwm = self.server.high_water_mark(required=False)
        if hwm is None:
            raise PreflightError(f"Capture has not recorded a synchpoint in {cs}.IBMSNAP_REGISTER: it has never "
                                 "run, or not yet finished a commit cycle",
                                 f"start it: VALUES {cs}.ASNCDCSERVICES('start','asncdc') (or asncap "
                                 f"capture_schema={cs}), and check its status")
        for table in sorted(t for t in regs if self.config.captures(t)):
            reg = regs[table]
            if reg.state != "A":
                raise PreflightError(
                    f"the registration of {table} is not active (STATE '{reg.state}'"
                    + (f", {reg.state_info}" if reg.state_info else "") + "): Capture does not capture it",
                    f"UPDATE {cs}.IBMSNAP_REGISTER SET STATE = 'A' WHERE SOURCE_OWNER = '{reg.source_owner}' "
                    f"AND SOURCE_TABLE = '{reg.source_table}', then VALUES {cs}.ASNCDCSERVICES('reinit',"
                    "'asncdc'); changes made while it was inactive are lost: "
                    f"{command('snapshot', '--force', '--tables', table_regex(table))} afterwards")
            for column in catalog.columns(self.server.conn(), reg.source_owner, reg.source_table):
                if column.attrs.get("base") in NOT_CAPTURED:
                    raise PreflightError(
                        f"{table}.{column.name} is {column.source_type}: SQL Replication does not capture tables with "
                        "BOOLEAN columns", f"exclude {table} (source.exclude_tables) or change the column's type")
        self.server.conn().rollback()
        behind = self.server.capture_behind(hwm)
        if behind is not None and behind > CAPTURE_BEHIND_WARN_S:
            log.warning("Capture's synchpoint is %.0f s old (SYNCHTIME %s in %s.IBMSNAP_REGISTER): Capture is "
                        "stopped or far behind, and windows end there; check VALUES "
                        "%s.ASNCDCSERVICES('status','asncdc')",
                        behind, hwm.time, cs, cs)



class Db2SnapshotReader(JdbcSnapshotReader):
    """Tables read over Spark JDBC at the isolation ``source.snapshot.isolation`` says, optionally under SHARE locks
    taken before the position (Capture's synchpoint)."""

    def __init__(self, server: Db2Server, types: Db2TypeMapper) -> None:
        super().__init__(server.config.snapshot)
        self.server = server
        self.config = server.config
        self.types = types
        self.cs = server.cs
        self._snapshot: CommitSeqPosition | None = None
        self._lock_conn: Any = None  # holds the snapshot's table locks (its transaction stays open)
        self._held: set[str] = set()

    def start(self, tables: list[str]) -> SnapshotStart:
        regs = self.server.registrations()
        for table in tables:
            if table not in regs:
                raise CdcError(f"{table} is not registered for capture in {self.cs}.IBMSNAP_REGISTER",
                               f"CALL {self.cs}.ADDTABLE('<schema>', '<table>') and VALUES "
                               f"{self.cs}.ASNCDCSERVICES('reinit','asncdc')", permanent=True)
        if self.config.snapshot.lock_mode == "share":
            self._lock_tables([regs[t] for t in tables])  # before the position: no write lands in between
        position = self.server.position_at_hwm()
        schemas = {t: catalog.table_schema(self.server.conn(), regs[t]) for t in tables}
        self.server.conn().rollback()
        self._snapshot = position
        return SnapshotStart(position, schemas, {t: schema_ddl(s) for t, s in schemas.items()}, sorted(self._held))

    def _lock_tables(self, regs: list[catalog.Registration]) -> None:
        conn = self._lock_conn = self._lock_conn or self.server.connect_new()
        try:
            catalog.execute(conn, Q.LOCK_TIMEOUT.format(seconds=self.config.snapshot.lock_timeout))
            for reg in regs:
                catalog.execute(conn, Q.LOCK_TABLE.format(
                    table=f"{quote_identifier(reg.source_owner)}.{quote_identifier(reg.source_table)}"))
                self._held.add(reg.table)
        except Exception as exc:
            self.end()
            raise CdcError(f"cannot lock {', '.join(r.table for r in regs)} IN SHARE MODE for the snapshot "
                           f"within source.snapshot.lock_timeout ({self.config.snapshot.lock_timeout} s): {exc}",
                           "wait for the transactions writing them to end, raise source.snapshot.lock_timeout, or "
                           "set source.snapshot.lock_mode: none (the snapshot is exact without locks)") from None

    def end(self, table: str | None = None) -> None:
        if table is None:
            self._held.clear()
        else:
            self._held.discard(table)
        if not self._held and self._lock_conn is not None:
            conn, self._lock_conn = self._lock_conn, None
            try:
                conn.rollback()  # ends the transaction: the locks go
            finally:
                conn.close()

    def prepare(self, position: Position) -> None:
        assert isinstance(position, CommitSeqPosition)
        self._snapshot = position

    # ---- the chunked read's queries -----------------------------------------------------------------------

    def endpoint(self) -> JdbcEndpoint:
        return self.server.connector.jdbc()

    def properties(self, schema: TableSchema) -> dict[str, str]:
        custom = ", ".join(f"`{c.name}` {self.types.read_type(c)}" for c in schema.columns)
        props = {"customSchema": custom}
        if "defaultIsolationLevel" not in self.config.jdbc_options:
            props["defaultIsolationLevel"] = str(ISOLATION_LEVELS[self.config.snapshot.isolation])
        return props

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        cols = ", ".join(f"{self.types.read_sql(c)} AS {quote_identifier(c.name)}" for c in schema.columns)
        return Q.TABLE_READ.format(columns=cols, table=_table(schema), where=f" WHERE {where}" if where else "")

    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        if where:
            return None  # a filtered read (reconcile, backfill) is small: one query
        low, high, count = self.server.fetch(Q.KEY_RANGE.format(key=quote_identifier(key), table=_table(schema)))[0]
        return None if low is None else KeyRange(int(low), int(high), int(count or 0))

    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        return frame.selectExpr(*[f"CAST({self.types.canonical_sql(c, f'`{c.name}`')} AS "
                                  f"{self.types.canonical_type(c)}) AS `{c.name}`" for c in schema.columns])


class Db2LogReader(LogReader):
    """Windows of the CD tables, ``(start, synchpoint]`` in commit sequences, read by Spark and assembled with the
    UOW table into committed changes (the ``committed`` hand-over)."""

    def __init__(self, server: Db2Server, types: Db2TypeMapper) -> None:
        self.server = server
        self.config = server.config
        self.types = types
        self.cs = server.cs

    def lake_positions(self, positions: Mapping[str, Position]) -> None:
        self.server.anchors = [p for p in positions.values() if isinstance(p, CommitSeqPosition)]

    def current_position(self) -> CommitSeqPosition:
        return self.server.position_at_hwm()

    def check_available(self, start: Position) -> None:
        """The CD tables still hold every change after ``start``: Capture did not start (cold) after it, and
        neither retention nor a subscription's prune point has pruned past it. Checked before a window is read
        and again after (pruning only moves forward, so rows read before a passing check were all there)."""
        assert isinstance(start, CommitSeqPosition)
        rows = self.server.fetch(Q.RESTART.format(cs=self.cs))
        if rows and rows[0][4] is not None and seq_hex(bytes(rows[0][4])) > start.commitseq:
            first = seq_hex(bytes(rows[0][4]))
            raise PositionLostError(
                f"Capture started (cold) at {show(first)}, after the lake's position {start.describe()}: the changes "
                f"committed in between were never captured",
                "re-snapshot the tables: cdclake snapshot --force")
        oldest_raw, limit, now = self.server.fetch(Q.RETENTION.format(cs=self.cs))[0]
        oldest = None if oldest_raw is None else seq_hex(bytes(oldest_raw))
        if oldest is None or oldest > start.commitseq:
            # the UOW table keeps nothing at or before the position: retention may have pruned past it, unless
            # the position is younger than the retention limit
            horizon = now - dt.timedelta(minutes=int(limit)) if limit is not None and now is not None else None
            at = dt.datetime.fromisoformat(start.captured_at) if start.captured_at else None
            if horizon is not None and (at is None or at < horizon):
                kept = f"the oldest transaction it keeps is at {show(oldest)}" if oldest else "it keeps none"
                raise PositionLostError(
                    f"Capture's retention pruning (RETENTION_LIMIT {limit} minutes, {self.cs}.IBMSNAP_CAPPARMS) "
                    f"has passed the lake's position {start.describe()}"
                    + (f", taken at {start.captured_at}" if start.captured_at else "")
                    + f": {kept}, and the changes committed in between may be gone",
                    "re-snapshot the tables: cdclake snapshot --force; then run mining more often than the "
                    "retention limit, or raise it")
        regs: dict[str, catalog.Registration] | None = None
        for owner, name, subscriptions, with_point, lowest in self.server.fetch(Q.PRUNE_POINTS.format(cs=self.cs)):
            table = f"{str(owner).strip()}.{str(name).strip()}"
            if not self.config.captures(table) or not subscriptions or with_point < subscriptions or lowest is None:
                continue
            point = seq_hex(bytes(lowest))
            if point <= start.commitseq:
                continue
            regs = self.server.registrations() if regs is None else regs
            reg = regs.get(table)
            if reg is None:
                continue
            cd_oldest = self.server.fetch(Q.CD_OLDEST.format(cd=reg.cd_sql))[0][0]
            if cd_oldest is not None and seq_hex(bytes(cd_oldest)) <= start.commitseq:
                continue  # Capture has not pruned up to the point yet: nothing after the position is gone
            raise PositionLostError(
                f"{table}: the subscriptions in {self.cs}.IBMSNAP_PRUNCNTL let Capture prune its CD table "
                f"{reg.cd_owner}.{reg.cd_table} up to {show(point)}, past the lake's position {start.describe()}: "
                f"its changes committed in between may be gone",
                f"re-snapshot it: {command('snapshot', '--force', '--tables', table_regex(table))}; keep a "
                "prune-control row with a NULL "
                "SYNCHPOINT for the table (ASNCDC.ADDTABLE makes one) so that no other subscriber's progress "
                "prunes what cdclake has not read")

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """Each table's CD rows after its position up to Capture's synchpoint (the distance, in CD rows) and
        the commit time of the oldest (one indexed count per table; nothing is scanned row by row). Changes
        Capture has not written yet (its own latency, ``COMMIT_INTERVAL``) are not seen."""
        hwm = self.server.high_water_mark()
        assert hwm is not None
        end = self.server.position_at(hwm.seq, captured_at=hwm.time)
        behind = self.server.capture_behind(hwm)
        note = (f"Capture's synchpoint is {behind:.0f} s old: changes after it are not counted"
                if behind is not None and behind > 60 else None)
        regs = self.server.registrations()
        oldest: dict[str, dt.datetime] = {}
        distance: dict[str, int] = {}
        for table, position in positions.items():
            reg = regs.get(table)
            if reg is None or not isinstance(position, CommitSeqPosition) or position.commitseq >= end.commitseq:
                if reg is not None:
                    distance[table] = 0
                continue
            count, first, _ = self.server.fetch(Q.CD_COUNT.format(cd=reg.cd_sql),
                                          (bytes.fromhex(position.commitseq), bytes.fromhex(end.commitseq)))[0]
            distance[table] = int(count or 0)
            if first is not None:
                at = self.server.fetch(Q.UOW_TIME.format(cs=self.cs), (bytes(first),))
                if at and at[0][0] is not None:
                    oldest[table] = at[0][0]
        return PendingChanges(known=True, log_end=end, oldest=oldest, complete=True, distance=distance,
                              distance_unit="CD rows", scanned=sum(distance.values()), note=note)

    # ---- mining ----------------------------------------------------------------------------------------------

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        start = request.start
        assert isinstance(start, CommitSeqPosition)
        limit = request.end_limit
        hwm = self.server.high_water_mark()
        assert hwm is not None
        hi, captured_at = hwm.seq, hwm.time
        if isinstance(limit, CommitSeqPosition) and limit.commitseq < hi:
            hi, captured_at = limit.commitseq, limit.captured_at
        if hi <= start.commitseq:
            return sink.committed(CommittedWindow(start, None, dict(_EMPTY_STATS)))
        anchors = [start] + [a for a in self.server.anchors if start.commitseq <= a.commitseq <= hi]
        end = self.server.position_at(hi, anchors, captured_at)
        regs = self.server.registrations()
        reads: list[TableRead] = []
        ddls: list[Ddl] = []
        changed: list[tuple[str, catalog.Registration, TableSchema, TableSchema, int | None, int, Ddl]] = []
        for table, schema in sorted(request.schemas.items()):
            if not self.config.captures(table):
                continue
            reg = regs.get(table)
            if reg is None:
                raise CdcError(f"{table} is no longer registered for capture ({self.cs}.IBMSNAP_REGISTER): its "
                               "changes after the lake's position cannot be read",
                               f"register it again (CALL {self.cs}.ADDTABLE) and re-snapshot it: "
                               f"{command('snapshot', '--force', '--tables', table_regex(table))}; or exclude it "
                               "(source.exclude_tables)", permanent=True)
            self._check_cd_table(table, reg, start, hi)
            floor = request.floors.get(table)
            floor = floor if floor is not None and floor > start.clock else None
            version = request.versions.get(table, 0)
            current = catalog.table_schema(self.server.conn(), reg)
            if _shape(current) == _shape(schema):
                reads.append(TableRead(table, reg, schema, version, self._cd_count(reg, start.commitseq, hi), floor))
                continue
            changed.append((table, reg, schema, current, floor, version,
                            self._schema_change(table, reg, schema, current, start, hi, anchors)))
        # DDL in log order; the engine numbers their schema versions in that order
        changed.sort(key=lambda c: (c[6].position.ordinal, c[0]))
        offset = 0  # the history entries the DDL before make (a re-read mark is one more)
        for table, reg, schema, current, floor, version, ddl in changed:
            ddls.append(ddl)
            new_version = request.next_schema_version + offset
            offset += 1 + len(ddl.reread)
            cut = ddl.position.commitseq  # type: ignore[attr-defined]
            if cut > start.commitseq:  # rows before the change: the history's columns (still in the CD table)
                present = frozenset(c.attrs.get("cd_name") or c.name for c in current.columns)
                reads.append(TableRead(table, reg, schema, version, self._cd_count(reg, start.commitseq, cut), floor,
                                       start.commitseq, cut, present))
            reads.append(TableRead(table, reg, current, new_version, self._cd_count(reg, cut, hi), floor, cut, hi))
        if not any(r.rows for r in reads):
            self.check_available(start)
            return sink.committed(CommittedWindow(end, None, dict(_EMPTY_STATS), ddls))
        frames = [cd_rows(spark, self.config, self.types, r, start.commitseq, hi) for r in reads if r.rows]
        changes = frames[0]
        for more in frames[1:]:
            changes = changes.unionByName(more)
        uow = numbered(uow_rows(spark, self.config, start.commitseq, hi), anchors)
        floors = {r.table: r.floor for r in reads if r.floor is not None}
        rows = assemble(changes, uow, floors)
        return self._commit_rows(sink, start, end, rows, reads, ddls)

    def _check_cd_table(self, table: str, reg: catalog.Registration, start: CommitSeqPosition, hi: str) -> None:
        """A CD table created after the lake's position (REMOVETABLE + ADDTABLE: the offline procedure) lost the
        changes its predecessor held, if any transaction committed in between and it was not reloaded."""
        cd = catalog.catalog_table(self.server.conn(), reg.cd_owner, reg.cd_table)
        self.server.conn().rollback()
        if cd is None or cd.created is None:
            return
        if start.captured_at and cd.created < dt.datetime.fromisoformat(start.captured_at):
            return
        rows = self.server.fetch(Q.UOW_LAST_BEFORE.format(cs=self.cs),
                           (cd.created, bytes.fromhex(start.commitseq), bytes.fromhex(hi)))
        if not rows or rows[0][0] is None:
            return  # nothing committed between the position and the new CD table
        cd_oldest = self.server.fetch(Q.CD_OLDEST.format(cd=reg.cd_sql))[0][0]
        if cd_oldest is not None and seq_hex(bytes(cd_oldest)) <= start.commitseq:
            return  # recreated and reloaded with its rows
        last = seq_hex(bytes(rows[0][0]))
        raise PositionLostError(
            f"{table}: its CD table {reg.cd_owner}.{reg.cd_table} was created at {cd.created.isoformat(' ')}, after "
            f"the lake's position {start.describe()}; the changes of the transactions committed in between (up to "
            f"{show(last)}) were in the CD table it replaced, or not captured",
            f"re-snapshot it: {command('snapshot', '--force', '--tables', table_regex(table))}; before recreating a "
            "CD table, mine until "
            "the lake has everything (docs/db2.md, offline procedure)")

    def _cd_count(self, reg: catalog.Registration, lo: str, hi: str) -> int:
        rows = self.server.fetch(Q.CD_COUNT.format(cd=reg.cd_sql), (bytes.fromhex(lo), bytes.fromhex(hi)))
        return int(rows[0][0] or 0)

    def _schema_change(self, table: str, reg: catalog.Registration, old: TableSchema, new: TableSchema,
                       start: CommitSeqPosition, hi: str, anchors: list[CommitSeqPosition]) -> Ddl:
        """The change from the history's ``old`` to the catalog's ``new`` columns, placed after the last transaction
        that committed before the source or CD table was last altered (Capture captures nothing of a table between
        the procedures' deactivation and reactivation, so no row of the table lies between)."""
        times = [t.altered for t in (catalog.catalog_table(self.server.conn(), reg.source_owner, reg.source_table),
                                     catalog.catalog_table(self.server.conn(), reg.cd_owner, reg.cd_table))
                 if t is not None and t.altered is not None]
        cut = start.commitseq
        if times:
            rows = self.server.fetch(Q.UOW_LAST_BEFORE.format(cs=self.cs),
                               (max(times), bytes.fromhex(start.commitseq), bytes.fromhex(hi)))
            if rows and rows[0][0] is not None:
                cut = seq_hex(bytes(rows[0][0]))
        at = self.server.position_at(cut, anchors)
        # between the last commit before the change (number n) and the next one (n + 1, its rows n + 1 + k)
        position = CommitSeqPosition(cut, at.clock + 1)
        renames = {o.name: n.name for o, n in zip(old.columns, new.columns, strict=False)
                   if o.name != n.name and o.attrs.get("cd_name") == n.attrs.get("cd_name")}
        before = {renames.get(c.name, c.name) for c in old.columns}
        added = [c for c in new.columns if c.name not in before]
        reread = {table: "added column(s) " + ", ".join(f"{c.name} DEFAULT {c.default}" for c in added
                                                         if c.default is not None)
                  } if any(c.default is not None for c in added) else {}
        gone = [c.name for c in old.columns if c.name not in renames and c.name not in {n.name for n in new.columns}]
        text = (f"-- {reg.cd_owner}.{reg.cd_table} ({table}) now has "
                + ", ".join(f"{c.name} {c.source_type}" for c in new.columns)
                + (f"; added {', '.join(c.name for c in added)}" if added else "")
                + (f"; renamed {', '.join(f'{a} to {b}' for a, b in renames.items())}" if renames else "")
                + (f"; dropped {', '.join(gone)}" if gone else ""))
        log.info("%s: schema change at %s: %s", table, position.describe(), text)
        return Ddl(position, text, reg.source_owner, {table: new}, None, column_renames={table: renames} if renames
                   else {}, reread=reread)

    def _commit_rows(self, sink: WindowSink, start: CommitSeqPosition, end: CommitSeqPosition, rows: DataFrame,
                     reads: list[TableRead], ddls: list[Ddl]) -> Position:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        kept = rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            try:
                # one job: the window's transactions and each table's changes
                tables = sorted({r.table for r in reads if r.rows})
                row = kept.agg(F.count_distinct("txid"), *[F.count(F.when(F.col("source_table") == t, 1))
                                                            for t in tables]).first()
            except Exception as exc:
                known = explain_missing_uow(exc, self.cs)
                if known is not None:
                    raise known from None
                raise
            self.check_available(start)  # the rows are read: nothing was pruned under the reads
            by_table = {t: int(n) for t, n in zip(tables, row[1:], strict=True) if n}
            stats = {**_EMPTY_STATS, "events": sum(by_table.values()), "transactions": int(row[0]),
                     "rows_by_table": by_table}
            return sink.committed(CommittedWindow(end, kept if stats["events"] else None, stats, ddls))
        finally:
            kept.unpersist()



def _table(schema: TableSchema) -> str:
    return f"{quote_identifier(schema.database)}.{quote_identifier(schema.table)}"


def _shape(schema: TableSchema) -> list[tuple[str, str, Any]]:
    return [(c.name, c.source_type, c.attrs.get("cd_name")) for c in schema.columns]


def source_for(config: Db2SourceConfig, context: SourceContext) -> Db2Source:
    return Db2Source(config, context)
