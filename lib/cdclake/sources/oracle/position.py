"""Oracle log positions: SCNs.

A position says "every transaction committed at or below ``scn`` is in the lake". Mining resumes
with the window ``SCN > resume_scn``: normally ``resume_scn == scn``; after a snapshot it is lower
when transactions were open at the snapshot SCN (their early changes lie below it), and changes
committed at or below ``scn`` are then skipped. ``commit_scn`` keeps the newest commit SCN seen per
redo thread (RAC) and ``low_watermark`` the SCN below which no open transaction has changes.
``dbid``/``role`` name the database the lineage of SCNs belongs to (from the snapshot): mining never
continues a position on another database; ``resetlogs`` (RESETLOGS_CHANGE#) its incarnation: a
position at or above a newer incarnation's RESETLOGS_CHANGE# counts changes the database discarded.
``dictionary`` is ``(before, after)``, the SCNs read just
before and after the newest LogMiner dictionary build (``redo_log_catalog``) that precedes the position:
sessions add the logs from ``before`` and use it for SCNs above ``after``.

SCNs are compared as integers, never as text (``"3245675000" > "324567897"`` only numerically).

The ordinal orders commits: ``scn * 10**6 + k`` where ``k`` (1..999_998) numbers the commits and
DDL that share one SCN in redo order; a position's own ordinal uses ``k = 999_999`` (after all).

>>> p = ScnPosition(2_122_185, commit_scn={1: 2_122_180})
>>> p.ordinal
2122185999999
>>> ScnPosition.from_dict(p.to_dict()) == p
True
>>> commit_ordinal(2_122_185, 1) < p.ordinal
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdclake.spi.position import Position

SCN_SPAN = 10**6  # commits/DDL per SCN that can be ordered (k < SCN_SPAN - 1)


def commit_ordinal(scn: int, k: int) -> int:
    """Ordinal of the ``k``-th commit (1-based, redo order) at ``scn``."""
    if not 1 <= k < SCN_SPAN - 1:
        raise ValueError(f"more than {SCN_SPAN - 2} commits at SCN {scn}")
    return scn * SCN_SPAN + k


@dataclass(frozen=True)
class ScnPosition(Position):
    scn: int
    resume_scn: int | None = None
    commit_scn: dict[int, int] = field(default_factory=dict)  # redo thread -> newest commit SCN
    low_watermark: int | None = None
    dbid: int | None = None
    role: str | None = None
    dictionary: tuple[int, int] | None = None
    resetlogs: int | None = None  # RESETLOGS_CHANGE# of the incarnation the SCNs count in

    def __hash__(self) -> int:
        return hash((self.scn, self.resume_scn))

    @property
    def mine_from(self) -> int:
        """Mining resumes with ``SCN > mine_from``."""
        return self.scn if self.resume_scn is None else min(self.resume_scn, self.scn)

    @property
    def ordinal(self) -> int:
        return self.scn * SCN_SPAN + SCN_SPAN - 1

    @property
    def read_from_ordinal(self) -> int:
        return self.mine_from * SCN_SPAN + SCN_SPAN - 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "scn": str(self.scn),
            "resume_scn": None if self.resume_scn is None else str(self.resume_scn),
            "commit_scn": {str(t): str(s) for t, s in sorted(self.commit_scn.items())},
            "low_watermark": None if self.low_watermark is None else str(self.low_watermark),
            **({} if self.dbid is None else {"dbid": str(self.dbid), "role": self.role}),
            **({} if self.dictionary is None else {"dictionary": [str(s) for s in self.dictionary]}),
            **({} if self.resetlogs is None else {"resetlogs": str(self.resetlogs)}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScnPosition:
        resume = data.get("resume_scn")
        low = data.get("low_watermark")
        dbid = data.get("dbid")
        dictionary = data.get("dictionary")
        return cls(
            int(data["scn"]),
            None if resume in (None, "") else int(resume),
            {int(t): int(s) for t, s in (data.get("commit_scn") or {}).items()},
            None if low in (None, "") else int(low),
            None if dbid in (None, "") else int(dbid),
            data.get("role"),
            None if not dictionary else (int(dictionary[0]), int(dictionary[1])),
            None if data.get("resetlogs") in (None, "") else int(data["resetlogs"]),
        )

    def describe(self) -> str:
        text = f"SCN {self.scn}"
        if self.resume_scn is not None and self.resume_scn < self.scn:
            text += f" (mining from SCN {self.resume_scn})"
        return text

    def after_window(self, hi: int, commit_scn: Mapping[int, int], low_watermark: int | None,
                     dictionary: tuple[int, int] | None = None, resetlogs: int | None = None) -> ScnPosition:
        """The position after mining ``(mine_from, hi]`` (same database; a newer dictionary or
        incarnation if given)."""
        merged = dict(self.commit_scn)
        for thread, scn in commit_scn.items():
            merged[thread] = max(scn, merged.get(thread, 0))
        return ScnPosition(hi, None, merged, low_watermark, self.dbid, self.role, dictionary or self.dictionary,
                           resetlogs if resetlogs is not None else self.resetlogs)


@dataclass(frozen=True)
class LogPoint(Position):
    """The place of one commit or DDL in the redo stream: its SCN and rank ``k`` at that SCN."""

    scn: int
    k: int
    thread: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"scn": str(self.scn), "k": self.k, "thread": self.thread}

    @property
    def ordinal(self) -> int:
        return commit_ordinal(self.scn, self.k)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LogPoint:
        thread = data.get("thread")
        return cls(int(data["scn"]), int(data["k"]), None if thread is None else int(thread))

    def describe(self) -> str:
        return f"SCN {self.scn}" + (f" (thread {self.thread})" if self.thread is not None else "")
