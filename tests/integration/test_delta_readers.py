"""Every table cdclake writes opens in delta-rs (``deltalake``: Polars, DuckDB, pandas) in the
compatible mode, and reads there exactly as in Spark; the spark mode still makes column-mapped tables. A lake
mined through every kind of schema change, a kill mid-rewrite and maintenance: tests/engine/test_delta_readers.py
(issue 44)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdclake.engine.control import ControlTables
from cdclake.engine.lake import LakeLayout
from cdclake.engine.target.targets import Targets
from cdclake.errors import CdcError
from cdclake.schema import Column, TableSchema
from cdclake.sources.mysql.types import MySqlTypeMapper

from tests.integration.delta_rs_helpers import assert_delta_rs_reads_as_spark, delta_tables


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
