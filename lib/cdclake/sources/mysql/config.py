"""The ``source:`` block of a MySQL or MariaDB pipeline file."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from cdclake.spi.config import SourceConfigBase, StrictModel


class SnapshotOptions(StrictModel):
    partitions: int = Field(4, ge=1, description="JDBC partitions (parallel key-range reads) per table")
    fetch_size: int = Field(10_000, ge=1)
    min_rows_per_partition: int = Field(50_000, ge=1, description="small tables are read in one query")


class MySqlSourceConfig(SourceConfigBase):
    """A MySQL or MariaDB server (binlog)."""

    type: Literal["mysql", "mariadb"]
    host: str
    port: int = 3306
    user: str
    password: SecretStr
    server_id: int = Field(ge=1, lt=2**32)
    position_mode: Literal["file", "gtid"] = "file"
    split_server_id_base: int | None = Field(
        None, ge=1, lt=2**32 - 1000, description="server ids of the replication connections Spark tasks open to "
        "decode a window's splits: this id plus the split's index (default: server_id + 1,000,000); keep the range "
        "clear of every replica's and other pipelines' server_id")
    connect_timeout: int = Field(10, ge=1)
    jdbc_options: dict[str, str] = Field(default_factory=dict)
    snapshot: SnapshotOptions = Field(default_factory=SnapshotOptions)
