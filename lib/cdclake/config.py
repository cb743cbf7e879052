"""Pipeline configuration: one YAML file per pipeline, validated on load.

``${VAR}`` anywhere in a value is replaced from the environment, or from the secrets file named by
``secrets_file`` / ``$CDCLAKE_SECRETS_FILE`` (``KEY=VALUE`` lines). Secrets never sit in the file
and are never logged (:meth:`PipelineConfig.redacted`).

>>> import os
>>> os.environ["DOC_PW"] = "s3cret"
>>> cfg = load_config_text('''
... pipeline: shop
... source: {type: mariadb, host: 127.0.0.1, port: 3306, user: cdc, password: "${DOC_PW}", server_id: 5401}
... lake: {root: /tmp/lake}
... ''')
>>> cfg.source.password.get_secret_value()
's3cret'
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from cdclake.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SnapshotOptions(_Strict):
    partitions: int = Field(4, ge=1, description="JDBC partitions (parallel key-range reads) per table")
    fetch_size: int = Field(10_000, ge=1)
    min_rows_per_partition: int = Field(50_000, ge=1, description="small tables are read in one query")


class _CapturedTables(_Strict):
    include_tables: list[str] = Field(default_factory=lambda: [".*"])
    exclude_tables: list[str] = Field(default_factory=list)

    @field_validator("include_tables", "exclude_tables")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"invalid regex {p!r}: {exc}") from exc
        return patterns

    def captures(self, qualified: str) -> bool:
        """Anchored include/exclude matching on ``database.table`` (Oracle: ``OWNER.TABLE``).

        >>> SourceConfig(type="mysql", host="h", user="u", password="p", server_id=1,
        ...              include_tables=[r"shop\\..*"], exclude_tables=[r"shop\\.tmp_.*"]).captures("shop.tmp_x")
        False
        """
        if not any(re.fullmatch(p, qualified) for p in self.include_tables):
            return False
        return not any(re.fullmatch(p, qualified) for p in self.exclude_tables)


class SourceConfig(_CapturedTables):
    """A MySQL or MariaDB server (binlog)."""

    type: Literal["mysql", "mariadb"]
    host: str
    port: int = 3306
    user: str
    password: SecretStr
    server_id: int = Field(ge=1, lt=2**32)
    position_mode: Literal["file", "gtid"] = "file"
    connect_timeout: int = Field(10, ge=1)
    jdbc_options: dict[str, str] = Field(default_factory=dict)
    snapshot: SnapshotOptions = Field(default_factory=SnapshotOptions)


# Snapshots pass it as 'false' to the Oracle JDBC driver (ORA-01882 otherwise): checklist item 27.
TIMEZONE_AS_REGION = "oracle.jdbc.timezoneAsRegion"


class OracleMiningOptions(_Strict):
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


class OracleSnapshotOptions(_Strict):
    partitions: int = Field(4, ge=1, description="parallel JDBC reads (ROWID or key ranges) per table")
    fetch_size: int = Field(10_000, ge=1)
    min_rows_per_partition: int = Field(50_000, ge=1)
    lock_mode: Literal["shared", "none"] = "shared"
    retries: int = Field(2, ge=0, description="re-reads of a failed chunk at the same SCN")


class OracleExportOptions(_Strict):
    path: str = Field(description="file or directory of exported V$LOGMNR_CONTENTS rows")
    format: Literal["csv", "parquet"] = "parquet"
    ddl_file: str | None = Field(None, description="CREATE TABLE statements (for tables without DDL rows)")


class OracleSourceConfig(_CapturedTables):
    """An Oracle database (LogMiner), or exported LogMiner rows (``mode: export``)."""

    type: Literal["oracle"]
    mode: Literal["live", "export"] = "live"
    dsn: str | None = Field(None, description="EZConnect or TNS descriptor; else host/port/service_name")
    host: str | None = None
    port: int = 1521
    service_name: str | None = None
    user: str | None = None
    password: SecretStr | None = None
    pdb: str | None = Field(None, description="PDB of the captured tables (CDB only; LogMiner runs in the root)")
    snapshot_dsn: str | None = Field(None, description="connect string of the PDB for snapshots (CDB)")
    connect_timeout: int = Field(10, ge=1)
    jdbc_options: dict[str, str] = Field(default_factory=dict)
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


class LakeConfig(_Strict):
    root: str
    delete_mode: Literal["hard", "soft"] = "hard"
    history_tables: bool = Field(False, description="also keep an SCD type 2 history table per target")
    table_properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("root")
    @classmethod
    def _root_absolute(cls, root: str) -> str:
        if "://" not in root and not root.startswith("/"):
            raise ValueError("must be an absolute path or a Hadoop-FS URI (s3a://, abfss://, hdfs://)")
        return root.rstrip("/")


class MiningOptions(_Strict):
    max_events: int | None = Field(None, ge=1, description="default for 'mine --max-events'")
    flush_rows: int = Field(100_000, ge=100, description="committed rows buffered before a staging flush")
    spill_rows: int = Field(200_000, ge=100, description="rows of one open transaction kept in memory")
    skip_unparsable_ddl: bool = False
    unparsable_rows: Literal["fail", "dead_letter"] = Field(
        "fail", description="a change that does not decode: stop the run, or record it and go on")
    transaction_retention_s: int | None = Field(
        None, ge=1, description="abandon (record, report, skip) transactions open longer than this; unset = never")


class ExpectationOptions(_Strict):
    """One data-quality expectation declared for a table (``tables.<t>.expectations[i]``).

    ``type`` is a Great Expectations 1.x expectation in snake_case and ``kwargs`` its arguments, e.g.
    ``{type: expect_column_values_to_be_between, kwargs: {column: balance, min_value: 0}}``; both are
    checked against Great Expectations when a run starts (:func:`cdclake.engine.quality.check_declared`).
    """

    type: str = Field(pattern=r"^expect_[a-z0-9_]+$",
                      description="Great Expectations expectation name, snake_case (expect_...)")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="the expectation's arguments")
    on_failure: Literal["fail", "warn"] | None = Field(None, description="overrides quality.on_failure")


class TableOptions(_Strict):
    key_columns: list[str] | None = None
    expectations: list[ExpectationOptions] = Field(
        default_factory=list, description="data-quality expectations checked after each apply (quality:)")


class QualityOptions(_Strict):
    """Data-quality gates (Great Expectations 1.x, the ``quality`` extra) after each apply."""

    enabled: bool = Field(False, description="check every apply's changed rows (needs great-expectations)")
    on_failure: Literal["fail", "warn"] = Field(
        "warn", description="fail: the run fails and the window is not checkpointed | warn: record and go on")
    keys: bool = Field(True, description="generated: key columns not null and unique (across the whole table)")
    types: bool = Field(True, description="generated: each column has the Delta type its source type maps to")
    not_null: bool = Field(True, description="generated: source NOT NULL columns hold no null")
    after_snapshot: bool = Field(True, description="also check each snapshotted table as a whole")
    after_backfill: bool = Field(True, description="also check a backfill's rows (its key range; a rebuild: all)")
    unexpected_sample: int = Field(5, ge=0, le=50, description="unexpected values kept per failed expectation")


class SparkConfig(_Strict):
    master: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)


class AirflowOptions(_Strict):
    """How ``airflow_dags/`` schedules this pipeline (read by the DAG factory, not by the jobs)."""

    schedule: str | None = Field("*/15 * * * *", description="mining DAG: cron or preset; null = manual only")
    snapshot_schedule: Literal["@once"] | None = Field(
        "@once", description="snapshot DAG: '@once' (first run when the DAG appears) or null (manual only)")
    maintenance_schedule: str | None = Field("@daily", description="maintenance DAG; null = manual only")
    start_date: date = date(2024, 1, 1)
    owner: str = "cdclake"
    tags: list[str] = Field(default_factory=list)
    retries: int = Field(3, ge=0, description="mining task retries (with exponential back-off)")
    retry_delay_s: int = Field(60, ge=1)
    max_retry_delay_s: int = Field(1800, ge=1)
    timeout_s: int | None = Field(None, ge=1, description="a run taking longer fails (and is retried)")
    spark_conn_id: str = Field("spark_default", description="Airflow connection of type spark: the master")
    jobs_dir: str | None = Field(None, description="folder of cdclake's jobs/*.py on the Airflow worker; "
                                                    "default: the jobs/ folder next to the installed package")
    py_files: str | None = Field(None, description="cdclake wheel or zip shipped to executors (--py-files)")
    jars: list[str] = Field(default_factory=list, description="jars for --jars; default: cdclake's jar cache")
    env_vars: dict[str, str] = Field(default_factory=dict, description="environment of spark-submit")
    config_path: str | None = Field(None, description="this file's path as the Spark driver sees it; "
                                                       "default: the path the DAG factory read")


class MaintenanceOptions(_Strict):
    """What ``cdclake maintain`` (the maintenance DAG) does."""

    optimize: bool = Field(True, description="OPTIMIZE (compact) each target table")
    vacuum_retain_hours: int = Field(168, ge=0, description="VACUUM targets and bronze, keeping this much time "
                                                            "travel; below 168 needs Delta's retention check off")
    bronze_retention_days: int | None = Field(None, ge=1, description="delete bronze windows older than this "
                                                                       "(null: keep the whole change log)")
    control_retention_days: int = Field(30, ge=1, description="run log, transactions and dead letters kept")


class PipelineConfig(_Strict):
    pipeline: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
    source: SourceConfig | OracleSourceConfig = Field(discriminator="type")
    lake: LakeConfig
    mining: MiningOptions = Field(default_factory=MiningOptions)
    tables: dict[str, TableOptions] = Field(default_factory=dict)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    airflow: AirflowOptions = Field(default_factory=AirflowOptions)
    maintenance: MaintenanceOptions = Field(default_factory=MaintenanceOptions)
    quality: QualityOptions = Field(default_factory=QualityOptions)
    secrets_file: str | None = None

    @model_validator(mode="after")
    def _table_overrides_are_captured(self) -> PipelineConfig:
        for name in self.tables:
            if not self.source.captures(name):
                raise ValueError(f"tables.{name}: table is not selected by source.include_tables/exclude_tables")
        return self

    @property
    def pipeline_root(self) -> str:
        return f"{self.lake.root}/{self.pipeline}"

    def redacted(self) -> dict[str, Any]:
        """The configuration as a dict with secrets masked, safe to log."""
        return self.model_dump(mode="json")


def _read_secrets_file(path: str) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(
            f"cannot read secrets file {path}: {exc.strerror}", "fix 'secrets_file' or $CDCLAKE_SECRETS_FILE"
        ) from exc
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip("'\"")
    return values


def _substitute(node: Any, lookup: dict[str, str], path: str) -> Any:
    if isinstance(node, dict):
        return {k: _substitute(v, lookup, f"{path}.{k}" if path else str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, lookup, f"{path}[{i}]") for i, v in enumerate(node)]
    if isinstance(node, str):
        def repl(match: re.Match[str]) -> str:
            var = match.group(1)
            if var in os.environ:
                return os.environ[var]
            if var in lookup:
                return lookup[var]
            raise ConfigError(
                f"{path}: secret/variable ${{{var}}} is not set",
                f"export {var}=... in the environment, or put {var}=... in the secrets file",
            )

        return _VAR.sub(repl, node)
    return node


def load_config_text(text: str, origin: str = "<config>", resolve_secrets: bool = True) -> PipelineConfig:
    """Parse and validate a pipeline file's text.

    ``resolve_secrets=False`` leaves every ``${VAR}`` as it is written (for readers that never
    connect, such as the Airflow DAG factory, which must not need the secrets at parse time).
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{origin} is not valid YAML: {exc}", "fix the YAML syntax") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin} must be a YAML mapping with keys pipeline, source, lake")
    if resolve_secrets:
        secrets_path = raw.get("secrets_file") or os.environ.get("CDCLAKE_SECRETS_FILE")
        lookup = _read_secrets_file(secrets_path) if secrets_path else {}
        raw = _substitute(raw, lookup, "")
    try:
        return PipelineConfig.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = list(err["loc"])
            if len(loc) > 1 and loc[0] == "source" and loc[1] in ("mysql", "mariadb", "oracle"):
                del loc[1]  # the discriminator's tag, not a key of the file
            if err["type"] in ("union_tag_invalid", "union_tag_not_found") and loc == ["source"]:
                loc = ["source", "type"]
            key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "(top level)"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            lines.append(f"{key}: {msg}")
        raise ConfigError(
            f"invalid configuration in {origin}: " + "; ".join(lines),
            "correct the key(s) named above (see conf/example-pipeline.yaml for every option)",
        ) from None


def load_config(path: str | os.PathLike[str], resolve_secrets: bool = True) -> PipelineConfig:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(
            f"cannot read pipeline file {p}: {exc.strerror}", "pass an existing file to --config"
        ) from exc
    return load_config_text(text, str(p), resolve_secrets)
