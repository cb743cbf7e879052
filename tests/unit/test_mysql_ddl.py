"""DDL parsing: every construct the binlog or SHOW CREATE TABLE can bring, applied to TableSchemas."""

from __future__ import annotations

import pytest
from cdclake.errors import DdlParseError
from cdclake.schema import TableSchema
from cdclake.sources.mysql.ddl import DdlOutcome, apply_ddl
from cdclake.sources.mysql.types import column_from_definition

from tests.unit.ddl_helpers import changed, make_table, reg


def table(
    name: str = "shop.t", cols: str = "id int, a varchar(10), b int", pk: tuple[str, ...] = ("id",)
) -> TableSchema:
    return make_table(name, cols, pk, column_from_definition)


def after(out: DdlOutcome, key: str = "shop.t") -> TableSchema:
    return changed(out, key)


def types_of(schema: TableSchema) -> list[tuple[str, str, str]]:
    return [(c.name, c.source_type, c.spark_type) for c in schema.columns]


# ---- CREATE TABLE --------------------------------------------------------------------------------

SHOW_CREATE = """CREATE TABLE `orders` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `flag` tinyint(1) DEFAULT NULL,
  `status` enum('new','paid','it''s') NOT NULL DEFAULT 'new' COMMENT 'order status',
  `tags` set('a','b') DEFAULT '',
  `amount` decimal(12,2) NOT NULL DEFAULT 0.00,
  `big` decimal(65,30) DEFAULT NULL,
  `ratio` float DEFAULT NULL,
  `score` double DEFAULT NULL,
  `created` timestamp(6) NOT NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),
  `local_at` datetime(3) DEFAULT NULL,
  `day` date DEFAULT NULL,
  `dur` time(6) DEFAULT NULL,
  `yr` year(4) DEFAULT NULL,
  `bits` bit(10) DEFAULT NULL,
  `one_bit` bit(1) DEFAULT b'0',
  `name` varchar(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,
  `note` text DEFAULT NULL,
  `raw` varbinary(16) DEFAULT NULL,
  `blob_col` longblob DEFAULT NULL,
  `doc` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`doc`)),
  `place` point DEFAULT NULL,
  `shape` geometry DEFAULT NULL,
  `code` char(3) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `u_code` (`code`),
  KEY `k_status` (`status`,`created`),
  KEY `k_name` (`name`(10)),
  CONSTRAINT `fk_x` FOREIGN KEY (`flag`) REFERENCES `other` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION,
  CONSTRAINT `chk_amount` CHECK (`amount` >= 0)
) ENGINE=InnoDB AUTO_INCREMENT=7 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci COMMENT='orders, (all)'"""


def test_show_create_table_as_mariadb_prints_it() -> None:
    out = apply_ddl(SHOW_CREATE, {}, "shop")
    assert not out.ignored
    s = after(out, "shop.orders")
    assert (s.database, s.table, s.primary_key) == ("shop", "orders", ["id"])
    assert types_of(s) == [
        ("id", "bigint(20) unsigned", "DECIMAL(20,0)"),
        ("flag", "tinyint(1)", "TINYINT"),
        ("status", "enum('new','paid','it''s')", "STRING"),
        ("tags", "set('a','b')", "STRING"),
        ("amount", "decimal(12,2)", "DECIMAL(12,2)"),
        ("big", "decimal(65,30)", "STRING"),
        ("ratio", "float", "FLOAT"),
        ("score", "double", "DOUBLE"),
        ("created", "timestamp(6)", "TIMESTAMP"),
        ("local_at", "datetime(3)", "TIMESTAMP_NTZ"),
        ("day", "date", "DATE"),
        ("dur", "time(6)", "BIGINT"),
        ("yr", "year(4)", "SMALLINT"),
        ("bits", "bit(10)", "BINARY"),
        ("one_bit", "bit(1)", "BOOLEAN"),
        ("name", "varchar(40)", "STRING"),
        ("note", "text", "STRING"),
        ("raw", "varbinary(16)", "BINARY"),
        ("blob_col", "longblob", "BINARY"),
        ("doc", "json", "STRING"),  # MariaDB's JSON: longtext + CHECK (json_valid(...))
        ("place", "point", "STRUCT<wkb: BINARY, srid: INT>"),
        ("shape", "geometry", "STRUCT<wkb: BINARY, srid: INT>"),
        ("code", "char(3)", "STRING"),
    ]
    status = s.column("status")
    assert status.attrs["enum_values"] == ["new", "paid", "it's"]
    assert (status.nullable, status.default) == (False, "'new'")
    assert s.column("id").nullable is False
    assert s.column("flag").default is None  # DEFAULT NULL is no default
    assert s.column("created").default == "current_timestamp(6)"
    assert s.column("one_bit").default == "b'0'"
    assert s.column("name").attrs["charset"] == "latin1"
    assert s.column("note").attrs["charset"] == "utf8mb4"  # table default
    assert s.column("raw").attrs["charset"] == "binary"
    assert s.column("created").attrs["fsp"] == 6
    assert s.column("big").attrs["precision"] == 65


