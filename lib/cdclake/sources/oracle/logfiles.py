"""Which redo log files cover an SCN range, per redo thread.

For each thread: every log whose SCN range meets ``(lo, hi]``, preferring the online log over an
archived copy of the same sequence (adding both is ORA-01289), archived copies from one archive
destination only, and no sequence gaps. A thread that is closed and ended before ``lo`` has nothing
to add. A missing piece is a :class:`~cdclake.errors.PositionLostError` naming the thread, the
sequences and the SCN range that no available log holds.

>>> logs = [LogFile(1, 7, 100, 200, "/a/1_7.arc", False), LogFile(1, 8, 200, MAX_SCN, "/o/redo01.log", True)]
>>> [f.sequence for f in covering_logs(logs, [Thread(1, "OPEN", "PUBLIC")], 150, 250)]
[7, 8]
"""

from __future__ import annotations

from dataclasses import dataclass

from cdclake.errors import PositionLostError

MAX_SCN = 18446744073709551615  # NEXT_CHANGE# of a CURRENT online log


@dataclass(frozen=True)
class LogFile:
    thread: int
    sequence: int
    first_change: int
    next_change: int  # exclusive; MAX_SCN while the log is current
    name: str
    online: bool
    status: str = ""


@dataclass(frozen=True)
class Thread:
    thread: int
    status: str  # OPEN | CLOSED
    enabled: str  # DISABLED | PRIVATE | PUBLIC


_REMEDY = (
    "restore the missing archived logs into the archive destination (RMAN: RESTORE ARCHIVELOG ...) and run "
    "again; if they are gone for good, re-snapshot into a fresh pipeline (a new `pipeline` name or "
    "`lake.root`, then 'cdclake snapshot'); "
    "keep archived logs longer than the mining interval (RMAN deletion policy / archivelog retention)"
)


def merge_online_and_archived(online: list[LogFile], archived: list[LogFile], archive_only: bool) -> list[LogFile]:
    """One file per (thread, sequence): the online log wins over its archived copy."""
    by_key: dict[tuple[int, int], LogFile] = {}
    for f in archived:
        by_key.setdefault((f.thread, f.sequence), f)
    if not archive_only:
        for f in online:
            if f.status.upper() in ("UNUSED", "CLEARING", "CLEARING_CURRENT"):
                continue
            by_key[(f.thread, f.sequence)] = f
    return sorted(by_key.values(), key=lambda f: (f.thread, f.sequence))


def covering_logs(files: list[LogFile], threads: list[Thread], lo: int, hi: int) -> list[LogFile]:
    """The files to add to a LogMiner session that mines ``SCN > lo AND SCN <= hi``."""
    chosen: list[LogFile] = []
    for thread in threads:
        if thread.enabled.upper() == "DISABLED":
            continue
        mine = [f for f in files if f.thread == thread.thread]
        if not mine:
            if thread.status.upper() == "OPEN":
                raise PositionLostError(
                    f"redo thread {thread.thread} is open but none of its logs is available for SCN {lo + 1}..{hi}",
                    _REMEDY,
                )
            continue
        last_end = max(f.next_change for f in mine)
        if last_end <= lo + 1 and thread.status.upper() != "OPEN":
            continue  # a closed thread that ended before the range has no redo in it
        needed = [f for f in mine if f.next_change > lo + 1 and f.first_change <= hi]
        if not needed or needed[0].first_change > lo + 1:
            first = needed[0].first_change if needed else min(f.first_change for f in mine)
            raise PositionLostError(
                f"redo for SCN {lo + 1}..{first - 1} of thread {thread.thread} is in no available log file "
                f"(oldest available log of the thread starts at SCN {min(f.first_change for f in mine)}); "
                "the archived logs were purged before they were mined",
                _REMEDY,
            )
        for prev, cur in zip(needed, needed[1:], strict=False):
            if cur.sequence != prev.sequence + 1:
                missing = ", ".join(str(s) for s in range(prev.sequence + 1, cur.sequence))
                raise PositionLostError(
                    f"archive gap on redo thread {thread.thread}: sequence(s) {missing} (SCN "
                    f"{prev.next_change}..{cur.first_change - 1}) are missing from the archive destination",
                    _REMEDY,
                )
        if needed[-1].next_change <= hi and thread.status.upper() == "OPEN":
            raise PositionLostError(
                f"redo thread {thread.thread} has no log after SCN {needed[-1].next_change - 1} up to SCN {hi}",
                _REMEDY,
            )
        chosen.extend(needed)
    return chosen


def archived_horizon(files: list[LogFile], threads: list[Thread]) -> int | None:
    """The highest SCN every open thread has archived (archive-log-only mining stops there)."""
    ends = []
    for thread in threads:
        if thread.enabled.upper() == "DISABLED":
            continue
        archived = [f.next_change for f in files if f.thread == thread.thread and not f.online]
        if thread.status.upper() == "OPEN":
            if not archived:
                return None
            ends.append(max(archived) - 1)
    return min(ends) if ends else None
