"""cdclake report without Spark: the SVG charts, the per-run series and escaping of outside text."""

from __future__ import annotations

import re

from cdclake.engine.report import Point, ReportData, build_series, fmt_number, line_chart, nice_ceiling, render


def _run(epoch: float, command: str = "mine", window: int | None = 1, rows: dict[str, int] | None = None,
         duration: float = 2.0, status: str = "ok", lag: float | None = None) -> dict:
    return {"run_id": f"r{int(epoch)}", "command": command, "window_id": window, "status": status,
            "started_epoch": epoch, "ended_epoch": epoch + duration, "duration_s": duration,
            "rows_by_table": rows or {}, "lag_s": lag, "started": f"t{int(epoch)}", "events": 0,
            "transactions": 0, "start_position": "a", "end_position": "b", "error": None}


def test_nice_ceiling_and_numbers() -> None:
    assert [nice_ceiling(v) for v in (0, -3, 0.8, 1, 3, 7.3, 26, 1200)] == [1, 1, 1, 1, 5, 10, 50, 2000]
    assert nice_ceiling(0.31) == 0.5
    assert [fmt_number(v) for v in (None, 0, 0.1234, 12.34, 250.4, 1234.5, 2_500_000)] == [
        "-", "0", "0.123", "12.3", "250", "1.23k", "2.5M"]


def test_line_chart_draws_points_scaled_and_breaks_on_missing_values() -> None:
    svg = str(line_chart([Point(0, 1.0, "a"), Point(10, 4.0, "b"), Point(20, None, "c"), Point(30, 2.0, "d")],
                         "lag (s)", "s", ("start", "end"), width=200, height=100))
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "http" not in svg and "<script" not in svg
    assert svg.count("<circle") == 3  # the missing value has no point
    assert svg.count("<polyline") == 1  # a-b joined; d alone after the gap
    assert "<title>b: 4 s</title>" in svg
    assert ">5</text>" in svg  # the axis ends at a round value above the maximum
    # x spans the plot (48 .. 190), y = 0 at the bottom (100 - 22), the maximum 5 at the top (22).
    points = re.search(r'<polyline points="([^"]+)"', svg).group(1).split()  # type: ignore[union-attr]
    assert points[0].startswith("48.0,")
    (x1, y1), (x2, y2) = (map(float, p.split(",")) for p in points)
    assert y1 > y2 and abs(y2 - (78 - 4 / 5 * 56)) < 0.2


def test_line_chart_without_values_says_so_and_escapes_text() -> None:
    svg = str(line_chart([Point(0, None)], "<b>t</b>", "s"))
    assert "no data in these runs" in svg and "<b>" not in svg and "&lt;b&gt;" in svg
    single = str(line_chart([Point(5, 3.0, "<x>")], "one", "s"))
    assert single.count("<circle") == 1 and "&lt;x&gt;" in single


def test_series_lag_from_newest_commit_and_throughput_per_table() -> None:
    runs = [
        _run(100, "snapshot", None, {"db.a": 1000}, duration=10),
        _run(200, "mine", 1, {"db.a": 50}, duration=5),
        _run(300, "mine", 2, {"db.b": 8}, duration=4),
        _run(400, "mine", 3, {"db.a": 9}, duration=3, status="failed"),
        _run(500, "mine", 4, {"db.a": 6}, duration=2, lag=7.5),  # bronze of window 4 already deleted
    ]
    newest = {(1, "db.a"): 190.0, (2, "db.b"): 295.0}
    series = build_series(list(reversed(runs)), ["db.a", "db.b"], newest)
    a = series["db.a"]
    assert [p["x"] for p in a] == [100, 200, 300, 500]  # failed run left out, oldest first
    assert [p["lag_s"] for p in a] == [None, 15.0, None, 7.5]  # end 205 - commit 190; run log lag_s fallback
    assert [p["rows_per_s"] for p in a] == [100.0, 10.0, 0.0, 3.0]
    b = series["db.b"]
    assert [(p["x"], p["lag_s"], p["rows_per_s"]) for p in b] == [(200, None, 0.0), (300, 9.0, 2.0),
                                                                     (500, None, 0.0)]


def _data(**kw: object) -> ReportData:
    data = ReportData(pipeline="p<1>", source_type="mariadb", lake_root="/lake", generated_at="now",
                      runs_limit=50)
    for k, v in kw.items():
        setattr(data, k, v)
    return data


def test_render_escapes_outside_text_and_needs_nothing_from_a_network() -> None:
    evil = "db.<script>alert(1)</script>"
    table = {"source_table": evil, "delta_path": "/lake/x", "state": "streaming", "position": "f.000001:4 <b>",
             "position_ordinal": "1", "window_id": 1, "rows": 1234567, "lag_s": 3.5, "last_run": None}
    run = _run(200, "mine", 1, {evil: 5}) | {"error": "<img src=x onerror=alert(2)>"}
    page = render(_data(
        tables=[table], runs=[run], series=build_series([run], [evil], {(1, evil): 195.0}),
        dead_letters={evil: 2}, dead_letters_latest=[{"recorded_at": "t", "source_table": evil, "window_id": 1,
                                                      "op": "u", "position": "p", "reason": "<i>bad</i>"}],
        quality={evil: {"passed": 3, "failed": 1, "checked_at": "t", "run_id": "r", "window_id": 1, "failures": [
            {"expectation": "expect_column_values_to_not_be_null", "column": "<c>", "unexpected_count": 2,
             "element_count": 10, "observed": "{'x': '<y>'}", "severity": "fail"}]}},
    ))
    assert "<script" not in page and "<img" not in page and "<i>bad" not in page and "<c>" not in page
    assert "db.&lt;script&gt;alert(1)&lt;/script&gt;" in page and "p&lt;1&gt;" in page
    assert "1,234,567" in page and "f.000001:4 &lt;b&gt;" in page
    assert page.count("<svg") == 2 and "expect_column_values_to_not_be_null" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page


def test_render_of_an_empty_pipeline_names_the_missing_sections() -> None:
    page = render(_data())
    assert "no data-quality checks recorded" in page and "no reconcile results recorded" in page
    assert "no dead letters" in page and "no abandoned transactions" in page and "no run recorded" in page
