"""Data-quality gates: Great Expectations 1.x suites checked on what each apply changed.

Enabled by ``quality.enabled`` (the ``quality`` extra: ``pip install 'cdclake[quality]'``). Each target
table gets a suite generated from its captured schema, plus the expectations the pipeline file declares
under ``tables.<table>.expectations``:

* ``quality.keys`` — every key column is not null, and the key is unique across the *whole* target:
  the keys an apply changed are joined back to the target (a changed key found twice is a broken
  table), so a billion-row target is scanned once on its key columns and never collected;
* ``quality.types`` — every column has the Delta type its source type maps to;
* ``quality.not_null`` — the source's NOT NULL columns hold no null.

What is checked: after a mining window, the target rows that window wrote (``__window_id``; soft-delete
tombstones are left out, except for key uniqueness); after a snapshot (``quality.after_snapshot``), the
whole table. Everything stays in Spark: Great Expectations' Spark engine computes its metrics as
aggregations and window functions, and only a few unexpected values per expectation reach the driver.

Results go to ``_cdclake/quality`` (:data:`QUALITY_DDL`): one row per table, window and expectation,
passed or not, with its severity (``fail`` or ``warn``: the expectation's ``on_failure``, else
``quality.on_failure``). A failed expectation of severity ``fail`` raises :class:`QualityGateError`
*before* the window's checkpoint: the data is merged, but the pipeline stops there and every re-run
checks the same rows again, until the data is repaired or the operator relaxes the expectation
(``docs/operations.md``). Results of a re-run are recorded only when they differ from those already
recorded for the window, so re-runs do not double them. A snapshot is different: it copies the
source as it is (a re-read would give the same rows), so its tables stream on and the run fails
after every table is written and checked.

Great Expectations is imported only here, inside the functions, so other commands never pay for it.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.engine.control import utcnow
from cdclake.engine.events import META_DELETED, META_WINDOW
from cdclake.engine.history import latest_per_table
from cdclake.engine.lake import (
    LakeLayout,
    ensure_table,
    idempotent_write,
    is_delta_table,
    local_frame,
    quote,
    read_delta,
    sql_str,
)
from cdclake.engine.names import lake_keys, source_name
from cdclake.errors import CdcError, ConfigError, command
from cdclake.schema import TableSchema

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.config import ExpectationOptions, PipelineConfig, QualityOptions
    from cdclake.engine.context import PipelineContext
    from cdclake.engine.runs import RunReport

log = logging.getLogger(__name__)

QUALITY_DDL = (
    "run_id STRING, window_id BIGINT, source_table STRING, expectation STRING, `column` STRING, success BOOLEAN, "
    "unexpected_count BIGINT, element_count BIGINT, observed STRING, severity STRING, checked_at TIMESTAMP"
)
FAIL, WARN = "fail", "warn"
CHANGED, KEYS = "changed", "keys"  # the frame an expectation runs on: changed rows, or target rows of changed keys
GENERATED = "generated"  # origin of expectations derived from the schema
OBSERVED_LIMIT = 500  # characters of the ``observed`` JSON
BROADCAST_KEYS = 1_000_000  # changed keys up to this many are broadcast to the join with the target
_ATTEMPTS_PER_WINDOW = 1000  # results txnVersion = window * 1000 + attempt
# Arguments every Great Expectations expectation has; not the ones a user declares.
_COMMON_FIELDS = {"id", "meta", "notes", "result_format", "description", "catch_exceptions", "rendered_content",
                  "severity", "windows", "batch_id"}
# Spark SQL type (first word) -> the pyspark.sql.types class Great Expectations compares with.
_SPARK_TYPE_CLASSES = {
    "TINYINT": "ByteType", "BYTE": "ByteType", "SMALLINT": "ShortType", "SHORT": "ShortType",
    "INT": "IntegerType", "INTEGER": "IntegerType", "BIGINT": "LongType", "LONG": "LongType",
    "FLOAT": "FloatType", "REAL": "FloatType", "DOUBLE": "DoubleType", "DECIMAL": "DecimalType",
    "DEC": "DecimalType", "NUMERIC": "DecimalType", "STRING": "StringType", "VARCHAR": "StringType",
    "CHAR": "StringType", "BOOLEAN": "BooleanType", "BINARY": "BinaryType", "DATE": "DateType",
    "TIMESTAMP": "TimestampType", "TIMESTAMP_LTZ": "TimestampType", "TIMESTAMP_NTZ": "TimestampNTZType",
    "ARRAY": "ArrayType", "MAP": "MapType", "STRUCT": "StructType", "VARIANT": "VariantType",
}


class QualityGateError(CdcError):
    """An expectation of severity ``fail`` did not hold: the run stops before the checkpoint."""

    permanent = True  # a retry checks the same rows again


@dataclass(frozen=True)
class ExpectationSpec:
    """One expectation of a table's suite, before it becomes a Great Expectations object.

    ``origin`` is ``generated`` or the pipeline-file key that declared it (``tables.<t>.expectations[i]``);
    ``scope`` the frame it runs on (:data:`CHANGED` rows, or target rows of changed :data:`KEYS`).
    """

    type: str
    kwargs: dict[str, Any]
    origin: str
    severity: str
    scope: str = CHANGED

    @property
    def column(self) -> str | None:
        """The column(s) the expectation is about, as recorded in the results (comma-separated)."""
        kw = self.kwargs
        if "column" in kw:
            return str(kw["column"])
        if "column_list" in kw:
            return ",".join(str(c) for c in kw["column_list"])
        if "column_A" in kw and "column_B" in kw:
            return f"{kw['column_A']},{kw['column_B']}"
        return None


@dataclass
class CheckResult:
    """The outcome of one expectation on one table (a row of ``_cdclake/quality``)."""

    source_table: str
    expectation: str
    column: str | None
    success: bool
    unexpected_count: int | None
    element_count: int | None
    observed: str
    severity: str
    origin: str
    sample: list[Any] = field(default_factory=list)

    def row(self, run_id: str, window_id: int | None, checked_at: Any) -> dict[str, Any]:
        return {
            "run_id": run_id, "window_id": window_id, "source_table": self.source_table,
            "expectation": self.expectation, "column": self.column, "success": self.success,
            "unexpected_count": self.unexpected_count, "element_count": self.element_count,
            "observed": self.observed, "severity": self.severity, "checked_at": checked_at,
        }

    def signature(self) -> tuple[Any, ...]:
        """What a re-run must reproduce for its results to count as already recorded."""
        return (self.source_table, self.expectation, self.column, self.success, self.unexpected_count,
                self.element_count, self.severity)


# ---- suites ----------------------------------------------------------------------------------------


def spark_type_class(spark_type: str) -> str | None:
    """The ``pyspark.sql.types`` class name of a Spark SQL type, as Great Expectations checks it.

    >>> spark_type_class("DECIMAL(10,2)"), spark_type_class("timestamp_ntz"), spark_type_class("INTERVAL DAY")
    ('DecimalType', 'TimestampNTZType', None)
    """
    word = re.match(r"\s*([A-Za-z_]+)", spark_type)
    return _SPARK_TYPE_CLASSES.get(word.group(1).upper()) if word else None


def generated_specs(schema: TableSchema, key_columns: list[str], options: QualityOptions,
                    has_key: bool = True) -> list[ExpectationSpec]:
    """The expectations the captured schema implies (``quality.keys/types/not_null``).

    ``has_key``: the key is a primary key or configured (``tables.<t>.key_columns``); a table without one
    is matched on all its columns, so its "key" may hold nulls and is unique by construction: no key checks.
    """
    severity = options.on_failure
    specs: list[ExpectationSpec] = []

    def add(kind: str, scope: str = CHANGED, **kwargs: Any) -> None:
        specs.append(ExpectationSpec(kind, kwargs, GENERATED, severity, scope))

    keys = [schema.column(k).name if schema.has_column(k) else k for k in key_columns]
    if options.keys and has_key and keys:
        for k in keys:
            add("expect_column_values_to_not_be_null", column=k)
        if len(keys) == 1:
            add("expect_column_values_to_be_unique", KEYS, column=keys[0])
        else:
            add("expect_compound_columns_to_be_unique", KEYS, column_list=keys)
    for c in schema.columns:
        if options.types and (cls := spark_type_class(c.spark_type)):
            add("expect_column_values_to_be_of_type", column=c.name, type_=cls)
        if options.not_null and not c.nullable and not (options.keys and has_key and c.name in keys):
            add("expect_column_values_to_not_be_null", column=c.name)
    return specs


def declared_specs(table: str, declared: list[ExpectationOptions], default_severity: str,
                   schema: TableSchema | None = None) -> list[ExpectationSpec]:
    """The pipeline file's ``tables.<table>.expectations``; with ``schema``, the columns they name are
    checked (and spelled as the table spells them)."""
    specs = []
    for i, exp in enumerate(declared):
        origin = f"tables.{table}.expectations[{i}]"
        kwargs = dict(exp.kwargs)
        if schema is not None:
            for key in ("column", "column_A", "column_B", "column_list"):
                if key in kwargs:
                    names = kwargs[key] if key == "column_list" else [kwargs[key]]
                    fixed = [_column_of(schema, n, origin, key) for n in names]
                    kwargs[key] = fixed if key == "column_list" else fixed[0]
        specs.append(ExpectationSpec(exp.type, kwargs, origin, exp.on_failure or default_severity))
    return specs


def _column_of(schema: TableSchema, name: Any, origin: str, key: str) -> str:
    if isinstance(name, str) and schema.has_column(name):
        return schema.column(name).name
    raise ConfigError(
        f"{origin}: kwargs.{key} names {name!r}, which is not a column of {schema.qualified_name} "
        f"(columns: {', '.join(schema.column_names)})",
        f"correct {origin}.kwargs.{key} in the pipeline file (or remove the expectation if the column was dropped)",
    )


def table_specs(config: PipelineConfig, schema: TableSchema, key_columns: list[str]) -> list[ExpectationSpec]:
    """A table's whole suite: generated from ``schema``, then declared in the pipeline file."""
    override = config.tables.get(schema.qualified_name)
    has_key = bool(key_columns)  # a primary, NOT NULL unique or configured key; none: a multiset
    declared = override.expectations if override else []
    return (generated_specs(schema, key_columns, config.quality, has_key)
            + declared_specs(schema.qualified_name, declared, config.quality.on_failure, schema))


