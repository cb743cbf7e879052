"""Registration of the fake source (:mod:`cdclake.spi.plugin`).

The fake is not one of cdclake's sources (``cdclake/sources/``): it registers like a source shipped in another
distribution, under the entry-point group ``cdclake.sources``, by a distribution that is on ``sys.path`` only
where the tests put it (:func:`cdclake.testing.fake.registered`). So no user, no doc and no other test sees it.
"""

from __future__ import annotations

from cdclake.spi import SourcePlugin
from cdclake.testing.fake.source import FakeSourceConfig

PLUGIN = SourcePlugin(
    name="fake",
    types=("fake",),
    config_model=FakeSourceConfig,
    source="cdclake.testing.fake.source:FakeSource",
    summary="tests only: an in-memory database whose log is a file (cdclake.testing.fake)",
)
