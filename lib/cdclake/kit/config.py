"""The ``source:`` keys every server-backed source shares, so each is validated and documented once.

A source's model subclasses :class:`ServerConfig` (and its ``snapshot:`` block :class:`SnapshotOptions`),
narrowing ``type`` and setting its own ``port`` default:

>>> from typing import Literal
>>> class Db9Config(ServerConfig):
...     type: Literal["db9"]
...     port: int = 9999
>>> c = Db9Config(type="db9", host="h", user="u", password="s3cret")
>>> c.port, c.snapshot.partitions, str(c.password)
(9999, 4, '**********')
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from cdclake.spi.config import SourceConfigBase, StrictModel


class SnapshotOptions(StrictModel):
    """``source.snapshot``: how a table's rows are read (:class:`cdclake.kit.JdbcSnapshotReader`)."""

    partitions: int = Field(4, ge=1, description="parallel JDBC reads (key ranges) per table")
    fetch_size: int = Field(10_000, ge=1, description="rows per fetch of each read")
    min_rows_per_partition: int = Field(50_000, ge=1, description="small tables are read in one query")


class ServerConfig(SourceConfigBase):
    """A database server reached over the network: where, as whom, and how Spark's JDBC reads reach it."""

    host: str
    port: int
    user: str
    password: SecretStr
    connect_timeout: int = Field(10, ge=1, description="seconds a connection attempt waits")
    jdbc_url: str | None = Field(None, description="JDBC URL of Spark's reads (default: built from host and port)")
    jdbc_options: dict[str, str] = Field(default_factory=dict, description="more options of Spark's JDBC reads")
    snapshot: SnapshotOptions = Field(default_factory=SnapshotOptions)
