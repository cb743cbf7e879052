"""cdclake report against a real pipeline: one self-contained HTML page from the control tables (moved from
integration/test_report.py, issue 44)."""

from __future__ import annotations

import re
from datetime import datetime

from cdclake.cli import cli
from cdclake.engine.control import DEAD_LETTERS_DDL
from cdclake.engine.inflight import ABANDONED, TRANSACTIONS_DDL
from cdclake.engine.lake import LakeLayout
from cdclake.testing.fake import FakeDatabase
from click.testing import CliRunner
from markupsafe import escape

from tests.engine.helpers import make_pipeline, pipeline_yaml

# a secret of the pipeline file (a variable, as a password is): the page shows neither its name nor its value
SECRET = "  password: ${CDCLAKE_TEST_SECRET}\n"
QUALITY_DDL = ("run_id STRING, window_id BIGINT, source_table STRING, expectation STRING, column STRING, "
               "success BOOLEAN, unexpected_count BIGINT, element_count BIGINT, observed STRING, severity STRING, "
               "checked_at TIMESTAMP")


def _append(spark, path: str, ddl: str, rows: list[tuple]) -> None:  # type: ignore[no-untyped-def]
    spark.createDataFrame(rows, ddl).write.format("delta").mode("append").save(path)


def test_report_shows_tables_positions_charts_quality_dead_letters_and_abandoned(  # type: ignore[no-untyped-def]
        spark, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CDCLAKE_TEST_SECRET", "s3cret-of-the-report")
    src = FakeDatabase(tmp_path / "db.log")
    db = "shop"
    src.create_table(f"{db}.orders", [("id", "int", False), ("amount", "int")], key=["id"])
    src.create_table(f"{db}.customers", [("id", "int", False), ("name", "text")], key=["id"])
    src.insert(f"{db}.orders", *({"id": i, "amount": i} for i in range(1, 121)))
    src.insert(f"{db}.customers", *({"id": i, "name": f"c{i}"} for i in range(1, 8)))
    pipeline = make_pipeline(spark, src, tmp_path / "lake", name="rpt", source_extra=SECRET)
    pipeline.snapshot()
    src.update(f"{db}.orders", lambda r: r["id"] <= 30, {"amount": lambda r: r["amount"] + 1})
    src.insert(f"{db}.orders", *({"id": i, "amount": 0} for i in range(121, 131)))
    pipeline.mine()
    src.delete(f"{db}.customers", {"id": 7})  # one table per window: fewer MERGEs
    pipeline.mine()

    layout = pipeline.layout
    # What other commands record: a dead letter, an abandoned transaction (frame sources), and the
    # quality/reconcile results (their layout properties may be newer than this cdclake).
    monkeypatch.setattr(LakeLayout, "quality", property(lambda self: f"{self.control}/quality"), raising=False)
    monkeypatch.setattr(LakeLayout, "reconcile", property(lambda self: f"{self.control}/reconcile"), raising=False)
    now = datetime(2030, 1, 2, 3, 4, 5)
    _append(spark, layout.dead_letters, DEAD_LETTERS_DDL,
            [(2, f"{db}.orders", None, "fake:77", "u", "value <does not> decode", "{}", "{}", now)])
    _append(spark, layout.transactions, TRANSACTIONS_DDL,
            [("0a0b.1c", ABANDONED, 2, None, None, None, 1, None, "scn 4711", now, 3, [f"{db}.orders"], now)])
    _append(spark, layout.quality, QUALITY_DDL, [
        ("old", 1, f"{db}.orders", "expect_column_values_to_not_be_null", "amount", False, 1, 120, None, "fail",
         datetime(2029, 1, 1)),
        ("q2", 2, f"{db}.orders", "expect_column_values_to_not_be_null", "amount", True, 0, 130, None, "fail", now),
        ("q2", 2, f"{db}.orders", "expect_column_values_to_be_between", "amount", False, 4, 130, "max 999",
         "warn", now),
    ])

    # The command line, as an operator runs it (the same session, so the layout patch above holds).
    config = tmp_path / "rpt.yaml"
    config.write_text(pipeline_yaml(src, tmp_path / "lake", name="rpt", source_extra=SECRET))
    out = tmp_path / "out" / "report.html"
    result = CliRunner().invoke(cli, ["report", "--config", str(config), "--out", str(out), "--runs", "10"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out)

    page = out.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "<script" not in page
    states = pipeline.control.table_states()
    for table, rows in ((f"{db}.orders", 130), (f"{db}.customers", 6)):
        assert table in page and f"<td class=\"n\">{rows}</td>" in page
        assert str(escape(pipeline.source.position_type.from_dict(states[table].position).describe())) in page
    assert page.count("<svg") == 4 and "<polyline" in page  # lag and throughput per table
    assert "Dead letters" in page and "value &lt;does not&gt; decode" in page
    assert "Abandoned transactions" in page and "0a0b.1c" in page and "scn 4711" in page
    assert "1 passed, 1 failed" in page and "expect_column_values_to_be_between" in page  # the latest check only
    assert "no reconcile results recorded" in page
    assert "CDCLAKE_TEST_SECRET" not in page and "s3cret-of-the-report" not in page

