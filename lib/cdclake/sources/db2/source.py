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
from cdclake.schema import TableSchema
from cdclake.sources.db2 import catalog
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.config import Db2SourceConfig
from cdclake.sources.db2.connection import Db2Server
from cdclake.sources.db2.position import CommitSeqPosition, seq_hex, show
from cdclake.sources.db2.reads import (
    TableRead,
    assemble,
    cd_rows,
    explain_missing_uow,
    numbered,
    uow_rows,
)
from cdclake.sources.db2.snapshot import Db2SnapshotReader
from cdclake.sources.db2.types import NOT_CAPTURED, Db2TypeMapper
from cdclake.spi import (
    PENDING_SCAN_EVENTS,
    CommittedWindow,
    Ddl,
    LogReader,
    PendingChanges,
    Position,
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


class Db2Source(Source):
    """A Db2 LUW database: Capture's register and synchpoint, its CD tables read by Spark."""

    connector = "db2"
    position_type = CommitSeqPosition

    def __init__(self, config: Db2SourceConfig, context: SourceContext,
                 connect: Callable[[], Any] | None = None) -> None:
        super().__init__(config, context, Db2TypeMapper())
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



def _shape(schema: TableSchema) -> list[tuple[str, str, Any]]:
    return [(c.name, c.source_type, c.attrs.get("cd_name")) for c in schema.columns]

