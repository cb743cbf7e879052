"""Transaction assembly: buffer row changes by transaction, emit only committed work.

Log records arrive in log order. Row changes are held per transaction id until its commit; a
rollback discards them. A transaction larger than ``spill_rows`` spills to a local temporary file
on the driver so memory stays bounded whatever its size. Committed changes are numbered with the
event sequence (commit ordinal, index in transaction) and handed to a sink in bounded batches.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from cdclake.engine.events import event_seq
from cdclake.spi import Begin, Commit, Ddl, Rollback, RowChange
from cdclake.spi.logrows import UNAVAILABLE_KEY


@dataclass
class EventRow:
    """A committed change, ready for the bronze log."""

    source_table: str
    op: str
    seq: int
    position: str
    txid: str
    commit_ts: datetime | None
    schema_version: int
    before: str | None
    after: str | None


def _json(values: dict[str, Any] | None) -> str | None:
    return None if values is None else orjson.dumps(values).decode()


class _TxBuffer:
    """Row changes of one open transaction; spills to disk past ``spill_rows``."""

    def __init__(self, spill_rows: int) -> None:
        self.spill_rows = spill_rows
        self.memory: list[RowChange] = []
        self.spill_file: Any = None

    def add(self, change: RowChange) -> None:
        self.memory.append(change)
        if len(self.memory) >= self.spill_rows:
            if self.spill_file is None:
                # Closed in close(); lives as long as the transaction stays open.
                self.spill_file = tempfile.TemporaryFile(prefix="cdclake-tx-")  # noqa: SIM115
            pickle.dump(self.memory, self.spill_file, protocol=pickle.HIGHEST_PROTOCOL)
            self.memory = []

    def __iter__(self) -> Iterator[RowChange]:
        if self.spill_file is not None:
            self.spill_file.seek(0)
            while True:
                try:
                    chunk = pickle.load(self.spill_file)
                except EOFError:
                    break
                yield from chunk
        yield from self.memory

    def close(self) -> None:
        if self.spill_file is not None:
            self.spill_file.close()
            self.spill_file = None
        self.memory = []


@dataclass
class AssemblyStats:
    events: int = 0
    transactions: int = 0
    rolled_back: int = 0
    rows_by_table: dict[str, int] = field(default_factory=dict)
    largest_transaction: int = 0
    truncates: int = 0  # 't' rows kept (each a barrier the apply cuts MERGEs at)
    partial: bool = False  # an after image lists columns the log did not supply (UNAVAILABLE_KEY)


class TransactionAssembler:
    """Feed log records with :meth:`feed`; committed rows go to ``sink`` in batches of ``flush_rows``.

    ``floors`` maps a table to the ordinal up to which it already holds every change (a table
    snapshotted after the window's start): its changes committed at or before it are dropped.
    """

    def __init__(
        self,
        sink: Callable[[list[EventRow]], None],
        on_ddl: Callable[[Ddl], None],
        flush_rows: int = 100_000,
        spill_rows: int = 200_000,
        floors: dict[str, int] | None = None,
    ) -> None:
        self.sink = sink
        self.on_ddl = on_ddl
        self.flush_rows = flush_rows
        self.spill_rows = spill_rows
        self.floors = floors or {}
        self.open: dict[str, _TxBuffer] = {}
        self.batch: list[EventRow] = []
        self.stats = AssemblyStats()

    def feed(self, record: Any) -> None:
        if isinstance(record, RowChange):
            buf = self.open.get(record.txid)
            if buf is None:  # a change without an explicit begin (single-statement group)
                buf = self.open[record.txid] = _TxBuffer(self.spill_rows)
            buf.add(record)
        elif isinstance(record, Begin):
            self.open.setdefault(record.txid, _TxBuffer(self.spill_rows))
        elif isinstance(record, Commit):
            self._commit(record)
        elif isinstance(record, Rollback):
            buf = self.open.pop(record.txid, None)
            if buf is not None:
                self.stats.rolled_back += 1
                buf.close()
        elif isinstance(record, Ddl):
            self.flush()  # bronze rows before a DDL keep their place relative to it
            self.on_ddl(record)
        else:
            raise TypeError(f"unknown log record {record!r}")

    def _commit(self, commit: Commit) -> None:
        buf = self.open.pop(commit.txid, None)
        if buf is None:
            return
        ordinal = commit.position.ordinal
        where = commit.position.describe()
        index = 0
        kept = 0
        for change in buf:
            index += 1
            if ordinal <= self.floors.get(change.table, -1):
                continue
            kept += 1
            if change.op == "t":
                self.stats.truncates += 1
            elif change.after is not None and UNAVAILABLE_KEY in change.after:
                self.stats.partial = True
            self.batch.append(
                EventRow(
                    source_table=change.table,
                    op=change.op,
                    seq=event_seq(ordinal, index),
                    position=where,
                    txid=commit.txid,
                    commit_ts=commit.commit_ts,
                    schema_version=change.schema_version,
                    before=_json(change.before),
                    after=_json(change.after),
                )
            )
            self.stats.rows_by_table[change.table] = self.stats.rows_by_table.get(change.table, 0) + 1
            if len(self.batch) >= self.flush_rows:
                self.flush()
        buf.close()
        if kept:
            self.stats.transactions += 1
            self.stats.events += kept
            self.stats.largest_transaction = max(self.stats.largest_transaction, kept)

    def flush(self) -> None:
        if self.batch:
            self.sink(self.batch)
            self.batch = []

    def finish(self) -> list[str]:
        """Flush; return ids of transactions still open (a window must end on a boundary)."""
        self.flush()
        still_open = list(self.open)
        for buf in self.open.values():
            buf.close()
        self.open.clear()
        return still_open

