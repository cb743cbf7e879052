"""``cdclake report``: one self-contained HTML page on a pipeline's health.

Everything is read from the control tables with small Spark aggregates (never a whole table to
the driver): the last ``N`` runs, per-table state/position/rows (:func:`~cdclake.engine.status.status_report`), the dead
letters per table and the newest few, transactions abandoned by a frame source (``transactions``
rows with status ``abandoned``), and, when those tables exist, the latest data-quality results
(``_cdclake/quality``) and reconcile results (``_cdclake/reconcile``).

The **lag now** (per table and for the pipeline: 0 when the lake holds every change the source
committed, else the age of the oldest committed change not yet applied) is the one ``cdclake status``
shows: the source is asked once, with a bounded read of its log. The report runs from the pipeline
file like every command, with the same source credentials, so it asks; it never writes to the
source, and when the source cannot be asked (unreachable, log purged) the page says why and shows
no lag rather than failing.

Charts, per table over the recent successful runs:

* **apply delay (s)** — run end minus the source commit time of the newest change of the table that
  the run applied (bronze ``commit_ts`` of the run's window): how old that change was when it landed.
  A run in which the table had no change has no point (the run log's ``lag_s``, when recorded, is
  used for windows whose bronze rows retention already deleted);
* **throughput (rows/s)** — rows the run captured for the table (``rows_by_table``: changes of a
  mining window, rows of a snapshot or backfill) divided by the run's duration; a mining run
  without a change of the table counts 0.

The page uses inline CSS and inline SVG only: no script, no font or style sheet from a network, so
it opens offline and can be mailed or attached to a ticket. Jinja2 autoescapes every value (table
names, errors, SQL and expectation text come from outside). No configuration secret is rendered.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from cdclake.engine.events import WINDOW_MARKER_OP
from cdclake.engine.inflight import ABANDONED
from cdclake.engine.lake import is_delta_table, read_delta
from cdclake.engine.status import describe, status_report

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.engine.context import PipelineContext

log = logging.getLogger(__name__)
DEFAULT_RUNS = 50
LATEST_ROWS = 10  # dead letters / abandoned transactions listed
TEXT_LIMIT = 500  # characters of an error, reason or SQL text shown
TS_FORMAT = "yyyy-MM-dd HH:mm:ss"


# ---- charts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One run on a chart: ``x`` (epoch seconds), ``y`` (None: no value), ``label`` (tooltip)."""

    x: float
    y: float | None
    label: str = ""


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (an axis maximum); 1 for ≤ 0.

    >>> nice_ceiling(0), nice_ceiling(7.3), nice_ceiling(0.31), nice_ceiling(1200)
    (1.0, 10.0, 0.5, 2000.0)
    """
    if not value > 0 or math.isinf(value):
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude * (1 + 1e-9):
            return float(step * magnitude)
    return float(10 * magnitude)  # pragma: no cover (the loop ends at 10)


def fmt_number(value: float | None) -> str:
    """A short human number: ``1234.5`` → ``1.23k``; ``None`` → ``-``."""
    if value is None:
        return "-"
    v = abs(value)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= limit:
            return f"{value / limit:.3g}{suffix}"
    if v >= 100 or v == 0:
        return f"{value:.0f}"
    return f"{value:.3g}"


def line_chart(points: Sequence[Point], title: str, unit: str, x_labels: tuple[str, str] = ("", ""),
               width: int = 420, height: int = 150) -> Markup:
    """An inline SVG line chart of ``points`` (sorted by x); ``None`` values break the line.

    The y axis starts at 0 and ends at a round value; every point has a native tooltip. Text is
    escaped here, so the result is safe to insert as markup.
    """
    left, right, top, bottom = 48, 10, 22, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [p.y for p in points if p.y is not None]
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="14" class="ct">{escape(title)}</text>',
    ]
    if not values:
        parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h / 2:.1f}" class="cn" '
                     'text-anchor="middle">no data in these runs</text></svg>')
        return Markup("".join(parts))
    y_max = nice_ceiling(max(values))
    xs = [p.x for p in points]
    x_min, x_max = min(xs), max(xs)

    def sx(x: float) -> float:
        return left + (plot_w / 2 if x_max == x_min else (x - x_min) / (x_max - x_min) * plot_w)

    def sy(y: float) -> float:
        return top + plot_h - (max(y, 0.0) / y_max) * plot_h

    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h - frac * plot_h
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" class="cg"/>')
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="ca" text-anchor="end">'
                     f"{escape(fmt_number(frac * y_max))}</text>")
    parts.append(f'<text x="{left}" y="{height - 6}" class="ca">{escape(x_labels[0])}</text>')
    parts.append(f'<text x="{left + plot_w}" y="{height - 6}" class="ca" text-anchor="end">'
                 f"{escape(x_labels[1])}</text>")
    segment: list[str] = []
    segments: list[list[str]] = [segment]
    for p in points:
        if p.y is None:
            segment = []
            segments.append(segment)
        else:
            segment.append(f"{sx(p.x):.1f},{sy(p.y):.1f}")
    for seg in segments:
        if len(seg) > 1:
            parts.append(f'<polyline points="{" ".join(seg)}" class="cl"/>')
    for p in points:
        if p.y is not None:
            tip = f"{p.label}: {fmt_number(p.y)} {unit}".strip()
            parts.append(f'<circle cx="{sx(p.x):.1f}" cy="{sy(p.y):.1f}" r="2.5" class="cp">'
                         f"<title>{escape(tip)}</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))


# ---- data -----------------------------------------------------------------------------------------


@dataclass
class ReportData:
    """What the page shows; every list is small (bounded by the runs asked for or ``LATEST_ROWS``)."""

    pipeline: str
    source_type: str
    lake_root: str
    generated_at: str
    runs_limit: int
    tables: list[dict[str, Any]] = field(default_factory=list)
    lag: dict[str, Any] = field(default_factory=dict)  # the pipeline's lag now (status_report's "pipeline")
    runs: list[dict[str, Any]] = field(default_factory=list)  # newest first
    series: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # per table, oldest first
    dead_letters: dict[str, int] = field(default_factory=dict)
    dead_letters_latest: list[dict[str, Any]] = field(default_factory=list)
    abandoned: dict[str, int] | None = None  # per table; None: no transactions table (not a frame source)
    abandoned_total: int = 0
    abandoned_latest: list[dict[str, Any]] = field(default_factory=list)
    quality: dict[str, dict[str, Any]] | None = None  # None: no quality table
    reconcile: dict[str, dict[str, Any]] | None = None  # None: no reconcile table
    notes: list[str] = field(default_factory=list)  # sections that could not be read, and why


def read_optional(spark: SparkSession, path: str | None) -> DataFrame | None:
    """The Delta table at ``path``, or None when there is none (or no path)."""
    if not path or not is_delta_table(spark, path):
        return None
    return read_delta(spark, path)


def _layout_path(layout: Any, name: str) -> str | None:
    """``layout.<name>`` if this version of :class:`LakeLayout` has it (quality, reconcile)."""
    return getattr(layout, name, None)


def _clip(text: Any, limit: int = TEXT_LIMIT) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _public_root(root: str) -> str:
    """The lake root without user information (``scheme://user:secret@host`` → ``scheme://host``)."""
    return re.sub(r"(//)[^/@]*@", r"\1", root)


def _runs(spark: SparkSession, path: str, limit: int) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F

    df = read_optional(spark, path)
    if df is None:
        return []
    rows = (
        df.orderBy(F.col("started_at").desc()).limit(limit).select(
            "run_id", "command", "window_id", "status", "duration_s", "events", "transactions", "rows_by_table",
            "lag_s", "start_position", "end_position",
            F.date_format("started_at", TS_FORMAT).alias("started"),
            F.col("started_at").cast("double").alias("started_epoch"),
            F.col("ended_at").cast("double").alias("ended_epoch"),
            F.substring("error", 1, TEXT_LIMIT + 1).alias("error"),
        ).collect()
    )
    out = []
    for r in rows:
        d = r.asDict()
        d["rows_by_table"] = dict(d["rows_by_table"] or {})
        d["error"] = _clip(d["error"])
        out.append(d)
    return out


def _newest_commits(spark: SparkSession, bronze: str, windows: set[int]) -> dict[tuple[int, str], float]:
    """``{(window, table): epoch of the newest source commit}`` over the bronze rows of ``windows``."""
    from pyspark.sql import functions as F

    df = read_optional(spark, bronze)
    if df is None or not windows:
        return {}
    rows = (
        df.where(F.col("window_id").isin(sorted(windows)) & (F.col("op") != WINDOW_MARKER_OP)
                 & F.col("commit_ts").isNotNull())
        .groupBy("window_id", "source_table").agg(F.max("commit_ts").cast("double").alias("newest"))
        .collect()
    )
    return {(int(r.window_id), r.source_table): float(r.newest) for r in rows}


def build_series(runs: list[dict[str, Any]], tables: Sequence[str],
                 newest: dict[tuple[int, str], float]) -> dict[str, list[dict[str, Any]]]:
    """Per table, oldest run first: ``{x, label, lag_s, rows_per_s}`` of each successful run.

    ``runs`` are run-log rows (``started_epoch``, ``ended_epoch``, ``duration_s``, ``rows_by_table``,
    ``command``, ``window_id``, ``lag_s``, ``status``); ``newest`` maps (window, table) to the epoch
    of the newest change applied (see the module docstring for what the values mean).
    """
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in tables}
    for run in sorted(runs, key=lambda r: r["started_epoch"] or 0.0):
        if run["status"] != "ok" or run["started_epoch"] is None:
            continue
        by_table = run["rows_by_table"] or {}
        duration = run["duration_s"] or 0.0
        for table in tables:
            lag = None
            if run["command"] == "mine" and run["window_id"] is not None and run["ended_epoch"] is not None:
                commit = newest.get((int(run["window_id"]), table))
                if commit is not None:
                    lag = max(run["ended_epoch"] - commit, 0.0)
                elif by_table.get(table) and run["lag_s"] is not None:
                    lag = float(run["lag_s"])
            if table in by_table:
                rate: float | None = by_table[table] / duration if duration > 0 else None
            else:
                rate = 0.0 if run["command"] == "mine" else None
            if lag is None and rate is None:
                continue
            out[table].append({"x": float(run["started_epoch"]), "label": f"{run['started']} {run['command']}",
                               "lag_s": lag, "rows_per_s": rate})
    return out