def test_binlog_create_and_show_create_give_identical_columns() -> None:
    binlog = apply_ddl(
        "CREATE TABLE shop.t (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, ok BOOLEAN, n INTEGER, d NUMERIC(5,2),"
        " j JSON, x DOUBLE PRECISION, c CHAR, y YEAR, dt DATETIME(0)) DEFAULT CHARSET=utf8mb4",
        {},
        None,
    )
    show = apply_ddl(
        "CREATE TABLE `t` (\n  `id` bigint(20) unsigned NOT NULL,\n  `ok` tinyint(1) DEFAULT NULL,\n"
        "  `n` int(11) DEFAULT NULL,\n  `d` decimal(5,2) DEFAULT NULL,\n"
        "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
        "  `x` double DEFAULT NULL,\n  `c` char(1) DEFAULT NULL,\n  `y` year(4) DEFAULT NULL,\n"
        "  `dt` datetime DEFAULT NULL,\n  PRIMARY KEY (`id`)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
        {},
        "shop",
    )
    assert after(binlog) == after(show)
    assert [c.attrs for c in after(binlog).columns] == [c.attrs for c in after(show).columns]


def test_create_table_inline_primary_key_and_if_not_exists() -> None:
    out = apply_ddl("CREATE TABLE IF NOT EXISTS `db`.`Items` (id INT PRIMARY KEY, v TEXT)", {}, "other")
    s = after(out, "db.Items")
    assert s.primary_key == ["id"] and s.column_names == ["id", "v"]
    existing = reg(table("db.items"))
    again = apply_ddl("CREATE TABLE IF NOT EXISTS db.ITEMS (x int)", existing, None)
    assert again.ignored and again.changes == {}


def test_create_table_composite_pk_and_ignored_clauses() -> None:
    out = apply_ddl(
        "CREATE TABLE t (a INT NOT NULL, b VARCHAR(5) NOT NULL, c INT, "
        "CONSTRAINT pk PRIMARY KEY USING BTREE (a, b(3)), UNIQUE INDEX u (c), INDEX (c), FULLTEXT KEY f (b), "
        "FOREIGN KEY (c) REFERENCES p(id), CHECK (c > 0)) ENGINE=InnoDB",
        {},
        "shop",
    )
    assert after(out).primary_key == ["a", "b"]
    assert after(out).column_names == ["a", "b", "c"]


def test_create_table_column_charset_collate_comment_and_binary_charset() -> None:
    out = apply_ddl(
        "CREATE TABLE t (a VARCHAR(10) CHARACTER SET latin1 COMMENT 'x', b TEXT COLLATE utf8mb3_bin, "
        "c VARCHAR(8) CHARSET binary, d TEXT CHARACTER SET binary, e CHAR(2) BINARY) CHARSET=latin1",
        {},
        "shop",
    )
    s = after(out)
    assert [c.attrs["charset"] for c in s.columns] == ["latin1", "utf8mb3", "binary", "binary", "latin1"]
    assert types_of(s)[2:4] == [("c", "varbinary(8)", "BINARY"), ("d", "blob", "BINARY")]
    assert s.column("e").spark_type == "STRING"  # BINARY attribute = binary collation, still text


