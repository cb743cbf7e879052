"""Registration of the Db2 source (:mod:`cdclake.spi.plugin`)."""

from __future__ import annotations

from cdclake.sources.db2.config import Db2SourceConfig
from cdclake.spi import SourcePlugin

PLUGIN = SourcePlugin(
    name="db2",
    types=("db2",),
    config_model=Db2SourceConfig,
    source="cdclake.sources.db2.source:Db2Source",
    jars=("com.ibm.db2:jcc:12.1.5.0",),  # the IBM JDBC driver: Spark's reads of snapshots and CD tables
    docs="docs/db2.md",
    summary="Db2 LUW: ASN Capture's change-data tables (SQL Replication), read by Spark in parallel",
)
