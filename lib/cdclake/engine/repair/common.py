"""What the repairs share: the backfill record that makes each resumable, and the checks before one starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdclake.engine.states import BACKFILL_APPLIED, PARKED, SNAPSHOTTING, STREAMING, TableState, check_backfill_step
from cdclake.errors import CdcError, command, table_regex

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext
    from cdclake.schema import TableSchema
    from cdclake.spi import SnapshotStart


@dataclass
class Backfill:
    """One backfill's record: its steps are ``backfill`` rows of the checkpoints table
    (:data:`~cdclake.engine.states.BACKFILL_STEPS`); ``status`` None until its first is recorded."""

    backfill_id: str
    table: str
    status: str | None
    detail: dict[str, Any]

    @property
    def where(self) -> str | None:
        return self.detail.get("where")

    @property
    def position(self) -> dict[str, Any]:
        return self.detail["position"]

    def record(self, ctx: PipelineContext, status: str, **changes: Any) -> None:
        check_backfill_step(self.backfill_id, self.table, self.status, status)
        self.status = status
        self.detail.update(changes)
        ctx.control.record_backfill(self.backfill_id, self.table, status, self.detail)


def unfinished(ctx: PipelineContext, table: str, **match: Any) -> Backfill | None:
    """The newest backfill of ``table`` whose detail has ``match`` that a kill left unfinished."""
    for backfill_id, status, detail in ctx.control.backfills(table):
        if status != BACKFILL_APPLIED and all(detail.get(k) == v for k, v in match.items()):
            return Backfill(backfill_id, table, status, detail)
    return None


def streaming_state(ctx: PipelineContext, table: str, verb: str,
                    states: dict[str, TableState] | None = None) -> TableState:
    """``table``'s state (from ``states`` if given); an error naming the remedy unless it streams
    (snapshotted, not dropped)."""
    state = (ctx.control.table_states() if states is None else states).get(table)
    if state is None or state.status != STREAMING:
        problem = (f"{table} is not a streaming table of pipeline {ctx.name} "
                   f"(state: {state.status if state else 'never snapshotted'})")
        if state is None or state.status == SNAPSHOTTING:
            # the mining DAG's 'mine --snapshot-missing' snapshots it on its schedule: a retry may pass
            raise CdcError(problem, f"snapshot it first ({command('snapshot', '--tables', table_regex(table))}, or "
                                    f"mine with --snapshot-missing), then run the same {verb} again")
        if state.status == PARKED:
            raise CdcError(problem, f"bring it back first with {command('backfill', '--table', table)} (a snapshot "
                                    f"of it alone), then run the same {verb} again", permanent=True)
        raise CdcError(problem, f"{verb} a table that streams ('cdclake status' lists them)", permanent=True)
    return state


def read_start(ctx: PipelineContext, table: str, then: str) -> tuple[TableSchema, SnapshotStart]:
    """A read position of the source for ``table`` and its schema there, checked to be the lake's:
    rows re-read with another schema than the lake's would not fit (a DDL mining has not applied yet)."""
    entry = ctx.control.latest_entries().get(table)
    ctx.tell_positions(ctx.control.table_states())
    start = ctx.source.snapshot.start([table])
    current = start.schemas[table]
    if entry is None or entry.schema is None or [(c.name, c.spark_type) for c in entry.schema.columns] != [
            (c.name, c.spark_type) for c in current.columns]:
        ctx.source.snapshot.end()
        raise CdcError(f"the source's definition of {table} differs from the lake's (a DDL mining has not "
                       "applied yet)", f"run 'cdclake mine' until the table is caught up, then run the same {then} "
                       "again")
    return entry.schema, start
