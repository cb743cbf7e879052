"""The change-event model and the sequence that orders events (documented in schemas/).

``seq`` is a DECIMAL(38,0) that never is null and sorts events by commit position, then by order
inside the transaction::

    seq = commit_ordinal * SEQ_SPAN + index_in_transaction     (index >= 1 for log events)

Snapshot rows get ``snapshot_ordinal * SEQ_SPAN`` (index 0): the snapshot's low-watermark is a
transaction boundary, so every change committed after it sorts after every snapshot row.

>>> event_seq(3_000_000_004_711, 2)
30000000047110000000002
>>> commit_ordinal_of(event_seq(42, 7))
42
"""

from __future__ import annotations

from decimal import Decimal

from cdclake.spi import SEQ_SPAN

OPS = ("c", "u", "d", "r", "t")
WINDOW_MARKER_OP = "w"  # bronze row closing a mined window (holds its end position)

# Metadata columns of a target table, after the source columns.
META_OP = "__op"
META_SEQ = "__seq"
META_POSITION = "__position"
META_TXID = "__txid"
META_COMMIT_TS = "__commit_ts"
META_WINDOW = "__window_id"
META_DELETED = "__deleted"

TARGET_META_DDL = (
    f"`{META_OP}` STRING, `{META_SEQ}` DECIMAL(38,0), `{META_POSITION}` STRING, `{META_TXID}` STRING, "
    f"`{META_COMMIT_TS}` TIMESTAMP, `{META_WINDOW}` BIGINT"
)

# The bronze change log: every mined event, append-only.
BRONZE_DDL = (
    "window_id BIGINT, source_table STRING, op STRING, seq DECIMAL(38,0), position STRING, txid STRING, "
    "commit_ts TIMESTAMP, schema_version BIGINT, before STRING, after STRING"
)
BRONZE_COLUMNS = [
    "window_id", "source_table", "op", "seq", "position", "txid", "commit_ts", "schema_version", "before", "after",
]


def event_seq(commit_ordinal: int, index: int) -> int:
    if not 0 <= index < SEQ_SPAN:
        raise ValueError(f"transaction has more than {SEQ_SPAN - 1} row changes")
    return commit_ordinal * SEQ_SPAN + index


def snapshot_seq(position_ordinal: int) -> int:
    return position_ordinal * SEQ_SPAN


def backfill_seq(position_ordinal: int) -> int:
    """The sequence of rows re-read from the source at a position: after every change committed at or
    before it (where a transaction's commit ordinal is the position just after it, the last one before
    a position shares its ordinal), before every change committed after it.

    >>> event_seq(42, 3) < backfill_seq(42) < event_seq(43, 1)
    True
    """
    return position_ordinal * SEQ_SPAN + SEQ_SPAN - 1


def commit_ordinal_of(seq: int | Decimal) -> int:
    return int(seq) // SEQ_SPAN
