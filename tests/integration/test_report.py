"""cdclake report against a real pipeline: one self-contained HTML page from the control tables."""

from __future__ import annotations

import re
from datetime import datetime

from cdclake.cli import cli
from cdclake.engine.control import DEAD_LETTERS_DDL
from cdclake.engine.inflight import ABANDONED, TRANSACTIONS_DDL
from cdclake.engine.lake import LakeLayout
from click.testing import CliRunner
from markupsafe import escape

from tests.integration.pipeline_helpers import make_pipeline, pipeline_yaml

QUALITY_DDL = ("run_id STRING, window_id BIGINT, source_table STRING, expectation STRING, column STRING, "
               "success BOOLEAN, unexpected_count BIGINT, element_count BIGINT, observed STRING, severity STRING, "
               "checked_at TIMESTAMP")


def _append(spark, path: str, ddl: str, rows: list[tuple]) -> None:  # type: ignore[no-untyped-def]
    spark.createDataFrame(rows, ddl).write.format("delta").mode("append").save(path)


def test_report_shows_tables_positions_charts_quality_dead_letters_and_abandoned(  # type: ignore[no-untyped-def]
        spark, mariadb, fresh_database, tmp_path, monkeypatch) -> None:
    db = fresh_database
    mariadb.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, amount INT)")
    mariadb.execute(f"CREATE TABLE {db}.customers (id INT PRIMARY KEY, name VARCHAR(20))")
    mariadb.execute(f"INSERT INTO {db}.orders SELECT seq, seq FROM {db}.seq_1_to_120")
    mariadb.execute(f"INSERT INTO {db}.customers SELECT seq, CONCAT('c', seq) FROM {db}.seq_1_to_7")
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", name="rpt")
    pipeline.snapshot()
    mariadb.execute(f"UPDATE {db}.orders SET amount = amount + 1 WHERE id <= 30")
    mariadb.execute(f"INSERT INTO {db}.orders SELECT seq, 0 FROM {db}.seq_121_to_130")
    pipeline.mine()
    mariadb.execute(f"DELETE FROM {db}.customers WHERE id = 7")  # one table per window: fewer MERGEs
    pipeline.mine()

    layout = pipeline.layout
    # What other commands record: a dead letter, an abandoned transaction (frame sources), and the
    # quality/reconcile results (their layout properties may be newer than this cdclake).
    monkeypatch.setattr(LakeLayout, "quality", property(lambda self: f"{self.control}/quality"), raising=False)
    monkeypatch.setattr(LakeLayout, "reconcile", property(lambda self: f"{self.control}/reconcile"), raising=False)
    now = datetime(2030, 1, 2, 3, 4, 5)
    _append(spark, layout.dead_letters, DEAD_LETTERS_DDL,
            [(2, f"{db}.orders", None, "bin.000009:77", "u", "value <does not> decode", "{}", "{}", now)])
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
    config.write_text(pipeline_yaml(mariadb, db, tmp_path / "lake", name="rpt"))
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
    assert "CDCLAKE_TEST_PASSWORD" not in page and mariadb.cdc_password not in page

