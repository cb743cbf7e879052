"""The one interface between cdclake's engine and its sources.

Everything a source and the engine share is here, and a source imports nothing else of cdclake
but :mod:`cdclake.schema`, :mod:`cdclake.errors` and the small utilities (:mod:`cdclake.hadoopfs`):

* :class:`Position` — an opaque, JSON-serialisable log position whose ``ordinal`` orders commits;
* :class:`TypeMapper` — how a column's value travels: a canonical value, produced alike by the
  snapshot and the log decoder, and one Spark SQL expression to the Delta type;
* :class:`Source` with its two shapes :class:`RecordSource` (log records decoded on the driver)
  and :class:`FrameSource` (log rows decoded in Spark), driven through :class:`WindowRequest` and
  :class:`WindowSink`;
* the records (:mod:`cdclake.spi.records`) and log rows (:mod:`cdclake.spi.logrows`) a window is
  handed over as, and :class:`DdlOutcome`, what a DDL statement did;
* :class:`SourcePlugin` and the registry (:mod:`cdclake.spi.plugin`): how a source is found, its
  configuration model, jars, install extra and docs.

Writing a source: ``docs/architecture.md``.

>>> from cdclake.spi import source_types
>>> sorted(source_types())
['db2', 'mariadb', 'mysql', 'oracle', 'postgres', 'postgresql']
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
    SEQ_SPAN,
    CommittedWindow,
    FrameSource,
    MinedWindow,
    RecordSource,
    SnapshotStart,
    Source,
    Split,
    SplitOptions,
    SplitPlan,
    WindowRequest,
    WindowSink,
)
from cdclake.spi.types import FILL, UNLOGGED, TypeMapper

__all__ = [
    "KIND_DEFERRED",
    "KIND_CHANGE", "KIND_COMMIT", "KIND_ERROR", "KIND_PIECE", "KIND_ROLLBACK", "KIND_UNDO", "LOG_ROWS_COLUMNS",
    "FILL", "LOG_ROWS_DDL", "UNAVAILABLE_KEY", "UNLOGGED", "Begin", "Commit", "Ddl", "DdlOutcome", "FrameSource",
    "LogRecord",
    "MinedWindow", "Position", "RecordSource", "SEQ_SPAN", "CommittedWindow", "Split", "SplitOptions",
    "SplitPlan", "Rollback", "RowChange", "SnapshotStart", "Source",
    "SourceConfigBase", "SourceContext", "SourcePlugin", "StrictModel", "TypeMapper", "WindowEnd", "WindowRequest",
    "WindowSink", "create_source", "plugin_for", "plugins", "source_types",
]
