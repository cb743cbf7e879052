"""The engine's tests run on the fake source (``cdclake.testing.fake``): registered for these tests only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cdclake.testing.fake import registered


@pytest.fixture(autouse=True, scope="module")
def _fake_source_registered() -> Iterator[None]:
    with registered():
        yield
