"""The source: a database whose changes cdclake captures, as the engine drives it.

Per run the engine calls :meth:`Source.preflight`; a snapshot calls :meth:`Source.snapshot_start`
then :meth:`Source.snapshot_read` per table; a mining window calls :meth:`Source.mine_window` with a
:class:`WindowRequest` and a :class:`WindowSink`. A source decodes its log in one of two shapes, each
a base class here that implements :meth:`Source.mine_window` by handing its result to the sink:

* :class:`RecordSource` — log records (:mod:`cdclake.spi.records`) decoded on the driver, in log
  order; every window ends on a transaction boundary (MySQL/MariaDB binlog);
* :class:`FrameSource` — log rows (:mod:`cdclake.spi.logrows`) decoded in Spark; a window may end
  inside transactions, which the engine carries over in Delta (Oracle LogMiner).
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from cdclake.errors import CdcError
from cdclake.schema import TableSchema
from cdclake.spi.position import Position
from cdclake.spi.records import Ddl, LogRecord
from cdclake.spi.types import TypeMapper

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: a committed change's ``seq`` is ``commit ordinal * SEQ_SPAN + n``, ``n`` (1 to SEQ_SPAN - 1) ordering it in its
#: transaction: its index there, or for log rows its row's place in the window (room for 10 billion changes in
#: one transaction); a source that sequences changes itself uses the same rule
SEQ_SPAN = 10**10


@dataclass
class SnapshotStart:
    """What a snapshot needs before reading rows: the low-watermark and each table's schema there."""

    position: Position
    schemas: dict[str, TableSchema]
    ddl: dict[str, str]  # table -> the DDL text the schema was taken from
    #: tables the source holds still at ``position`` (e.g. under a read lock) until the engine calls
    #: :meth:`Source.end_snapshot_read` for them: the engine reads these first. A source whose reads
    #: are exact at the position anyway (flashback) holds none.
    held: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SplitOptions:
    """How a window may be split for decoding on executors (``mining.decoder`` and its sizes).

    ``decoder``: ``auto`` (executors for windows of at least ``min_bytes`` of log), ``executors``
    (always: a window that cannot be is an error), ``driver`` (never). A split window holds at most
    ``window_bytes`` of log in at most ``max_splits`` splits of ``split_bytes`` (None: the log's size
    over ``target_splits``).
    """

    decoder: str = "auto"
    min_bytes: int = 32 << 20
    window_bytes: int = 1 << 30
    split_bytes: int | None = None
    target_splits: int = 8
    max_splits: int = 64


@dataclass(frozen=True)
class Split:
    """A piece of a window's log that one Spark task decodes: whole transactions, from ``start`` to ``end``.
    ``detail`` is what the reader needs of it (JSON-serialisable)."""

    index: int
    start: Position
    end: Position
    detail: Mapping[str, Any]


@dataclass(frozen=True)
class SplitPlan:
    """A window planned as splits: ``reader`` (a Spark data source) decodes each split in a task of its own,
    given ``options``; ``end`` is where the window ends unless something in it stops it earlier."""

    splits: list[Split]
    end: Position
    reader: str
    options: Mapping[str, str]
    total_bytes: int = 0


@dataclass
class CommittedWindow:
    """A window whose committed changes a source assembled and sequenced itself (e.g. in Spark tasks).

    ``rows`` has the bronze columns but ``window_id`` (``source_table, op, seq, position, txid, commit_ts,
    schema_version, before, after``), committed work only, ``seq`` final. ``stats``: the counts of those
    rows (``events``, ``transactions``, ``rolled_back``, ``rows_by_table``, ``truncates``, ``partial``:
    whether an after image lists unavailable columns), which the bronze marker keeps and the apply uses.
    ``ddl``: statements of the window, in log order.
    """

    end: Position
    rows: DataFrame | None
    stats: dict[str, Any]
    ddl: list[Ddl] = field(default_factory=list)


@dataclass(frozen=True)
class WindowRequest:
    """One mining window as the engine planned it.

    ``schemas``/``versions`` are the registry valid at ``start`` (from the schema history) and its
    schema versions; DDL met in the window evolves it, numbering new versions from
    ``next_schema_version``. With ``max_events`` the window stops at the first commit after that many
    row changes. ``floors`` maps tables to an ordinal at or before which their changes and DDL are in
    the lake already (a table snapshotted after ``start``): the source skips that DDL. ``staging`` is
    a Hadoop-FS folder the source may stage files in (the engine clears it).
    """

    window_id: int
    start: Position
    end_limit: Position
    schemas: dict[str, TableSchema]
    versions: dict[str, int]
    next_schema_version: int
    max_events: int | None
    floors: dict[str, int]
    staging: str
    splits: SplitOptions = field(default_factory=SplitOptions)


