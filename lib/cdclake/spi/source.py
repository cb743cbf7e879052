"""The source: a database whose changes cdclake captures, as a few focused parts the engine drives.

Like Debezium's ``ChangeEventSourceFactory``, a :class:`Source` is made of roles, each a small class:

* :class:`SnapshotReader` (``source.snapshot``) — reads tables consistently at a position: the
  low-watermark and schemas (:meth:`~SnapshotReader.start`), then each table's rows as canonical
  columns (:meth:`~SnapshotReader.read`). JDBC sources build it on :class:`cdclake.kit.JdbcSnapshotReader`;
* :class:`LogReader` (``source.log``) — reads the change log window by window and hands each window to
  the engine's :class:`~cdclake.spi.window.WindowSink` in one of three shapes (:mod:`cdclake.spi.window`);
  :class:`RecordLogReader` and :class:`FrameLogReader` implement :meth:`~LogReader.mine_window` for the
  first two;
* positions (``source.position_type``, a :class:`~cdclake.spi.position.Position` class) — what the log is
  addressed by; the engine stores :meth:`~Position.to_dict` and reads it back with ``from_dict``;
* type mapping (``source.types``, a :class:`~cdclake.spi.types.TypeMapper`) — canonical values and the
  one expression from each to its Delta type.

The :class:`Source` itself checks the server (:meth:`~Source.preflight`), lists the captured tables and
releases connections.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError
from cdclake.schema import TableSchema
from cdclake.spi.config import SourceContext
from cdclake.spi.position import Position
from cdclake.spi.records import LogRecord
from cdclake.spi.types import TypeMapper
from cdclake.spi.window import PENDING_SCAN_EVENTS, MinedWindow, PendingChanges, WindowRequest, WindowSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class SnapshotStart:
    """What a snapshot needs before reading rows: the low-watermark and each table's schema there."""

    position: Position
    schemas: dict[str, TableSchema]
    ddl: dict[str, str]  # table -> the DDL text the schema was taken from
    #: tables the source holds still at ``position`` (e.g. under a read lock) until the engine calls
    #: :meth:`SnapshotReader.end` for them: the engine reads these first. A source whose reads are exact
    #: at the position anyway (flashback, an exported snapshot) holds none.
    held: list[str] = field(default_factory=list)


class SnapshotReader(abc.ABC):
    """Reads a source's tables consistently at one position (snapshots, backfills, reconcile's source side)."""

    @abc.abstractmethod
    def start(self, tables: list[str]) -> SnapshotStart:
        """Fix the low-watermark position and read the tables' schemas consistently with it."""

    @abc.abstractmethod
    def read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        """Read the table's rows (those matching the SQL filter ``where``, if given) as canonical columns
        (named as the source columns), at the position of the last :meth:`start` or :meth:`prepare`."""

    def end(self, table: str | None = None) -> None:  # noqa: B027 - optional hook
        """The engine has written what :meth:`read` read of ``table`` (``None``: the snapshot ended or
        failed): a table held by :attr:`SnapshotStart.held` may be let go."""

    def prepare(self, position: Position) -> None:  # noqa: B027 - optional hook
        """Make :meth:`read` read at ``position`` (from an earlier :meth:`start`, e.g. when a killed
        backfill is resumed in a new process)."""

    def explain_error(self, exc: BaseException) -> CdcError | None:
        """A :class:`CdcError` saying what to do about a failure of :meth:`read`, if known."""
        return None

    def filter_identifier(self, name: str) -> str | None:
        """Column ``name`` as written in a filter both the source's SQL and Spark SQL read (see
        :meth:`TypeMapper.filter_literal_kind`); ``None`` if there is no such spelling. Default: the
        bare name when it is a plain identifier."""
        return name if _PLAIN_IDENTIFIER.fullmatch(name) else None

    def deferred_hint(self) -> str:
        """How an operator finds the open transaction that keeps a snapshot of new tables waiting."""
        return "run the snapshot again once that transaction has ended"


