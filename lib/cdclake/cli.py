"""The ``cdclake`` command line (also reachable as ``spark-submit jobs/<verb>.py --config F``)."""

from __future__ import annotations

import json
import re
import shlex
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from cdclake.errors import ERROR_TAG, CdcError, SnapshotDeferredError

if TYPE_CHECKING:
    from cdclake.engine.pipeline import Pipeline


VERBS = ("snapshot", "mine", "status", "backfill", "reconcile", "report", "maintain")
_COMMAND = re.compile(r"\bcdclake (" + "|".join(VERBS) + r")\b(?: --config (?:<file>|'[^']*'|[^\s']+))?")


def complete_commands(text: str | None, config: str | None) -> str | None:
    """``text`` with ``--config <config>`` right after the verb of every ``cdclake <verb>`` it suggests: the
    engine's messages leave it out (they do not know the path), so that what is printed runs as printed.

    >>> complete_commands("run 'cdclake backfill --table shop.t' (see 'cdclake status')", "conf/shop.yaml")
    "run 'cdclake backfill --config conf/shop.yaml --table shop.t' (see 'cdclake status --config conf/shop.yaml')"
    >>> complete_commands("cdclake snapshot --config <file> --force", "/etc/shop.yaml")
    'cdclake snapshot --config /etc/shop.yaml --force'
    """
    if not text or not config:
        return text
    return _COMMAND.sub(lambda m: f"cdclake {m.group(1)} --config {shlex.quote(config)}", text)


def _run(debug: bool, action: Callable[[], Any], lag: Callable[[], dict[str, Any] | None] | None = None,
         config: str | None = None) -> Any:
    """Run a command; a :class:`CdcError` is printed as problem and fix (and, with ``lag``, how far the
    lake is behind the source, best effort) and exits 2. Commands the error suggests get ``--config config``."""
    try:
        return action()
    except CdcError as exc:
        if debug:
            traceback.print_exc()
        problem, fix = complete_commands(exc.problem, config), complete_commands(exc.fix, config)
        click.echo(f"error: {problem}", err=True)
        if fix:
            click.echo(f"  fix: {fix}", err=True)
        # One line for orchestrators: no secrets, the same words. The same JSON goes to the file
        # $CDCLAKE_ERROR_FILE names, when set: the Airflow operator (cdclake.dags) reads it from there.
        report = {"kind": type(exc).__name__, "permanent": exc.permanent, "problem": problem, "fix": fix}
        behind = _best_effort(lag)
        if behind is not None:
            click.echo(f"  lag: {behind['summary']}", err=True)
            report["lag"] = {k: behind.get(k) for k in ("lag_s", "lag_at_most_s", "pending_since", "distance",
                                                        "distance_unit", "summary")}
        click.echo(ERROR_TAG + json.dumps(report), err=True)
        import os  # only this error path needs it

        path = os.environ.get("CDCLAKE_ERROR_FILE")
        if path:
            try:
                with open(path, "w", encoding="utf-8") as out:
                    json.dump(report, out)
            except Exception as write_error:  # best effort: never hide the error reported above
                click.echo(f"(could not write the error report to {path}: {write_error})", err=True)
        sys.exit(2)


def _best_effort(lag: Callable[[], dict[str, Any] | None] | None) -> dict[str, Any] | None:
    """``lag()``, or None when it fails (the run's own error is what matters)."""
    if lag is None:
        return None
    try:
        return lag()
    except Exception:
        return None


def _pipeline(config: str) -> Pipeline:
    from cdclake.engine.pipeline import Pipeline

    return Pipeline.from_config(config)