@dataclass
class MinedWindow:
    """One window mined by a :class:`FrameSource`.

    ``rows`` has the log-row schema (:data:`cdclake.spi.logrows.LOG_ROWS_DDL`): row changes with
    their transaction id, commits and rollbacks, in log order (``idx``). Transactions need not end
    inside the window: the engine carries open ones over in Delta.
    """

    end: Position
    rows: DataFrame
    ddl: list[Ddl]
    stats: dict[str, Any] = field(default_factory=dict)
    #: folds ``piece`` rows of committed transactions into their changes (:meth:`FrameSource.assemble_pieces`)
    assemble_pieces: Callable[[DataFrame], DataFrame] | None = None
    #: True when the source knows, without a Spark job, that ``rows`` is empty (the log had nothing for the
    #: window): the engine then skips the steps that only move rows
    known_empty: bool = False
    #: decodes the rows of kind ``deferred`` (read back from where the engine staged the window; the source
    #: finds each one's log row by its ``idx``) into log rows; a source whose first decoder takes every row
    #: leaves it None. This way a fast decoder runs once per row, and the second one only over the rows it
    #: left.
    decode_deferred: Callable[[DataFrame], DataFrame] | None = None


#: how many log events (or log rows) :meth:`Source.pending_changes` reads at most by default
PENDING_SCAN_EVENTS = 50_000


@dataclass(frozen=True)
class PendingChanges:
    """What the source committed after the lake's positions and the lake does not hold yet.

    The answer of :meth:`Source.pending_changes`. ``known=False`` (the default) means the source
    cannot tell; then nothing else is meaningful. Times are naive UTC, like commit times in bronze.

    * ``log_end`` — the end of the source's log when asked;
    * ``oldest`` — per table asked about, the commit time of its oldest committed change after
      its position (a table absent has none, or none was reached: see ``complete``);
    * ``complete`` — the scan reached ``log_end`` or found every table's oldest pending change, so
      a table absent from ``oldest`` has nothing pending; ``False``: it stopped at its bound
      (``scanned_to``: the commit time of the last change it read, or None when unknown), and an
      absent table's oldest pending change, if any, is newer than that;
    * ``distance`` — per table, how far its position is from ``log_end``, in ``distance_unit``
      (e.g. ``"bytes"``); a table absent: the source cannot tell;
    * ``scanned`` — log events (or rows) read; ``note`` — why the answer is partial, for people.
    """

    known: bool = False
    log_end: Position | None = None
    oldest: Mapping[str, datetime] = field(default_factory=dict)
    complete: bool = True
    scanned_to: datetime | None = None
    distance: Mapping[str, int] = field(default_factory=dict)
    distance_unit: str | None = None
    scanned: int = 0
    note: str | None = None


class WindowSink(Protocol):
    """Where a source hands a mined window; the engine stages it and returns the window's end."""

    def records(self, records: Iterable[LogRecord]) -> Position:
        """Assemble log records (ending with a :class:`~cdclake.spi.records.WindowEnd`)."""

    def frame(self, window: MinedWindow) -> Position:
        """Assemble a window of log rows decoded in Spark."""

    def committed(self, window: CommittedWindow) -> Position:
        """Record a window of changes the source assembled and sequenced itself (``rows`` may be a lazy
        read: it is computed once, by the bronze commit, with the pipeline's column rules applied on the
        way); return its end."""


