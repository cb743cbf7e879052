"""Every example pipeline file in ``conf/`` is valid for its source (the README and the docs point at them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cdclake.config import load_config
from cdclake.spi import plugins, source_types

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "conf").glob("example-*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_pipeline_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in re.findall(r"\$\{(\w+)\}", path.read_text()):
        monkeypatch.setenv(name, "secret")
    config = load_config(path)
    assert config.source.type in source_types()


def test_every_source_has_an_example() -> None:
    shown = {t for p in EXAMPLES for t in re.findall(r"^  type: (\w+)", p.read_text(), re.M)}
    assert all(set(p.types) & shown for p in plugins()), shown
