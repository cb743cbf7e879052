"""Registration of the PostgreSQL source (:mod:`cdclake.spi.plugin`)."""

from __future__ import annotations

from cdclake.sources.postgresql.config import PostgresSourceConfig
from cdclake.spi import SourcePlugin

PLUGIN = SourcePlugin(
    name="postgresql",
    types=("postgresql", "postgres"),
    config_model=PostgresSourceConfig,
    source="cdclake.sources.postgresql.source:PostgresSource",
    jars=("org.postgresql:postgresql:42.7.14",),  # pgjdbc: Spark's reads of the snapshot, in the exported snapshot
    docs="docs/postgresql.md",
    summary="PostgreSQL: a logical replication slot (pgoutput) read in bounded windows, the snapshot exact at "
            "the slot's start",
)