def test_create_table_like_copies_the_schema() -> None:
    src = table("shop.src")
    out = apply_ddl("CREATE TABLE shop.copy LIKE shop.src", reg(src), None)
    assert after(out, "shop.copy").columns == src.columns
    assert after(out, "shop.copy").table == "copy"
    out2 = apply_ddl("CREATE TABLE copy2 (LIKE src)", reg(src), "shop")
    assert after(out2, "shop.copy2").column_names == src.column_names


def test_create_table_generated_and_auto_increment_columns() -> None:
    out = apply_ddl(
        "CREATE TABLE t (id SERIAL, a INT, b INT GENERATED ALWAYS AS (a + 1) VIRTUAL, "
        "c INT AS (a * 2) PERSISTENT, d INT AUTO_INCREMENT UNIQUE KEY)",
        {},
        "shop",
    )
    assert types_of(after(out))[0] == ("id", "bigint(20) unsigned", "DECIMAL(20,0)")
    assert after(out).column_names == ["id", "a", "b", "c", "d"]


def test_create_temporary_table_and_create_select_without_columns() -> None:
    assert apply_ddl("CREATE TEMPORARY TABLE tmp (a int)", {}, "shop").ignored
    with pytest.raises(DdlParseError):
        apply_ddl("CREATE TABLE t2 SELECT * FROM t", {}, "shop")


def test_leading_and_inline_comments() -> None:
    out = apply_ddl(
        "/* ApplicationName=DBeaver */ -- note\n# hash comment\nCREATE TABLE t (a INT /* inline */, "
        "b INT /*!50100 COMMENT 'exec' */)",
        {},
        "shop",
    )
    assert after(out).column_names == ["a", "b"]
    dropped = apply_ddl("DROP TABLE `t` /* generated by server */", reg(table()), "shop")
    assert dropped.changes == {"shop.t": None}


# ---- ALTER TABLE ---------------------------------------------------------------------------------


def test_alter_add_column_positions() -> None:
    r = reg(table())
    assert after(apply_ddl("ALTER TABLE t ADD COLUMN c INT", r, "shop")).column_names == ["id", "a", "b", "c"]
    assert after(apply_ddl("ALTER TABLE t ADD c INT FIRST", r, "shop")).column_names == ["c", "id", "a", "b"]
    out = apply_ddl("ALTER TABLE shop.t ADD COLUMN c DATETIME(6) NOT NULL AFTER a", r, None)
    assert after(out).column_names == ["id", "a", "c", "b"]
    assert after(out).column("c").spark_type == "TIMESTAMP_NTZ"
    assert after(out).column("c").nullable is False
    assert r["shop.t"].column_names == ["id", "a", "b"]  # input not mutated


def test_alter_add_column_list() -> None:
    out = apply_ddl("ALTER TABLE t ADD COLUMN (c INT, d DECIMAL(40,2))", reg(table()), "shop")
    assert types_of(after(out))[3:] == [("c", "int(11)", "INT"), ("d", "decimal(40,2)", "STRING")]
    out = apply_ddl("ALTER TABLE t ADD (e TINYINT UNSIGNED)", reg(table()), "shop")
    assert types_of(after(out))[3] == ("e", "tinyint(3) unsigned", "SMALLINT")


def test_alter_drop_column_and_if_exists() -> None:
    r = reg(table())
    assert after(apply_ddl("ALTER TABLE t DROP COLUMN a", r, "shop")).column_names == ["id", "b"]
    assert after(apply_ddl("ALTER TABLE t DROP b", r, "shop")).column_names == ["id", "a"]
    out = apply_ddl("ALTER TABLE t DROP COLUMN IF EXISTS nope", r, "shop")
    assert out.ignored and out.changes == {}
    with pytest.raises(DdlParseError):
        apply_ddl("ALTER TABLE t DROP COLUMN nope", r, "shop")