@click.group()
@click.option("--debug", is_flag=True, help="show stack traces")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Change-data capture from operational databases into Delta Lake, as batch Spark jobs."""
    ctx.obj = {"debug": debug}


@cli.command()
@click.option("--config", "config", required=True, type=click.Path(), help="pipeline YAML file")
@click.option("--tables", default=None, help="anchored regex on 'database.table' to limit the snapshot")
@click.option("--force", is_flag=True, help="also re-snapshot tables that are streaming (replaces their targets "
                                            "and moves their positions: after the source lost needed logs)")
@click.pass_context
def snapshot(ctx: click.Context, config: str, tables: str | None, force: bool) -> None:
    """Initial snapshot of the captured tables; records where mining starts."""

    def go() -> None:
        from cdclake.progress import progress_bar

        pipeline = _pipeline(config)
        with progress_bar(pipeline.spark, "snapshot"):
            report = pipeline.snapshot(tables or None, force)
        if not report.tables:
            click.echo("nothing to snapshot: every selected table is already streaming (--force snapshots "
                       "streaming tables again)")
        for t in report.tables:
            click.echo(f"snapshot {t}: {report.rows_by_table.get(t, 0)} rows at {report.start}")
        click.echo(f"done in {report.duration_s:.1f}s")

    _run(ctx.obj["debug"], go, config=config)


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.option("--max-events", type=click.IntRange(min=1), default=None, help="stop after N row events")
@click.option("--snapshot-missing", is_flag=True,
              help="first snapshot captured tables that have no position yet (new in include_tables)")
@click.pass_context
def mine(ctx: click.Context, config: str, max_events: int | None, snapshot_missing: bool) -> None:
    """One bounded mining run: stored position → log end at start (or N events), applied."""

    made: list[Pipeline] = []

    def go() -> None:
        from cdclake.config import load_config
        from cdclake.engine.lakeview import NotReadable
        from cdclake.engine.mining import nothing_to_mine
        from cdclake.engine.pipeline import Pipeline

        loaded = load_config(config)
        try:  # without starting Spark: most runs of a pipeline scheduled often find nothing new
            idle = nothing_to_mine(Pipeline.context_without_spark(loaded), snapshot_missing)
        except NotReadable:
            idle = None
        if idle is not None:
            _echo_idle(idle)
            return
        pipeline = Pipeline.from_config(loaded)
        made.append(pipeline)
        if snapshot_missing:
            from cdclake.progress import progress_bar

            try:
                with progress_bar(pipeline.spark, "snapshot"):
                    s = pipeline.snapshot()
            except SnapshotDeferredError as exc:
                click.echo(f"warning: {exc.problem}; mining the other tables", err=True)
            else:
                for t in s.tables:
                    click.echo(f"snapshot {t}: {s.rows_by_table.get(t, 0)} rows at {s.start}")
        r = pipeline.mine(max_events)
        if r.idle:
            _echo_idle(r)
            return
        first = r.window_id - r.windows + 1  # a run's windows are consecutive
        windows = f"windows {first}-{r.window_id}" if r.windows > 1 else f"window {r.window_id}"
        click.echo(f"{windows}: {r.start} -> {r.end}, {r.events} events in {r.transactions} transactions, "
                   f"{r.duration_s:.1f}s")
        if r.resumed:
            click.echo(f"  window {first} was planned by an earlier run that stopped before its checkpoint: finished "
                       "with its bounds (from bronze, if it was mined already)"
                       + (", then mined on to the log end" if r.windows > 1 else "")
                       + (f"; {r.note}" if r.note else ""))
        for table, n in sorted(r.rows_by_table.items()):
            click.echo(f"  {table}: {n} changes")

    def lag() -> dict[str, Any] | None:  # what the lake lacks when the run fails (Airflow shows it)
        from cdclake.engine.status import lag_summary

        return lag_summary(made[0].ctx) if made else None

    _run(ctx.obj["debug"], go, lag, config)


def _echo_idle(report: Any) -> None:
    click.echo(f"nothing new: every table stands at the log end {report.end} (window {report.window_id}); "
               "nothing written")


def _window_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    first, _, last = text.partition("-")
    try:
        return int(first), int(last or first)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not N or FIRST-LAST", param_hint="--window") from None


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.option("--table", default=None, help="the captured table, 'database.table' (Oracle: 'OWNER.TABLE')")
@click.option("--where", default=None,
              help="resnapshot only: rows matching this SQL filter on the table's columns, valid in both the "
                   "source's SQL and Spark SQL, e.g. \"id BETWEEN 1 AND 999\"")
@click.option("--mode", type=click.Choice(["resnapshot", "rebuild", "remine"]), default="resnapshot",
              show_default=True,
              help="resnapshot: read the rows from the source again and merge them, while mining goes on; "
                   "rebuild: rebuild the target (and its history table) from the bronze change log; "
                   "remine: mine old windows into bronze again (needs --window, no --table)")
@click.option("--from-window", type=click.IntRange(min=1), default=None,
              help="rebuild only: start from the table as it stood before this window (default: its last snapshot)")
@click.option("--window", "window", default=None, help="remine only: window N or FIRST-LAST")
@click.pass_context
def backfill(ctx: click.Context, config: str, table: str | None, where: str | None, mode: str,
             from_window: int | None, window: str | None) -> None:
    """Repair a table from the source or from bronze, or re-mine old windows, without pausing mining.

    Run the same command again to resume one that was killed.
    """
    windows = _window_range(window)

    def go() -> None:
        from cdclake.progress import progress_bar

        pipeline = _pipeline(config)
        with progress_bar(pipeline.spark, f"backfill {table}" if table else f"backfill ({mode})"):
            r = pipeline.backfill(table or None, where or None, mode, from_window, windows)
        if mode == "resnapshot":
            click.echo(f"backfill {table}{f' ({where})' if where else ''}: {r.rows_by_table.get(table or '', 0)} "
                       f"source rows read at {r.start}, merged in {r.duration_s:.1f}s")
        elif mode == "rebuild":
            click.echo(f"rebuild {table}: from {r.start} through window {r.window_id}, "
                       f"{r.rows_by_table.get(table or '', 0)} rows, {r.duration_s:.1f}s")
        elif r.windows:
            click.echo(f"remine windows {r.start}..{r.end}: {r.windows} window(s) re-mined, {r.events} events in "
                       f"{r.transactions} transactions into bronze, {r.duration_s:.1f}s")
        else:
            click.echo(f"remine windows {r.start}..{r.end}: nothing to do")
        if r.note:
            click.echo(f"  {r.note}")

    _run(ctx.obj["debug"], go, config=config)


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.option("--table", "tables", multiple=True, help="a streaming table, 'database.table' (repeatable; "
                                                       "default: every streaming table)")
@click.option("--chunks", default=64, show_default=True, type=click.IntRange(min=1),
              help="key-range (or key-hash) chunks per table whose counts and checksums are compared")
@click.option("--max-keys", default=1000, show_default=True, type=click.IntRange(min=1),
              help="differing keys listed, confirmed and repaired per table (all are counted)")
@click.option("--repair", is_flag=True, help="backfill the differing keys from the source, then compare them again")
@click.option("--no-confirm", is_flag=True, help="skip the confirm pass that re-reads the differing keys")
@click.option("--confirm-wait", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="seconds to wait for a mining run to reach the source's read position before confirming")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def reconcile(ctx: click.Context, config: str, tables: tuple[str, ...], chunks: int, max_keys: int, repair: bool,
              no_confirm: bool, confirm_wait: float, as_json: bool) -> None:
    """Compare source and lake by key-range chunks and list the keys that differ; --repair backfills them.

    Exit status: 0 when every table is equal (or repaired), 1 when differences remain.
    """

    def go() -> bool:
        r = _pipeline(config).reconcile(list(tables) or None, chunks, max_keys, repair, not no_confirm, confirm_wait)
        if as_json:
            click.echo(json.dumps(r.to_dict(), indent=2, default=str))
        else:
            for t in r.tables:
                _echo_reconcile(t, config)
            left = [t.table for t in r.tables if not t.ok]
            click.echo(f"DIFFERENCES REMAIN in {', '.join(left)}" if left else
                       f"all {len(r.tables)} table(s) equal{' after repair' if repair else ''}")
        return r.ok

    if not _run(ctx.obj["debug"], go, config=config):
        sys.exit(1)


def _keys_text(keys: list[dict[str, Any]], total: int, shown: int = 10) -> str:
    text = ", ".join(str(next(iter(k.values()))) if len(k) == 1 else "(" + ", ".join(f"{c}={v}" for c, v in k.items())
                     + ")" for k in keys[:shown])
    return text + (f", ... ({total - min(shown, len(keys))} more)" if total > min(shown, len(keys)) else "")


def _echo_reconcile(t: Any, config: str) -> None:
    """Human output of one table's :class:`cdclake.engine.repair.reconcile.TableReconcile`."""
    click.echo(f"reconcile {t.table}: {t.chunks} chunks ({t.chunking}), {t.chunks_mismatched} mismatched; "
               f"source {t.source_rows} rows, lake {t.lake_rows} rows"
               f"{'' if t.confirmed or not t.differing else ' (not confirmed)'}")
    labels = {"only_in_source": "only in source (lost)", "only_in_lake": "only in lake (invented)",
              "different": "different (stale)"}
    for kind, label in labels.items():
        if t.counts[kind]:
            click.echo(f"  {label + ':':26} {t.counts[kind]:>8}  {_keys_text(t.keys[kind], t.counts[kind])}")
    if t.in_flight:
        n = len(t.in_flight)
        click.echo(f"  {'in flight (not judged):':26} {n:>8}  {_keys_text(t.in_flight, n)}")
    if t.repaired:
        left = sum((t.remaining or {}).values())
        click.echo("  repaired: every differing key backfilled and equal now" if not left else
                   f"  repaired, but {left} key(s) still differ: " + "; ".join(
                       f"{k} {_keys_text(v, len(v))}" for k, v in (t.remaining_keys or {}).items() if v))
    if t.note:
        click.echo(f"  note: {complete_commands(t.note, config)}")


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.pass_context
def maintain(ctx: click.Context, config: str) -> None:
    """OPTIMIZE/VACUUM the targets; retention of bronze and control tables ('maintenance:' in the file)."""

    def go() -> None:
        run, m = _pipeline(config).maintain()
        click.echo(f"optimized {len(m.optimized)} table(s), vacuumed {len(m.vacuumed)}")
        if m.bronze_windows_deleted_through is not None:
            click.echo(f"bronze: windows <= {m.bronze_windows_deleted_through} deleted")
        for table, n in sorted(m.deleted_rows.items()):
            click.echo(f"{table}: {n} row(s) past retention deleted")
        click.echo(f"done in {run.duration_s:.1f}s")

    _run(ctx.obj["debug"], go, config=config)


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def status(ctx: click.Context, config: str, as_json: bool) -> None:
    """Per table: source name, Delta location, stored position, rows, lag, last run; the pipeline's lag.

    ``lag_s`` is 0 when the lake holds every change the source committed to the table, else the age
    of the oldest committed change not yet applied; ``distance`` is how far the position is from
    the source's log end (docs/operations.md, "Lag")."""

    def go() -> None:
        from cdclake.engine.lakeview import NotReadable
        from cdclake.engine.pipeline import Pipeline
        from cdclake.engine.status import status_report

        try:  # the lake view answers without starting Spark where the lake allows it
            report = status_report(Pipeline.context_without_spark(config))
        except NotReadable:
            report = status_report(_pipeline(config).ctx)
        tables, overall = report["tables"], report["pipeline"]
        for entry in [overall.get("stopped"), overall.get("failing"), *[t.get("parked") for t in tables]]:
            for key in ("problem", "fix", "remedy"):
                if entry and entry.get(key):
                    entry[key] = complete_commands(entry[key], config)
        if as_json:
            click.echo(json.dumps({"pipeline": overall, "tables": tables}, indent=2, default=str))
            return
        _echo_status(tables, overall)

    _run(ctx.obj["debug"], go, config=config)


