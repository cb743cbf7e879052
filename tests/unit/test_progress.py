"""The terminal progress bar, driven by a fake Spark status tracker (no Spark, no sleeps)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from cdclake import progress
from cdclake.progress import ProgressBar, StepProgress, active_tasks, progress_bar, step, wanted


class FakeTracker:
    """jobs: {job id: [stage id, ...]}; stages: {stage id: (completed, total)}; unknown stages → None."""

    def __init__(self) -> None:
        self.jobs: dict[int, list[int]] = {}
        self.stages: dict[int, tuple[int, int]] = {}

    def getActiveJobsIds(self) -> list[int]:
        return list(self.jobs)

    def getJobInfo(self, jobId: int) -> SimpleNamespace | None:
        stages = self.jobs.get(jobId)
        return None if stages is None else SimpleNamespace(jobId=jobId, stageIds=stages, status="RUNNING")

    def getStageInfo(self, stageId: int) -> SimpleNamespace | None:
        if stageId not in self.stages:
            return None
        done, total = self.stages[stageId]
        return SimpleNamespace(stageId=stageId, numTasks=total, numCompletedTasks=done)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _spark(tracker: FakeTracker) -> SimpleNamespace:
    return SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))


def test_active_tasks_sums_known_stages_per_job() -> None:
    t = FakeTracker()
    t.jobs = {1: [10, 11, 12], 2: [20]}
    t.stages = {10: (4, 4), 11: (1, 8)}  # stage 12 not submitted yet; job 2's stage unknown
    assert active_tasks(t) == {1: (5, 12), 2: (0, 0)}


def test_step_progress_only_moves_forward_and_completes_finished_jobs() -> None:
    s = StepProgress("snapshot db.t")
    s.observe({1: (2, 10)})
    s.observe({1: (1, 10), 2: (0, 4)})  # a stage retried: completed count never goes back
    assert (s.completed, s.total) == (2, 14)
    s.observe({2: (3, 4)})  # job 1 finished
    assert (s.completed, s.total) == (13, 14)
    s.observe({})
    assert (s.completed, s.total) == (14, 14)


def test_bar_renders_the_step_label_and_counts_and_restarts_per_step() -> None:
    t, out = FakeTracker(), Tty()
    bar = ProgressBar(t, out, "snapshot")
    bar.set_step("snapshot shop.orders")
    t.jobs, t.stages = {7: [1]}, {1: (3, 12)}
    bar.poll()
    assert "snapshot shop.orders" in out.getvalue() and "3/12 tasks" in out.getvalue()
    assert bar.bar.n == 3 and bar.bar.total == 12
    bar.set_step("snapshot shop.customers")
    assert bar.bar.n == 0 and bar.current.label == "snapshot shop.customers"
    t.jobs, t.stages = {8: [2]}, {2: (1, 2)}
    bar.poll()
    bar.finish(ok=True)
    assert bar.bar.n == 2 and bar.bar.total == 2  # job 8 counted complete at the end
    assert "snapshot shop.customers" in out.getvalue() and "2/2 tasks" in out.getvalue()


def test_no_bar_unless_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not wanted(io.StringIO()) and wanted(Tty())
    monkeypatch.setenv(progress.PROGRESS_ENV, "0")
    assert not wanted(Tty())
    monkeypatch.delenv(progress.PROGRESS_ENV)
    out = io.StringIO()
    with progress_bar(_spark(FakeTracker()), "snapshot", stream=out) as bar:
        assert bar is None
        step("snapshot db.t")  # a no-op without a bar
    assert out.getvalue() == ""


def test_context_manager_sets_steps_and_stops_its_thread_on_exceptions() -> None:
    t, out = FakeTracker(), Tty()
    with pytest.raises(RuntimeError), progress_bar(_spark(t), "backfill db.t", stream=out, interval=3600) as bar:
        assert bar is not None and progress._active is bar
        step("backfill db.t: merge")
        assert bar.current.label == "backfill db.t: merge"
        raise RuntimeError("boom")
    assert progress._active is None
    assert bar.bar.disable  # closed
    import threading
    assert not [th for th in threading.enumerate() if th.name == "cdclake-progress"]
