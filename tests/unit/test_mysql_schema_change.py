"""What a MySQL schema change did to existing rows: the values the server gave them, or a re-read."""

from __future__ import annotations

import pytest
from cdclake.schema import TableSchema
from cdclake.sources.mysql.ddl import apply_ddl, tables_named
from cdclake.sources.mysql.schema_change import NotEvaluable, conversion_is_exact, evaluation_sql, existing_rows
from cdclake.sources.mysql.types import MySqlTypeMapper
from cdclake.sources.mysql.types import column_from_definition as col

BASE = TableSchema("db", "t", [col("id", "int", nullable=False), col("a", "int"), col("b", "varchar(20)"),
                               col("dt", "datetime(3)")], ["id"])


def _after(statement: str) -> tuple[TableSchema, dict[str, str]]:
    out = apply_ddl(statement, {"db.t": BASE}, "db")
    return out.changes["db.t"], out.column_renames.get("db.t", {})  # type: ignore[return-value]


def _server(values: dict[str, object]):  # type: ignore[no-untyped-def]
    def evaluate(default: str, column):  # type: ignore[no-untyped-def]
        evaluation_sql(default, column, MySqlTypeMapper())  # refuses what only a re-read knows
        return values[default]
    return evaluate


@pytest.mark.parametrize(("statement", "fill"), [
    ("ALTER TABLE t ADD COLUMN n INT DEFAULT 5", "5"),
    ("ALTER TABLE t ADD COLUMN n TIMESTAMP NOT NULL DEFAULT '2021-06-01 12:00:00'", 1622530800000000),
    ("ALTER TABLE t ADD COLUMN n INT DEFAULT (1 + 2)", 3),
])
def test_an_added_column_keeps_the_value_the_server_gave_existing_rows(statement: str, fill: object) -> None:
    new, renames = _after(statement)
    default = new.columns[-1].default
    schema, reread = existing_rows(BASE, new, renames, _server({default: fill}))
    assert reread is None and schema.columns[-1].attrs["fill"] == fill
    sql = MySqlTypeMapper().initial_value_sql(schema.columns[-1])
    assert sql is not None and str(fill) in sql


@pytest.mark.parametrize(("statement", "why"), [
    ("ALTER TABLE t ADD COLUMN n INT DEFAULT (a * 2)", "cannot evaluate"),
    ("ALTER TABLE t ADD COLUMN n VARCHAR(36) DEFAULT (UUID())", "its own value"),
    ("ALTER TABLE t ADD COLUMN n DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6)", "whole seconds"),
    ("ALTER TABLE t ADD COLUMN g INT AS (a + 1) VIRTUAL", "generated"),
    ("ALTER TABLE t MODIFY b INT", "converted"),
    ("ALTER TABLE t MODIFY dt DATETIME", "converted"),
])
def test_a_change_the_log_does_not_carry_asks_for_a_re_read(statement: str, why: str) -> None:
    new, renames = _after(statement)

    def evaluate(default: str, column):  # type: ignore[no-untyped-def]
        evaluation_sql(default, column, MySqlTypeMapper())
        raise NotEvaluable("the server cannot evaluate it alone (Unknown column 'a')")

    _, reread = existing_rows(BASE, new, renames, evaluate)
    assert reread is not None and why in reread


@pytest.mark.parametrize(("old", "new", "exact"), [
    ("int", "bigint", True), ("int", "varchar(20)", True), ("int", "decimal(12,2)", True),
    ("decimal(10,2)", "decimal(8,1)", True), ("float", "double", True), ("varchar(5)", "enum('a','b')", True),
    ("date", "datetime", True), ("datetime(3)", "datetime(6)", True), ("varchar(5)", "int", False),
    ("double", "decimal(10,2)", False), ("date", "timestamp", False), ("datetime(6)", "datetime(2)", False),
    ("timestamp", "datetime", False), ("blob", "text", False),
])
def test_conversions_the_lake_repeats_exactly(old: str, new: str, exact: bool) -> None:
    assert conversion_is_exact(col("c", old), col("c", new)) is exact


def test_renamed_and_unchanged_columns_need_nothing() -> None:
    new, renames = _after("ALTER TABLE t CHANGE b b2 VARCHAR(40), ALTER COLUMN a SET DEFAULT 3")
    assert existing_rows(BASE, new, renames, _server({})) == (new, None)


@pytest.mark.parametrize(("statement", "tables"), [
    ("ALTER TABLE `truncate` TRUNCATE PARTITION p0", ["db.truncate"]),  # a keyword-named table, not TRUNCATE
    ("ALTER TABLE t FROBNICATE, RENAME TO t2", ["db.t", "db.t2"]),
    ("RENAME TABLE t TO t2, db.u TO u2", ["db.t", "db.t2", "db.u", "db.u2"]),
    ("DROP TABLE IF EXISTS t, other.v", ["db.t", "other.v"]),
    ("TRUNCATE t", ["db.t"]),
    ("CREATE TABLE IF NOT EXISTS n (x WEIRD)", ["db.n"]),
    ("CREATE UNIQUE INDEX i ON t (a)", ["db.t"]),
    ("DROP DATABASE db", ["db.t", "db.u"]),
    ("GRANT ALL ON t TO x", []),
])
def test_the_tables_an_unappliable_statement_may_have_changed(statement: str, tables: list[str]) -> None:
    known = {"db.t": BASE, "db.u": BASE.renamed("db", "u"), "other.v": BASE.renamed("other", "v")}
    assert tables_named(statement, "db", known) == tables


def test_if_not_exists_is_read_in_every_clause() -> None:
    new, _ = _after("ALTER TABLE t ADD COLUMN IF NOT EXISTS a INT, ADD COLUMN IF NOT EXISTS n INT, "
                    "ADD UNIQUE KEY IF NOT EXISTS uk (n)")
    assert new.column_names == ["id", "a", "b", "dt", "n"]
    again = apply_ddl("ALTER TABLE t ADD UNIQUE KEY IF NOT EXISTS uk (a)", {"db.t": new}, "db").changes["db.t"]
    assert [k.columns for k in again.unique_keys] == [("n",)]  # type: ignore[union-attr]


def test_create_like_of_a_table_not_captured_cannot_be_applied() -> None:
    from cdclake.errors import DdlParseError

    with pytest.raises(DdlParseError, match="not a captured table"):
        apply_ddl("CREATE TABLE n LIKE elsewhere", {"db.t": BASE}, "db")
