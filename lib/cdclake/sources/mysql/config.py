"""The ``source:`` block of a MySQL or MariaDB pipeline file."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cdclake.kit import ServerConfig


class MySqlSourceConfig(ServerConfig):
    """A MySQL or MariaDB server (binlog)."""

    type: Literal["mysql", "mariadb"]
    port: int = 3306
    server_id: int = Field(ge=1, lt=2**32)
    position_mode: Literal["file", "gtid"] = "file"
    split_server_id_base: int | None = Field(
        None, ge=1, lt=2**32 - 1000, description="server ids of the replication connections Spark tasks open to "
        "decode a window's splits: this id plus the split's index (default: server_id + 1,000,000); keep the range "
        "clear of every replica's and other pipelines' server_id")
