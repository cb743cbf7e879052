"""The ``source:`` block of a Db2 pipeline file (names follow Debezium's where one exists)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from cdclake.kit import ServerConfig, SnapshotOptions
from cdclake.spi.config import StrictModel

_SCHEMA = re.compile(r"[A-Za-z_][A-Za-z0-9_@#$]{0,127}")


#: JDBC isolation levels of the snapshot's reads (IBM JCC ``defaultIsolationLevel``): Db2's CS, RS, RR
ISOLATION_LEVELS = {"cs": 2, "rs": 4, "rr": 8}


class Db2SnapshotOptions(SnapshotOptions):
    isolation: Literal["cs", "rs", "rr"] = Field(
        "cs", description="isolation of the reads: cursor stability (committed rows; with currently committed "
        "semantics, no wait on writers), read stability or repeatable read (rows read stay locked until their "
        "read ends). Uncommitted read is not offered: a row read uncommitted and rolled back would stay")
    lock_mode: Literal["none", "share"] = Field(
        "none", description="share: LOCK TABLE ... IN SHARE MODE on each table before the position is taken, "
        "held until its rows are written (writers wait, readers do not; no DDL can change it meanwhile)")
    lock_timeout: int = Field(10, ge=-1, description="seconds a lock waits (SET CURRENT LOCK TIMEOUT; -1: "
                              "without limit, 0: not at all)")


class Db2MiningOptions(StrictModel):
    max_rows_per_read: int = Field(
        250_000, ge=1, description="CD rows one Spark task reads at most: a table's window is split by commit "
        "sequence into reads of about this many rows (per the table's count in the window)")
    max_reads_per_table: int = Field(64, ge=1)


class Db2SourceConfig(ServerConfig):
    """A Db2 LUW database whose tables ASN Capture (SQL Replication) writes into change-data tables."""

    type: Literal["db2"]
    port: int = 50000
    database: str
    control_schema: str = Field("ASNCDC", description="schema of the Capture control tables (ASNCDC, or ASN)")
    jdbc_driver: str = "com.ibm.db2.jcc.DB2Driver"
    snapshot: Db2SnapshotOptions = Field(default_factory=Db2SnapshotOptions)
    mining: Db2MiningOptions = Field(default_factory=Db2MiningOptions)

    @field_validator("control_schema")
    @classmethod
    def _plain_schema(cls, value: str) -> str:
        if not _SCHEMA.fullmatch(value):
            raise ValueError(f"control_schema {value!r} is not an ordinary Db2 identifier")
        return value.upper()

    def dsn(self) -> str:
        """The CLI connection string (without credentials)."""
        return (f"DATABASE={self.database};HOSTNAME={self.host};PORT={self.port};PROTOCOL=TCPIP;"
                f"CONNECTTIMEOUT={self.connect_timeout};")

    def spark_jdbc_url(self) -> str:
        return self.jdbc_url or f"jdbc:db2://{self.host}:{self.port}/{self.database}"