def _dead_letters(spark: SparkSession, path: str) -> tuple[dict[str, int], list[dict[str, Any]]]:
    from pyspark.sql import functions as F

    df = read_optional(spark, path)
    if df is None:
        return {}, []
    counts = {r.source_table: int(r["count"]) for r in df.groupBy("source_table").count().collect()}
    latest = [r.asDict() for r in df.orderBy(F.col("recorded_at").desc()).limit(LATEST_ROWS).select(
        "window_id", "source_table", "position", "op", F.substring("reason", 1, TEXT_LIMIT).alias("reason"),
        F.date_format("recorded_at", TS_FORMAT).alias("recorded_at"),
    ).collect()]
    return counts, latest


def _abandoned(spark: SparkSession, path: str) -> tuple[dict[str, int] | None, int, list[dict[str, Any]]]:
    from pyspark.sql import functions as F

    df = read_optional(spark, path)
    if df is None:
        return None, 0, []
    ab = df.where(F.col("status") == ABANDONED)
    total = ab.count()
    if total == 0:
        return {}, 0, []
    per_table = {r.t: int(r["count"]) for r in
                 ab.select(F.explode("tables").alias("t")).groupBy("t").count().collect()}
    latest = [r.asDict() for r in ab.orderBy(F.col("recorded_at").desc()).limit(LATEST_ROWS).select(
        "txid", "window_id", "first_position", F.date_format("first_ts", TS_FORMAT).alias("first_ts"), "rows",
        F.array_join("tables", ", ").alias("tables"), F.date_format("recorded_at", TS_FORMAT).alias("recorded_at"),
    ).collect()]
    return per_table, total, latest


