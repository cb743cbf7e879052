"""PostgreSQL log positions: WAL LSNs, as logical decoding confirms them.

An :class:`LsnPosition` says "every transaction whose commit record starts below ``lsn`` is in the lake":
exactly what ``pg_replication_slot_advance(slot, lsn)`` tells the slot, and what a later
``pg_logical_slot_peek_binary_changes`` skips (docs/postgresql-design.md, section 2). A commit's position is
its end LSN (resuming there skips it). An LSN is below 2**64, so it is its own ordinal.

``system`` is the cluster's ``system_identifier``: a position taken on another cluster (a failover, a
restore) is no position of this one's WAL.

>>> p = LsnPosition.parse("0/1996DD0", system="7301")
>>> p.describe(), p.ordinal
('LSN 0/1996DD0', 26832336)
>>> LsnPosition.from_dict(p.to_dict()) == p
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdclake.sources.postgresql.pgoutput import lsn_text, parse_lsn
from cdclake.spi.position import Position

MAX_LSN = 2**64 - 1


@dataclass(frozen=True)
class LsnPosition(Position):
    lsn: int
    system: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.lsn <= MAX_LSN:
            raise ValueError(f"LSN {self.lsn} out of range")

    @classmethod
    def parse(cls, text: str, system: str | None = None) -> LsnPosition:
        return cls(parse_lsn(text), system)

    @property
    def ordinal(self) -> int:
        return self.lsn

    def to_dict(self) -> dict[str, Any]:
        return {"lsn": lsn_text(self.lsn), **({} if self.system is None else {"system": self.system})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LsnPosition:
        system = data.get("system")
        return cls(parse_lsn(str(data["lsn"])), None if system is None else str(system))

    def describe(self) -> str:
        return f"LSN {lsn_text(self.lsn)}"
