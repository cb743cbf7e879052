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

import functools
import os
import re
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import Field, SecretStr, ValidationError, create_model, field_validator, model_validator

from cdclake.errors import ConfigError
from cdclake.spi.config import SourceConfigBase, StrictModel
from cdclake.spi.plugin import plugins, source_types

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")



# Delta reader features delta-rs 1.x (Polars, DuckDB, pandas) refuses; lake.table_features: compatible has none.
UNREADABLE_FEATURES = ("columnMapping", "typeWidening", "typeWidening-preview", "deletionVectors", "v2Checkpoint",
                       "vacuumProtocolCheck", "variantType", "variantType-preview", "variantShredding-preview")


def unreadable_properties(properties: dict[str, str]) -> list[str]:
    """The table properties that would give a table a reader feature delta-rs cannot read.

    >>> unreadable_properties({"delta.enableTypeWidening": "true", "delta.appendOnly": "true",
    ...                        "delta.feature.deletionVectors": "supported", "delta.columnMapping.mode": "none"})
    ['delta.enableTypeWidening', 'delta.feature.deletionVectors']
    """
    out = []
    for key, value in properties.items():
        k, v = key.lower(), str(value).strip().lower()
        if ((k == "delta.columnmapping.mode" and v != "none")
                or (k in ("delta.enabletypewidening", "delta.enabledeletionvectors") and v == "true")
                or (k == "delta.checkpointpolicy" and v != "classic")
                or (k == "delta.minreaderversion" and v != "1")
                or (k.startswith("delta.feature.") and k[len("delta.feature."):] in
                    {f.lower() for f in UNREADABLE_FEATURES})):
            out.append(key)
    return out


class LakeConfig(StrictModel):
    root: str
    delete_mode: Literal["hard", "soft"] = "hard"
    history_tables: bool = Field(False, description="also keep an SCD type 2 history table per target")
    table_features: Literal["compatible", "spark"] | None = Field(
        None, description="Delta features of the tables: compatible (every Delta reader opens them; a column "
                          "rename, drop or type change rewrites the table) | spark (column mapping and type "
                          "widening: metadata-only schema changes, Spark and Trino only); "
                          "unset: the lake's own mode, compatible for a new lake")
    table_properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("root")
    @classmethod
    def _root_absolute(cls, root: str) -> str:
        if "://" not in root and not root.startswith("/"):
            raise ValueError("must be an absolute path or a Hadoop-FS URI (s3a://, abfss://, hdfs://)")
        return root.rstrip("/")

    @model_validator(mode="after")
    def _compatible_properties(self) -> LakeConfig:
        bad = unreadable_properties(self.table_properties) if self.table_features == "compatible" else []
        if bad:
            raise ValueError(f"table_properties: {', '.join(bad)} would add a Delta reader feature that "
                             "delta-rs cannot read; remove it, or set lake.table_features: spark")
        return self


class MiningOptions(StrictModel):
    max_events: int | None = Field(None, ge=1, description="default for 'mine --max-events'")
    flush_rows: int = Field(100_000, ge=100, description="committed rows buffered before a staging flush")
    spill_rows: int = Field(200_000, ge=100, description="rows of one open transaction kept in memory")
    skip_unparsable_ddl: bool = False
    unparsable_rows: Literal["fail", "dead_letter"] = Field(
        "fail", description="a change that does not decode: stop the run, or record it and go on")
    transaction_retention_s: int | None = Field(
        None, ge=1, description="abandon (record, report, skip) transactions open longer than this; unset = never")
    decoder: Literal["auto", "executors", "driver"] = Field(
        "auto", description="where a window's log is decoded: 'auto' = in Spark tasks when the window holds at "
        "least parallel_min_bytes of log and the source can split it, else on the driver")
    parallel_min_bytes: int = Field(32 << 20, ge=0, description="smallest window (bytes of log) decoded in Spark tasks")
    window_bytes: int = Field(1 << 30, ge=1 << 20, description="most log bytes one window decoded in tasks holds")
    split_bytes: int | None = Field(
        None, ge=1 << 12, description="log bytes per Spark task; unset = the window over target_splits")
    target_splits: int = Field(8, ge=1, description="splits per window when split_bytes is unset")
    max_splits: int = Field(64, ge=1, le=1000, description="most splits (tasks, replication connections) per window")


