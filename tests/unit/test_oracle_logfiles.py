"""Log-file selection per redo thread and SCN positions (checklist items 6, 7, 8, 9, 19)."""

from __future__ import annotations

import pytest
from cdclake.errors import PositionLostError
from cdclake.sources.oracle.logfiles import (
    MAX_SCN,
    LogFile,
    Thread,
    archived_horizon,
    covering_logs,
    merge_online_and_archived,
)
from cdclake.sources.oracle.position import ScnPosition, commit_ordinal

OPEN1, OPEN2 = Thread(1, "OPEN", "PUBLIC"), Thread(2, "OPEN", "PUBLIC")


def arch(thread: int, seq: int, first: int, nxt: int) -> LogFile:
    return LogFile(thread, seq, first, nxt, f"/arch/{thread}_{seq}.arc", False)


def online(thread: int, seq: int, first: int, nxt: int = MAX_SCN, status: str = "CURRENT") -> LogFile:
    return LogFile(thread, seq, first, nxt, f"/redo/{thread}_{seq}.log", True, status)


def test_online_log_wins_over_its_archived_copy_and_archive_only_drops_online() -> None:
    files = merge_online_and_archived([online(1, 8, 200, 300, "ACTIVE")], [arch(1, 7, 100, 200), arch(1, 8, 200, 300)],
                                      archive_only=False)
    assert [(f.sequence, f.online) for f in files] == [(7, False), (8, True)]
    files = merge_online_and_archived([online(1, 8, 200, 300, "ACTIVE")], [arch(1, 7, 100, 200), arch(1, 8, 200, 300)],
                                      archive_only=True)
    assert [(f.sequence, f.online) for f in files] == [(7, False), (8, False)]


def test_each_rac_thread_contributes_the_logs_covering_the_window() -> None:
    files = [arch(1, 7, 100, 200), online(1, 8, 200), arch(2, 3, 50, 180), arch(2, 4, 180, 260), online(2, 5, 260)]
    chosen = covering_logs(files, [OPEN1, OPEN2], 150, 250)
    assert [(f.thread, f.sequence) for f in chosen] == [(1, 7), (1, 8), (2, 3), (2, 4)]


def test_a_purged_log_names_the_thread_and_the_missing_scn_range() -> None:
    with pytest.raises(PositionLostError) as err:
        covering_logs([arch(1, 9, 300, 400), online(1, 10, 400)], [OPEN1], 150, 500)
    assert "SCN 151..299" in err.value.problem and "thread 1" in err.value.problem


def test_a_sequence_gap_is_an_archive_gap_with_its_sequences() -> None:
    with pytest.raises(PositionLostError) as err:
        covering_logs([arch(2, 3, 100, 200), arch(2, 5, 300, 400), online(2, 6, 400)], [OPEN2], 150, 450)
    assert "thread 2" in err.value.problem and "sequence(s) 4" in err.value.problem


def test_a_closed_thread_that_ended_before_the_window_adds_nothing() -> None:
    files = [arch(1, 7, 100, 900), online(1, 8, 900), arch(2, 2, 10, 120)]
    chosen = covering_logs(files, [OPEN1, Thread(2, "CLOSED", "PUBLIC")], 150, 950)
    assert [(f.thread, f.sequence) for f in chosen] == [(1, 7), (1, 8)]


def test_archive_only_horizon_is_the_lowest_archived_end_of_open_threads() -> None:
    files = [arch(1, 7, 100, 200), arch(1, 8, 200, 300), arch(2, 4, 100, 250), online(2, 5, 250)]
    assert archived_horizon(files, [OPEN1, OPEN2]) == 249


def test_scn_positions_compare_as_numbers_and_commits_order_within_an_scn() -> None:
    low, high = ScnPosition(324567897), ScnPosition(3245675000)
    assert low.ordinal < high.ordinal  # "3245675000" > "324567897" only numerically
    assert commit_ordinal(5, 1) < commit_ordinal(5, 2) < ScnPosition(5).ordinal < commit_ordinal(6, 1)
    after = ScnPosition(100, resume_scn=90).after_window(200, {1: 150, 2: 180}, None)
    assert after.mine_from == 200 and after.commit_scn == {1: 150, 2: 180}
    assert ScnPosition.from_dict(after.to_dict()) == after
