"""Airflow 3 DAGs for cdclake pipelines: one set per pipeline file in a folder.

For every ``*.yaml`` pipeline file in the folder (default ``conf/pipelines/``, or
``$CDCLAKE_PIPELINES_DIR``), :func:`pipeline_dags` builds:

* ``cdclake_<pipeline>_snapshot`` — the initial snapshot (``airflow.snapshot_schedule``: ``@once``
  runs it when the DAG first appears; it can be triggered again by hand, e.g. with ``tables``);
* ``cdclake_<pipeline>_mine`` — one bounded mining run per schedule tick (``airflow.schedule``): one
  active run at a time, no catch-up pile-up, retries with exponential back-off. Tables without a
  position (new in ``include_tables``) are snapshotted first. An error an operator must fix (a gap
  in the source log, an invalid file, a failed preflight) fails the task at once, without retries,
  with cdclake's problem and fix as the failure message (and the lag: how far the lake is behind);
* ``cdclake_<pipeline>_backfill`` — manual, with typed params ``table``, ``where`` (a key-range
  filter), ``mode`` (resnapshot, rebuild, remine), ``from_window`` and ``window``
  (``cdclake backfill``);
* ``cdclake_<pipeline>_maintenance`` — OPTIMIZE/VACUUM of the targets and retention of bronze and
  control tables (``maintenance:`` in the pipeline file).

Every task is a :class:`CdcSparkSubmitOperator` (``SparkSubmitOperator`` running ``jobs/<verb>.py``
with the connection ``airflow.spark_conn_id`` and the pipeline's ``spark.conf``). Each target table
named literally in the pipeline file (``tables:`` keys, or an ``include_tables`` pattern without
wildcards) is an Airflow :class:`~airflow.sdk.Asset` that the snapshot and mining tasks update, and
so is the pipeline as a whole (``cdclake.<pipeline>``): downstream DAGs can be scheduled on them.
A failing job hands its error (problem, fix, permanent or not) to the task through a temporary file
named in ``$CDCLAKE_ERROR_FILE`` (see :class:`CdcSparkSubmitOperator`); the operator uses only the
Spark provider's public API.

The factory only reads the files (secrets stay unresolved): the scheduler needs neither Spark nor
database access nor secrets. A DAG file is two lines (``airflow_dags/cdclake_pipelines.py``)::

    from cdclake.dags import dags_from_folder
    globals().update(dags_from_folder())
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from airflow.exceptions import AirflowException
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Asset, Param
from airflow.sdk.exceptions import AirflowFailException

from cdclake.config import PipelineConfig, load_config
from cdclake.engine.lake import LakeLayout
from cdclake.spark import PROJECT_ROOT, cached_jars

PIPELINES_DIR_ENV = "CDCLAKE_PIPELINES_DIR"
DEFAULT_PIPELINES_DIR = PROJECT_ROOT / "conf" / "pipelines"
ERROR_FILE_ENV = "CDCLAKE_ERROR_FILE"  # where a failing cdclake command writes its error (cdclake.cli._run)
_WILDCARDS = re.compile(r"(?<!\\)[.*+?()\[\]{}|^$]")


class CdcSparkSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` for cdclake jobs: a failure carries cdclake's problem and fix, and an
    error no retry can cure (gap in the source log, invalid configuration, failed preflight, DDL that
    does not parse) fails the task without retrying.

    How the error gets here: for each try, :meth:`execute` creates an empty temporary file and names
    it in the environment variable ``CDCLAKE_ERROR_FILE`` of the task's process (Airflow 3 runs each
    try in a process of its own) while the provider's ``execute`` runs, restoring it afterwards.
    ``spark-submit`` inherits it and so does a driver that runs locally (``local``/client mode); a
    failing cdclake command writes its error there as JSON (the ``cdclake-error:`` line of its stderr,
    see :func:`cdclake.cli._run`). When the provider's ``execute`` fails, the report, if any, becomes
    the failure: :class:`~airflow.sdk.exceptions.AirflowFailException` when it is ``permanent``, else
    ``AirflowException`` (retried). A failed mining run adds how far the lake is behind the source
    (``-- lag: ...``: 0 when it holds every committed change, else the age of the oldest change not
    applied, as ``cdclake status`` reports it), when it could be told. Without a report (a driver in
    cluster mode, a crash before the report) the provider's exception stands; its tail of spark-submit's
    output went through the provider's ``key value`` masking, which replaces the word after any word
    containing "password" or "secret" by ``******`` (the task log above it has the lines as printed).
    The file is removed afterwards.

    Only the provider's public API is used (its constructor and ``execute``): neither the hook nor
    ``env_vars`` is touched (``env_vars`` would also be refused in standalone cluster mode, and is
    not the driver's environment in Kubernetes client mode).
    """

    def execute(self, context: Any) -> None:
        fd, report = tempfile.mkstemp(prefix="cdclake-error-", suffix=".json")
        os.close(fd)
        before = os.environ.get(ERROR_FILE_ENV)
        os.environ[ERROR_FILE_ENV] = report
        try:
            super().execute(context)
        except AirflowException:
            error = read_error_report(report)
            if error is None:
                raise
            message = f"cdclake: {error.get('problem')}" + (f" -- fix: {error['fix']}" if error.get("fix") else "")
            lag = error.get("lag")
            if isinstance(lag, dict) and lag.get("summary"):
                message += f" -- lag: {lag['summary']}"  # how far the lake is behind the source now
            # cdclake's own words stand alone: the hook's error (chained otherwise) ends with spark-submit's last
            # lines through its key=value masking (SparkSubmitHook._mask_cmd), which masks the word after any word
            # containing "password"/"secret": "source.password: ****** ${SHOP_CDC_PASSWORD} ****** not set".
            # Those lines are already in the task log, unmasked, line by line.
            if error.get("permanent"):
                raise AirflowFailException(message) from None
            raise AirflowException(message) from None
        finally:
            if before is None:
                os.environ.pop(ERROR_FILE_ENV, None)
            else:
                os.environ[ERROR_FILE_ENV] = before
            with contextlib.suppress(OSError):
                os.unlink(report)


