"""Every ``>>>`` example in cdclake's docstrings runs (Airflow's module runs in test_dags_public_api)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib"
NEEDS_AIRFLOW = {"cdclake.dags"}


def _modules_with_examples() -> list[str]:
    out = []
    for path in sorted((LIB / "cdclake").rglob("*.py")):
        if ">>> " in path.read_text():
            name = ".".join(path.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")
            if name not in NEEDS_AIRFLOW:
                out.append(name)
    return out


@pytest.mark.parametrize("module", _modules_with_examples())
def test_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), report=True,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{module}: its examples are all skipped"
    assert result.failed == 0, f"{module}: {result.failed} of {result.attempted} examples failed (output above)"
