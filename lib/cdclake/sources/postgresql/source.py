"""The PostgreSQL source: a logical replication slot (pgoutput) read in bounded windows, a snapshot exact at the
slot's consistent point (docs/postgresql-design.md).

* **Snapshot**: the publication first (changes are decoded only for tables published before them), then the slot
  with its snapshot exported; every Spark partition reads inside that snapshot (:mod:`.snapshot`). Tables added
  later are read in the snapshot of a temporary slot, at its own consistent point.
* **Windows**: ``pg_logical_slot_peek_binary_changes`` up to the server's flushed WAL when the run began (or a
  window's recorded end): whole transactions, decoded on the driver (:mod:`.stream`, :mod:`.decoder`), or, for
  a large window, in Spark tasks (:mod:`.tasks`).
* **Exactly once**: peek never moves the slot. A window starts by confirming the slot up to its start, which the
  lake has committed (``pg_replication_slot_advance``); a run killed at any instant reads the same transactions
  again. The slot retains WAL from the lake's position on, and moves on every window, empty ones too, so an
  idle captured database does not hold WAL that other databases write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.errors import PositionLostError
from cdclake.schema import TableSchema
from cdclake.sources.postgresql import catalog, preflight, stream, tasks
from cdclake.sources.postgresql.config import PostgresSourceConfig
from cdclake.sources.postgresql.connection import PostgresConnector, PostgresServer
from cdclake.sources.postgresql.decoder import PARTITIONS, RELID, ChangeDecoder
from cdclake.sources.postgresql.pgoutput import lsn_text
from cdclake.sources.postgresql.position import LsnPosition
from cdclake.sources.postgresql.snapshot import PostgresSnapshotReader
from cdclake.sources.postgresql.types import PostgresTypeMapper
from cdclake.spi import PENDING_SCAN_EVENTS, PendingChanges, Position, RecordLogReader, Source, SourceContext
from cdclake.spi.records import Ddl, LogRecord, WindowEnd
from cdclake.spi.window import CommittedWindow, WindowRequest, WindowSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)



class PostgresSource(Source):
    connector = "postgresql"
    position_type = LsnPosition

    def __init__(self, config: PostgresSourceConfig, context: SourceContext, connect: Callable[[], Any] | None = None
                 ) -> None:
        super().__init__(config, context, PostgresTypeMapper())
        self.slot = config.slot_name(context.pipeline)
        self.publication = config.publication_name(context.pipeline)
        self.server = PostgresServer(PostgresConnector(config), connect)
        self.snapshot = PostgresSnapshotReader(self.server, config, self.types, self.slot, self.publication)
        self.log = PostgresLogReader(self.server, config, self.slot, self.publication)

    def conn(self) -> Any:
        return self.server.conn()

    def close(self) -> None:
        self.snapshot.end()
        self.server.close()

    # ---- tables -----------------------------------------------------------------------------------------

    def captured_tables(self) -> list[str]:
        return sorted(t for t in catalog.tables(self.conn()) if self.config.captures(t))

    def preflight(self) -> None:
        captured = self.captured_tables()
        preflight.check(self.conn(), captured, self.slot, self.publication, self.config.create_publication)
        preflight.check_partitions(catalog.partitions(self.conn()), self.config.captures)
        for warning in preflight.warnings(self.conn(), captured, self.slot):
            log.warning("%s", warning)

    def covered_tables(self, tables: list[str]) -> dict[str, list[str]]:
        """The partitions of each partitioned table among ``tables``: their rows land in it (their changes are
        published through it), never in tables of their own."""
        out: dict[str, list[str]] = {t: [] for t in tables}
        for name, part in sorted(catalog.partitions(self.conn()).items()):
            if part.root in out:
                out[part.root].append(name)
        return out


class PostgresLogReader(RecordLogReader):
    """The slot's changes, peeked window by window: decoded on the driver, or in Spark tasks for a large window."""

    def __init__(self, server: PostgresServer, config: PostgresSourceConfig, slot: str, publication: str) -> None:
        self.server = server
        self.config = config
        self.slot = slot
        self.publication = publication

    # ---- positions ------------------------------------------------------------------------------------------

    def current_position(self) -> LsnPosition:
        return LsnPosition(catalog.flush_lsn(self.server.conn()), self.server.system())

    def check_available(self, start: Position) -> None:
        assert isinstance(start, LsnPosition)
        if start.system is not None and start.system != self.server.system():
            raise PositionLostError(
                f"the lake's position {start.describe()} is of database system {start.system}, this server is "
                f"{self.server.system()} (a failover, a restore or another cluster): its WAL has no such position",
                "re-snapshot the tables on this server: cdclake snapshot --force")
        slot = catalog.slot(self.server.conn(), self.slot)
        if slot is None:
            raise PositionLostError(f"replication slot {self.slot} does not exist (dropped): the changes after the "
                                    f"lake's position {start.describe()} are gone",
                                    "re-snapshot the tables: cdclake snapshot --force (creates the slot anew)")
        if slot.wal_status == "lost" or slot.restart_lsn is None:
            raise PositionLostError(
                f"replication slot {self.slot} was invalidated (wal_status {slot.wal_status}; "
                "max_slot_wal_keep_size): the WAL after the lake's position "
                f"{start.describe()} is gone", "re-snapshot the tables: cdclake snapshot --force; then mine more "
                "often than max_slot_wal_keep_size lasts, or raise it")
        if slot.confirmed_flush_lsn is not None and slot.confirmed_flush_lsn > start.lsn:
            raise PositionLostError(
                f"replication slot {self.slot} was confirmed up to LSN {lsn_text(slot.confirmed_flush_lsn)}, past "
                f"the lake's position {start.describe()}: another consumer moved it, and the changes in between "
                "are gone", "re-snapshot the tables: cdclake snapshot --force; give cdclake a slot of its own")

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """Each table's distance to the flushed WAL, in bytes, and the WAL the slot keeps the server from recycling.
        Nothing is decoded: the slot is the mining run's (a peek meanwhile would make that run fail), and the WAL
        also holds other tables' and databases' writes, so a distance is an upper bound of what is pending."""
        conn = self.server.conn()
        end = self.current_position()
        distance = {t: max(0, end.lsn - p.lsn) for t, p in positions.items() if isinstance(p, LsnPosition)}
        slot = catalog.slot(conn, self.slot)
        if slot is None:
            note = f"replication slot {self.slot} does not exist: the next mining run stops on the lost changes"
        elif slot.wal_status == "lost" or slot.restart_lsn is None:
            note = f"replication slot {self.slot} was invalidated (wal_status {slot.wal_status}): re-snapshot"
        else:
            note = (f"slot {self.slot} retains {_size(end.lsn - slot.restart_lsn)} of WAL (wal_status "
                    f"{slot.wal_status}" + (f", {_size(slot.safe_wal_size)} before max_slot_wal_keep_size "
                                            "invalidates it" if slot.safe_wal_size is not None else "")
                    + "); the WAL after a table's position is not decoded here: it may be other tables' writes")
        caught_up = all(d == 0 for d in distance.values())
        return PendingChanges(known=True, log_end=end, complete=caught_up, distance=distance,
                              distance_unit="bytes of WAL", note=None if caught_up else note)

    # ---- mining ---------------------------------------------------------------------------------------------

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        """A window of at least ``mining.parallel_min_bytes`` of WAL (``mining.decoder: auto``), or any window
        (``executors``), is decoded in Spark tasks (:mod:`.tasks`); others on the driver."""
        assert isinstance(request.start, LsnPosition) and isinstance(request.end_limit, LsnPosition)
        options = request.splits
        upto = min(request.end_limit.lsn, request.start.lsn + options.window_bytes)
        if options.decoder == "driver" or (options.decoder == "auto" and upto - request.start.lsn < options.min_bytes):
            return super().mine_window(spark, request, sink)
        window = self._open_window(request.start, request.schemas, request.next_schema_version, request.floors)
        if upto <= request.start.lsn:
            return sink.committed(CommittedWindow(request.start, None, tasks.committed_stats(spark, None)))
        log.info("window %s: %s of WAL decoded by Spark tasks", request.window_id, _size(upto - request.start.lsn))
        props = {"fetchsize": str(self.config.snapshot.fetch_size), **self.server.connector.jdbc().properties}
        limit = None if request.max_events is None else max(1, request.max_events)
        staged = tasks.stage(spark, self.config.spark_jdbc_url(), props, self.slot, self.publication, lsn_text(upto),
                             limit, f"{request.staging}/peek")
        if limit is not None and staged.messages >= limit and staged.last_end is not None:
            end = staged.last_end  # the next window starts after the last whole transaction
        else:
            end = max(upto, staged.last_end or 0)
        schemas = tasks.schema_records(spark, staged, window.decoder)
        position = LsnPosition(end, self.server.system())
        ddl = list(schemas.ddl)
        if end >= window.settled_at:
            ddl += self._settle(window, position)
        changed = f"{request.staging}/changes"
        tasks.changes(spark, staged, schemas, request.floors, options.target_splits).write.mode("overwrite").parquet(
            changed)
        stats = tasks.committed_stats(spark, changed)
        rows = spark.read.parquet(changed) if stats["events"] else None
        return sink.committed(CommittedWindow(position, rows, stats, ddl))

    def records(self, request: WindowRequest) -> Iterator[LogRecord]:
        start, end, schemas = request.start, request.end_limit, dict(request.schemas)
        next_schema_version, max_events, floors = request.next_schema_version, request.max_events, request.floors
        assert isinstance(start, LsnPosition) and isinstance(end, LsnPosition)
        upto = min(end.lsn, start.lsn + self.config.mining.max_window_bytes)
        if upto <= start.lsn:
            # the lake has everything before the window's start
            stream.advance(self.server.conn(), self.slot, start.lsn)
            yield WindowEnd(start)
            return
        window = self._open_window(start, schemas, next_schema_version, floors)
        result = stream.WindowRead(upto)
        # max_events counts row changes; peek counts messages (about two more per transaction): a bound above it
        limit = None if max_events is None else max(1, max_events)
        conn = self.server.conn()
        yield from window.decoder.records(stream.read_window(conn, self.slot, self.publication, upto, limit, result))
        end = LsnPosition(result.end, self.server.system())
        if result.end >= window.settled_at:
            yield from self._settle(window, end)
        yield WindowEnd(end)

    def _open_window(self, start: LsnPosition, schemas: dict[str, TableSchema], next_schema_version: int,
                     floors: dict[str, int] | None) -> _OpenWindow:
        """Confirm the slot up to ``start`` (the lake has everything before it), and what decoding the window
        needs: its decoder, and the catalog as it was before the window's bound was read."""
        conn = self.server.conn()
        stream.advance(conn, self.slot, start.lsn)
        versions = {t: next_schema_version - 1 for t in schemas}  # the history's newest entry of each table
        decoder = ChangeDecoder(schemas, versions, next_schema_version, catalog.TypeCatalog(conn),
                                self.config.captures, floors, self.server.system(),
                                attnums=lambda table: catalog.attnums(conn, table),
                                added_values=lambda table: catalog.added_values(conn, table),
                                own_relation=lambda relid: catalog.published_as_itself(conn, self.publication, relid),
                                partition_tree=lambda relid: catalog.partition_tree(conn, relid))
        # Tables dropped, or created and published without a change yet, and partitions attached or detached leave
        # nothing in the WAL: the catalog read now, before the flush LSN, is settled for a window that reaches it.
        existing = catalog.tables(conn)
        partitions = catalog.partitions(conn)
        published = self._published(conn)
        return _OpenWindow(decoder, existing, partitions, published, catalog.flush_lsn(conn))

    def _published(self, conn: Any) -> Callable[[str], bool]:
        pub = catalog.publication(conn, self.publication)
        if pub is None:
            return lambda table: False
        return lambda table: pub.all_tables or table in pub.tables

    def _settle(self, window: _OpenWindow, end: LsnPosition) -> Iterator[Ddl]:
        """Schema entries at the window's end for what the catalog says and the WAL cannot: a captured table
        dropped (its mirror empties), one created and published, or created again, with no change yet, and a
        partitioned table with a partition attached or detached (its rows are read again)."""
        decoder, existing, published = window.decoder, window.existing, window.published
        for table, schema in sorted(decoder.schemas.items()):
            now = existing.get(table)
            recreated = now is not None and schema.attrs.get(RELID) not in (None, now.relid)
            if recreated and published(table):
                yield decoder.created(table, self.server.table_schema(table, relid=existing[table].relid), end)
            elif now is None or recreated:  # (created again but not published: a snapshot takes it anew)
                yield decoder.dropped(table, end)
        for table in sorted(existing):
            if table not in decoder.schemas and self.config.captures(table) and published(table):
                yield decoder.created(table, self.server.table_schema(table, relid=existing[table].relid), end)
        yield from self._repartitioned(window, end)

    def _repartitioned(self, window: _OpenWindow, end: LsnPosition) -> Iterator[Ddl]:
        """Captured partitioned tables whose partitions differ from those their schema records: ``ATTACH
        PARTITION`` brings the attached table's rows, ``DETACH PARTITION`` takes a partition's rows away, and
        neither writes a row change to the WAL, so the table is read again after the window."""
        trees: dict[str, list[int]] = {}
        names: dict[int, str] = {t.relid: name for name, t in window.existing.items()}
        for name, part in window.partitions.items():
            trees.setdefault(part.root, []).append(part.relid)
            names[part.relid] = name
        decoder = window.decoder
        for table, schema in sorted(decoder.schemas.items()):
            now = window.existing.get(table)
            if now is None or not now.partitioned or schema.attrs.get(RELID) not in (None, now.relid):
                continue
            tree, recorded = sorted(trees.get(table, [])), schema.attrs.get(PARTITIONS)
            if recorded == tree:
                continue
            if recorded is None:  # (a schema from before partitions were recorded: nothing to compare with)
                yield decoder.repartitioned(table, tree, end, None)
                continue
            attached = [names.get(r, f"object id {r}") for r in tree if r not in recorded]
            detached = [names.get(r, f"object id {r}") for r in recorded if r not in tree]
            why = []
            if attached:
                why.append(f"{', '.join(attached)} attached (its rows joined the table without row changes in the WAL)")
            if detached:
                why.append(f"{', '.join(detached)} detached (its rows left the table without row changes in the WAL)")
            yield decoder.repartitioned(table, tree, end, "partitions changed: " + "; ".join(why))



@dataclass
class _OpenWindow:
    decoder: ChangeDecoder
    existing: dict[str, catalog.Table]
    partitions: dict[str, catalog.Partition]
    published: Callable[[str], bool]
    settled_at: int  # the flush LSN read after the catalog


def _size(n: int) -> str:
    """Bytes for people.

    >>> _size(0), _size(1536), _size(3 * 2**30)
    ('0 B', '1.5 KiB', '3.0 GiB')
    """
    if abs(n) < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KiB", "MiB"):
        size /= 1024
        if abs(size) < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} GiB"