class Source(abc.ABC):
    """A database whose changes cdclake captures."""

    connector: str  # the pipeline file's source.type, e.g. "mariadb"
    types: TypeMapper
    #: every window ends on a transaction boundary (no transaction is carried into the next window)
    windows_end_on_transaction_boundaries: bool = True

    @abc.abstractmethod
    def preflight(self) -> None:
        """Raise :class:`cdclake.errors.PreflightError` naming the first problem and its fix."""

    @abc.abstractmethod
    def captured_tables(self) -> list[str]:
        """Tables on the server that the include/exclude lists select, as ``database.table``."""

    @abc.abstractmethod
    def snapshot_start(self, tables: list[str]) -> SnapshotStart:
        """Fix the low-watermark position and read the tables' schemas consistently with it."""

    @abc.abstractmethod
    def snapshot_read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        """Read the table's rows (those matching the SQL filter ``where``, if given) as canonical
        columns (named as the source columns), at the position of the last :meth:`snapshot_start`
        or :meth:`prepare_snapshot_read`."""

    def end_snapshot_read(self, table: str | None = None) -> None:  # noqa: B027 - optional hook
        """The engine has written what :meth:`snapshot_read` read of ``table`` (``None``: the snapshot
        ended or failed): a table held by :attr:`SnapshotStart.held` may be let go."""

    def prepare_snapshot_read(self, position: Position) -> None:  # noqa: B027 - optional hook
        """Make :meth:`snapshot_read` read at ``position`` (from an earlier :meth:`snapshot_start`,
        e.g. when a killed backfill is resumed in a new process)."""

    def lake_positions(self, positions: Mapping[str, Position]) -> None:  # noqa: B027 - optional hook
        """Where the lake's tables stand (table -> position), told before the engine asks for
        :meth:`current_position`, :meth:`snapshot_start` or a window. A source whose ordinals count
        commits on from positions it has handed out (Db2's commit clock) keeps them; others ignore it."""

    @abc.abstractmethod
    def current_position(self) -> Position:
        """The end of the log now (where a run that starts now stops)."""

    @abc.abstractmethod
    def position_from_dict(self, data: Mapping[str, Any]) -> Position:
        """Inverse of :meth:`Position.to_dict`."""

    @abc.abstractmethod
    def check_available(self, start: Position) -> None:
        """Raise :class:`cdclake.errors.PositionLostError` if the log from ``start`` is gone."""

    @abc.abstractmethod
    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        """Mine ``request``'s window and hand it to ``sink``; return what the sink returns (the end)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def release(self) -> None:  # noqa: B027 - optional hook
        """Drop what mining a window cached, once the engine has consumed the window."""

    def explain_error(self, exc: BaseException) -> CdcError | None:
        """A :class:`CdcError` saying what to do about a failure of a snapshot read, if known."""
        return None

    def filter_identifier(self, name: str) -> str | None:
        """Column ``name`` as written in a filter both the source's SQL and Spark SQL read (see
        :meth:`TypeMapper.filter_literal_kind`); ``None`` if there is no such spelling. Default: the
        bare name when it is a plain identifier."""
        return name if _PLAIN_IDENTIFIER.fullmatch(name) else None

    def snapshot_deferred_hint(self) -> str:
        """How an operator finds the open transaction that keeps a snapshot of new tables waiting."""
        return "run the snapshot again once that transaction has ended"

    def covered_tables(self, tables: list[str]) -> Mapping[str, list[str]]:
        """Source objects whose rows land in one of ``tables`` (captured tables) rather than in tables of their
        own, e.g. the partitions of a partitioned table captured through it: table -> their names (``status``
        shows them). Optional: the default names none."""
        return {}

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """What the source committed after ``positions`` (table -> its position) that the lake lacks.

        Optional (the default says "unknown"). Read the log from the lowest position once, not per
        table, and only changes of captured tables count; a change is pending for a table when its
        transaction commits after that table's position. ``carried`` names transactions open at
        the positions whose earlier changes the engine holds in flight (txid -> tables; a
        :class:`FrameSource`'s windows cut transactions): their commit makes those tables pending.
        Stop at each table's first pending commit, at the log end, or after ``max_events`` events
        (``complete=False``). Never write to the source, and never disturb a running mining run."""
        return PendingChanges()


class RecordSource(Source):
    """A source whose log is decoded on the driver into log records, window by window."""

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        return sink.records(self.mine(request.start, request.end_limit, request.schemas,
                                      request.next_schema_version, request.max_events, request.floors))

    @abc.abstractmethod
    def mine(
        self,
        start: Position,
        end: Position,
        schemas: dict[str, TableSchema],
        next_schema_version: int,
        max_events: int | None = None,
        floors: dict[str, int] | None = None,
    ) -> Iterator[LogRecord]:
        """Yield records from ``start`` to ``end`` (whole transactions only) in log order, then
        a :class:`~cdclake.spi.records.WindowEnd` (see :class:`WindowRequest` for the arguments)."""


class FrameSource(Source):
    """A source whose log is decoded in Spark, window by window (large logs, parallel parsing)."""

    windows_end_on_transaction_boundaries = False

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        return sink.frame(replace(self.mine_frame(spark, request), assemble_pieces=self.assemble_pieces))

    def assemble_pieces(self, rows: DataFrame) -> DataFrame:
        """Fold ``piece`` rows of committed transactions into their changes (default: none exist)."""
        return rows

    @abc.abstractmethod
    def mine_frame(self, spark: SparkSession, request: WindowRequest) -> MinedWindow:
        """Mine from ``request.start`` to at most ``request.end_limit`` (any log position, not only
        between transactions), staging what is needed under ``request.staging``. DDL met in the
        window is returned in log order; DDL at or below a table's floor is in its snapshot already
        and is dropped."""