def _gx() -> Any:
    """Great Expectations, imported quietly (no usage statistics), or a ConfigError saying how to install it."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    try:
        import great_expectations as gx
    except ImportError as exc:
        raise ConfigError(
            f"quality.enabled is true but Great Expectations 1.x cannot be imported ({exc})",
            "install it with pip install 'cdclake[quality]' (great-expectations>=1,<2), or set quality.enabled: false",
        ) from exc
    return gx


def to_expectation(spec: ExpectationSpec, index: int = 0) -> Any:
    """The Great Expectations object for ``spec``; an unknown type or bad kwargs is a ConfigError naming
    the pipeline-file key."""
    _gx()
    from great_expectations.exceptions import ExpectationNotFoundError
    from great_expectations.expectations.registry import (
        get_expectation_impl,
        list_registered_expectation_implementations,
    )

    try:
        impl = get_expectation_impl(spec.type)
    except ExpectationNotFoundError:
        close = difflib.get_close_matches(spec.type, list_registered_expectation_implementations(), n=3)
        raise ConfigError(
            f"{spec.origin}: Great Expectations has no expectation {spec.type!r}"
            + (f" (did you mean {', '.join(close)}?)" if close else ""),
            f"set {spec.origin}.type to a Great Expectations 1.x expectation in snake_case, "
            "e.g. expect_column_values_to_be_between (https://greatexpectations.io/expectations/)",
        ) from None
    try:
        return impl(**spec.kwargs, meta={"cdclake_index": index, "origin": spec.origin})
    except Exception as exc:  # pydantic's ValidationError, or the expectation's own checks
        errors = getattr(exc, "errors", None)
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'] if p != '__root__') or 'kwargs'}: {e['msg']}" for e in errors()
        ) if callable(errors) else str(exc)
        allowed = sorted(set(getattr(impl, "__fields__", {})) - _COMMON_FIELDS)
        raise ConfigError(
            f"{spec.origin}: invalid kwargs for {spec.type}: {detail}",
            f"correct {spec.origin}.kwargs in the pipeline file (arguments of {spec.type}: {', '.join(allowed)})",
        ) from None


def check_declared(config: PipelineConfig) -> None:
    """Fail before any data moves if a declared expectation is unknown or its kwargs are invalid
    (the columns they name are checked against each table's schema when its suite is built)."""
    if not config.quality.enabled:
        return
    for table, options in config.tables.items():
        for i, spec in enumerate(declared_specs(table, options.expectations, config.quality.on_failure)):
            to_expectation(spec, i)


# ---- validation ------------------------------------------------------------------------------------


def _context(gx: Any) -> Any:
    """An ephemeral, quiet Great Expectations context (no analytics, no progress bars)."""
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    try:
        context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    except Exception:  # cosmetics only
        log.debug("could not turn Great Expectations' progress bars off", exc_info=True)
    return context


def validate(spark: SparkSession, table: str, frames: dict[str, DataFrame], specs: list[ExpectationSpec],
             sample: int = 5) -> list[CheckResult]:
    """Run ``specs`` on ``frames`` (one per scope) with Great Expectations' Spark engine."""
    gx = _gx()
    context = _context(gx)
    source = context.data_sources.add_spark("cdclake", persist=False)  # the caller caches what it reuses
    results: list[CheckResult] = []
    for scope, frame in frames.items():
        chosen = [(i, s) for i, s in enumerate(specs) if s.scope == scope]
        if not chosen:
            continue
        suite = gx.ExpectationSuite(name=f"cdclake {table} {scope}",
                                    expectations=[to_expectation(s, i) for i, s in chosen])
        batch = (source.add_dataframe_asset(f"{table} {scope}").add_batch_definition_whole_dataframe(scope)
                 .get_batch(batch_parameters={"dataframe": frame}))
        outcome = batch.validate(suite, result_format={"result_format": "BASIC", "partial_unexpected_count": sample})
        for r in outcome.results:
            spec = specs[int((r.expectation_config.meta or {})["cdclake_index"])]
            results.append(_check_result(table, spec, r, sample))
    return results


def _check_result(table: str, spec: ExpectationSpec, r: Any, sample: int) -> CheckResult:
    result = dict(r.result or {})
    error = (r.exception_info or {}).get("exception_message") if r.exception_info else None
    values = list(result.get("partial_unexpected_list") or [])[:sample]
    observed: dict[str, Any] = {"origin": spec.origin}
    if error:
        observed["error"] = str(error)[:200]
    if "observed_value" in result:
        observed["observed_value"] = result["observed_value"]
    if result.get("unexpected_percent") is not None:
        observed["unexpected_percent"] = round(float(result["unexpected_percent"]), 4)
    if values:
        observed["sample"] = values
    return CheckResult(
        source_table=table, expectation=spec.type, column=spec.column, success=bool(r.success) and not error,
        unexpected_count=_int(result.get("unexpected_count")), element_count=_int(result.get("element_count")),
        observed=_short_json(observed), severity=spec.severity, origin=spec.origin, sample=values,
    )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _short_json(data: dict[str, Any]) -> str:
    """``data`` as JSON of at most :data:`OBSERVED_LIMIT` characters (sample values dropped first)."""
    text = json.dumps(data, default=str)
    while len(text) > OBSERVED_LIMIT and data.get("sample"):
        data = {**data, "sample": data["sample"][:-1]}
        text = json.dumps(data, default=str)
    if len(text) > OBSERVED_LIMIT and "observed_value" in data:
        data = {**data, "observed_value": str(data["observed_value"])[:200]}
        text = json.dumps(data, default=str)
    return text[:OBSERVED_LIMIT]


class QualityGate:
    """Checks target tables after an apply and records the results (``_cdclake/quality``)."""

    def __init__(self, spark: SparkSession, layout: LakeLayout, config: PipelineConfig,
                 key_columns: Callable[[TableSchema], list[str]], soft_deletes: bool,
                 lake_schema: Callable[[TableSchema], TableSchema] | None = None,
                 delta_schema: Callable[[TableSchema], TableSchema] | None = None) -> None:
        self.spark = spark
        self.layout = layout
        self.config = config
        self.key_columns = key_columns
        self.lake_schema = lake_schema or (lambda schema: schema)  # the columns the lake holds
        # ... under their Delta names (names.py); the gate reads them under their source names
        self.delta_schema = delta_schema or self.lake_schema
        self.soft = soft_deletes

    def _as_source(self, schema: TableSchema, keys: list[str]) -> tuple[list[SparkColumn], list[SparkColumn]]:
        """Select lists reading a target's columns, and its key columns, under their source names: what
        expectations, results and messages name."""
        from pyspark.sql import functions as F

        delta = self.delta_schema(schema)
        columns = [F.col(quote(c.name)).alias(source_name(c)) for c in delta.columns]
        key_columns = [F.col(quote(d)).alias(k) for k, d in zip(keys, lake_keys(delta, keys), strict=True)]
        return columns, key_columns

    def check_window(self, window_id: int, schemas: dict[str, TableSchema],
                     rows_by_table: dict[str, int]) -> list[CheckResult]:
        """Check the rows window ``window_id`` wrote to each table of ``schemas`` (their schemas after it)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        results: list[CheckResult] = []
        for table in sorted(schemas):
            schema = schemas[table]
            path = self.layout.target(table)
            if not is_delta_table(self.spark, path):
                continue
            keys = self.key_columns(schema)
            columns, key_columns = self._as_source(schema, keys)
            schema = self.lake_schema(schema)
            target = read_delta(self.spark, path)
            written = target.where(f"`{META_WINDOW}` = {int(window_id)}")
            changed = self._live(written).select(*columns)
            changed_keys = written.select(*key_columns).distinct()
            if rows_by_table.get(table, 0) <= BROADCAST_KEYS:
                changed_keys = F.broadcast(changed_keys)
            # Every target row of a changed key, deleted or not: a key held twice is a broken table.
            of_keys = target.select(*key_columns).join(changed_keys, keys, "left_semi")
            frames = {CHANGED: changed.persist(StorageLevel.MEMORY_AND_DISK),
                      KEYS: of_keys.persist(StorageLevel.MEMORY_AND_DISK)}
            try:
                results += validate(self.spark, table, frames, table_specs(self.config, schema, keys),
                                    self.config.quality.unexpected_sample)
            finally:
                for frame in frames.values():
                    frame.unpersist()
        return results

    def check_table(self, schema: TableSchema, where: str | None = None) -> list[CheckResult]:
        """Check a whole target table (after a snapshot or a rebuild), or its rows matching ``where``
        (after a key-range backfill); keys are checked unique across the whole table either way."""
        keys = self.key_columns(schema)
        columns, key_columns = self._as_source(schema, keys)
        schema = self.lake_schema(schema)
        target = read_delta(self.spark, self.layout.target(schema.qualified_name))
        rows = self._live(target).select(*columns)  # ``where`` names source columns
        frames = {CHANGED: rows if where is None else rows.where(where), KEYS: target.select(*key_columns)}
        return validate(self.spark, schema.qualified_name, frames, table_specs(self.config, schema, keys),
                        self.config.quality.unexpected_sample)

    def _live(self, frame: DataFrame) -> DataFrame:
        return frame.where(f"NOT `{META_DELETED}`") if self.soft else frame

    def record(self, run_id: str, window_id: int | None, results: list[CheckResult], resumed: bool = True) -> None:
        """Append ``results`` to ``_cdclake/quality``. For a window: one idempotent commit per attempt,
        skipped when the window's latest recorded attempt had the same outcome (a re-run after a kill);
        a window that is not ``resumed`` (planned by this run) has no earlier attempt to look for."""
        from pyspark.sql import functions as F

        if not results:
            return
        ensure_table(self.spark, self.layout.quality, QUALITY_DDL)
        now = utcnow()
        df = local_frame(self.spark, [r.row(run_id, window_id, now) for r in results], QUALITY_DDL)
        if window_id is None:
            df.write.format("delta").mode("append").save(self.layout.quality)
            return
        earlier = read_delta(self.spark, self.layout.quality).where(f"window_id = {int(window_id)}")
        attempts = earlier.groupBy("run_id").agg(F.max("checked_at").alias("checked_at")).collect() if resumed else []
        if attempts:
            last = max(attempts, key=lambda a: a.checked_at).run_id
            seen = {(r.source_table, r.expectation, r.column, r.success, r.unexpected_count, r.element_count,
                     r.severity) for r in earlier.where(f"run_id = '{sql_str(last)}'").collect()}
            if seen == {r.signature() for r in results}:
                return
        version = int(window_id) * _ATTEMPTS_PER_WINDOW + min(len(attempts), _ATTEMPTS_PER_WINDOW - 1)
        with idempotent_write(self.spark, f"cdclake:{self.config.pipeline}:quality", version):
            df.write.format("delta").mode("append").save(self.layout.quality)


def gate_failures(results: list[CheckResult]) -> list[CheckResult]:
    """Failed expectations of severity ``fail``."""
    return [r for r in results if not r.success and r.severity == FAIL]


def warn_failures(results: list[CheckResult], where: str) -> None:
    """Log failed expectations of severity ``warn`` (the run goes on)."""
    for r in results:
        if not r.success and r.severity == WARN:
            log.warning("data quality (%s): %s failed %s%s: %s", where, r.source_table, r.expectation,
                        f" on {r.column}" if r.column else "", r.observed)


_STATE_AFTER = {
    "window": "the changes are merged but the window is not checkpointed: every run checks them again",
    "snapshot": "the snapshot is written and the table streams on (a re-read gives the same rows)",
    "backfill": "the backfill is applied and recorded (running it again re-reads the same rows)",
}


def gate_error(failures: list[CheckResult], where: str, results_path: str, after: str = "window") -> QualityGateError:
    """The error of a failed gate: table, expectation, column, some unexpected values, and the way out."""
    lines = []
    for r in failures[:5]:
        what = (f"{r.unexpected_count} of {r.element_count} rows unexpected" if r.unexpected_count is not None
                else f"observed {r.observed}")
        shown = list(dict.fromkeys("null" if v is None else str(v) for v in r.sample))[:5]
        values = f", e.g. {', '.join(shown)}" if shown else ""
        lines.append(f"{r.source_table}: {r.expectation}{f' on column {r.column}' if r.column else ''} "
                     f"({r.origin}): {what}{values}")
    more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
    state = _STATE_AFTER[after]
    keys = sorted({r.origin if r.origin != GENERATED else "quality.on_failure" for r in failures})
    return QualityGateError(
        f"data-quality gate failed {where}: " + "; ".join(lines) + more + f". {state}; results: {results_path}",
        "if the source data is wrong, correct it at the source and re-read the rows ("
        + ", ".join(command("backfill", "--table", t) for t in sorted({r.source_table for r in failures}))
        + ", or a key range of it with --where); if the lake is wrong (a duplicate key), repair the table; to "
        "accept the data, set "
        + " or ".join(f"{k}.on_failure: warn" if k.startswith("tables.") else f"{k}: warn" for k in keys)
        + " (see docs/operations.md, 'Data-quality gates'); then run again",
    )


class QualityChecks:
    """When the gate runs in a pipeline's runs: declared expectations checked before any data moves,
    then what a window, a snapshot or a backfill wrote. Inert (Great Expectations never imported)
    while ``quality.enabled`` is off."""

    def __init__(self, ctx: PipelineContext) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.gate = (QualityGate(ctx.spark, ctx.layout, ctx.config, ctx.key_columns, ctx.targets.options.soft,
                                 ctx.columns.lake_schema, ctx.targets.options.lake_schema)
                     if ctx.config.quality.enabled else None)

    def check_config(self) -> None:
        """An unknown declared expectation or bad kwargs fails the run before any data moves."""
        if self.gate is not None:
            check_declared(self.config)

    def check_window(self, window_id: int, report: RunReport) -> None:
        """Check and record what the window changed; a failure of severity ``fail`` raises, so the window
        is not checkpointed and the next run checks it again (docs/operations.md)."""
        if self.gate is None:
            return
        latest = latest_per_table(self.ctx.control.history_through_window(window_id))
        schemas = {t: e.schema for t, e in latest.items() if t in report.rows_by_table and e.schema is not None}
        results = self.gate.check_window(window_id, schemas, report.rows_by_table)
        self.gate.record(report.run_id, window_id, results, report.resumed)
        report.phase("quality")
        warn_failures(results, f"window {window_id}")
        failed = gate_failures(results)
        if failed:
            raise gate_error(failed, f"in window {window_id}", self.ctx.layout.quality)

    def check_table(self, run_id: str, schema: TableSchema, where: str | None, label: str) -> list[CheckResult]:
        """Check and record a target table as a whole (after a snapshot or a rebuild), or its rows matching
        ``where`` (after a key-range backfill); returns the failures of severity ``fail``."""
        if self.gate is None:
            return []
        results = self.gate.check_table(schema, where)
        self.gate.record(run_id, None, results)
        warn_failures(results, label)
        return gate_failures(results)

    def check_backfill(self, report: RunReport, table: str, where: str | None) -> None:
        """A backfill's rows (``where``, or the whole table); a failure of severity ``fail`` raises."""
        if self.gate is None or not self.config.quality.after_backfill:
            return
        entry = self.ctx.control.latest_entries().get(table)
        if entry is None or entry.schema is None:
            return
        failed = self.check_table(report.run_id, entry.schema, where, "backfill")
        report.phase("quality")
        if failed:
            raise gate_error(failed, f"after the backfill of {table}", self.ctx.layout.quality, after="backfill")


__all__ = [
    "QUALITY_DDL", "CheckResult", "ExpectationSpec", "QualityChecks", "QualityGate", "QualityGateError",
    "check_declared", "declared_specs", "gate_error", "gate_failures", "generated_specs", "spark_type_class",
    "table_specs", "to_expectation", "validate", "warn_failures",
]
