"""``cdclake demo`` (what ``make demo`` runs after ``make setup``): the whole product end to end on a throwaway
MariaDB, ending with the lake equal to the source row by row."""

from __future__ import annotations

from pathlib import Path

from tests.integration.pipeline_helpers import run_cli


def test_demo_runs_end_to_end_and_finds_the_lake_equal_to_the_source(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lake = tmp_path / "demo-lake"
    out = run_cli("demo", "--lake", lake, "--rows", "60").output
    assert "snapshot shop.customers: 60 rows at " in out
    assert out.count("mining window ") == 2
    for table in ("shop.customers", "shop.products", "shop.orders"):
        assert f"  {table}: equal" in out, out[-3000:]
    assert f"lake at {lake}" in out and (lake / "demo" / "_cdclake").is_dir()
