"""``cdclake status``: per table its state, position, rows, lag and the pipeline's last run."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cdclake.engine.lake import is_delta_table, read_delta

if TYPE_CHECKING:
    from cdclake.engine.context import PipelineContext


def table_status(ctx: PipelineContext) -> list[dict[str, Any]]:
    """One dict per table of the pipeline (none before its first run)."""
    if not ctx.control.exists():
        return []
    states = ctx.control.table_states()
    runs = ctx.control.last_runs(1)
    last_run = runs[0] if runs else None
    out = []
    now = time.time()
    for table in sorted(states):
        s = states[table]
        path = ctx.layout.target(table)
        rows = None
        if is_delta_table(ctx.spark, path):
            df = read_delta(ctx.spark, path)
            if ctx.targets.soft:
                df = df.where("NOT `__deleted`")
            rows = df.count()
        as_of = s.detail.get("as_of")
        out.append({
            "source_table": table,
            "delta_path": path,
            "state": s.status,
            "position": ctx.position(s.position).describe() if s.position else None,
            "position_ordinal": str(s.ordinal),
            "window_id": s.window_id,
            "rows": rows,
            "lag_s": round(now - as_of, 3) if as_of else None,
            "last_run": None if last_run is None else {
                "run_id": last_run.run_id, "command": last_run.command, "status": last_run.status,
                "ended_at": last_run.ended_at.isoformat() if last_run.ended_at else None,
            },
        })
    return out
