"""What a log reader is asked and what it hands over: one mining window.

The engine plans a window as a :class:`WindowRequest`; the source's :class:`~cdclake.spi.source.LogReader`
mines it and hands the result to the :class:`WindowSink` in one of three shapes, whichever suits how it
decodes its log:

* ``sink.records(...)`` — **log records** (:mod:`cdclake.spi.records`: ``Begin``, ``RowChange``, ``Commit``,
  ``Rollback``, ``Ddl``, then ``WindowEnd``) decoded on the driver, in log order; the engine assembles the
  committed transactions (:class:`~cdclake.spi.source.RecordLogReader`; MySQL and PostgreSQL on the driver);
* ``sink.frame(MinedWindow)`` — **log rows** (:mod:`cdclake.spi.logrows`) decoded in Spark; the window may
  end inside transactions, which the engine carries over in Delta (:class:`~cdclake.spi.source.FrameLogReader`;
  Oracle LogMiner);
* ``sink.committed(CommittedWindow)`` — **committed changes** the source assembled and sequenced itself,
  e.g. in Spark tasks (Db2's change-data tables; MySQL's and PostgreSQL's parallel decoders).

Every shape ends on what the sink returns: the window's end position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from cdclake.schema import TableSchema
from cdclake.spi.position import Position
from cdclake.spi.records import Ddl, LogRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: a committed change's ``seq`` is ``commit ordinal * SEQ_SPAN + n``, ``n`` (1 to SEQ_SPAN - 1) ordering it in its
#: transaction: its index there, or for log rows its row's place in the window (room for 10 billion changes in
#: one transaction); a source that sequences changes itself uses the same rule
SEQ_SPAN = 10**10


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
    """One window mined by a :class:`~cdclake.spi.source.FrameLogReader` (the ``frame`` hand-over).

    ``rows`` has the log-row schema (:data:`cdclake.spi.logrows.LOG_ROWS_DDL`): row changes with
    their transaction id, commits and rollbacks, in log order (``idx``). Transactions need not end
    inside the window: the engine carries open ones over in Delta.
    """

    end: Position
    rows: DataFrame
    ddl: list[Ddl]
    stats: dict[str, Any] = field(default_factory=dict)
    #: folds ``piece`` rows of committed transactions into their changes
    #: (:meth:`~cdclake.spi.source.FrameLogReader.assemble_pieces`)
    assemble_pieces: Callable[[DataFrame], DataFrame] | None = None
    #: True when the source knows, without a Spark job, that ``rows`` is empty (the log had nothing for the
    #: window): the engine then skips the steps that only move rows
    known_empty: bool = False
    #: decodes the rows of kind ``deferred`` (read back from where the engine staged the window; the source
    #: finds each one's log row by its ``idx``) into log rows; a source whose first decoder takes every row
    #: leaves it None. This way a fast decoder runs once per row, and the second one only over the rows it
    #: left.
    decode_deferred: Callable[[DataFrame], DataFrame] | None = None


#: how many log events (or log rows) :meth:`~cdclake.spi.source.LogReader.pending_changes` reads at most by default
PENDING_SCAN_EVENTS = 50_000


@dataclass(frozen=True)
class PendingChanges:
    """What the source committed after the lake's positions and the lake does not hold yet.

    The answer of :meth:`~cdclake.spi.source.LogReader.pending_changes`. ``known=False`` (the default) means the source
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
