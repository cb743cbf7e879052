"""The ``source:`` block of an Oracle pipeline file (names follow Debezium's where one exists)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from cdclake.kit import ServerConfig, SnapshotOptions
from cdclake.spi.config import StrictModel

# Snapshots pass it as 'false' to the Oracle JDBC driver (ORA-01882 otherwise): checklist item 27.
TIMEZONE_AS_REGION = "oracle.jdbc.timezoneAsRegion"


class OracleMiningOptions(StrictModel):
    """LogMiner settings (names follow Debezium's ``log.mining.*`` where one exists)."""

    dictionary: Literal["online_catalog", "redo_log_catalog"] = "online_catalog"
    archive_log_only: bool = Field(False, description="mine archived logs only (no online redo)")
    archive_destination: str | None = Field(None, description="DEST_NAME of the archive destination to use")
    batch_size_min: int = Field(1_000, ge=1)
    batch_size_max: int = Field(100_000, ge=1)
    batch_size_default: int = Field(20_000, ge=1)
    batch_size_increment: int = Field(20_000, ge=1)
    gap_size_min: int = Field(1_000_000, ge=1, description="an SCN jump this large in little time is mined at once")
    gap_interval_ms: int = Field(20_000, ge=1)
    fetch_size: int = Field(10_000, ge=1, description="V$LOGMNR_CONTENTS rows per array fetch")
    lob: bool = Field(False, description="capture LOB writes (LOB_WRITE/TRIM/ERASE)")
    retries: int = Field(3, ge=0, description="reconnects after a lost connection, with backoff")
    retry_backoff_s: float = Field(1.0, ge=0)
    flush_table: str | None = Field("CDCLAKE_FLUSH", description="table whose update forces LGWR to flush redo")
    exclude_users: list[str] = Field(default_factory=list, description="users whose changes are not captured")

    @field_validator("dictionary", mode="before")
    @classmethod
    def _no_hybrid(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "hybrid":
            raise ValueError("'hybrid' (Debezium's online catalog with a schema-history fallback) is not supported; "
                             "use online_catalog or redo_log_catalog")
        return value

    @model_validator(mode="after")
    def _batch_sizes_ordered(self) -> OracleMiningOptions:
        if not self.batch_size_min <= self.batch_size_default <= self.batch_size_max:
            raise ValueError("batch_size_min <= batch_size_default <= batch_size_max must hold")
        return self

    @model_validator(mode="after")
    def _dictionary_and_flush_rules(self) -> OracleMiningOptions:
        if self.dictionary == "redo_log_catalog" and self.lob:
            raise ValueError("dictionary: redo_log_catalog cannot be combined with lob: true (LOB reassembly is only "
                             "supported with the online catalog); set lob: false or dictionary: online_catalog")
        if not self.flush_table and not self.archive_log_only:
            raise ValueError("flush_table: null would let mining read online redo that LGWR has not written yet "
                             "(and lose it); name a flush table, or set archive_log_only: true")
        return self


class OracleSnapshotOptions(SnapshotOptions):
    lock_mode: Literal["shared", "none"] = "shared"
    retries: int = Field(2, ge=0, description="re-reads of a failed chunk at the same SCN")


class OracleExportOptions(StrictModel):
    path: str = Field(description="file or directory of exported V$LOGMNR_CONTENTS rows")
    format: Literal["csv", "parquet"] = "parquet"
    ddl_file: str | None = Field(None, description="CREATE TABLE statements (for tables without DDL rows)")


class OracleSourceConfig(ServerConfig):
    """An Oracle database (LogMiner), or exported LogMiner rows (``mode: export``)."""

    type: Literal["oracle"]
    mode: Literal["live", "export"] = "live"
    dsn: str | None = Field(None, description="EZConnect or TNS descriptor; else host/port/service_name")
    host: str | None = None  # type: ignore[assignment]
    port: int = 1521
    service_name: str | None = None
    user: str | None = None  # type: ignore[assignment]  # (export mode needs none)
    password: SecretStr | None = None  # type: ignore[assignment]
    pdb: str | None = Field(None, description="PDB of the captured tables (CDB only; LogMiner runs in the root)")
    snapshot_dsn: str | None = Field(None, description="connect string of the PDB for snapshots (CDB)")
    mining: OracleMiningOptions = Field(default_factory=OracleMiningOptions)
    snapshot: OracleSnapshotOptions = Field(default_factory=OracleSnapshotOptions)
    export: OracleExportOptions | None = None

    @field_validator("jdbc_options")
    @classmethod
    def _timezone_as_offset(cls, options: dict[str, str]) -> dict[str, str]:
        value = options.get(TIMEZONE_AS_REGION)
        if value is not None and value.strip().lower() != "false":
            raise ValueError(f"{TIMEZONE_AS_REGION}: {value!r} would make the JDBC driver send the session time "
                             "zone as a region name, which fails with ORA-01882 (timezone region not found) when "
                             "the database's time zone file lacks it; cdclake sets it to 'false': remove the key")
        return options

    @model_validator(mode="after")
    def _mode_complete(self) -> OracleSourceConfig:
        if self.mode == "export":
            if self.export is None:
                raise ValueError("mode 'export' needs source.export.path (and format)")
        else:
            if not (self.dsn or (self.host and self.service_name)):
                raise ValueError("set source.dsn, or source.host and source.service_name")
            if not self.user or self.password is None:
                raise ValueError("set source.user and source.password (e.g. password: ${ORACLE_PASSWORD})")
        return self

    def connect_string(self) -> str:
        return self.dsn or f"{self.host}:{self.port}/{self.service_name}"