class LogReader(abc.ABC):
    """Reads a source's change log, one window at a time."""

    #: every window ends on a transaction boundary (no transaction is carried into the next window)
    windows_end_on_transaction_boundaries: bool = True

    @abc.abstractmethod
    def current_position(self) -> Position:
        """The end of the log now (where a run that starts now stops)."""

    @abc.abstractmethod
    def check_available(self, start: Position) -> None:
        """Raise :class:`cdclake.errors.PositionLostError` if the log from ``start`` is gone."""

    @abc.abstractmethod
    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        """Mine ``request``'s window and hand it to ``sink`` in one of its shapes; return what the sink
        returns (the window's end)."""

    def lake_positions(self, positions: Mapping[str, Position]) -> None:  # noqa: B027 - optional hook
        """Where the lake's tables stand (table -> position), told before the engine asks for
        :meth:`current_position`, a snapshot or a window. A source whose ordinals count commits on from
        positions it has handed out (Db2's commit clock) keeps them; others ignore it."""

    def release(self) -> None:  # noqa: B027 - optional hook
        """Drop what mining a window cached, once the engine has consumed the window."""

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """What the source committed after ``positions`` (table -> its position) that the lake lacks.

        Optional (the default says "unknown"). Read the log from the lowest position once, not per
        table, and only changes of captured tables count; a change is pending for a table when its
        transaction commits after that table's position. ``carried`` names transactions open at
        the positions whose earlier changes the engine holds in flight (txid -> tables; a
        :class:`FrameLogReader`'s windows cut transactions): their commit makes those tables pending.
        Stop at each table's first pending commit, at the log end, or after ``max_events`` events
        (``complete=False``). Never write to the source, and never disturb a running mining run."""
        return PendingChanges()


class RecordLogReader(LogReader):
    """A log decoded on the driver into log records (the ``records`` hand-over), window by window."""

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        return sink.records(self.records(request))

    @abc.abstractmethod
    def records(self, request: WindowRequest) -> Iterator[LogRecord]:
        """Yield records from ``request.start`` to at most ``request.end_limit`` (whole transactions only)
        in log order, then a :class:`~cdclake.spi.records.WindowEnd`."""


class FrameLogReader(LogReader):
    """A log decoded in Spark into log rows (the ``frame`` hand-over): large logs, parallel parsing."""

    windows_end_on_transaction_boundaries = False

    def mine_window(self, spark: SparkSession, request: WindowRequest, sink: WindowSink) -> Position:
        return sink.frame(replace(self.frame(spark, request), assemble_pieces=self.assemble_pieces))

    def assemble_pieces(self, rows: DataFrame) -> DataFrame:
        """Fold ``piece`` rows of committed transactions into their changes (default: none exist)."""
        return rows

    @abc.abstractmethod
    def frame(self, spark: SparkSession, request: WindowRequest) -> MinedWindow:
        """Mine from ``request.start`` to at most ``request.end_limit`` (any log position, not only
        between transactions), staging what is needed under ``request.staging``. DDL met in the
        window is returned in log order; DDL at or below a table's floor is in its snapshot already
        and is dropped."""


class Source(abc.ABC):
    """A database whose changes cdclake captures: its roles, and what concerns the whole server.

    A subclass passes its configuration, context and :class:`TypeMapper` to ``__init__`` and then sets its
    roles: ``snapshot`` (a :class:`SnapshotReader`), ``log`` (a :class:`LogReader`); ``position_type`` is a
    class attribute.
    """

    connector: str  # the pipeline file's source.type, e.g. "mariadb"
    types: TypeMapper
    snapshot: SnapshotReader
    log: LogReader
    position_type: type[Position]

    def __init__(self, config: Any, context: SourceContext, types: TypeMapper) -> None:
        self.config = config  # the source's own model of the ``source:`` block
        self.context = context
        self.types = types

    @abc.abstractmethod
    def preflight(self) -> None:
        """Raise :class:`cdclake.errors.PreflightError` naming the first problem and its fix."""

    @abc.abstractmethod
    def captured_tables(self) -> list[str]:
        """Tables on the server that the include/exclude lists select, as ``database.table``."""

    def covered_tables(self, tables: list[str]) -> Mapping[str, list[str]]:
        """Source objects whose rows land in one of ``tables`` (captured tables) rather than in tables of their
        own, e.g. the partitions of a partitioned table captured through it: table -> their names (``status``
        shows them). Optional: the default names none."""
        return {}

    def close(self) -> None:
        """Release connections (the snapshot's held tables first)."""
        self.snapshot.end()
