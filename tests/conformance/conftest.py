"""The ``driver`` fixture: one parameter per built-in source, each with its driver module.

The parameters are the built-in sources (``lib/cdclake/sources/<name>/plugin.py``), not a list kept
here: a new source is in this suite from its first commit, and fails it until its driver,
``tests/conformance/<name>.py`` with ``make_driver(request) -> Driver``, exists and passes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conformance.workload import Driver

SOURCES = Path(__file__).resolve().parents[2] / "lib" / "cdclake" / "sources"


def builtin_sources() -> list[str]:
    return sorted(d.name for d in SOURCES.iterdir() if (d / "plugin.py").is_file())


def driver_module(source: str) -> ModuleType | None:
    name = f"tests.conformance.{source}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def _param(source: str) -> Any:
    # A driver module's MARKS mark its parameter: the root conftest marks tests by the fixtures they
    # name, and a driver takes its fixtures with request.getfixturevalue.
    module = driver_module(source)
    return pytest.param(source, id=source, marks=list(getattr(module, "MARKS", ())))


@pytest.fixture(params=[_param(source) for source in builtin_sources()])
def driver(request: pytest.FixtureRequest) -> Iterator[Driver]:
    module = driver_module(request.param)
    if module is None:
        pytest.fail(f"source {request.param!r} has no conformance driver: add tests/conformance/{request.param}.py "
                    "(tests/conformance/README.md)", pytrace=False)
    made: Driver = module.make_driver(request)
    assert made.name == request.param, f"tests/conformance/{request.param}.py made the driver of {made.name!r}"
    try:
        yield made
    finally:
        made.close()