def test_alter_modify_column_keeps_place_or_moves() -> None:
    r = reg(table())
    out = apply_ddl("ALTER TABLE t MODIFY COLUMN a VARCHAR(200) NOT NULL", r, "shop")
    assert after(out).column_names == ["id", "a", "b"]
    assert (after(out).column("a").source_type, after(out).column("a").nullable) == ("varchar(200)", False)
    out = apply_ddl("ALTER TABLE t MODIFY b BIGINT UNSIGNED FIRST", r, "shop")
    assert types_of(after(out))[0] == ("b", "bigint(20) unsigned", "DECIMAL(20,0)")
    out = apply_ddl("ALTER TABLE t MODIFY id INT AFTER b", r, "shop")
    assert after(out).column_names == ["a", "b", "id"]


def test_alter_change_column_renames_and_retypes() -> None:
    out = apply_ddl("ALTER TABLE t CHANGE COLUMN id order_id BIGINT NOT NULL", reg(table()), "shop")
    s = after(out)
    assert s.column_names == ["order_id", "a", "b"]
    assert s.primary_key == ["order_id"]
    assert s.column("order_id").spark_type == "BIGINT"
    out = apply_ddl("ALTER TABLE t CHANGE a a2 TEXT AFTER b", reg(table()), "shop")
    assert after(out).column_names == ["id", "b", "a2"]


def test_alter_rename_column() -> None:
    out = apply_ddl("ALTER TABLE t RENAME COLUMN id TO ident, RENAME COLUMN b TO bb", reg(table()), "shop")
    assert after(out).column_names == ["ident", "a", "bb"]
    assert after(out).primary_key == ["ident"]
    assert after(out).column("ident").source_type == "int(11)"


def test_alter_column_set_and_drop_default() -> None:
    stmt = "ALTER TABLE t ALTER COLUMN b SET DEFAULT 5, ALTER a SET DEFAULT 'x'"
    out = apply_ddl(stmt, reg(table()), "shop")
    assert (after(out).column("b").default, after(out).column("a").default) == ("5", "'x'")
    out2 = apply_ddl("ALTER TABLE t ALTER b DROP DEFAULT", reg(after(out)), "shop")
    assert after(out2).column("b").default is None


def test_alter_primary_key_add_and_drop() -> None:
    r = reg(table())
    assert after(apply_ddl("ALTER TABLE t DROP PRIMARY KEY", r, "shop")).primary_key == []
    out = apply_ddl("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (`a`, B)", r, "shop")
    assert after(out).primary_key == ["a", "b"]
    assert after(out).column("b").nullable is False
    out = apply_ddl("ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY (b)", reg(table(pk=())), "shop")
    assert after(out).primary_key == ["b"]


def test_alter_index_and_constraint_clauses_change_no_column() -> None:
    r = reg(table())
    for spec in (
        "ADD INDEX i (a)",
        "ADD KEY (a, b)",
        "ADD FULLTEXT INDEX ft (a)",
        "ADD CONSTRAINT fk FOREIGN KEY (b) REFERENCES o (id) ON DELETE SET NULL",
        "ADD FOREIGN KEY (b) REFERENCES o (id)",
        "ADD CONSTRAINT c CHECK (b > 0)",
        "DROP INDEX i",
        "DROP KEY i",
        "DROP FOREIGN KEY fk",
        "DROP CONSTRAINT c",
        "DROP CHECK c",
        "RENAME INDEX i TO j",
        "ALTER INDEX i INVISIBLE",
    ):
        out = apply_ddl(f"ALTER TABLE t {spec}", r, "shop")
        assert out.ignored and out.changes == {}, spec


