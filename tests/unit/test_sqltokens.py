"""The shared SQL tokenizer and token cursor, with the MySQL and Oracle dialects the DDL parsers use."""

from __future__ import annotations

import doctest
import pickle

import pytest
from cdclake import sqltokens
from cdclake.sources.mysql.ddl import MYSQL_DIALECT
from cdclake.sources.oracle.ddl import ORACLE_DIALECT
from cdclake.sqltokens import SqlDialect, SqlParseError, Token, TokenCursor, tokenize

MYSQL, ORACLE, ANSI = MYSQL_DIALECT, ORACLE_DIALECT, SqlDialect()


def kinds(sql: str, dialect: SqlDialect) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(sql, dialect)]


def cursor(sql: str, dialect: SqlDialect = ANSI) -> TokenCursor:
    return TokenCursor(sql, tokenize(sql, dialect))


def test_module_doctest() -> None:
    result = doctest.testmod(sqltokens)
    assert result.attempted > 0 and result.failed == 0


# ---- tokens ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", [MYSQL, ORACLE, ANSI], ids=["mysql", "oracle", "ansi"])
def test_token_spans_are_the_source_text(dialect: SqlDialect) -> None:
    sql = "CREATE TABLE t (a NUMBER(5, 2) DEFAULT 'it''s', b INT) -- trailing comment"
    toks = tokenize(sql, dialect)
    assert [sql[t.start : t.end] for t in toks] == [
        "CREATE", "TABLE", "t", "(", "a", "NUMBER", "(", "5", ",", "2", ")", "DEFAULT", "'it''s'", ",", "b",
        "INT", ")",
    ]
    start = sql.index("'it")
    assert toks[12] == Token("str", "it's", start, start + len("'it''s'"), "it's")


def test_mysql_quoting_escapes_and_literals() -> None:
    sql = r"""`a``b` 'x\'y\n' "dq""s" b'0101' X'1F' 'a''b'"""
    assert kinds(sql, MYSQL) == [
        ("ident", "a`b"), ("str", "x'y\n"), ("str", 'dq"s'), ("lit", "b'0101'"), ("lit", "X'1F'"), ("str", "a'b"),
    ]


def test_mysql_numbers_and_digit_led_names() -> None:
    assert kinds("12 0.00 1e5 0x1F .5", MYSQL) == [("num", v) for v in ["12", "0.00", "1e5", "0x1F", ".5"]]
    # a number that runs on into name characters is a name; '12.t' is database 12, table t
    assert kinds("1col 12abc 12.t t.5x", MYSQL) == [
        ("word", "1col"), ("word", "12abc"), ("word", "12"), ("punct", "."), ("word", "t"),
        ("word", "t"), ("punct", "."), ("word", "5x"),
    ]


def test_mysql_comments() -> None:
    sql = "a # hash\nb -- dash\nc --d /* block */ e /*!50100 f */ g /*M!100200 h*/"
    assert kinds(sql, MYSQL) == [
        ("word", "a"), ("word", "b"), ("word", "c"), ("punct", "-"), ("punct", "-"), ("word", "d"),
        ("word", "e"), ("word", "f"), ("word", "g"), ("word", "h"),
    ]
    assert kinds("a /* never closed", MYSQL) == [("word", "a")]  # MySQL: runs to the end


def test_mysql_keeps_the_case_of_unquoted_names() -> None:
    cur = cursor("Shop.Orders", MYSQL)
    assert cur.qualified_name() == ("Shop", "Orders")


def test_oracle_quoting() -> None:
    sql = """"Mixed Case" q'[it's]' nq'{x}' Q'!a!' N'n''s' 'a\\b'"""
    assert kinds(sql, ORACLE) == [
        ("ident", "Mixed Case"), ("str", "it's"), ("str", "x"), ("str", "a"), ("str", "n's"), ("str", "a\\b"),
    ]
    # Oracle names cannot hold '"': two quoted names side by side stay two names
    assert kinds('"A""B"', ORACLE) == [("ident", "A"), ("ident", "B")]
    assert kinds('"A""B"', ANSI) == [("ident", 'A"B')]


def test_oracle_words_numbers_and_terminators() -> None:
    assert kinds("SYS_C$1#x 1.5f 2D .5 1e-3 12abc; /", ORACLE) == [
        ("word", "SYS_C$1#x"), ("num", "1.5f"), ("num", "2D"), ("num", ".5"), ("num", "1e-3"), ("num", "12"),
        ("word", "abc"),
    ]
    assert kinds("a --no space needed\nb ;", ORACLE) == [("word", "a"), ("word", "b")]


def test_oracle_folds_unquoted_names_to_upper_case() -> None:
    toks = tokenize('hr."Emp" emp', ORACLE)
    assert [t.name for t in toks] == ["HR", ".", "Emp", "EMP"]
    assert [t.text for t in toks] == ["hr", ".", "Emp", "emp"]
    assert cursor('hr."Emp"', ORACLE).qualified_name() == ("HR", "Emp")
    assert cursor("hr.emp", SqlDialect(unquoted_case="lower")).qualified_name() == ("hr", "emp")


def test_the_same_text_in_both_dialects() -> None:
    sql = """"x" `y` # z"""
    assert kinds(sql, MYSQL) == [("str", "x"), ("ident", "y")]
    assert kinds(sql, ORACLE) == [
        ("ident", "x"), ("punct", "`"), ("word", "y"), ("punct", "`"), ("punct", "#"), ("word", "z"),
    ]


