"""Soft deletes keep tombstones; SCD type 2 history tables hold every version of every key."""

from __future__ import annotations

from tests.integration.pipeline_helpers import assert_lake_equals_source, config_file, make_pipeline, run_cli


def test_soft_delete_and_history_tables(spark, mariadb, fresh_database, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.item (id INT PRIMARY KEY, qty INT)")
    mariadb.execute(f"INSERT INTO `{db}`.item VALUES (1, 10), (2, 20), (3, 30)")
    extra = "  delete_mode: soft\n  history_tables: true\n"
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", "scd", extra=extra)
    pipeline.snapshot()
    table = f"{db}.item"
    for sql in [
        "UPDATE item SET qty = 11 WHERE id = 1",
        "UPDATE item SET qty = 12 WHERE id = 1",
        "DELETE FROM item WHERE id = 2",
        "INSERT INTO item VALUES (4, 40)",
        "UPDATE item SET id = 5 WHERE id = 3",  # key change: delete 3, insert 5
    ]:
        mariadb.execute(f"USE `{db}`")
        mariadb.execute(sql.replace("item", f"`{db}`.item"))
    config = config_file(mariadb, db, tmp_path / "lake", "scd", extra=extra)
    first = run_cli("mine", "--config", config, "--max-events", "2")
    assert first.output.startswith("window 1: ") and "2 events in 2 transactions" in first.output
    pipeline.mine()
    assert_lake_equals_source(spark, mariadb, pipeline, [table])

    target = spark.read.format("delta").load(pipeline.layout.target(table))
    tombstones = {r.id for r in target.where("__deleted").collect()}
    assert tombstones == {2, 3}

    history = spark.read.format("delta").load(pipeline.layout.type2(table))
    versions = {}
    for r in history.orderBy("__seq").collect():
        versions.setdefault(r.id, []).append(r)
    assert [v.qty for v in versions[1]] == [10, 11, 12]
    assert [v["__deleted"] for v in versions[2]] == [False, True]
    assert [v["__deleted"] for v in versions[3]] == [False, True]
    assert [v.qty for v in versions[5]] == [30]
    for rows in versions.values():  # each version ends where the next begins; the last is open
        assert [r["__valid_to_seq"] for r in rows[:-1]] == [r["__seq"] for r in rows[1:]]
        assert rows[-1]["__valid_to_seq"] is None
    current = {r.id: r.qty for r in history.where("__valid_to_seq IS NULL AND NOT __deleted").collect()}
    source = dict(mariadb.query(f"SELECT id, qty FROM `{db}`.item"))
    assert current == source
