"""Runs: one pipeline run at a time (the lock) and the run log every command writes.

>>> r = RunReport("abc", "mine")
>>> r.phase("plan"); sorted(r.phases)
['plan']
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from cdclake.engine.control import ControlTables, utcnow
from cdclake.engine.lake import LakeLayout
from cdclake.engine.lock import pipeline_lock

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class RunReport:
    """What one run did; a row of the run log when it ends."""

    run_id: str
    command: str
    window_id: int | None = None
    start: str | None = None
    end: str | None = None
    events: int = 0
    transactions: int = 0
    rows_by_table: dict[str, int] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    resumed: bool = False
    idle: bool = False  # a mining run that found nothing to do and wrote nothing (mining.nothing_to_mine)
    windows: int = 1  # mining windows this report sums up (a run drains to its end in one or more, consecutive)
    note: str | None = None  # what the run left undone on purpose, and why (the command line prints it)
    # a window that ended before the end it was planned to (a statement or the planner's size cut it): that end
    short_of: dict[str, Any] | None = None
    started_at: float = field(default_factory=time.time)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step (metrics, benchmarks)
    _mark: float = field(default_factory=time.time)

    def absorb(self, later: RunReport) -> RunReport:
        """This report and the ``later`` window's of the same run, summed (start here, end there)."""
        self.window_id, self.end, self.short_of = later.window_id, later.end, later.short_of
        self.events += later.events
        self.transactions += later.transactions
        for table, n in later.rows_by_table.items():
            self.rows_by_table[table] = self.rows_by_table.get(table, 0) + n
        for name, seconds in later.phases.items():
            self.phases[name] = round(self.phases.get(name, 0.0) + seconds, 3)
        self.windows += later.windows
        self.resumed = self.resumed or later.resumed
        self.duration_s = time.time() - self.started_at
        return self

    def phase(self, name: str) -> None:
        """Close the current step under ``name`` (time since the previous call)."""
        now = time.time()
        self.phases[name] = round(self.phases.get(name, 0.0) + now - self._mark, 3)
        self._mark = now


class RunLog:
    """Starts runs: control tables made if missing, the pipeline lock if asked, one run-log row at the end."""

    def __init__(self, spark: SparkSession, layout: LakeLayout, control: ControlTables) -> None:
        self.spark = spark
        self.layout = layout
        self.control = control

    @contextlib.contextmanager
    def run(self, command: str, locked: bool = True) -> Iterator[RunReport]:
        """A run of ``command``: recorded ``ok`` or ``failed`` (with the error) in the run log. A kill
        (a ``BaseException``) records nothing: the run never ended."""
        report = RunReport(uuid.uuid4().hex[:12], command)
        with (self.lock(report) if locked else contextlib.nullcontext(),
              self.control.run_cache() if locked else contextlib.nullcontext()):
            self.control.ensure()  # under the lock: tables it makes are known empty to this run
            try:
                yield report
            except Exception as exc:
                self.record(report, "failed", str(exc)[:4000], exc)
                raise
            self.record(report, "ok", None)

    def lock(self, report: RunReport) -> contextlib.AbstractContextManager[None]:
        """The pipeline lock, held by ``report``'s run (for the steps of an unlocked run that need it)."""
        return pipeline_lock(self.spark, self.layout.lock, report.run_id)

    def record(self, report: RunReport, status: str, error: str | None, exc: Exception | None = None) -> None:
        """One run-log row; a failed run's error with its kind and whether only an operator can cure it
        (``permanent``: what ``status`` calls a stopped pipeline)."""
        report.duration_s = time.time() - report.started_at
        started = datetime.fromtimestamp(report.started_at, timezone.utc).replace(tzinfo=None)
        self.control.log_run({
            "run_id": report.run_id, "command": report.command, "window_id": report.window_id, "status": status,
            "started_at": started, "ended_at": utcnow(), "duration_s": report.duration_s, "events": report.events,
            "transactions": report.transactions, "rows_by_table": report.rows_by_table, "lag_s": None,
            "start_position": report.start, "end_position": report.end, "error": error,
            "error_kind": type(exc).__name__ if exc is not None else None,
            "error_permanent": bool(getattr(exc, "permanent", False)) if exc is not None else None,
        })