class SchemaChangeOptions(StrictModel):
    reread: Literal["auto", "manual"] = Field(
        "auto", description="a change that leaves a table's rows different from what its log says (DROP/TRUNCATE/"
        "EXCHANGE PARTITION, a default per row, a lossy retype...): 'auto' = cdclake re-reads the table right after "
        "the mining run; 'manual' = the table is parked until an operator runs the backfill it names")


class ExpectationOptions(StrictModel):
    """One data-quality expectation declared for a table (``tables.<t>.expectations[i]``).

    ``type`` is a Great Expectations 1.x expectation in snake_case and ``kwargs`` its arguments, e.g.
    ``{type: expect_column_values_to_be_between, kwargs: {column: balance, min_value: 0}}``; both are
    checked against Great Expectations when a run starts (:func:`cdclake.engine.quality.check_declared`).
    """

    type: str = Field(pattern=r"^expect_[a-z0-9_]+$",
                      description="Great Expectations expectation name, snake_case (expect_...)")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="the expectation's arguments")
    on_failure: Literal["fail", "warn"] | None = Field(None, description="overrides quality.on_failure")


class MaskRule(StrictModel):
    """How one text column is masked (``tables.<t>.mask_columns.<column>``): exactly one of

    * ``hash`` — the salted hash (hex) of the value: ``sha256(salt + value)``; the same value gives
      the same hash in every table and on every path, so masked columns still join (``masking.salt``);
    * ``truncate`` — the first N characters;
    * ``text`` — a fixed text in place of every non-null value.

    NULL stays NULL.

    >>> MaskRule(hash="sha256").kind, MaskRule(truncate=4).kind
    ('hash', 'truncate')
    """

    hash: Literal["sha256", "sha512"] | None = Field(None, description="salted hash (hex) of the value")
    truncate: int | None = Field(None, ge=0, description="keep the first N characters")
    text: str | None = Field(None, description="replace every non-null value by this text")

    @model_validator(mode="after")
    def _exactly_one(self) -> MaskRule:
        if sum(v is not None for v in (self.hash, self.truncate, self.text)) != 1:
            raise ValueError("give exactly one of hash (sha256 | sha512), truncate (N characters), text")
        return self

    @property
    def kind(self) -> str:
        return "hash" if self.hash else "truncate" if self.truncate is not None else "text"


class TableOptions(StrictModel):
    key_columns: list[str] | None = None
    include_columns: list[str] | None = Field(
        None, description="land only these columns (the row key must be among them); new columns are left out")
    exclude_columns: list[str] = Field(
        default_factory=list, description="never read, land or log these columns")
    mask_columns: dict[str, MaskRule] = Field(
        default_factory=dict, description="text columns landed masked: {column: {hash|truncate|text: ...}}")
    expectations: list[ExpectationOptions] = Field(
        default_factory=list, description="data-quality expectations checked after each apply (quality:)")


class MaskingOptions(StrictModel):
    """Settings of ``tables.<t>.mask_columns``."""

    salt: SecretStr | None = Field(
        None, description="salt of hash masks; must be a ${VAR} (environment or secrets file), never a literal")


class QualityOptions(StrictModel):
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


class SparkConfig(StrictModel):
    master: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)


class AirflowOptions(StrictModel):
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


class MaintenanceOptions(StrictModel):
    """What ``cdclake maintain`` (the maintenance DAG) does."""

    optimize: bool = Field(True, description="OPTIMIZE (compact) each target table")
    vacuum_retain_hours: int = Field(168, ge=0, description="VACUUM targets and bronze, keeping this much time "
                                                            "travel; below 168 needs Delta's retention check off")
    bronze_retention_days: int | None = Field(None, ge=1, description="delete bronze windows older than this "
                                                                       "(null: keep the whole change log)")
    control_retention_days: int = Field(30, ge=1, description="run log, transactions and dead letters kept")


