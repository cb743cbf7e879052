"""A fake source for the engine's tests: a database with no server (:mod:`.store`), read through cdclake's source
interface (:mod:`.source`) in each shape a window can take, registered only where tests ask (:func:`registered`).

>>> with registered():
...     from cdclake.spi import source_types
...     "fake" in source_types()
True
>>> from cdclake.spi import source_types
>>> "fake" in source_types()
False
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from cdclake.testing.fake.store import FakeDatabase, FakeError, Transaction, column

#: the folder holding the fake's distribution (its entry point): on ``sys.path``, the fake is a registered source
ENTRY_POINTS = Path(__file__).resolve().parent / "entry_points"


def _forget_plugins() -> None:
    from cdclake.config import pipeline_model
    from cdclake.spi import plugins

    plugins.cache_clear()
    pipeline_model.cache_clear()


@contextlib.contextmanager
def registered() -> Iterator[None]:
    """Inside the block, ``source.type: fake`` is a registered source of this process."""
    path = str(ENTRY_POINTS)
    sys.path.append(path)
    _forget_plugins()
    try:
        yield
    finally:
        sys.path.remove(path)
        _forget_plugins()


def process_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a process (``cdclake mine``...) in which the fake is a registered source."""
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**env, "PYTHONPATH": os.pathsep.join([*paths, str(ENTRY_POINTS)])}


__all__ = ["ENTRY_POINTS", "FakeDatabase", "FakeError", "Transaction", "column", "process_env", "registered"]
