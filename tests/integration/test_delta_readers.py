"""Every table cdclake writes opens in delta-rs (``deltalake``: Polars, DuckDB, pandas) in the
compatible mode, and reads there exactly as in Spark; the spark mode still makes column-mapped tables."""

from __future__ import annotations

from pathlib import Path

import deltalake
import pytest
from cdclake.engine.control import ControlTables
from cdclake.engine.faults import CRASH_ENV, CRASH_MODE_ENV, SimulatedKill
from cdclake.engine.lake import LakeLayout
from cdclake.engine.target.targets import Targets
from cdclake.errors import CdcError
from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper

from tests.integration.delta_rs_helpers import assert_delta_rs_reads_as_spark, delta_tables
from tests.integration.pipeline_helpers import assert_lake_equals_source, config_file, make_pipeline, run_cli


def _check_lake(spark, mariadb, pipeline, tables: list[str], expect: set[str] | None = None) -> None:  # type: ignore[no-untyped-def]
    """The targets equal the source; delta-rs reads them and their history tables as Spark does, and
    with ``expect`` (names of the tables that must be there) every Delta table under the lake's root."""
    assert_lake_equals_source(spark, mariadb, pipeline, tables)
    root = Path(pipeline.layout.root)
    if expect is None:
        paths = [Path(p) for t in tables for p in (pipeline.layout.target(t), pipeline.layout.type2(t))]
    else:
        paths = delta_tables(root)
        found = {str(p.relative_to(root)) for p in paths}
        assert expect <= found, expect - found
    for path in paths:
        assert_delta_rs_reads_as_spark(spark, path)


def _rewrites(spark, path: str) -> list[int]:  # type: ignore[no-untyped-def]
    """Versions of the rewrites' first commits (the delete tagged with the version it started from)."""
    log = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return sorted(r.version for r in log if r.userMetadata and "rewrite_from" in r.userMetadata)


def test_compatible_lake_opens_in_delta_rs_after_every_kind_of_ddl(  # type: ignore[no-untyped-def]
        spark, mariadb, fresh_database, tmp_path, monkeypatch) -> None:
    db = fresh_database
    mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a VARCHAR(20), b INT, c VARCHAR(10), "
                    f"d DATETIME(6), gone VARCHAR(5))")
    mariadb.execute(f"CREATE TABLE `{db}`.side (id INT PRIMARY KEY, note VARCHAR(20))")
    mariadb.execute(f"INSERT INTO `{db}`.t VALUES (1, 'one', 10, '11', '2024-01-02 03:04:05.123456', 'x'), "
                    f"(2, NULL, NULL, NULL, NULL, NULL), (3, 'three', -3, '-33', '1999-12-31 23:59:59', 'z')")
    mariadb.execute(f"INSERT INTO `{db}`.side VALUES (1, 'a'), (2, 'b')")
    extra = "  history_tables: true\n  table_features: compatible\n"
    pipeline = make_pipeline(spark, mariadb, db, tmp_path / "lake", "readers", extra=extra)
    pipeline.snapshot()
    t, side = f"{db}.t", f"{db}.side"
    target, control = f"{db}__t", "_cdclake"
    expect = {target, f"{target}__history", f"{db}__side", f"{control}/bronze", f"{control}/checkpoints",
              f"{control}/schema_history", f"{control}/runs", f"{control}/dead_letters"}
    _check_lake(spark, mariadb, pipeline, [t, side], expect)
    path = pipeline.layout.target(t)

    # One window: DML, ADD COLUMN (metadata only), then DROP, RENAME COLUMN, int -> bigint (Delta type
    # widening in the spark mode) and VARCHAR -> INT, which rewrite the table once each, with rows between
    # them. The run is killed between the first rewrite's two commits, then run again: exact.
    for sql in (f"INSERT INTO `{db}`.t VALUES (4, 'four', 40, '44', NOW(6), 'w')",
                f"UPDATE `{db}`.t SET a = 'uno', b = b + 1 WHERE id = 1", f"DELETE FROM `{db}`.t WHERE id = 3",
                f"INSERT INTO `{db}`.t (id) VALUES (10)", f"ALTER TABLE `{db}`.t ADD COLUMN e INT NOT NULL DEFAULT 5",
                f"INSERT INTO `{db}`.t (id, e) VALUES (11, 6)", f"ALTER TABLE `{db}`.t DROP COLUMN gone",
                f"UPDATE `{db}`.t SET d = NOW(6), e = 7 WHERE id = 1",
                f"INSERT INTO `{db}`.t (id) VALUES (20)", f"ALTER TABLE `{db}`.t RENAME COLUMN a TO a2",
                f"UPDATE `{db}`.t SET a2 = 'renamed' WHERE id = 2", f"ALTER TABLE `{db}`.t MODIFY b BIGINT",
                f"UPDATE `{db}`.t SET b = 5000000000 WHERE id = 4", f"ALTER TABLE `{db}`.t MODIFY c INT",
                f"UPDATE `{db}`.t SET c = c + 1 WHERE id = 1"):
        mariadb.execute(sql)
    monkeypatch.setenv(CRASH_MODE_ENV, "raise")
    monkeypatch.setenv(CRASH_ENV, "rewrite")
    with pytest.raises(SimulatedKill):
        make_pipeline(spark, mariadb, db, tmp_path / "lake", "readers", extra=extra).mine()
    monkeypatch.delenv(CRASH_ENV)
    monkeypatch.delenv(CRASH_MODE_ENV)
    assert spark.read.format("delta").load(path).isEmpty()  # between the two commits
    assert len(_rewrites(spark, path)) == 1
    assert pipeline.mine().resumed
    _check_lake(spark, mariadb, pipeline, [t])
    rewrites = _rewrites(spark, path)
    assert len(rewrites) == 4  # no rewrite for DML or ADD COLUMN; the killed one finished, not started again

    # the change data feed of a rewrite: every row deleted (version N), then inserted in the new shape (N+1)
    import pyarrow as pa

    n = rewrites[-1]
    changes = deltalake.DeltaTable(path).load_cdf(starting_version=n, ending_version=n + 1,
                                                  columns=["id", "_change_type", "_commit_version"])
    feed = pa.RecordBatchReader.from_stream(changes).read_all().to_pylist()
    assert {r["_change_type"] for r in feed if r["_commit_version"] == n} == {"delete"}
    assert {r["_change_type"] for r in feed if r["_commit_version"] == n + 1} == {"insert"}
    deleted = sorted(r["id"] for r in feed if r["_commit_version"] == n)
    inserted = sorted(r["id"] for r in feed if r["_commit_version"] == n + 1)
    assert deleted == inserted == sorted(r.id for r in spark.read.format("delta").load(path).collect())

    # maintenance (OPTIMIZE, VACUUM) adds no feature either (RENAME TABLE and TRUNCATE in this mode:
    # test_schema_changes.py)
    maintained = run_cli("maintain", "--config", config_file(mariadb, db, tmp_path / "lake", "readers", extra=extra))
    assert maintained.output.startswith("optimized ")
    _check_lake(spark, mariadb, pipeline, [t, side], expect)


