"""Log positions: what a source's change log is addressed by, as the engine sees it."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, TypeVar

_P = TypeVar("_P", bound="Position")


class Position(abc.ABC):
    """A point in the source's change log, between two transactions.

    The engine never looks inside a position: it orders commits by :attr:`ordinal`, stores
    :meth:`to_dict` in checkpoints and shows :meth:`describe` to people.
    """

    @property
    @abc.abstractmethod
    def ordinal(self) -> int:
        """Monotonic integer of this position in commit order (< 10**27)."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form stored in checkpoints and the run log."""

    @classmethod
    @abc.abstractmethod
    def from_dict(cls: type[_P], data: Mapping[str, Any]) -> _P:
        """Inverse of :meth:`to_dict`."""

    @abc.abstractmethod
    def describe(self) -> str:
        """Short human form, e.g. ``mysql-bin.000003:4711``."""

    @property
    def read_from_ordinal(self) -> int:
        """Ordinal of the oldest log point that mining from here must read: below :attr:`ordinal` when
        transactions were open at this position (their earlier changes are needed)."""
        return self.ordinal

    def __str__(self) -> str:
        return self.describe()
