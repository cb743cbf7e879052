"""Fault injection for the kill tests: die at a named step of a run, like ``kill -9``.

``$CDCLAKE_CRASH_AT`` names the point (``<point>[:<nth>]``: the nth time it is reached); with
``$CDCLAKE_CRASH_MODE=raise`` the run raises :class:`SimulatedKill` (a ``BaseException`` nothing in
cdclake catches, so in-process tests can go on with a fresh pipeline), else the process SIGKILLs itself.
Unset, a crash point costs one environment lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "CDCLAKE_CRASH_AT"
CRASH_MODE_ENV = "CDCLAKE_CRASH_MODE"
_hits: dict[str, int] = {}


class SimulatedKill(BaseException):
    """Raised at a crash point in "raise" mode: nothing below catches it, like a kill."""


def crash_point(name: str) -> None:
    """Die here when ``$CDCLAKE_CRASH_AT`` names this point (tests prove exactly-once)."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(nth or 1):
        _hits.pop(name, None)
        if os.environ.get(CRASH_MODE_ENV) == "raise":
            raise SimulatedKill(name)
        os.kill(os.getpid(), signal.SIGKILL)
