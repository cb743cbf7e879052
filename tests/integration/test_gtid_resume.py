"""Resuming by GTID (source.position_mode: gtid) reads exactly the transactions after the stored GTID."""

from __future__ import annotations

from tests.integration.pipeline_helpers import assert_lake_equals_source, make_pipeline


def test_mining_resumes_by_mariadb_gtid(spark, mariadb, fresh_database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.g (id INT PRIMARY KEY, v VARCHAR(10))")
    mariadb.execute(f"INSERT INTO `{db}`.g VALUES (1, 'a'), (2, 'b')")
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", "gtid", source_extra="  position_mode: gtid\n")
    assert pipeline.config.source.position_mode == "gtid"
    snap = pipeline.snapshot()
    assert "gtid" in snap.start
    for i in range(3, 8):
        mariadb.execute(f"INSERT INTO `{db}`.g VALUES (%s, 'x')", (i,))
    mariadb.execute(f"UPDATE `{db}`.g SET v = 'y' WHERE id = 1")
    mariadb.execute(f"DELETE FROM `{db}`.g WHERE id = 2")
    first = pipeline.mine(max_events=3)
    second = pipeline.mine()
    assert first.events == 3 and second.events == 4
    assert second.start == first.end and "gtid" in second.end
    assert_lake_equals_source(spark, mariadb, pipeline, [f"{db}.g"])