def _quality(spark: SparkSession, path: str | None) -> dict[str, dict[str, Any]] | None:
    """Per table, the latest check (newest ``checked_at``; its run and window): counts and failures."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = read_optional(spark, path)
    if df is None:
        return None
    newest = Window.partitionBy("source_table").orderBy(F.col("checked_at").desc())
    keys = (df.withColumn("_rn", F.row_number().over(newest)).where("_rn = 1")
            .select(F.col("source_table").alias("_table"), F.col("run_id").alias("_run"),
                    F.col("window_id").alias("_window")))
    # Names unique to each side: no self-join ambiguity.
    latest = df.join(keys, F.expr("source_table = _table AND run_id <=> _run AND window_id <=> _window"),
                     "left_semi")
    out: dict[str, dict[str, Any]] = {}
    for r in latest.groupBy("source_table").agg(
            F.sum(F.when(F.col("success"), 1).otherwise(0)).alias("passed"),
            F.sum(F.when(F.col("success"), 0).otherwise(1)).alias("failed"),
            F.date_format(F.max("checked_at"), TS_FORMAT).alias("checked_at"),
            F.first("run_id").alias("run_id"), F.first("window_id").alias("window_id")).collect():
        out[r.source_table] = {**r.asDict(), "failures": []}
    failures = latest.where(~F.coalesce(F.col("success"), F.lit(False))).orderBy("source_table", "expectation").select(
        "source_table", F.substring("expectation", 1, TEXT_LIMIT).alias("expectation"), "column", "unexpected_count",
        "element_count", F.substring("observed", 1, TEXT_LIMIT).alias("observed"), "severity",
    ).limit(20 * max(len(out), 1)).collect()
    for r in failures:
        entry = out.get(r.source_table)
        if entry is not None and len(entry["failures"]) < 20:
            entry["failures"].append(r.asDict())
    return out


def _reconcile(spark: SparkSession, path: str | None) -> dict[str, dict[str, Any]] | None:
    """Per table, the newest reconcile result."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = read_optional(spark, path)
    if df is None:
        return None
    newest = Window.partitionBy("source_table").orderBy(F.col("checked_at").desc())
    rows = (df.withColumn("_rn", F.row_number().over(newest)).where("_rn = 1").drop("_rn")
            .withColumn("checked_at", F.date_format("checked_at", TS_FORMAT))
            .withColumn("sample_keys", F.substring(F.col("sample_keys").cast("string"), 1, TEXT_LIMIT))
            .collect())
    return {r.source_table: r.asDict() for r in rows}