def test_unique_keys_are_tracked_and_give_the_row_key() -> None:
    """Unique keys as MySQL names them; the row key is the first all-NOT-NULL one, full keys before
    prefix keys (the order SHOW CREATE TABLE lists them in), whatever the statement's order."""
    out = apply_ddl("CREATE TABLE t (a int, b varchar(9) NOT NULL, c int NOT NULL UNIQUE, "
                    "UNIQUE (b(3)), UNIQUE KEY (a), CONSTRAINT uk UNIQUE (b, c))", {}, "shop")
    t = out.changes["shop.t"]
    assert [(k.name, k.columns, k.prefix) for k in t.unique_keys] == [
        ("c", ("c",), False), ("b", ("b",), True), ("a", ("a",), False), ("uk", ("b", "c"), False)]
    assert t.row_key().describe() == "unique key c (c)"
    shown = apply_ddl("CREATE TABLE t (a int, b varchar(9) NOT NULL, c int NOT NULL, UNIQUE KEY uk (b, c), "
                      "UNIQUE KEY c (c), UNIQUE KEY a (a), UNIQUE KEY b (b(3)))", {}, "shop").changes["shop.t"]
    assert shown.row_key().describe() == "unique key uk (b, c)"  # the first full NOT NULL key listed
    steps = [
        ("ALTER TABLE t DROP INDEX c", "unique key uk (b, c)"),
        ("ALTER TABLE t RENAME INDEX uk TO uk2, CHANGE b bb varchar(9) NOT NULL", "unique key uk2 (bb, c)"),
        ("ALTER TABLE t DROP COLUMN c", "unique key uk2 (bb)"),
        ("DROP INDEX uk2 ON t", "unique key b (bb)"),
        ("ALTER TABLE t MODIFY bb varchar(9) NULL", "none (rows kept as a multiset)"),
        ("CREATE UNIQUE INDEX ux ON t (a)", "none (rows kept as a multiset)"),
        ("ALTER TABLE t MODIFY a int NOT NULL", "unique key a (a)"),
        ("ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY (bb)", "primary key (bb)"),
    ]
    for statement, key in steps:
        out = apply_ddl(statement, {"shop.t": t}, "shop")
        t = out.changes["shop.t"]
        assert t.row_key().describe() == key, statement
    assert type(t).from_json(t.to_json()) == t


def test_alter_table_options_algorithm_lock_engine_are_no_change() -> None:
    out = apply_ddl(
        "ALTER TABLE t ENGINE=InnoDB, ALGORITHM=INPLACE, LOCK=NONE, AUTO_INCREMENT=10, COMMENT='x', FORCE",
        reg(table()),
        "shop",
    )
    assert out.ignored and out.changes == {}
    out = apply_ddl("ALTER TABLE t ADD COLUMN c INT, ALGORITHM=INSTANT", reg(table()), "shop")
    assert after(out).column_names == ["id", "a", "b", "c"]


def test_alter_convert_to_character_set_keeps_columns_updates_charset() -> None:
    out = apply_ddl("ALTER TABLE t CONVERT TO CHARACTER SET latin1 COLLATE latin1_bin", reg(table()), "shop")
    s = after(out)
    assert types_of(s) == types_of(table())
    assert s.column("a").attrs["charset"] == "latin1"


def test_alter_rename_table() -> None:
    for stmt in ("ALTER TABLE t RENAME TO t2", "ALTER TABLE t RENAME AS t2", "ALTER TABLE t RENAME t2"):
        out = apply_ddl(stmt, reg(table()), "shop")
        assert out.changes["shop.t"] is None
        assert after(out, "shop.t2").table == "t2"
        assert out.renamed_from == {"shop.t2": "shop.t"}
    out = apply_ddl("ALTER TABLE t ADD c INT, RENAME TO other.t3", reg(table()), "shop")
    assert after(out, "other.t3").column_names == ["id", "a", "b", "c"]
    assert out.renamed_from == {"other.t3": "shop.t"}