def read_error_report(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The error a cdclake command wrote to ``path`` (``$CDCLAKE_ERROR_FILE``); None when there is none
    (no file, empty, not a JSON object)."""
    try:
        error = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return error if isinstance(error, dict) and error else None


def literal_tables(config: PipelineConfig) -> list[str]:
    """Tables the pipeline file names literally: ``tables:`` keys and wildcard-free include patterns.

    >>> from cdclake.config import load_config_text
    >>> cfg = load_config_text('''
    ... pipeline: shop
    ... source: {type: mariadb, host: h, user: u, password: "${PW}", server_id: 1,
    ...          include_tables: ['shop\\\\.orders', 'shop\\\\.item_.*']}
    ... lake: {root: /lake}
    ... ''', resolve_secrets=False)
    >>> literal_tables(cfg)
    ['shop.orders']
    """
    names = set(config.tables)
    for pattern in config.source.include_tables:
        if not _WILDCARDS.search(pattern):
            name = re.sub(r"\\(.)", r"\1", pattern)
            if config.source.captures(name):
                names.add(name)
    return sorted(names)


def _uri(path: str) -> str:
    return path if "://" in path else f"file://{path}"


def table_assets(config: PipelineConfig) -> list[Asset]:
    """The pipeline's Assets: one per literally named target table, and ``cdclake.<pipeline>``."""
    layout = LakeLayout(config.lake.root, config.pipeline)
    assets = [Asset(name=f"cdclake.{config.pipeline}", uri=_uri(layout.root), group="cdclake")]
    assets += [Asset(name=f"cdclake.{config.pipeline}.{table}", uri=_uri(layout.target(table)), group="cdclake")
               for table in literal_tables(config)]
    return assets


@dataclass(frozen=True)
class _Submit:
    """How the pipeline's jobs are submitted: jobs folder, config path, spark-submit settings."""

    jobs_dir: Path
    config_path: str
    settings: dict[str, Any]

    @classmethod
    def of(cls, config: PipelineConfig, config_path: Path) -> _Submit:
        af = config.airflow
        jars = af.jars or cached_jars()
        return cls(
            jobs_dir=Path(af.jobs_dir) if af.jobs_dir else PROJECT_ROOT / "jobs",
            config_path=af.config_path or str(config_path),
            settings={"conn_id": af.spark_conn_id, "conf": dict(config.spark.conf),
                      "jars": ",".join(jars) if jars else None, "py_files": af.py_files,
                      "env_vars": dict(af.env_vars) or None, "name": f"cdclake-{config.pipeline}"},
        )

    def task(self, verb: str, args: list[str], **extra: Any) -> CdcSparkSubmitOperator:
        """The task ``verb`` running ``jobs/<verb>.py --config <file> <args>``."""
        return CdcSparkSubmitOperator(task_id=verb, application=str(self.jobs_dir / f"{verb}.py"),
                                      application_args=["--config", self.config_path, *args],
                                      **self.settings, **extra)


def pipeline_dags(config_path: str | os.PathLike[str]) -> dict[str, DAG]:
    """The DAGs of one pipeline file, by DAG id."""
    path = Path(config_path).resolve()
    config = load_config(path, resolve_secrets=False)
    af = config.airflow
    submit = _Submit.of(config, path)
    name = config.pipeline
    start = datetime(af.start_date.year, af.start_date.month, af.start_date.day, tzinfo=timezone.utc)
    assets = table_assets(config)
    timeout = timedelta(seconds=af.timeout_s) if af.timeout_s else None
    dags: dict[str, DAG] = {}

    def add(verb: str, kind: str, description: str, schedule: str | None, doc: str, args: list[str],
            params: dict[str, Param] | None = None, **task: Any) -> None:
        """One DAG ``cdclake_<pipeline>_<kind>`` whose single task runs ``jobs/<verb>.py``."""
        with DAG(dag_id=f"cdclake_{name}_{kind}", description=f"cdclake {name}: {description}", schedule=schedule,
                 max_active_runs=1, params=params or {}, doc_md=doc.format(name=name, path=path),
                 start_date=start, catchup=False, tags=["cdclake", name, *af.tags],
                 default_args={"owner": af.owner}) as dag:
            submit.task(verb, args, execution_timeout=timeout, **task)
        dags[dag.dag_id] = dag

    add("snapshot", "snapshot", "initial snapshot (consistent read; records where mining starts)",
        af.snapshot_schedule, "Snapshot of pipeline `{name}` ({path}). Tables already streaming are left alone.",
        ["{{ '--tables' if params.tables else '' }}", "{{ params.tables }}"],
        {"tables": Param("", type="string", description="anchored regex on 'database.table' to limit the "
                                                         "snapshot; empty: every table without a position")},
        outlets=assets)
    add("mine", "mine", "one bounded mining window, applied to the Delta tables", af.schedule,
        "Mining run of pipeline `{name}` ({path}): stored position -> log end at start.",
        ["--snapshot-missing", "{{ '--max-events' if params.max_events else '' }}", "{{ params.max_events or '' }}"],
        {"max_events": Param(None, type=["null", "integer"], minimum=1,
                             description="stop the window after this many row changes")},
        outlets=assets, retries=af.retries, retry_delay=timedelta(seconds=af.retry_delay_s),
        retry_exponential_backoff=True, max_retry_delay=timedelta(seconds=af.max_retry_delay_s))
    tables = literal_tables(config)
    table_param = {"enum": tables} if tables else {"pattern": r"^[^.\s]+\.[^.\s]+$"}
    add("backfill", "backfill", "repair a table from the source or from bronze, or re-mine old windows", None,
        "Backfill of pipeline `{name}` ({path}): `resnapshot` re-reads a table or key range from the source (never "
        "overwrites a newer change, never resurrects a deleted row); `rebuild` rebuilds a table from the bronze "
        "change log; `remine` mines old windows into bronze again. A killed run is resumed by triggering the same "
        "params again.",
        ["{{ '--table' if params.mode != 'remine' else '' }}", "{{ params.table if params.mode != 'remine' else '' }}",
         "--mode", "{{ params.mode }}",
         "{{ '--where' if params.where else '' }}", "{{ params.where }}",
         "{{ '--from-window' if params.from_window else '' }}", "{{ params.from_window or '' }}",
         "{{ '--window' if params.window else '' }}", "{{ params.window }}"],
        {"table": Param(tables[0] if tables else "", type="string",
                        description="the captured table, 'database.table' (Oracle: 'OWNER.TABLE')", **table_param),
         "where": Param("", type="string", description="only rows matching this SQL filter on the table's "
                                                       "columns, e.g. id BETWEEN 1 AND 999; empty: the whole table"),
         "mode": Param("resnapshot", type="string", enum=["resnapshot", "rebuild", "remine"],
                       description="resnapshot: read the rows again and merge them at their position; rebuild: "
                                   "rebuild the table from bronze; remine: mine old windows into bronze again"),
         "from_window": Param(None, type=["null", "integer"], minimum=1,
                              description="rebuild: start from the table as it stood before this window "
                                          "(empty: from its last snapshot)"),
         "window": Param("", type="string", pattern=r"^(\d+(-\d+)?)?$",
                         description="remine: window N or FIRST-LAST")},
        outlets=assets)
    add("maintain", "maintenance", "OPTIMIZE/VACUUM of targets, retention of bronze and control tables",
        af.maintenance_schedule,
        "Maintenance of pipeline `{name}` ({path}); settings under `maintenance:` in the file.", [],
        retries=1, retry_delay=timedelta(minutes=10))
    return dags


def dags_from_folder(folder: str | os.PathLike[str] | None = None) -> dict[str, DAG]:
    """The DAGs of every ``*.yaml``/``*.yml`` pipeline file in ``folder`` (default
    ``$CDCLAKE_PIPELINES_DIR`` or ``conf/pipelines/``), by DAG id."""
    base = Path(folder or os.environ.get(PIPELINES_DIR_ENV) or DEFAULT_PIPELINES_DIR)
    files = sorted([*base.glob("*.yaml"), *base.glob("*.yml")])
    dags: dict[str, DAG] = {}
    owner: dict[str, Path] = {}
    for file in files:
        for dag_id, dag in pipeline_dags(file).items():
            if dag_id in dags:
                raise AirflowException(f"pipeline files {owner[dag_id]} and {file} both define DAG {dag_id}: "
                                       "give each pipeline a unique 'pipeline:' name")
            dags[dag_id], owner[dag_id] = dag, file
    return dags
