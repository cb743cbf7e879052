"""The one interface between cdclake's engine and its sources.

Everything a source and the engine share is here, and a source imports nothing else of cdclake
but :mod:`cdclake.schema`, :mod:`cdclake.errors` and the small utilities (:mod:`cdclake.hadoopfs`):

* :class:`Position` — an opaque, JSON-serialisable log position whose ``ordinal`` orders commits;
* :class:`TypeMapper` — how a column's value travels: a canonical value, produced alike by the
  snapshot and the log decoder, and one Spark SQL expression to the Delta type;
* :class:`Source` and its roles (:mod:`cdclake.spi.source`): a :class:`SnapshotReader`, a :class:`LogReader`
  (:class:`RecordLogReader` and :class:`FrameLogReader` implement two of its hand-overs), positions and
  the :class:`TypeMapper`;
* a window (:mod:`cdclake.spi.window`): :class:`WindowRequest`, the :class:`WindowSink` and its three
  hand-over shapes: log records (:mod:`cdclake.spi.records`), a :class:`MinedWindow` of log rows
  (:mod:`cdclake.spi.logrows`), a :class:`CommittedWindow`; :class:`DdlOutcome`, what a DDL statement did;
* :class:`SourcePlugin` and the registry (:mod:`cdclake.spi.plugin`): how a source is found, its
  configuration model, jars, install extra and docs.

Writing a source: ``docs/architecture.md``.

>>> from cdclake.spi import plugins, source_types
>>> set(source_types()) == {t for p in plugins() for t in p.types}
True
"""

from cdclake.spi.config import SourceConfigBase, SourceContext, StrictModel
from cdclake.spi.logrows import (
    KIND_CHANGE,
    KIND_COMMIT,
    KIND_DEFERRED,
    KIND_ERROR,
    KIND_PIECE,
    KIND_ROLLBACK,
    KIND_UNDO,
    LOG_ROWS_COLUMNS,
    LOG_ROWS_DDL,
    UNAVAILABLE_KEY,
)
from cdclake.spi.plugin import SourcePlugin, create_source, plugin_for, plugins, source_types
from cdclake.spi.position import Position
from cdclake.spi.records import Begin, Commit, Ddl, DdlOutcome, LogRecord, Rollback, RowChange, WindowEnd
from cdclake.spi.source import (
    FrameLogReader,
    LogReader,
    RecordLogReader,
    SnapshotReader,
    SnapshotStart,
    Source,
)
from cdclake.spi.types import FILL, UNLOGGED, TypeMapper
from cdclake.spi.window import (
    PENDING_SCAN_EVENTS,
    SEQ_SPAN,
    CommittedWindow,
    MinedWindow,
    PendingChanges,
    SplitOptions,
    WindowRequest,
    WindowSink,
)

__all__ = [
    "FILL", "KIND_CHANGE", "KIND_COMMIT", "KIND_DEFERRED", "KIND_ERROR", "KIND_PIECE", "KIND_ROLLBACK", "KIND_UNDO",
    "LOG_ROWS_COLUMNS", "LOG_ROWS_DDL", "PENDING_SCAN_EVENTS", "SEQ_SPAN", "UNAVAILABLE_KEY", "UNLOGGED",
    "Begin", "Commit", "CommittedWindow", "Ddl", "DdlOutcome", "FrameLogReader", "LogReader", "LogRecord",
    "MinedWindow", "PendingChanges", "Position", "RecordLogReader", "Rollback", "RowChange", "SnapshotReader",
    "SnapshotStart", "Source", "SourceConfigBase", "SourceContext", "SourcePlugin", "SplitOptions", "StrictModel",
    "TypeMapper", "WindowEnd", "WindowRequest", "WindowSink", "create_source", "plugin_for", "plugins",
    "source_types",
]
