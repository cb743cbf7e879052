"""A progress bar for long Spark steps (snapshots, backfills) when a person watches a terminal.

The CLI wraps a command in :func:`progress_bar`; the engine names what it is doing with
:func:`step` (``step("snapshot shop.orders")``), a no-op unless a bar is showing. While the bar is
active a daemon thread polls Spark's status tracker every ``interval`` seconds and draws, for the
current step, the tasks completed out of the tasks of every Spark job seen since the step began
(a job that finished counts as complete, so the bar only moves forward within a step; its total
grows as the step starts more jobs).

No bar is drawn unless stderr is a terminal (spark-submit logs, Airflow and CI see nothing), or
when ``CDCLAKE_PROGRESS=0``. Drawing never fails the run: a polling error is logged and ignored.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

log = logging.getLogger(__name__)
PROGRESS_ENV = "CDCLAKE_PROGRESS"  # "0": never draw a bar
POLL_INTERVAL_S = 0.5


class StatusTracker(Protocol):
    """The part of :class:`pyspark.status.StatusTracker` the bar reads."""

    def getActiveJobsIds(self) -> list[int]: ...

    def getJobInfo(self, jobId: int) -> Any: ...

    def getStageInfo(self, stageId: int) -> Any: ...


@dataclass
class StepProgress:
    """Tasks of the Spark jobs seen during one step: ``{job id: (completed, total)}``."""

    label: str
    jobs: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def completed(self) -> int:
        return sum(done for done, _ in self.jobs.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self.jobs.values())

    def observe(self, active: dict[int, tuple[int, int]]) -> None:
        """Record the active jobs' task counts; a job seen before and no longer active is complete."""
        for job_id, (_done, total) in list(self.jobs.items()):
            if job_id not in active:
                self.jobs[job_id] = (total, total)
        for job_id, (done, total) in active.items():
            prev_done, prev_total = self.jobs.get(job_id, (0, 0))
            # Stages appear as a job runs: never let the counts move backwards.
            self.jobs[job_id] = (max(done, prev_done), max(total, prev_total))


def active_tasks(tracker: StatusTracker) -> dict[int, tuple[int, int]]:
    """``{job id: (completed tasks, total tasks)}`` of the active jobs, over their known stages."""
    out: dict[int, tuple[int, int]] = {}
    for job_id in tracker.getActiveJobsIds():
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        done = total = 0
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:  # not submitted yet, skipped, or already forgotten
                continue
            done += int(stage.numCompletedTasks)
            total += int(stage.numTasks)
        out[int(job_id)] = (done, total)
    return out


class ProgressBar:
    """A tqdm bar fed from a status tracker; :meth:`poll` does one update (the thread calls it)."""

    def __init__(self, tracker: StatusTracker, stream: IO[str], label: str = "") -> None:
        from tqdm import tqdm

        self.tracker = tracker
        self.current = StepProgress(label)
        self._lock = threading.Lock()
        self.bar = tqdm(total=0, desc=label, file=stream, unit="task", leave=True, dynamic_ncols=True,
                        disable=False, mininterval=0, bar_format="{desc}: {percentage:3.0f}%|{bar}| "
                                                                 "{n_fmt}/{total_fmt} tasks [{elapsed}]")

    def set_step(self, label: str) -> None:
        """Start a new step: the bar restarts from zero under ``label``."""
        with self._lock:
            if label == self.current.label:
                return
            self.current = StepProgress(label)
            self.bar.reset(total=0)
            self.bar.set_description_str(label, refresh=False)
            self.bar.refresh()

    def poll(self) -> None:
        """Read the tracker once and redraw."""
        active = active_tasks(self.tracker)
        with self._lock:
            self.current.observe(active)
            self.bar.total = self.current.total
            self.bar.n = self.current.completed
            self.bar.refresh()

    def finish(self, ok: bool) -> None:
        """Last update and close; on success the step's jobs are all complete."""
        with self._lock:
            if ok:
                self.current.observe({})
                self.bar.total = self.current.total
                self.bar.n = self.current.completed
            self.bar.close()


_active: ProgressBar | None = None


def step(label: str) -> None:
    """Name the step the engine starts now (``"snapshot shop.orders"``); no-op without a bar."""
    bar = _active
    if bar is not None:
        bar.set_step(label)


def wanted(stream: IO[str]) -> bool:
    """Whether to draw: ``stream`` is a terminal and ``$CDCLAKE_PROGRESS`` is not ``0``."""
    if os.environ.get(PROGRESS_ENV, "").strip() == "0":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _poll_loop(bar: ProgressBar, stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        try:
            bar.poll()
        except Exception as exc:  # the bar is decoration: never fail the run for it
            log.debug("progress poll failed: %s", exc)


@contextlib.contextmanager
def progress_bar(spark: Any, label: str = "", stream: IO[str] | None = None,
                 interval: float = POLL_INTERVAL_S) -> Iterator[ProgressBar | None]:
    """Show a bar on ``stream`` (stderr) for the duration of the block, if it is a terminal.

    Yields the bar (``None`` when none is drawn). The polling thread stops, and the bar closes,
    when the block ends, normally or by an exception.
    """
    global _active
    out = stream if stream is not None else sys.stderr
    if _active is not None or not wanted(out):
        yield None
        return
    bar = ProgressBar(spark.sparkContext.statusTracker(), out, label)
    stop = threading.Event()
    thread = threading.Thread(target=_poll_loop, args=(bar, stop, interval), name="cdclake-progress", daemon=True)
    _active = bar
    thread.start()
    ok = False
    try:
        yield bar
        ok = True
    finally:
        stop.set()
        thread.join(timeout=max(2.0, 4 * interval))
        _active = None
        try:
            bar.finish(ok)
        except Exception as exc:
            log.debug("progress bar close failed: %s", exc)


__all__ = ["ProgressBar", "StepProgress", "active_tasks", "progress_bar", "step", "wanted"]