def gather(ctx: PipelineContext, runs: int = DEFAULT_RUNS) -> ReportData:
    """Collect the report's aggregates (a handful of small Spark jobs)."""
    spark, layout = ctx.spark, ctx.layout
    data = ReportData(
        pipeline=ctx.name, source_type=ctx.config.source.type, lake_root=_public_root(ctx.config.lake.root),
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), runs_limit=runs,
    )
    status = status_report(ctx)
    data.tables, data.lag = status["tables"], status["pipeline"]
    data.runs = _runs(spark, layout.runs, runs)
    names = [t["source_table"] for t in data.tables]
    windows = {int(r["window_id"]) for r in data.runs
               if r["command"] == "mine" and r["status"] == "ok" and r["window_id"] is not None}
    data.series = build_series(data.runs, names, _newest_commits(spark, layout.bronze, windows))
    data.dead_letters, data.dead_letters_latest = _dead_letters(spark, layout.dead_letters)
    data.abandoned, data.abandoned_total, data.abandoned_latest = _abandoned(spark, layout.transactions)
    for name, reader in (("quality", _quality), ("reconcile", _reconcile)):
        try:  # written by other commands, possibly by a newer or older cdclake: never fail the report
            setattr(data, name, reader(spark, _layout_path(layout, name)))
        except Exception as exc:
            log.warning("report: cannot read the %s table: %s", name, exc)
            data.notes.append(f"the {name} table could not be read: {_clip(exc, 300)}")
    return data


# ---- page -----------------------------------------------------------------------------------------

