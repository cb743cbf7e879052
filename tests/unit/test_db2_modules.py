"""The Db2 source's commit clock and sequences (its modules' examples run in test_doctests)."""

from __future__ import annotations

from cdclake.sources.db2 import position
from cdclake.sources.db2.position import CommitSeqPosition, clock_after


def test_a_snapshot_is_numbered_from_the_newest_position_below_it() -> None:
    a = CommitSeqPosition("0" * 31 + "1", 10)
    b = CommitSeqPosition("0" * 31 + "5", 40)
    counted = []

    def count(lo: str, hi: str) -> int:
        counted.append((lo[-1], hi[-1]))
        return 3

    assert clock_after([a, b], "0" * 31 + "9", count) == 43
    assert counted == [("5", "9")]
    assert clock_after([a, b], "0" * 31 + "5", count) == 40  # at an anchor: its own number, nothing counted
    assert clock_after([], "0" * 31 + "9", count) == 0


def test_a_ten_byte_sequence_is_widened_in_front() -> None:
    assert position.seq_hex(bytes.fromhex("00000027000007580005")) == "00000000000000000027000007580005"
    assert position.seq_hex("00000027:00000758:0005") == "00000000000000000027000007580005"
