"""Data-quality gates without Spark: expectations declared in the pipeline file are validated with a
clear key and fix, and suites are generated from a captured schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdclake.config import load_config, load_config_text
from cdclake.engine.quality import (
    CHANGED,
    GENERATED,
    KEYS,
    CheckResult,
    check_declared,
    gate_error,
    generated_specs,
    spark_type_class,
    table_specs,
    to_expectation,
)
from cdclake.errors import ConfigError
from cdclake.schema import Column, TableSchema

ROOT = Path(__file__).resolve().parents[2]
ACCT = TableSchema("shop", "acct", [
    Column("id", "int(11)", "INT", nullable=False),
    Column("owner", "varchar(20)", "STRING", nullable=False),
    Column("balance", "decimal(10,2)", "DECIMAL(10,2)"),
    Column("opened", "datetime", "TIMESTAMP_NTZ"),
], ["id"])


def _config(quality: str = "quality: {enabled: true}", tables: str = ""):  # type: ignore[no-untyped-def]
    return load_config_text(
        "pipeline: q\n"
        "source: {type: mariadb, host: h, user: u, password: p, server_id: 1, include_tables: ['shop\\..*']}\n"
        f"lake: {{root: /tmp/lake}}\n{quality}\n{tables}"
    )


def _declared(*expectations: str) -> str:
    return "tables:\n  shop.acct:\n    expectations:\n" + "".join(f"      - {e}\n" for e in expectations)


def test_quality_is_off_by_default_and_declared_expectations_load() -> None:
    config = _config(quality="", tables=_declared(
        "{type: expect_column_values_to_be_between, kwargs: {column: balance, min_value: 0}, on_failure: fail}"))
    assert not config.quality.enabled and config.quality.on_failure == "warn"
    exp = config.tables["shop.acct"].expectations[0]
    assert (exp.type, exp.kwargs, exp.on_failure) == ("expect_column_values_to_be_between",
                                                      {"column": "balance", "min_value": 0}, "fail")


def test_a_malformed_expectation_is_refused_at_load_with_its_key() -> None:
    with pytest.raises(ConfigError, match=r"tables\.shop\.acct\.expectations\[0\]\.type: String should match"):
        _config(tables=_declared("{type: ExpectColumnValuesToBeBetween, kwargs: {column: balance}}"))
    with pytest.raises(ConfigError, match=r"tables\.shop\.acct\.expectations\[0\]\.kwarg: unknown key"):
        _config(tables=_declared("{type: expect_column_values_to_not_be_null, kwarg: {column: balance}}"))
    with pytest.raises(ConfigError, match=r"quality\.on_failure: Input should be 'fail' or 'warn'"):
        _config(quality="quality: {enabled: true, on_failure: stop}")


def test_an_unknown_expectation_type_names_the_key_and_close_matches() -> None:
    config = _config(tables=_declared(
        "{type: expect_column_values_to_not_be_null, kwargs: {column: id}}",
        "{type: expect_column_values_to_be_betwen, kwargs: {column: balance, min_value: 0}}"))
    with pytest.raises(ConfigError) as caught:
        check_declared(config)
    assert "tables.shop.acct.expectations[1]: Great Expectations has no expectation" in caught.value.problem
    assert "did you mean expect_column_values_to_be_between" in caught.value.problem
    assert "tables.shop.acct.expectations[1].type" in (caught.value.fix or "")


def test_bad_kwargs_name_the_key_the_argument_and_the_allowed_ones() -> None:
    config = _config(tables=_declared("{type: expect_column_values_to_be_between, kwargs: {column: b, mni_value: 0}}"))
    with pytest.raises(ConfigError) as caught:
        check_declared(config)
    assert "tables.shop.acct.expectations[0]: invalid kwargs for expect_column_values_to_be_between" in str(
        caught.value)
    assert "mni_value: extra fields not permitted" in caught.value.problem
    assert "min_value" in (caught.value.fix or "") and "tables.shop.acct.expectations[0].kwargs" in caught.value.fix
    check_declared(_config(quality="quality: {enabled: false}", tables=_declared(
        "{type: expect_nothing_known, kwargs: {}}")))  # not checked while the gate is off


def test_a_declared_column_must_exist_and_takes_the_table_spelling() -> None:
    config = _config(tables=_declared("{type: expect_column_values_to_be_between, kwargs: {column: BALANCE, "
                                      "min_value: 0}, on_failure: fail}"))
    declared = [s for s in table_specs(config, ACCT, ["id"]) if s.origin != GENERATED]
    assert [(s.kwargs["column"], s.severity, s.origin) for s in declared] == [
        ("balance", "fail", "tables.shop.acct.expectations[0]")]
    to_expectation(declared[0])  # a valid Great Expectations object
    bad = _config(tables=_declared("{type: expect_column_values_to_not_be_null, kwargs: {column: balanse}}"))
    with pytest.raises(ConfigError, match=r"kwargs\.column names 'balanse', which is not a column of shop\.acct"):
        table_specs(bad, ACCT, ["id"])


def test_suite_generated_from_the_schema() -> None:
    specs = generated_specs(ACCT, ["id"], _config().quality)
    got = {(s.type, s.column, s.scope) for s in specs}
    assert got == {
        ("expect_column_values_to_not_be_null", "id", CHANGED),
        ("expect_column_values_to_be_unique", "id", KEYS),
        ("expect_column_values_to_not_be_null", "owner", CHANGED),  # source NOT NULL
        ("expect_column_values_to_be_of_type", "id", CHANGED),
        ("expect_column_values_to_be_of_type", "owner", CHANGED),
        ("expect_column_values_to_be_of_type", "balance", CHANGED),
        ("expect_column_values_to_be_of_type", "opened", CHANGED),
    }
    types = {s.column: s.kwargs["type_"] for s in specs if s.type == "expect_column_values_to_be_of_type"}
    assert types == {"id": "IntegerType", "owner": "StringType", "balance": "DecimalType",
                     "opened": "TimestampNTZType"}
    assert {s.severity for s in specs} == {"warn"}
    for i, spec in enumerate(specs):
        to_expectation(spec, i)


def test_compound_keys_keyless_tables_and_switches() -> None:
    config = _config(quality="quality: {enabled: true, on_failure: fail, types: false}")
    specs = generated_specs(ACCT.with_columns(ACCT.columns, ["id", "owner"]), ["id", "owner"], config.quality)
    assert [(s.type, s.kwargs) for s in specs if s.scope == KEYS] == [
        ("expect_compound_columns_to_be_unique", {"column_list": ["id", "owner"]})]
    assert not [s for s in specs if s.type == "expect_column_values_to_be_of_type"]
    keyless = ACCT.with_columns(ACCT.columns, [])
    specs = table_specs(config, keyless, [])  # no row key (a multiset): no key checks
    assert [(s.type, s.column) for s in specs] == [("expect_column_values_to_not_be_null", "id"),
                                                   ("expect_column_values_to_not_be_null", "owner")]
    assert spark_type_class("DECIMAL(38,0)") == "DecimalType" and spark_type_class("INTERVAL DAY") is None


def test_gate_error_names_table_expectation_column_values_and_fix() -> None:
    failed = CheckResult("shop.acct", "expect_column_values_to_be_between", "balance", False, 2, 10, "{}", "fail",
                         "tables.shop.acct.expectations[0]", [-5, -1, -5])
    err = gate_error([failed], "in window 3", "/lake/q/_cdclake/quality")
    assert ("shop.acct: expect_column_values_to_be_between on column balance (tables.shop.acct.expectations[0]): "
            "2 of 10 rows unexpected, e.g. -5, -1") in err.problem
    assert "not checkpointed" in err.problem and "/lake/q/_cdclake/quality" in err.problem
    assert "tables.shop.acct.expectations[0].on_failure: warn" in (err.fix or "")
    assert err.permanent


def test_example_pipeline_declares_a_valid_quality_block(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SBTEST_PASSWORD", "x")
    monkeypatch.setenv("CDCLAKE_MASK_SALT", "y")
    config = load_config(ROOT / "conf" / "example-mysql.yaml")
    assert config.tables and any(t.expectations for t in config.tables.values())
    assert any(t.mask_columns for t in config.tables.values())
    check_declared(config.model_copy(update={"quality": config.quality.model_copy(update={"enabled": True})}))