def test_alter_many_specs_in_one_statement() -> None:
    out = apply_ddl(
        "ALTER TABLE `shop`.`t` ADD COLUMN c INT AFTER id, DROP COLUMN b, MODIFY a TEXT, "
        "CHANGE COLUMN c c2 SMALLINT UNSIGNED, ADD INDEX (a(5)), ALGORITHM=COPY",
        reg(table()),
        None,
    )
    assert types_of(after(out)) == [
        ("id", "int(11)", "INT"),
        ("c2", "smallint(5) unsigned", "INT"),
        ("a", "text", "STRING"),
    ]


def test_alter_unknown_table_is_ignored() -> None:
    out = apply_ddl("ALTER TABLE nope ADD COLUMN c INT", reg(table()), "shop")
    assert out.ignored and out.changes == {}


def test_alter_table_name_matching_is_case_insensitive_and_keeps_source_spelling() -> None:
    r = reg(table("Shop.Orders"))
    out = apply_ddl("ALTER TABLE shop.orders ADD c INT", r, None)
    assert list(out.changes) == ["Shop.Orders"]


def test_alter_modify_text_column_keeps_table_charset() -> None:
    r = reg(table(cols="id int, a varchar(10) character set latin1, b int"))
    out = apply_ddl("ALTER TABLE t MODIFY a VARCHAR(20), ADD c TEXT", r, "shop")
    assert after(out).column("a").attrs["charset"] == "latin1"
    assert after(out).column("c").attrs["charset"] == "latin1"
    out = apply_ddl("ALTER TABLE t MODIFY a VARCHAR(20) CHARACTER SET utf8mb4", r, "shop")
    assert after(out).column("a").attrs["charset"] == "utf8mb4"


# ---- DROP / RENAME / TRUNCATE ---------------------------------------------------------------------


def test_drop_tables() -> None:
    r = reg(table("shop.a"), table("other.b"))
    out = apply_ddl("DROP TABLE IF EXISTS a, other.b, shop.unknown", r, "shop")
    assert out.changes == {"shop.a": None, "other.b": None}
    assert "shop.a" in r  # not mutated
    assert apply_ddl("DROP TABLE nope", r, "shop").ignored
    assert apply_ddl("DROP TEMPORARY TABLE IF EXISTS a", r, "shop").ignored


def test_rename_tables_including_swap() -> None:
    a, b = table("shop.a", "id int"), table("shop.b", "id int, x int")
    out = apply_ddl("RENAME TABLE a TO a_old, shop.b TO other.b2", reg(a, b), "shop")
    assert out.changes["shop.a"] is None and out.changes["shop.b"] is None
    assert after(out, "shop.a_old").column_names == ["id"]
    assert after(out, "other.b2").database == "other"
    assert out.renamed_from == {"shop.a_old": "shop.a", "other.b2": "shop.b"}
    swap = apply_ddl("RENAME TABLE a TO tmp, b TO a, tmp TO b", reg(a, b), "shop")
    assert after(swap, "shop.a").column_names == ["id", "x"]
    assert after(swap, "shop.b").column_names == ["id"]
    assert swap.renamed_from == {"shop.a": "shop.b", "shop.b": "shop.a"}
    assert "shop.tmp" not in swap.changes


def test_truncate() -> None:
    r = reg(table())
    assert apply_ddl("TRUNCATE TABLE t", r, "shop").truncated == ["shop.t"]
    out = apply_ddl("truncate shop.T", r, None)
    assert out.truncated == ["shop.t"] and not out.ignored and out.changes == {}
    assert apply_ddl("TRUNCATE other", r, "shop").ignored


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE DATABASE shop2",
        "CREATE SCHEMA IF NOT EXISTS s CHARACTER SET utf8mb4",
        "CREATE INDEX i ON t (a)",
        "CREATE UNIQUE INDEX i ON other (a)",
        "DROP INDEX i ON t",
        "GRANT SELECT ON *.* TO 'u'@'%'",
        "CREATE USER 'u'@'%' IDENTIFIED BY 'p'",
        "SAVEPOINT sp1",
        "ANALYZE TABLE t",
        "FLUSH TABLES",
        "SET @x = 1",
        "CREATE OR REPLACE VIEW v AS SELECT * FROM t",
        "CREATE DEFINER=`root`@`localhost` PROCEDURE p() BEGIN SELECT 1; END",
        "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
        "DROP VIEW v",
        "ALTER DATABASE shop CHARACTER SET utf8mb4",
        "RENAME USER a TO b",
    ],
)
def test_statements_that_do_not_shape_tables_are_ignored(statement: str) -> None:
    out = apply_ddl(statement, reg(table()), "shop")
    assert out.ignored and out.changes == {} and out.truncated == []


