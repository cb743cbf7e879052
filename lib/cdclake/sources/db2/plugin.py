"""Registration of the Db2 source (:mod:`cdclake.spi.plugin`)."""

from __future__ import annotations

from typing import Any

from cdclake.sources.db2.config import Db2SourceConfig
from cdclake.spi import Source, SourceContext, SourcePlugin


def _create(config: Any, context: SourceContext) -> Source:
    from cdclake.sources.db2.source import Db2Source

    return Db2Source(config, context)


PLUGIN = SourcePlugin(
    name="db2",
    types=("db2",),
    config_model=Db2SourceConfig,
    create=_create,
    jars=("com.ibm.db2:jcc:12.1.5.0",),  # the IBM JDBC driver: Spark's reads of snapshots and CD tables
    docs="docs/db2.md",
    summary="Db2 LUW: ASN Capture's change-data tables (SQL Replication), read by Spark in parallel",
)
