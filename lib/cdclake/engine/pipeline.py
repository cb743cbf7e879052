"""The public API: one pipeline and the verbs of the ``cdclake`` command line.

With a pipeline file whose source is reachable (``make demo`` runs the same against a throwaway server)::

    from cdclake import Pipeline

    pipeline = Pipeline.from_config("conf/pipelines/shop.yaml")
    pipeline.snapshot().tables             # ['shop.customers', 'shop.orders']
    report = pipeline.mine()               # one window, applied
    report.window_id, report.rows_by_table # (1, {'shop.orders': 120})
    [t["state"] for t in pipeline.status()]

Each verb is one module of the engine (:mod:`.snapshot`, :mod:`.mining`, :mod:`.repair`,
:mod:`.maintenance`, :mod:`.status`, :mod:`.report`) over one :class:`~.context.PipelineContext`;
``docs/architecture.md`` shows how they fit together.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdclake.engine.context import PipelineContext
from cdclake.engine.maintenance import MaintenanceReport, maintain
from cdclake.engine.mining import mine, nothing_to_mine, stop_on_parked
from cdclake.engine.repair.backfill import reread_marked, run_backfill
from cdclake.engine.repair.reconcile import DEFAULT_CHUNKS, DEFAULT_MAX_KEYS, ReconcileReport, reconcile
from cdclake.engine.runs import RunReport
from cdclake.engine.snapshot import snapshot
from cdclake.engine.status import table_status
from cdclake.errors import ConfigError
from cdclake.spi import SourceContext, create_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.config import PipelineConfig
    from cdclake.engine.control import ControlTables
    from cdclake.engine.lake import LakeLayout
    from cdclake.engine.target.targets import Targets
    from cdclake.schema import TableSchema
    from cdclake.spi import Source


class Pipeline:
    """One pipeline: a source, a lake and the runs between them."""

    def __init__(self, config: PipelineConfig, source: Source, spark: SparkSession) -> None:
        self.ctx = PipelineContext.create(config, source, spark)

    # What the pipeline works with (tools and tests read them); the context holds them.
    @property
    def config(self) -> PipelineConfig:
        return self.ctx.config

    @property
    def source(self) -> Source:
        return self.ctx.source

    @property
    def spark(self) -> SparkSession:
        return self.ctx.spark

    @property
    def layout(self) -> LakeLayout:
        return self.ctx.layout

    @property
    def control(self) -> ControlTables:
        return self.ctx.control

    @property
    def targets(self) -> Targets:
        return self.ctx.targets

    @classmethod
    def from_config(cls, config: PipelineConfig | str | os.PathLike[str], spark: SparkSession | None = None,
                    app_name: str | None = None) -> Pipeline:
        """The pipeline of a pipeline file (a path, or a loaded :class:`~cdclake.config.PipelineConfig`),
        with its registered source and a Spark session (``spark``, or one built from ``spark:`` of the file)."""
        from cdclake.config import load_config
        from cdclake.spark import MissingJarsError, build_spark

        if isinstance(config, (str, os.PathLike)):
            config = load_config(config)
        if spark is None:
            try:
                spark = build_spark(app_name or f"cdclake-{config.pipeline}", config.spark.master, config.spark.conf)
            except MissingJarsError as exc:
                raise ConfigError(exc.problem, exc.fix) from None
        source = create_source(config.source, SourceContext(config.pipeline, config.lake.root,
                                                            config.mining.skip_unparsable_ddl))
        return cls(config, source, spark)

    @staticmethod
    def context_without_spark(config: PipelineConfig | str | os.PathLike[str]) -> PipelineContext:
        """The context of a pipeline file with no Spark session, for what the lake view reads
        (:mod:`cdclake.engine.lakeview`): ``status`` and the idle check of ``mine``. Whatever needs Spark
        raises :class:`~cdclake.engine.lakeview.NotReadable`; then build the pipeline with :meth:`from_config`."""
        from cdclake.config import load_config

        if isinstance(config, (str, os.PathLike)):
            config = load_config(config)
        source = create_source(config.source, SourceContext(config.pipeline, config.lake.root,
                                                            config.mining.skip_unparsable_ddl))
        return PipelineContext.create(config, source, None)  # type: ignore[arg-type]

    def key_columns(self, schema: TableSchema) -> list[str]:
        return self.ctx.key_columns(schema)

    def snapshot(self, tables_regex: str | None = None, force: bool = False) -> RunReport:
        """Snapshot the selected tables that have no position yet; with ``force``, streaming ones too
        (their targets are replaced and their positions move to the new snapshot: the way out after
        the source lost the log a table's position needs)."""
        with self.ctx.runs.run("snapshot") as report:
            snapshot(self.ctx, report, tables_regex, force)
        return report

    def mine(self, max_events: int | None = None) -> RunReport:
        """Mine from the stored positions to the log end now (or ``max_events`` changes), applied, in one
        window or, when the planner cuts windows (a statement, a size), several: the report sums them up.
        A window an earlier run planned and did not finish (a kill, a failed data-quality gate) is finished
        first, with its own bounds; the run then goes on to the log end now (a source whose windows carry
        transactions across leaves that to the next run: ``report.note``). When every table already stands
        at the log end, nothing is written (``report.idle``)."""
        idle = nothing_to_mine(self.ctx)
        if idle is not None:
            return idle
        total: RunReport | None = None
        limit: dict[str, Any] | None = None
        while True:  # a window the planner cut short (a statement, its size) is followed by the next
            with self.ctx.runs.run("mine") as report:
                states = mine(self.ctx, report, max_events or self.config.mining.max_events, limit)
            reread_marked(self.ctx, states)  # rows a schema change did to what the log does not say: read again
            stop_on_parked(states)
            total = report if total is None else total.absorb(report)
            if report.resumed and total.windows == 1:
                # The resumed window ended where an earlier run planned it: what came since is next, where the
                # source tells exactly that nothing came (else an idle window would be written after every kill).
                if not self.ctx.source.log.windows_end_on_transaction_boundaries:
                    total.note = "changes committed after its end are mined by the next run"
                    return total
                if nothing_to_mine(self.ctx) is not None:
                    return total
                limit = None
                continue
            if report.short_of is None or report.start == report.end:
                return total
            limit = report.short_of

    def backfill(self, table: str | None, where: str | None = None, mode: str = "resnapshot",
                 from_window: int | None = None, windows: tuple[int, int] | None = None) -> RunReport:
        """Repair ``table`` beside mining (:func:`cdclake.engine.repair.backfill.run_backfill`)."""
        return run_backfill(self.ctx, table, where, mode, from_window, windows)

    def reconcile(self, tables: Sequence[str] | None = None, chunks: int = DEFAULT_CHUNKS,
                  max_keys: int = DEFAULT_MAX_KEYS, repair: bool = False, confirm: bool = True,
                  confirm_wait_s: float = 0.0) -> ReconcileReport:
        """Compare source and lake; ``repair`` backfills what differs (:mod:`cdclake.engine.repair.reconcile`)."""
        return reconcile(self.ctx, tables, chunks, max_keys, repair, confirm, confirm_wait_s)

    def maintain(self) -> tuple[RunReport, MaintenanceReport]:
        """Compaction, vacuum and retention (:mod:`cdclake.engine.maintenance`), under the pipeline lock."""
        with self.ctx.runs.run("maintain") as report:
            report.tables = sorted(self.control.table_states())
            targets = [self.layout.target(t) for t in report.tables]
            result = maintain(self.spark, self.layout, targets, self.config.maintenance, self.config.pipeline)
        return report, result

    def status(self) -> list[dict[str, Any]]:
        """Per table: state, position, rows, lag and the last run (:mod:`cdclake.engine.status`)."""
        return table_status(self.ctx)

    def report(self, out: str | os.PathLike[str] | None = None, runs: int = 50) -> Path:
        """Write the HTML run report (:mod:`cdclake.engine.report`); the path written."""
        from cdclake.engine.report import default_out, write_report

        return write_report(self.ctx, out or default_out(self.config.pipeline), runs)


__all__ = ["Pipeline", "RunReport"]
