"""Column rules without Spark: what the pipeline file accepts, what a table's schema or a DDL may do to
a rule, and how images are masked."""

from __future__ import annotations

import hashlib
import os

import pytest
from cdclake.config import MaskRule, TableOptions, load_config_text
from cdclake.engine.columns import ColumnPolicy
from cdclake.errors import ConfigError
from cdclake.schema import RowKey, TableSchema
from cdclake.sources.mysql.position import BinlogPosition
from cdclake.sources.mysql.types import MySqlTypeMapper, column_from_definition
from cdclake.spi import UNAVAILABLE_KEY, Ddl

BASE = ("pipeline: p\nsource: {type: mariadb, host: h, port: 3306, user: u, password: pw, server_id: 9, "
        "include_tables: ['shop\\..*']}\nlake: {root: /tmp/l}\n")


def _schema(*defs: str, key: tuple[str, ...] = ("id",)) -> TableSchema:
    cols = [column_from_definition(d.split()[0], d.split(None, 1)[1]) for d in defs]
    return TableSchema("shop", "c", cols, list(key))


def _policy(**options: object) -> ColumnPolicy:
    return ColumnPolicy({"shop.c": TableOptions(**options)}, "salt", MySqlTypeMapper())  # type: ignore[arg-type]


@pytest.mark.parametrize("yaml, problem", [
    ("masking: {salt: literal}\n", "masking.salt is written in the file"),
    ("tables:\n  shop.c: {mask_columns: {e: {hash: sha256}}}\n", "a hash mask needs masking.salt"),
    ("tables:\n  shop.c: {include_columns: [a], exclude_columns: [b]}\n", "not both"),
    ("tables:\n  shop.c: {exclude_columns: [e], mask_columns: {e: {text: x}}}\n", "the column is not landed"),
    ("tables:\n  shop.c: {key_columns: [k], include_columns: [a]}\n", "k is left out"),
    ("tables:\n  shop.c: {mask_columns: {e: {text: x, truncate: 2}}}\n", "exactly one of"),
])
def test_the_pipeline_file_refuses_rules_that_cannot_hold(yaml: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_config_text(BASE + yaml)


def test_the_salt_comes_from_the_environment_and_is_never_shown() -> None:
    os.environ["UNIT_SALT"] = "pepper"
    config = load_config_text(BASE + 'masking: {salt: "${UNIT_SALT}"}\n'
                              "tables:\n  shop.c: {mask_columns: {e: {hash: sha256}}}\n")
    assert config.masking.salt is not None and config.masking.salt.get_secret_value() == "pepper"
    assert "pepper" not in str(config.redacted())
    policy = ColumnPolicy.from_config(config, MySqlTypeMapper())
    assert policy.mask_image("shop.c", {"e": "a@b"}) == {"e": hashlib.sha256(b"peppera@b").hexdigest()}


def test_images_lose_left_out_columns_everywhere_and_keep_nulls() -> None:
    policy = _policy(include_columns=["id", "e"], mask_columns={"e": MaskRule(truncate=1)})
    image = {"id": 1, "e": None, "x": "raw", UNAVAILABLE_KEY: ["x", "e"]}
    assert policy.mask_image("shop.c", image) == {"id": 1, "e": None, UNAVAILABLE_KEY: ["e"]}
    assert policy.mask_image("shop.other", image) is image


@pytest.mark.parametrize("options, problem", [
    ({"exclude_columns": ["id"]}, "cannot be left out"),
    ({"mask_columns": {"id": MaskRule(truncate=2)}}, "would make distinct rows one row"),
    ({"mask_columns": {"n": MaskRule(hash="sha256")}}, "masks apply to text columns"),
    ({"mask_columns": {"b": MaskRule(text="x")}}, "masks apply to text columns"),  # binary: not text
])
def test_a_table_refuses_rules_its_columns_cannot_take(options: dict, problem: str) -> None:
    schema = _schema("id varchar(10) NOT NULL", "n int", "b varbinary(8)", "e varchar(20)")
    with pytest.raises(ConfigError, match=problem):
        _policy(**options).check_table(schema, RowKey("primary key", ("id",)))
    _policy(mask_columns={"id": MaskRule(hash="sha256"), "e": MaskRule(text="x")}).check_table(
        schema, RowKey("primary key", ("id",)))  # a hashed key and a masked text column are fine


def test_a_ddl_that_takes_a_column_out_of_its_rule_stops_before_its_rows() -> None:
    policy = _policy(exclude_columns=["ssn"], mask_columns={"e": MaskRule(hash="sha256")})
    key = lambda schema: schema.row_key()  # noqa: E731
    at = BinlogPosition("bin.000001", 4)
    renamed = _schema("id int", "ssn2 char(9)", "e varchar(20)")
    with pytest.raises(ConfigError, match="ssn2"):
        policy.check_ddl(Ddl(at, "ALTER", "shop", {"shop.c": renamed}, column_renames={"shop.c": {"ssn": "ssn2"}}),
                         key)
    retyped = _schema("id int", "ssn char(9)", "e int")
    with pytest.raises(ConfigError, match="masks apply to text columns"):
        policy.check_ddl(Ddl(at, "ALTER", "shop", {"shop.c": retyped}), key)
    with pytest.raises(ConfigError, match="give tables.shop.d the same"):
        policy.check_ddl(Ddl(at, "RENAME", "shop", {"shop.d": renamed, "shop.c": None},
                             renamed_from={"shop.d": "shop.c"}), key)
    policy.check_ddl(Ddl(at, "ALTER", "shop", {"shop.c": _schema("id int", "ssn char(9)", "e varchar(40)")}), key)
