"""Log rows: what a source that decodes its log in Spark hands the engine for one window.

``kind``: ``change`` (a row change; op c/u/d/t), ``undo`` (a partial rollback: removes the newest
earlier change of the same transaction with the same ``locator``), ``commit``, ``rollback``,
``piece`` (a fragment of a column value, e.g. an Oracle LOB write, that the source folds into its
transaction's changes once it committed: :meth:`cdclake.spi.FrameLogReader.assemble_pieces`) or
``error`` (the window cannot be trusted past this row: the run stops), or ``deferred`` (a row the
source's first decoder left to its second, :attr:`cdclake.spi.MinedWindow.decode_deferred`, which
finds what it needs by the row's ``idx``). ``ordinal`` is the commit
ordinal on commit rows and the row's own log ordinal on others; ``idx`` is the row's order in the
window. ``before``/``after`` are canonical images as JSON; an image may list, under
:data:`UNAVAILABLE_KEY`, columns whose value the log did not supply (the lake keeps its value).

>>> LOG_ROWS_COLUMNS[:3]
['window_id', 'idx', 'kind']
"""

from __future__ import annotations

LOG_ROWS_DDL = (
    "window_id BIGINT, idx BIGINT, kind STRING, txid STRING, source_table STRING, op STRING, before STRING, "
    "after STRING, schema_version BIGINT, locator STRING, ordinal DECIMAL(38,0), position STRING, "
    "event_ts TIMESTAMP, error STRING, raw STRING"
)
LOG_ROWS_COLUMNS = [item.split(" ", 1)[0] for item in LOG_ROWS_DDL.split(", ")]
KIND_CHANGE, KIND_UNDO, KIND_COMMIT, KIND_ROLLBACK, KIND_ERROR = "change", "undo", "commit", "rollback", "error"
KIND_PIECE = "piece"
KIND_DEFERRED = "deferred"
UNAVAILABLE_KEY = "__unavailable"  # in a change image: columns whose value the log did not supply