class PipelineConfig(StrictModel):
    pipeline: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
    source: SourceConfigBase  # validated by the registered source's model (:func:`pipeline_model`)
    lake: LakeConfig
    mining: MiningOptions = Field(default_factory=MiningOptions)
    schema_changes: SchemaChangeOptions = Field(default_factory=SchemaChangeOptions)
    tables: dict[str, TableOptions] = Field(default_factory=dict)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    airflow: AirflowOptions = Field(default_factory=AirflowOptions)
    maintenance: MaintenanceOptions = Field(default_factory=MaintenanceOptions)
    quality: QualityOptions = Field(default_factory=QualityOptions)
    masking: MaskingOptions = Field(default_factory=MaskingOptions)
    secrets_file: str | None = None

    @model_validator(mode="after")
    def _table_overrides_are_captured(self) -> PipelineConfig:
        for name, options in self.tables.items():
            if not self.source.captures(name):
                raise ValueError(f"tables.{name}: table is not selected by source.include_tables/exclude_tables")
            _check_column_rules(name, options)
            if any(r.hash for r in options.mask_columns.values()) and self.masking.salt is None:
                raise ValueError(f"tables.{name}.mask_columns: a hash mask needs masking.salt "
                                 "(e.g. masking: {salt: \"${CDCLAKE_MASK_SALT}\"}, the value in the environment)")
        return self

    @property
    def pipeline_root(self) -> str:
        return f"{self.lake.root}/{self.pipeline}"

    def redacted(self) -> dict[str, Any]:
        """The configuration as a dict with secrets masked, safe to log."""
        return self.model_dump(mode="json")


def _check_column_rules(table: str, options: TableOptions) -> None:
    if options.include_columns is not None and options.exclude_columns:
        raise ValueError(f"tables.{table}: give include_columns or exclude_columns, not both")
    excluded = {c.lower() for c in options.exclude_columns}
    included = None if options.include_columns is None else {c.lower() for c in options.include_columns}
    for column in options.mask_columns:
        if column.lower() in excluded or (included is not None and column.lower() not in included):
            raise ValueError(f"tables.{table}.mask_columns.{column}: the column is not landed "
                             "(exclude_columns/include_columns); drop the mask or land the column")
    for key in options.key_columns or []:
        if key.lower() in excluded or (included is not None and key.lower() not in included):
            raise ValueError(f"tables.{table}.key_columns: {key} is left out by include_columns/exclude_columns")


@functools.cache
def pipeline_model() -> type[PipelineConfig]:
    """:class:`PipelineConfig` whose ``source:`` is the union of every registered source's model,
    told apart by ``type`` (:mod:`cdclake.spi.plugin`)."""
    models = tuple(p.config_model for p in plugins())
    union = models[0] if len(models) == 1 else Annotated[Union[models], Field(discriminator="type")]  # noqa: UP007
    return create_model("PipelineConfig", __base__=PipelineConfig, source=(union, ...))


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
    salt = (raw.get("masking") or {}).get("salt") if isinstance(raw.get("masking"), dict) else None
    if salt is not None and not (isinstance(salt, str) and _VAR.fullmatch(salt.strip())):
        raise ConfigError(f"{origin}: masking.salt is written in the file; a salt is a secret",
                          'write masking: {salt: "${CDCLAKE_MASK_SALT}"} and export CDCLAKE_MASK_SALT=... '
                          "(or put it in the secrets file)")
    if resolve_secrets:
        secrets_path = raw.get("secrets_file") or os.environ.get("CDCLAKE_SECRETS_FILE")
        lookup = _read_secrets_file(secrets_path) if secrets_path else {}
        raw = _substitute(raw, lookup, "")
    try:
        return pipeline_model().model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = list(err["loc"])
            if len(loc) > 1 and loc[0] == "source" and loc[1] in source_types():
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
            "correct the key(s) named above (see conf/example-mysql.yaml for every option)",
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