def _echo_status(tables: list[dict[str, Any]], overall: dict[str, Any]) -> None:
    """``status`` for people: a line per table, then the pipeline's runs, whether it is stopped (and the
    fix), and its lag."""
    click.echo(f"{'source_table':30} {'state':10} {'rows':>10} {'lag_s':>9} {'distance':>14}  {'last run':22}  "
               "position")
    for t in tables:
        click.echo(f"{t['source_table']:30} {t['state']:10} {t['rows'] if t['rows'] is not None else '-':>10} "
                   f"{_lag_text(t):>9} {_distance_text(t):>14}  {_run_text(t['last_run'], short=True):22}  "
                   f"{t['position']}")
        click.echo(f"{'':30} {t['delta_path']}")
        if t.get("row_key"):
            click.echo(f"{'':30} row key: {t['row_key']}")
        for source, delta in (t.get("renamed_columns") or {}).items():
            click.echo(f"{'':30} column {source!r} lands as {delta}")
        if t.get("covers"):
            click.echo(f"{'':30} covers: {', '.join(t['covers'])}")
        if t.get("parked"):
            click.echo(f"{'':30} parked since {t['parked']['parked_at']}: {t['parked']['parked_reason']}")
            click.echo(f"{'':30} fix: {t['parked']['remedy']}")
        if t["lag_s"] is None and t["lag_note"]:
            click.echo(f"{'':30} lag: {t['lag_note']}")
    last, mine = overall.get("last_run"), overall.get("last_mine")
    click.echo(f"last run: {_run_text(last)}")
    if mine is not None and mine["run_id"] != (last or {}).get("run_id"):
        click.echo(f"last mining run: {_run_text(mine)}")
    for key, headline in (("stopped", "STOPPED"), ("failing", "FAILING (the next run may pass)")):
        entry = overall.get(key)
        if entry is None:
            continue
        at = f" at window {entry['window_id']}" if entry.get("window_id") is not None else ""
        click.echo(f"pipeline {headline}: {entry['says']}{at} (since {entry['since']})")
        for line in (entry["problem"] or "").splitlines():
            click.echo(f"  {line}")
        if entry.get("fix"):
            click.echo(f"  fix: {entry['fix']}")
    from cdclake.engine.status import describe

    click.echo(f"pipeline lag: {describe(overall)}"
               + (f"; log end {overall['log_end']}" if overall.get("log_end") else ""))


