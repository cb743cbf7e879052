"""Binlog positions.

A position is the binlog file and byte offset just after a transaction (where reading resumes),
plus the GTID set executed up to there when the server has GTIDs (MariaDB ``domain-server-seq``
lists or MySQL ``uuid:1-N`` sets). Ordering uses (file sequence number, offset): offsets restart in
every file, so the offset alone never orders anything.

>>> p = BinlogPosition("mysql-bin.000003", 4711)
>>> p.ordinal
3000000004711
>>> BinlogPosition.from_dict(p.to_dict()) == p
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdclake.spi.position import Position

_FILE_SEQ = re.compile(r"\.(\d+)$")
OFFSET_SPAN = 10**12  # binlog offsets are < 2**32 (max_binlog_size is at most 1 GiB)


def file_sequence(filename: str) -> int:
    """The numeric suffix of a binlog file name (``mysql-bin.000042`` -> 42)."""
    match = _FILE_SEQ.search(filename)
    if not match:
        raise ValueError(f"not a binlog file name: {filename!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class BinlogPosition(Position):
    file: str
    pos: int
    gtid: str | None = None

    @property
    def ordinal(self) -> int:
        return file_sequence(self.file) * OFFSET_SPAN + self.pos

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "pos": self.pos, "gtid": self.gtid}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BinlogPosition:
        return cls(str(data["file"]), int(data["pos"]), data.get("gtid") or None)

    def describe(self) -> str:
        base = f"{self.file}:{self.pos}"
        return f"{base} (gtid {self.gtid})" if self.gtid else base

    def __lt__(self, other: BinlogPosition) -> bool:
        return self.ordinal < other.ordinal

    def __le__(self, other: BinlogPosition) -> bool:
        return self.ordinal <= other.ordinal