@pytest.mark.parametrize("statement", ["DROP DATABASE shop", "DROP SCHEMA IF EXISTS `shop`"])
def test_dropping_the_database_drops_its_tables(statement: str) -> None:
    out = apply_ddl(statement, {**reg(table()), "other.u": table().renamed("other", "u")}, None)
    assert out.changes == {"shop.t": None}


# ---- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t ADD COLUMN c FANCYTYPE",
        "ALTER TABLE t FROBNICATE a",
        "ALTER TABLE t MODIFY nope INT",
        "ALTER TABLE t ADD COLUMN c INT AFTER nope",
        "ALTER TABLE t ADD COLUMN a INT",
        "CREATE TABLE x (a INT WHATEVER)",
        "CREATE TABLE x (a VARCHAR(10)",
    ],
)
def test_unparsable_statement_raises(statement: str) -> None:
    with pytest.raises(DdlParseError) as err:
        apply_ddl(statement, reg(table()), "shop")
    assert err.value.statement == statement
    assert err.value.position == "?"


@pytest.mark.parametrize(("statement", "reread", "created", "gone"), [
    ("ALTER TABLE t DROP PARTITION p0, `p1`", ["shop.t"], [], []),
    ("ALTER TABLE t TRUNCATE PARTITION p0, p1, ALGORITHM=INPLACE", ["shop.t"], [], []),
    ("ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u", ["shop.t", "shop.u"], [], []),
    ("ALTER TABLE t CONVERT PARTITION p0 TO TABLE n", ["shop.n", "shop.t"], ["shop.n"], []),
    ("ALTER TABLE t CONVERT TABLE u TO PARTITION p9 VALUES LESS THAN (100)", ["shop.t"], [], ["shop.u"]),
])
def test_partition_statements_that_move_rows_without_row_events_ask_for_a_reread(
        statement: str, reread: list[str], created: list[str], gone: list[str]) -> None:
    out = apply_ddl(statement, {**reg(table()), "shop.u": table().renamed("shop", "u")}, "shop")
    assert sorted(out.reread) == reread and out.created == created
    assert [t for t, s in out.changes.items() if s is None] == gone


@pytest.mark.parametrize("statement", [
    "ALTER TABLE t PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (3), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "ALTER TABLE t REMOVE PARTITIONING", "ALTER TABLE t ANALYZE PARTITION p0, p1", "ALTER TABLE t COALESCE PARTITION 2",
])
def test_partitioning_that_moves_no_row_changes_nothing(statement: str) -> None:
    out = apply_ddl(statement, reg(table()), "shop")
    assert out.ignored and not out.reread


def test_partition_options_after_the_last_clause_are_not_part_of_it() -> None:
    out = apply_ddl("ALTER TABLE t ADD COLUMN x INT PARTITION BY HASH(id) PARTITIONS 4", reg(table()), "shop")
    assert out.changes["shop.t"].column_names[-1] == "x" and not out.reread


def test_create_index_makes_no_table_and_create_table_does() -> None:
    assert apply_ddl("CREATE UNIQUE INDEX u ON t (id)", reg(table()), "shop").created == []
    assert apply_ddl("CREATE TABLE n LIKE t", reg(table()), "shop").created == ["shop.n"]
    assert apply_ddl("CREATE OR REPLACE TABLE t (id INT)", reg(table()), "shop").created == ["shop.t"]


def test_unqualified_name_without_default_database_raises() -> None:
    with pytest.raises(DdlParseError, match="no default database"):
        apply_ddl("CREATE TABLE t (a INT)", {}, None)