def test_keyword_tests_ignore_case_but_not_quoted_names() -> None:
    word, quoted = tokenize('select "SELECT"', ANSI)
    assert word.is_("SELECT") and word.up == "SELECT" and word.is_name
    assert not quoted.is_("SELECT") and quoted.up == "" and quoted.is_name


# ---- tokenizer errors carry the offset --------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "dialect", "reason", "offset"),
    [
        ("a 'open", MYSQL, "unterminated string", 2),
        ("a `open", MYSQL, "unterminated quoted identifier", 2),
        ("ab x'1F", MYSQL, "unterminated literal", 3),
        ("a 'x\\'", MYSQL, "unterminated string", 2),  # the backslash escapes the closing quote
        ("a 'open", ORACLE, "unterminated string", 2),
        ('a "open', ORACLE, "unterminated quoted identifier", 2),
        ('t ""', ORACLE, "empty quoted identifier", 2),
        ("x q'[never", ORACLE, "unterminated q-quoted string", 2),
        ("x /* never", ORACLE, "unterminated comment", 2),
    ],
)
def test_tokenizer_errors(sql: str, dialect: SqlDialect, reason: str, offset: int) -> None:
    with pytest.raises(SqlParseError) as err:
        tokenize(sql, dialect)
    assert err.value.offset == offset
    assert str(err.value) == f"{reason} at offset {offset}"


def test_empty_quoted_names_are_fine_where_the_dialect_allows_them() -> None:
    assert kinds("``", MYSQL) == [("ident", "")]


# ---- cursor ------------------------------------------------------------------------------------------


def test_accept_takes_a_whole_word_sequence_or_nothing() -> None:
    cur = cursor("if not exists t")
    assert not cur.accept("IF", "EXISTS") and cur.i == 0
    assert cur.accept("IF", "NOT", "EXISTS") and cur.peek_text() == "t"
    assert not cur.accept_any("NOPE", "T X") and cur.accept_any("NOPE", "T")
    assert cur.at_end() and cur.peek() is None and cur.peek_text() == "end of statement"


def test_punctuation() -> None:
    cur = cursor("= (")
    assert not cur.accept_punct("(") and cur.peek_punct("=") and cur.accept_punct("=")
    cur.expect_punct("(")
    assert cur.at_end()


def test_split_group_returns_depth_zero_items() -> None:
    sql = "(a INT, b DECIMAL(10, 2), , c) tail"
    cur = cursor(sql)
    items = cur.split_group()
    assert [cur.text(it[0], it[-1]) for it in items] == ["a INT", "b DECIMAL(10, 2)", "c"]
    assert cur.peek_text() == "tail"


def test_split_rest_splits_at_depth_zero_commas_and_drops_semicolons() -> None:
    cur = cursor("ADD x INT, DROP (a, b), ENGINE=InnoDB;", MYSQL)
    cur.accept("ADD")
    assert [[t.text for t in item] for item in cur.split_rest()] == [
        ["x", "INT"], ["DROP", "(", "a", ",", "b", ")"], ["ENGINE", "=", "InnoDB"],
    ]
    assert cur.at_end()


def test_take_until_stops_only_at_depth_zero() -> None:
    cur = cursor("a (b STOP) c STOP d")
    taken = cur.take_until(lambda c: c.peek_is("STOP"))
    assert [t.text for t in taken] == ["a", "(", "b", "STOP", ")", "c"]
    assert cur.peek_text() == "STOP"


def test_cursor_errors_point_at_the_token() -> None:
    sql = "ALTER TABLE t ADD x"
    cur = cursor(sql)
    cur.accept("ALTER", "TABLE")
    with pytest.raises(SqlParseError, match=r"^expected '\(' but found 't'$") as err:
        cur.expect_punct("(")
    assert err.value.offset == sql.index("t ADD")
    assert cur.qualified_name() == (None, "t") and cur.accept("ADD")
    cur.next()
    with pytest.raises(SqlParseError, match="^unexpected end of statement$") as err:
        cur.next()
    assert err.value.offset == len(sql)


def test_name_rejects_other_tokens() -> None:
    cur = cursor("a, b")
    cur.next()
    with pytest.raises(SqlParseError, match="^expected a name but found ','$") as err:
        cur.name()
    assert err.value.offset == 1 and cur.i == 1  # the cursor stays at the offending token


def test_unbalanced_groups() -> None:
    with pytest.raises(SqlParseError, match="unbalanced") as err:
        cursor("a) b").take_until(lambda c: False)
    assert err.value.offset == 1
    cur = cursor("(a, (b)")
    with pytest.raises(SqlParseError, match="unexpected end of statement") as err:
        cur.split_group()
    assert err.value.offset == len("(a, (b)")


def test_a_cursor_over_part_of_a_statement_cuts_text_from_the_whole() -> None:
    sql = "CREATE TABLE t (a INT NOT NULL, b TEXT)"
    cur = cursor(sql)
    cur.accept("CREATE", "TABLE")
    cur.name()
    first, _second = cur.split_group()
    part = TokenCursor(cur.sql, first)
    assert part.name() == "a" and part.text(part.toks[1], part.toks[-1]) == "INT NOT NULL"
    part.i = len(part.toks)
    assert part.error("x").offset == sql.index(", b")  # past the part's last token


def test_parse_errors_pickle_with_their_offset() -> None:
    err = pickle.loads(pickle.dumps(SqlParseError("bad", 7)))
    assert (str(err), err.reason, err.offset) == ("bad", "bad", 7)
    assert SqlParseError("no position").offset is None