def _run_text(run: dict[str, Any] | None, short: bool = False) -> str:
    """A run as ``status`` shows it: ``mine ok 2026-11-28 07:01:02Z (window 7, run ab12)``; ``short``: the
    outcome and the time.

    >>> _run_text({"run_id": "ab12", "command": "mine", "status": "ok", "window_id": 7,
    ...            "ended_at": "2026-11-28T07:01:02.123456Z"})
    'mine ok 2026-11-28 07:01:02Z (window 7, run ab12)'
    """
    if run is None:
        return "-" if short else "none yet"
    at = (run.get("ended_at") or "")[:19].replace("T", " ") + "Z"
    if short:
        return f"{run['status']} {at}"
    window = f"window {run['window_id']}, " if run.get("window_id") is not None else ""
    return f"{run['command']} {run['status']} {at} ({window}run {run['run_id']})"


def _lag_text(entry: dict[str, Any]) -> str:
    def num(value: float) -> str:
        return f"{value:.3f}".rstrip("0").rstrip(".")

    if entry["lag_s"] is not None:
        return num(entry["lag_s"])
    return f"<={num(entry['lag_at_most_s'])}" if entry.get("lag_at_most_s") is not None else "-"


def _distance_text(entry: dict[str, Any]) -> str:
    if entry.get("distance") is None:
        return "-"
    return f"{entry['distance']} {entry.get('distance_unit') or ''}".rstrip()


