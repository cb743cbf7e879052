"""The ``source:`` block of a PostgreSQL pipeline file (names follow Debezium's where one exists)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from cdclake.kit import ServerConfig
from cdclake.spi.config import StrictModel

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: the session settings every connection of the source runs with: pgoutput's text values and the snapshot's
#: ``::text`` reads are rendered alike whatever the server's or the role's defaults
SESSION_SETTINGS = {
    "TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "iso_8601", "bytea_output": "hex",
    "extra_float_digits": "3", "lc_monetary": "C",
}


class PostgresMiningOptions(StrictModel):
    max_window_bytes: int = Field(
        256 * 2**20, ge=2**20, description="WAL one window decodes at most (its end LSN is at most this far "
        "past its start; a transaction committing past it goes to the next window)")


class PostgresSourceConfig(ServerConfig):
    """A PostgreSQL database read through a logical replication slot (``pgoutput``) and a publication."""

    type: Literal["postgresql", "postgres"]
    port: int = 5432
    database: str
    slot: str | None = Field(None, description="the logical replication slot (default cdclake_<pipeline>)")
    publication: str | None = Field(None, description="the publication (default cdclake_<pipeline>)")
    create_publication: bool = Field(
        True, description="cdclake creates the publication for the captured tables and adds tables to it "
        "(needs ownership of them); false: it must exist and cover them")
    mining: PostgresMiningOptions = Field(default_factory=PostgresMiningOptions)

    @field_validator("slot", "publication")
    @classmethod
    def _plain_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a plain lower-case PostgreSQL name (a-z, 0-9, _; at most 63)")
        return value

    def slot_name(self, pipeline: str) -> str:
        return self.slot or _default_name(pipeline)

    def publication_name(self, pipeline: str) -> str:
        return self.publication or _default_name(pipeline)

    def spark_jdbc_url(self) -> str:
        return self.jdbc_url or f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"


def _default_name(pipeline: str) -> str:
    """``cdclake_<pipeline>`` folded to a plain name.

    >>> _default_name("Sales-EU")
    'cdclake_sales_eu'
    """
    return ("cdclake_" + re.sub(r"[^a-z0-9_]", "_", pipeline.lower()))[:63]
