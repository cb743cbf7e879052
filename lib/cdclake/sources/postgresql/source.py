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

from cdclake.errors import CdcError, PositionLostError, PreflightError
from cdclake.schema import TableSchema
from cdclake.sources.postgresql import catalog, preflight, stream, tasks
from cdclake.sources.postgresql.config import SESSION_SETTINGS, PostgresSourceConfig
from cdclake.sources.postgresql.decoder import PARTITIONS, RELID, ChangeDecoder
from cdclake.sources.postgresql.pgoutput import lsn_text
from cdclake.sources.postgresql.position import LsnPosition
from cdclake.sources.postgresql.snapshot import (
    GUARD,
    ExportedSnapshot,
    create_slot_with_snapshot,
    guarded,
    jdbc_options,
)
from cdclake.sources.postgresql.types import PostgresTypeMapper, columns, quote_identifier
from cdclake.spi.config import SourceContext
from cdclake.spi.jdbc import read_jdbc
from cdclake.spi.position import Position
from cdclake.spi.records import Ddl, LogRecord, WindowEnd
from cdclake.spi.source import (
    PENDING_SCAN_EVENTS,
    CommittedWindow,
    PendingChanges,
    RecordSource,
    SnapshotStart,
    WindowRequest,
    WindowSink,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

KEY_RANGE = "SELECT min({key})::bigint, max({key})::bigint, count(*) FROM {table}"
#: the column a partitioned snapshot read splits on: the integer key as stored
PARTITION_KEY = "cdclake_part"


def _options() -> str:
    """libpq ``options``: the session settings on every connection, the replication one included."""
    return " ".join(f"-c {name}={value.replace(' ', '')}" for name, value in SESSION_SETTINGS.items())


class PostgresSource(RecordSource):
    connector = "postgresql"
    windows_end_on_transaction_boundaries = True

    def __init__(self, config: PostgresSourceConfig, context: SourceContext,
                 connect: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.context = context
        self.types = PostgresTypeMapper()
        self.slot = config.slot_name(context.pipeline)
        self.publication = config.publication_name(context.pipeline)
        self._connect = connect
        self._conn: Any = None
        self._system: str | None = None
        self._snapshot: ExportedSnapshot | None = None

    # ---- connection ---------------------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        c = self.config
        return {"host": c.host, "port": c.port, "user": c.user, "password": c.password.get_secret_value(),
                "dbname": c.database, "connect_timeout": c.connect_timeout, "options": _options()}

    def conn(self) -> Any:
        if self._conn is None:
            import psycopg

            try:
                self._conn = self._connect() if self._connect else psycopg.connect(**self.settings(), autocommit=True)
            except psycopg.OperationalError as exc:
                raise PreflightError(f"cannot connect to PostgreSQL {self.config.host}:{self.config.port}/"
                                     f"{self.config.database}: {str(exc).strip()}",
                                     "check source.host, port, database, user and password, and pg_hba.conf",
                                     permanent=False) from None  # unreachable now: a later run may connect
        return self._conn

    def close(self) -> None:
        self.end_snapshot_read()
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def system(self) -> str:
        if self._system is None:
            self._system = catalog.server(self.conn()).system
        return self._system

    # ---- tables -----------------------------------------------------------------------------------------

    def captured_tables(self) -> list[str]:
        return sorted(t for t in catalog.tables(self.conn()) if self.config.captures(t))

    def preflight(self) -> None:
        captured = self.captured_tables()
        preflight.check(self.conn(), captured, self.slot, self.publication, self.config.create_publication)
        preflight.check_partitions(catalog.partitions(self.conn()), self.config.captures)
        for warning in preflight.warnings(self.conn(), captured, self.slot):
            log.warning("%s", warning)

    def _table_schema(self, table: str, conn: Any = None, relid: int | None = None) -> TableSchema:
        """``table``'s schema from the catalog (``conn``: e.g. the snapshot holder's, to read it in the snapshot)."""
        schema, name = table.split(".", 1)
        qualified = f"{quote_identifier(schema)}.{quote_identifier(name)}"
        conn = conn or self.conn()
        cols = columns(conn, qualified)
        key = [c.name for c in sorted((c for c in cols if "keyseq" in c.attrs), key=lambda c: c.attrs["keyseq"])]
        if relid is None:
            relid = conn.execute("SELECT %s::regclass::oid::bigint", (qualified,)).fetchone()[0]
        attrs: dict[str, Any] = {RELID: int(relid)}
        tree = catalog.partition_tree(conn, int(relid))
        if tree is not None:  # a partitioned table: which partitions its rows are in (one attached or detached
            attrs[PARTITIONS] = tree  # moves rows without a row change in the WAL)
        return TableSchema(schema, name, cols, key, attrs=attrs)

    def covered_tables(self, tables: list[str]) -> dict[str, list[str]]:
        """The partitions of each partitioned table among ``tables``: their rows land in it (their changes are
        published through it), never in tables of their own."""
        out: dict[str, list[str]] = {t: [] for t in tables}
        for name, part in sorted(catalog.partitions(self.conn()).items()):
            if part.root in out:
                out[part.root].append(name)
        return out

    # ---- positions ------------------------------------------------------------------------------------------

    def current_position(self) -> LsnPosition:
        return LsnPosition(catalog.flush_lsn(self.conn()), self.system())

    def position_from_dict(self, data: Mapping[str, Any]) -> LsnPosition:
        return LsnPosition.from_dict(data)

    def check_available(self, start: Position) -> None:
        assert isinstance(start, LsnPosition)
        if start.system is not None and start.system != self.system():
            raise PositionLostError(
                f"the lake's position {start.describe()} is of database system {start.system}, this server is "
                f"{self.system()} (a failover, a restore or another cluster): its WAL has no such position",
                "re-snapshot the tables on this server: cdclake snapshot --force")
        slot = catalog.slot(self.conn(), self.slot)
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
        conn = self.conn()
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

    # ---- snapshot -------------------------------------------------------------------------------------------

    def snapshot_start(self, tables: list[str]) -> SnapshotStart:
        conn = self.conn()
        known = catalog.tables(conn)  # the run's preflight has checked the captured tables already
        missing = [t for t in tables if t not in known]
        if missing:
            raise CdcError(f"no such table (or a partition, captured through its root): {', '.join(missing)}",
                           "check source.include_tables", permanent=True)
        self._publish(tables, known)
        self.end_snapshot_read()
        exists = catalog.slot(conn, self.slot) is not None
        name = f"{self.slot}_snap" if exists else self.slot
        self._snapshot = create_slot_with_snapshot(self.settings(), name, temporary=exists)
        # the schemas as of the snapshot: read in the holder's transaction
        schemas = {table: self._table_schema(table, self._snapshot.holder) for table in tables}
        position = LsnPosition(self._snapshot.consistent_point, self.system())
        ddl = {t: f"-- {t}: " + ", ".join(f"{c.name} {c.source_type}" for c in s.columns) for t, s in schemas.items()}
        return SnapshotStart(position, schemas, ddl)

    def _publish(self, tables: list[str], known: dict[str, catalog.Table]) -> None:
        pub = catalog.publication(self.conn(), self.publication)
        names = {t: f"{quote_identifier(known[t].schema)}.{quote_identifier(known[t].name)}" for t in tables}
        if pub is None:
            if not self.config.create_publication:
                return  # preflight has named it
            self.conn().execute(f"CREATE PUBLICATION {self.publication} FOR TABLE {', '.join(names.values())} "
                                "WITH (publish_via_partition_root = true)")
            return
        missing = [t for t in tables if not pub.all_tables and t not in pub.tables]
        if missing and self.config.create_publication:
            self.conn().execute(f"ALTER PUBLICATION {self.publication} ADD TABLE "
                                + ", ".join(names[t] for t in missing))

    def prepare_snapshot_read(self, position: Position) -> None:
        """Read at ``position``, or, once its exported snapshot has ended (with the process or transaction that
        held it), in a new one at a later point: what a re-read takes, since the engine keeps what mining brought
        after ``position`` (a re-read that must be exact, of a table without a row key, reads in the snapshot
        it planned)."""
        assert isinstance(position, LsnPosition)
        if self._snapshot is not None and position.lsn == self._snapshot.consistent_point:
            return
        self.end_snapshot_read()
        self._snapshot = self._fresh_snapshot()

    def end_snapshot_read(self, table: str | None = None) -> None:
        if table is None and self._snapshot is not None:
            snap, self._snapshot = self._snapshot, None
            snap.release()

    def snapshot_read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        if self._snapshot is None:  # (the engine let the last one go) the database as it is now
            self._snapshot = self._fresh_snapshot()
        table = f"{quote_identifier(schema.database)}.{quote_identifier(schema.table)}"
        bounds = None if where else self._partition_bounds(schema, table)
        cols = [f"{self.types.read_sql(c)} AS {quote_identifier(c.name)}" for c in schema.columns]
        if bounds is not None:  # the key as it is (the columns are read as text): ranges of it use its index
            cols.append(f"{quote_identifier(bounds[0])} AS {PARTITION_KEY}")
        select = f"SELECT {', '.join(cols)} FROM {table}" + (f" WHERE {where}" if where else "")
        props = {**self._jdbc_properties(), **jdbc_options(self._snapshot, self.config.snapshot.fetch_size),
                 **self.config.jdbc_options,
                 "customSchema": ", ".join(f"`{c.name}` STRING" for c in schema.columns) + f", {GUARD} INT"}
        sql = f"({guarded(select, self._snapshot)}) cdclake_t"
        if bounds is None:
            frame = read_jdbc(spark, self.config.spark_jdbc_url(), sql, props)
        else:
            _, low, high, parts = bounds
            frame = read_jdbc(spark, self.config.spark_jdbc_url(), sql, props, column=PARTITION_KEY,
                              lower_bound=low, upper_bound=high + 1, num_partitions=parts).drop(PARTITION_KEY)
        return frame.where(f"{GUARD} = 1").drop(GUARD)

    def _jdbc_properties(self) -> dict[str, str]:
        return {"driver": "org.postgresql.Driver", "user": self.config.user,
                "password": self.config.password.get_secret_value()}

    def _fresh_snapshot(self) -> ExportedSnapshot:
        """An exported snapshot of the database now (a temporary slot beside cdclake's)."""
        return create_slot_with_snapshot(self.settings(), f"{self.slot}_snap", temporary=True)

    def _partition_bounds(self, schema: TableSchema, table: str) -> tuple[str, int, int, int] | None:
        if len(schema.primary_key) != 1:
            return None
        key = schema.column(schema.primary_key[0])
        if key.attrs.get("base") not in ("int2", "int4", "int8"):
            return None
        low, high, count = self.conn().execute(KEY_RANGE.format(key=quote_identifier(key.name), table=table)
                                               ).fetchone()
        per = self.config.snapshot.min_rows_per_partition
        parts = min(self.config.snapshot.partitions, max(1, int(count or 0) // per))
        if low is None or parts < 2:
            return None
        return key.name, int(low), int(high), parts

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
        props = {**self._jdbc_properties(), "fetchsize": str(self.config.snapshot.fetch_size),
                 **self.config.jdbc_options}
        limit = None if request.max_events is None else max(1, request.max_events)
        staged = tasks.stage(spark, self.config.spark_jdbc_url(), props, self.slot, self.publication, lsn_text(upto),
                             limit, f"{request.staging}/peek")
        if limit is not None and staged.messages >= limit and staged.last_end is not None:
            end = staged.last_end  # the next window starts after the last whole transaction
        else:
            end = max(upto, staged.last_end or 0)
        schemas = tasks.schema_records(spark, staged, window.decoder)
        position = LsnPosition(end, self.system())
        ddl = list(schemas.ddl)
        if end >= window.settled_at:
            ddl += self._settle(window, position)
        changed = f"{request.staging}/changes"
        tasks.changes(spark, staged, schemas, request.floors, options.target_splits).write.mode("overwrite").parquet(
            changed)
        stats = tasks.committed_stats(spark, changed)
        rows = spark.read.parquet(changed) if stats["events"] else None
        return sink.committed(CommittedWindow(position, rows, stats, ddl))

    def mine(self, start: Position, end: Position, schemas: dict[str, TableSchema], next_schema_version: int,
             max_events: int | None = None, floors: dict[str, int] | None = None) -> Iterator[LogRecord]:
        assert isinstance(start, LsnPosition) and isinstance(end, LsnPosition)
        upto = min(end.lsn, start.lsn + self.config.mining.max_window_bytes)
        if upto <= start.lsn:
            stream.advance(self.conn(), self.slot, start.lsn)  # the lake has everything before the window's start
            yield WindowEnd(start)
            return
        window = self._open_window(start, schemas, next_schema_version, floors)
        result = stream.WindowRead(upto)
        # max_events counts row changes; peek counts messages (about two more per transaction): a bound above it
        limit = None if max_events is None else max(1, max_events)
        conn = self.conn()
        yield from window.decoder.records(stream.read_window(conn, self.slot, self.publication, upto, limit, result))
        end = LsnPosition(result.end, self.system())
        if result.end >= window.settled_at:
            yield from self._settle(window, end)
        yield WindowEnd(end)

    def _open_window(self, start: LsnPosition, schemas: dict[str, TableSchema], next_schema_version: int,
                     floors: dict[str, int] | None) -> _OpenWindow:
        """Confirm the slot up to ``start`` (the lake has everything before it), and what decoding the window
        needs: its decoder, and the catalog as it was before the window's bound was read."""
        conn = self.conn()
        stream.advance(conn, self.slot, start.lsn)
        versions = {t: next_schema_version - 1 for t in schemas}  # the history's newest entry of each table
        decoder = ChangeDecoder(schemas, versions, next_schema_version, catalog.TypeCatalog(conn),
                                self.config.captures, floors, self.system(),
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
                yield decoder.created(table, self._table_schema(table, relid=existing[table].relid), end)
            elif now is None or recreated:  # (created again but not published: a snapshot takes it anew)
                yield decoder.dropped(table, end)
        for table in sorted(existing):
            if table not in decoder.schemas and self.config.captures(table) and published(table):
                yield decoder.created(table, self._table_schema(table, relid=existing[table].relid), end)
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


def source_for(config: PostgresSourceConfig, context: SourceContext) -> PostgresSource:
    return PostgresSource(config, context)
