"""Db2 log positions: commit sequences of ASN Capture, and the pipeline's commit clock.

Capture stamps every change-data (CD) row with ``IBMSNAP_COMMITSEQ``, the log sequence of its
transaction's commit: 16 bytes (``VARCHAR(16) FOR BIT DATA``) since Db2 10.1, 10 bytes under an
older ``COMPATIBILITY``. The value is opaque: cdclake never decodes it, only compares it as an
unsigned big-endian number, a shorter one widened by zero bytes in front (IBM's own migration rule),
and keeps it as 32 hex digits.

A :class:`CommitSeqPosition` says "every transaction committed at or below ``commitseq`` is in the
lake". Its :attr:`ordinal` is not derived from the commit sequence (128 bits do not fit the engine's
ordering numbers): it is a **commit clock**, the count of transactions in ``IBMSNAP_UOW`` up to the
position, counted from an anchor. Each window numbers its commits on from the positions it starts
from (its start, and each table position inside it), so a commit after a position always gets a
higher number than the position, and numbers only grow from window to window; a snapshot's position
is numbered from the newest table position below it (:func:`clock_after`). Numbers may skip (rows
pruned since a position was numbered) but never repeat or go back.

>>> p = CommitSeqPosition.parse("00000000:00000000:0000000000000123", 7)
>>> p.describe()
'commit sequence 00000000:00000000:0000000000000123 (commit 7)'
>>> CommitSeqPosition.from_dict(p.to_dict()) == p
True
>>> widen(bytes.fromhex("00000027000007580005")).hex()
'00000000000000000027000007580005'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdclake.spi.position import Position

SEQ_BYTES = 16
#: the largest ordinal the engine accepts (Position.ordinal < 10**27)
MAX_CLOCK = 10**27 - 1


def widen(value: bytes) -> bytes:
    """A commit/intent sequence as 16 bytes: an older 10-byte one gets zero bytes in front (order kept)."""
    if len(value) > SEQ_BYTES:
        raise ValueError(f"a commit sequence has at most {SEQ_BYTES} bytes, not {len(value)}: {value.hex()}")
    return bytes(SEQ_BYTES - len(value)) + value


def seq_hex(value: bytes | bytearray | memoryview | str) -> str:
    """32 lower-case hex digits of a sequence given as bytes or hex (``:`` separators allowed)."""
    raw = bytes.fromhex(value.replace(":", "")) if isinstance(value, str) else bytes(value)
    return widen(raw).hex()


def show(hex32: str) -> str:
    """Debezium's form: ``xxxxxxxx:xxxxxxxx:xxxxxxxxxxxxxxxx``."""
    return f"{hex32[:8]}:{hex32[8:16]}:{hex32[16:]}"


ZERO = "0" * (2 * SEQ_BYTES)


@dataclass(frozen=True)
class CommitSeqPosition(Position):
    """Everything committed at or below ``commitseq`` (32 hex digits) is in the lake; ``clock``: the commit
    number of the last such commit in the pipeline's commit clock; ``captured_at``: Capture's ``SYNCHTIME``
    when it had read the log up to ``commitseq`` (ISO text; None where not known), which tells whether
    Capture's retention pruning can have reached past the position."""

    commitseq: str
    clock: int
    captured_at: str | None = None

    def __post_init__(self) -> None:
        if len(self.commitseq) != 2 * SEQ_BYTES or any(c not in "0123456789abcdef" for c in self.commitseq):
            raise ValueError(f"not a 16-byte commit sequence in lower-case hex: {self.commitseq!r}")
        if not 0 <= self.clock <= MAX_CLOCK:
            raise ValueError(f"commit clock {self.clock} out of range")

    @classmethod
    def parse(cls, value: bytes | str, clock: int) -> CommitSeqPosition:
        return cls(seq_hex(value), clock)

    @property
    def raw(self) -> bytes:
        return bytes.fromhex(self.commitseq)

    @property
    def ordinal(self) -> int:
        return self.clock

    def to_dict(self) -> dict[str, Any]:
        out = {"commitseq": self.commitseq, "clock": str(self.clock)}
        if self.captured_at is not None:
            out["captured_at"] = self.captured_at
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CommitSeqPosition:
        at = data.get("captured_at")
        return cls(seq_hex(str(data["commitseq"])), int(data["clock"]), None if at is None else str(at))

    def describe(self) -> str:
        return f"commit sequence {show(self.commitseq)} (commit {self.clock})"


def clock_after(anchors: list[CommitSeqPosition], commitseq: str, count_between: Any) -> int:
    """The clock of the position at ``commitseq``: numbered on from the newest anchor at or below it by the
    transactions ``count_between(anchor_commitseq, commitseq)`` finds in between; 0 with no anchor (a
    pipeline's first position)."""
    below = [a for a in anchors if a.commitseq <= commitseq]
    if not below:
        return 0
    anchor = max(below, key=lambda a: (a.commitseq, a.clock))
    if anchor.commitseq == commitseq:
        return anchor.clock
    return anchor.clock + int(count_between(anchor.commitseq, commitseq))
