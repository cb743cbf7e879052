"""Registration of the Oracle source (:mod:`cdclake.spi.plugin`)."""

from __future__ import annotations

from typing import Any

from cdclake.sources.oracle.config import OracleSourceConfig
from cdclake.spi import SourcePlugin


def _commands() -> list[Any]:
    from cdclake.sources.oracle.cli import redo_parse

    return [redo_parse]


PLUGIN = SourcePlugin(
    name="oracle",
    types=("oracle",),
    config_model=OracleSourceConfig,
    source="cdclake.sources.oracle.source:OracleSource",
    jars=("com.oracle.database.jdbc:ojdbc11:23.9.0.25.07",),
    docs="docs/oracle.md",
    summary="Oracle: LogMiner windows decoded in Spark, AS OF SCN snapshots over JDBC",
    commands=_commands,
)