def _schema(*columns: tuple[str, str]) -> TableSchema:
    return TableSchema("db", "t", [Column(n, t.lower(), t) for n, t in columns], ["id"])


def test_spark_mode_makes_column_mapped_tables(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """spark: column mapping and type widening, renames and widenings in the metadata (no rewrite)."""
    path = str(tmp_path / "spark_t")
    targets = Targets.build(spark, MySqlTypeMapper(), type2_tables=True, features="spark")
    targets.shapes.create(path, _schema(("id", "INT"), ("a", "STRING"), ("b", "INT")))
    for table in (path, path + "__history"):
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()
        assert detail.properties["delta.columnMapping.mode"] == "name"
        assert {"columnMapping", "typeWidening"} <= set(detail.tableFeatures)
    spark.sql(f"INSERT INTO delta.`{path}` (id, a, b, `__seq`) VALUES (1, 'x', 2, 1)")
    targets.shapes.evolve(path, _schema(("id", "INT"), ("a2", "STRING"), ("b", "BIGINT")), {"a": "a2"}, 10)
    assert [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()].count("DELETE") == 0
    row = spark.read.format("delta").load(path).first()
    assert (row.id, row.a2, row.b) == (1, "x", 2)

    # compatible: no reader feature delta-rs lacks, whatever the session defaults say
    spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
    try:
        path = str(tmp_path / "compatible_t")
        Targets.build(spark, MySqlTypeMapper(), features="compatible").shapes.create(path, _schema(("id", "INT")))
        assert assert_delta_rs_reads_as_spark(spark, Path(path)) == 0
        with pytest.raises(CdcError, match="enableTypeWidening"):
            Targets.build(spark, MySqlTypeMapper(), extra_properties={"delta.enableTypeWidening": "true"},
                          features="compatible").shapes.create(str(tmp_path / "bad"), _schema(("id", "INT")))
    finally:
        spark.conf.unset("spark.databricks.delta.properties.defaults.enableDeletionVectors")


def test_lake_mode_is_recorded_and_never_switched(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    layout = LakeLayout(str(tmp_path), "p")
    ControlTables(spark, layout, None).ensure()  # a new lake: compatible by default, recorded
    assert ControlTables(spark, layout, None).table_features() == "compatible"
    assert ControlTables(spark, layout, "compatible").table_features() == "compatible"
    with pytest.raises(CdcError, match="table_features: compatible"):
        ControlTables(spark, layout, "spark").ensure()
    # a spark lake's bronze and control tables open in delta-rs as well
    spark_lake = LakeLayout(str(tmp_path), "sp")
    ControlTables(spark, spark_lake, "spark").ensure()
    assert ControlTables(spark, spark_lake, None).table_features() == "spark"
    for path in delta_tables(Path(spark_lake.control)):
        assert_delta_rs_reads_as_spark(spark, path)
    # a lake made before the option: a spark lake, kept so when the file does not say
    old = LakeLayout(str(tmp_path), "old")
    spark.sql(f"CREATE TABLE delta.`{old.checkpoints}` (rev BIGINT) USING delta")
    assert ControlTables(spark, old, None).table_features() == "spark"
    with pytest.raises(CdcError, match="does not convert"):
        ControlTables(spark, old, "compatible").table_features()


def test_pipeline_file_option() -> None:
    from cdclake.config import load_config_text
    from cdclake.errors import ConfigError

    text = ("pipeline: p\nsource: {type: mariadb, host: h, port: 3306, user: u, password: x, server_id: 1}\n"
            "lake:\n  root: /tmp/lake\n")
    assert load_config_text(text).lake.table_features is None  # the lake's own; compatible for a new lake
    assert load_config_text(text + "  table_features: spark\n").lake.table_features == "spark"
    with pytest.raises(ConfigError, match="lake.table_features"):
        load_config_text(text + "  table_features: delta-rs\n")
    with pytest.raises(ConfigError, match="delta.enableDeletionVectors"):
        load_config_text(text + "  table_features: compatible\n"
                         "  table_properties: {delta.enableDeletionVectors: 'true'}\n")
    spark_lake = text + "  table_features: spark\n  table_properties: {delta.enableDeletionVectors: 'true'}\n"
    assert load_config_text(spark_lake).lake.table_properties