_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cdclake report: {{ d.pipeline }}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}.meta{color:#5a6675}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #dde3ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f6f9}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.ok{color:#17773a}.bad{color:#b42318;font-weight:600}.warn{color:#9a6700}.empty{color:#5a6675;font-style:italic}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:14px 0}
.card{border:1px solid #dde3ea;border-radius:6px;padding:8px 14px;min-width:130px}
.card b{display:block;font-size:20px}.charts{display:flex;gap:16px;flex-wrap:wrap}
svg.chart{border:1px solid #eef1f4;border-radius:4px;background:#fcfdfe}
.ct{font-size:12px;font-weight:600;fill:#1d2430}.ca{font-size:10px;fill:#5a6675}.cn{font-size:12px;fill:#8a94a3}
.cg{stroke:#e4e8ee;stroke-width:1}.cl{fill:none;stroke:#2f6fb3;stroke-width:1.6}.cp{fill:#2f6fb3}
</style></head><body>
<h1>cdclake report: {{ d.pipeline }}</h1>
<div class="meta">source <b>{{ d.source_type }}</b> · lake <code>{{ d.lake_root }}</code> ·
generated {{ d.generated_at }} · last {{ d.runs_limit }} runs</div>
{% for note in d.notes %}<p class="warn">{{ note }}</p>{% endfor %}
{% set last = d.runs[0] if d.runs else none %}
<div class="cards">
<div class="card">tables<b>{{ d.tables|length }}</b></div>
<div class="card" title="{{ lag_text }}">lag now (s)<b class="{{ 'ok' if d.lag.get('lag_s') == 0 else 'warn' }}">
{{ lag_cell(d.lag) }}</b>{% if d.lag.get('lag_s') == 0 %}caught up{% elif behind(d.lag) %}{{ behind(d.lag) }} behind
{% endif %}</div>
<div class="card">last run<b class="{{ 'ok' if last and last.status == 'ok' else 'bad' }}">
{{ last.status if last else 'none' }}</b>{% if last %}{{ last.command }} {{ last.started }}{% endif %}</div>
<div class="card">dead letters<b class="{{ 'bad' if dead_total else 'ok' }}">{{ dead_total }}</b></div>
<div class="card">abandoned transactions<b class="{{ 'bad' if d.abandoned_total else 'ok' }}">
{{ d.abandoned_total }}</b></div>
<div class="card">failed quality checks<b class="{{ 'bad' if quality_failed else 'ok' }}">{{ quality_failed }}</b></div>
</div>

<h2 id="tables">Tables</h2>
{% if not d.tables %}<p class="empty">no table has a position yet: run <code>cdclake snapshot</code></p>{% else %}
<p class="meta">Lag now: {{ lag_text }}</p>
<table><tr><th>source table</th><th>state</th><th>rows</th><th>last position</th><th>lag now (s)</th><th>behind</th>
<th>dead letters</th><th>abandoned txns</th><th>quality (latest)</th><th>reconcile (latest)</th><th>Delta path</th></tr>
{% for t in d.tables %}{% set q = d.quality.get(t.source_table) if d.quality else none %}
{% set rc = d.reconcile.get(t.source_table) if d.reconcile else none %}
<tr><td><b>{{ t.source_table }}</b></td><td{% if t.get("parked") %} class="bad"{% endif %}>{{ t.state }}
{% if t.get("parked") %}<br><small>since {{ t.parked.parked_at }}: {{ t.parked.parked_reason }}<br>
fix: <code>{{ t.parked.remedy }}</code></small>{% endif %}</td>
<td class="n">{{ '{:,}'.format(t.rows) if t.rows is not none else '-' }}</td><td><code>{{ t.position }}</code></td>
<td class="n" title="{{ t.get('lag_note') or '' }}">{{ lag_cell(t) }}</td><td class="n">{{ behind(t) or '-' }}</td>
<td class="n {{ 'bad' if d.dead_letters.get(t.source_table) }}">{{ d.dead_letters.get(t.source_table, 0) }}</td>
<td class="n">{{ d.abandoned.get(t.source_table, 0) if d.abandoned is not none else '-' }}</td>
<td>{% if q %}<span class="{{ 'bad' if q.failed else 'ok' }}">{{ q.passed }} passed, {{ q.failed }} failed</span>
{% else %}-{% endif %}</td>
<td>{% if rc %}<span class="{{ 'bad' if rc.chunks_mismatched else 'ok' }}">{{ rc.chunks_mismatched }} of {{ rc.chunks }}
chunks differ</span>{% else %}-{% endif %}</td>
<td><code>{{ t.delta_path }}</code></td></tr>{% endfor %}</table>
{% endif %}

<h2 id="charts">Apply delay and throughput per table</h2>
<p class="meta">Over the last {{ d.runs_limit }} runs (successful ones). <b>Apply delay</b>: run end minus the source
commit time of the newest change of the table the run applied (how old it was when it landed; no point when the run
had no change of the table). The lag now is in the table above.
<b>Throughput</b>: the run's rows of the table (changes mined; rows of a snapshot or backfill) per second of the
run. Hover a point for its run.</p>
{% for t in d.tables %}<h3>{{ t.source_table }}</h3>
<div class="charts">{{ charts[t.source_table][0] }}{{ charts[t.source_table][1] }}</div>
{% endfor %}

<h2 id="quality">Data quality</h2>
{% if d.quality is none or not d.quality %}<p class="empty">no data-quality checks recorded</p>{% else %}
<table><tr><th>source table</th><th>checked at</th><th>run</th><th>window</th><th>passed</th><th>failed</th></tr>
{% for name, q in d.quality|dictsort %}<tr><td>{{ name }}</td><td>{{ q.checked_at }}</td><td>{{ q.run_id }}</td>
<td class="n">{{ q.window_id if q.window_id is not none else '-' }}</td><td class="n ok">{{ q.passed }}</td>
<td class="n {{ 'bad' if q.failed }}">{{ q.failed }}</td></tr>{% endfor %}</table>
{% for name, q in d.quality|dictsort %}{% if q.failures %}<h3>Failed expectations: {{ name }}</h3>
<table><tr><th>expectation</th><th>column</th><th>severity</th><th>unexpected</th><th>of</th><th>observed</th></tr>
{% for f in q.failures %}<tr><td><code>{{ f.expectation }}</code></td><td>{{ f.column or '' }}</td>
<td class="{{ 'bad' if f.severity in ('fail', 'error') else 'warn' }}">{{ f.severity }}</td>
<td class="n">{{ f.unexpected_count if f.unexpected_count is not none else '-' }}</td>
<td class="n">{{ f.element_count if f.element_count is not none else '-' }}</td>
<td><code>{{ f.observed or '' }}</code></td>
</tr>{% endfor %}</table>{% endif %}{% endfor %}
{% endif %}

<h2 id="reconcile">Reconcile</h2>
{% if not d.reconcile %}<p class="empty">no reconcile results recorded</p>{% else %}
<table><tr><th>source table</th><th>checked at</th><th>chunks</th><th>mismatched</th><th>source rows</th>
<th>lake rows</th><th>only in source</th><th>only in lake</th><th>different</th><th>repaired</th>
<th>sample keys</th></tr>
{% for name, r in d.reconcile|dictsort %}<tr><td>{{ name }}</td><td>{{ r.checked_at }}</td>
<td class="n">{{ r.chunks }}</td><td class="n {{ 'bad' if r.chunks_mismatched }}">{{ r.chunks_mismatched }}</td>
<td class="n">{{ r.source_rows }}</td><td class="n">{{ r.lake_rows }}</td><td class="n">{{ r.only_in_source }}</td>
<td class="n">{{ r.only_in_lake }}</td><td class="n">{{ r.different }}</td><td>{{ r.repaired }}</td>
<td><code>{{ r.sample_keys or '' }}</code></td></tr>{% endfor %}</table>
{% endif %}

<h2 id="dead-letters">Dead letters</h2>
{% if not dead_total %}<p class="empty">no dead letters</p>{% else %}
<table><tr><th>source table</th><th>dead letters</th></tr>
{% for name, n in d.dead_letters|dictsort %}<tr><td>{{ name }}</td><td class="n bad">{{ n }}</td></tr>{% endfor %}
</table><h3>Newest {{ d.dead_letters_latest|length }}</h3>
<table><tr><th>recorded at</th><th>source table</th><th>window</th><th>op</th><th>position</th><th>reason</th></tr>
{% for r in d.dead_letters_latest %}<tr><td>{{ r.recorded_at }}</td><td>{{ r.source_table }}</td>
<td class="n">{{ r.window_id }}</td><td>{{ r.op }}</td><td><code>{{ r.position }}</code></td><td>{{ r.reason }}</td>
</tr>{% endfor %}</table>
<p class="meta">Row images stay in the dead-letters table; they are not copied into this page.</p>{% endif %}

<h2 id="abandoned">Abandoned transactions</h2>
{% if d.abandoned is none %}<p class="empty">no abandoned transactions: this pipeline records none (only sources
that carry open transactions across windows abandon one past its retention)</p>
{% elif not d.abandoned_total %}<p class="empty">no abandoned transactions</p>{% else %}
<p><span class="bad">{{ d.abandoned_total }}</span> transaction(s) were open longer than the retention and were
discarded: their changes are not in the lake (backfill the tables named).</p>
<table><tr><th>recorded at</th><th>txid</th><th>window</th><th>first position</th><th>first change</th><th>rows</th>
<th>tables</th></tr>
{% for r in d.abandoned_latest %}<tr><td>{{ r.recorded_at }}</td><td><code>{{ r.txid }}</code></td>
<td class="n">{{ r.window_id }}</td><td><code>{{ r.first_position }}</code></td><td>{{ r.first_ts }}</td>
<td class="n">{{ r.rows }}</td><td>{{ r.tables }}</td></tr>{% endfor %}</table>{% endif %}

<h2 id="runs">Recent runs</h2>
{% if not d.runs %}<p class="empty">no run recorded</p>{% else %}
<table><tr><th>started (UTC)</th><th>command</th><th>status</th><th>window</th><th>duration (s)</th><th>events</th>
<th>transactions</th><th>from → to</th><th>error</th></tr>
{% for r in d.runs %}<tr><td>{{ r.started }}</td><td>{{ r.command }}</td>
<td class="{{ 'ok' if r.status == 'ok' else 'bad' }}">{{ r.status }}</td>
<td class="n">{{ r.window_id if r.window_id is not none else '' }}</td><td class="n">{{ fmt(r.duration_s) }}</td>
<td class="n">{{ r.events if r.events is not none else '' }}</td>
<td class="n">{{ r.transactions if r.transactions is not none else '' }}</td>
<td><code>{{ r.start_position or '' }}</code> → <code>{{ r.end_position or '' }}</code></td>
<td>{{ r.error or '' }}</td></tr>{% endfor %}</table>{% endif %}
</body></html>
"""


def lag_cell(entry: dict[str, Any]) -> str:
    """A lag entry's ``lag_s`` for a cell: ``12.3``, ``≤ 45`` (a bound) or ``-`` (unknown)."""
    if entry.get("lag_s") is not None:
        return fmt_number(entry["lag_s"])
    if entry.get("lag_at_most_s") is not None:
        return f"≤ {fmt_number(entry['lag_at_most_s'])}"
    return "-"


def behind(entry: dict[str, Any]) -> str:
    """How far the position is from the source's log end (``1.2k bytes``), or ''."""
    if entry.get("distance") is None:
        return ""
    return f"{fmt_number(entry['distance'])} {entry.get('distance_unit') or ''}".rstrip()


def _time_label(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%m-%d %H:%M")


def table_charts(series: list[dict[str, Any]]) -> tuple[Markup, Markup]:
    """The apply-delay and throughput charts of one table's series (:func:`build_series`)."""
    xs = [s["x"] for s in series]
    labels = (_time_label(min(xs)), _time_label(max(xs))) if xs else ("", "")
    lag = line_chart([Point(s["x"], s["lag_s"], s["label"]) for s in series], "apply delay (s)", "s", labels)
    rate = line_chart([Point(s["x"], s["rows_per_s"], s["label"]) for s in series], "throughput (rows/s)",
                      "rows/s", labels)
    return lag, rate


def render(data: ReportData) -> str:
    """The HTML page of ``data`` (Jinja2, autoescaped)."""
    from jinja2 import Environment, StrictUndefined

    env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(_TEMPLATE)
    charts = {t["source_table"]: table_charts(data.series.get(t["source_table"], [])) for t in data.tables}
    quality_failed = sum(int(q["failed"] or 0) for q in (data.quality or {}).values())
    return template.render(d=data, charts=charts, fmt=fmt_number, dead_total=sum(data.dead_letters.values()),
                           quality_failed=quality_failed, lag_text=describe(data.lag) if data.lag else "unknown",
                           lag_cell=lag_cell, behind=behind)


def write_report(ctx: PipelineContext, out: str | Path, runs: int = DEFAULT_RUNS) -> Path:
    """Gather, render and write the page to ``out``; returns the path written."""
    path = Path(out)
    page = render(gather(ctx, runs))
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def default_out(pipeline: str) -> str:
    """``cdclake-report-<pipeline>.html`` (the name made safe for a file name)."""
    return f"cdclake-report-{re.sub(r'[^A-Za-z0-9_.-]', '_', pipeline)}.html"


__all__ = ["Point", "ReportData", "build_series", "default_out", "gather", "line_chart", "render", "write_report"]