@cli.command()
@click.option("--config", "config", required=True, type=click.Path())
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="HTML file to write (default: cdclake-report-<pipeline>.html)")
@click.option("--runs", default=50, show_default=True, type=click.IntRange(min=1),
              help="how many recent runs the charts and the run list cover")
@click.pass_context
def report(ctx: click.Context, config: str, out: str | None, runs: int) -> None:
    """Self-contained HTML report: lag and throughput charts, positions, rows, quality, dead letters."""

    def go() -> None:
        click.echo(str(_pipeline(config).report(out, runs)))

    _run(ctx.obj["debug"], go, config=config)


@cli.command()
@click.option("--lake", default=None, type=click.Path(), help="lake root (default: ./demo-lake)")
@click.option("--rows", default=2000, type=click.IntRange(min=10), help="rows per sample table")
@click.pass_context
def demo(ctx: click.Context, lake: str | None, rows: int) -> None:
    """Throwaway MariaDB, sample schema, snapshot, workload with DDL, mining runs, results."""
    from cdclake.demo import run_demo

    _run(ctx.obj["debug"], lambda: run_demo(lake, rows))


def _add_source_commands() -> None:
    """Commands a source plug-in brings (:attr:`cdclake.spi.SourcePlugin.commands`), e.g. Oracle's ``redo-parse``."""
    from cdclake.spi import plugins

    for plugin in plugins():
        for command in plugin.commands():
            cli.add_command(command)


_add_source_commands()


def main() -> None:
    cli(prog_name="cdclake")


if __name__ == "__main__":
    main()
