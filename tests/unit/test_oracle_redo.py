"""LogMiner SQL_REDO parsing: every literal form of the value contract, statement shapes, LOB
statements, the relaxed-quote fallback, error reporting, and the ``cdclake redo-parse`` command."""

from __future__ import annotations

import copy
import doctest
import json
import pickle
from typing import Any

import pytest
from cdclake.cli import cli
from cdclake.sources.oracle import redo
from cdclake.sources.oracle.redo import (
    UNAVAILABLE,
    Fragment,
    LobLocator,
    LobWrite,
    ParsedRedo,
    RedoParseError,
    parse_ext_string_begin,
    parse_ext_string_write,
    parse_lob_erase,
    parse_lob_locator,
    parse_lob_trim,
    parse_lob_write,
    parse_redo,
    parse_xml_begin,
    parse_xml_write,
)
from click.testing import CliRunner


def reason_of(sql: str) -> RedoParseError:
    with pytest.raises(RedoParseError) as info:
        parse_redo(sql)
    return info.value


# ---- literal forms (docs/oracle-design.md, canonical values) ----------------------------------

LITERALS: list[tuple[str, Any]] = [
    ("'text'", "text"),
    ("'it''s'", "it's"),
    ("'''quoted'''", "'quoted'"),
    ("''", None),  # Oracle reads an empty string as NULL
    ("'a' || 'b'", "ab"),
    ("'a'||'b'||'c'", "abc"),
    ("'I||am'", "I||am"),
    ("UNISTR('\\00e9\\20ac')", "é€"),
    ("UNISTR('\\0412\\044B') || UNISTR('\\043F\\043E')", "Выпо"),
    ("UNISTR('\\d83d\\de00!')", "😀!"),
    ("UNISTR('a\\\\b')", "a\\b"),
    ("UNISTR('it''s \\00e9')", "it's é"),
    ("'abc' || UNISTR('\\00e9')", "abcé"),
    ("'123.45'", "123.45"),
    ("123.45", "123.45"),
    ("-1.5E+10", "-1.5E+10"),
    ("7", "7"),
    ("NULL", None),
    ("TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS')", "2024-01-02T03:04:05"),
    ("TO_DATE('15-MAY-2021', 'DD-MON-YYYY')", "2021-05-15T00:00:00"),
    ("TO_DATE('15-MAY-21', 'DD-MON-RR')", "2021-05-15T00:00:00"),
    ("TO_DATE('2024/01/02 01:02:03 PM', 'YYYY/MM/DD HH:MI:SS AM')", "2024-01-02T13:02:03"),
    ("TO_TIMESTAMP('2024-01-02 03:04:05.123456789')", "2024-01-02T03:04:05.123456789"),
    ("TO_TIMESTAMP('2020-02-01 00:00:00.')", "2020-02-01T00:00:00"),
    ("TO_TIMESTAMP_TZ('2024-01-02 03:04:05.5 +02:00')", "2024-01-02T03:04:05.5+02:00"),
    ("TO_TIMESTAMP_TZ('2024-01-02 03:04:05.500000 -6:00')", "2024-01-02T03:04:05.500000-06:00"),
    ("TO_TIMESTAMP_TZ('2024-01-02 03:04:05.5 Europe/Paris')", "2024-01-02T03:04:05.5 Europe/Paris"),
    ("HEXTORAW('0AFF')", "0aff"),
    ("EMPTY_CLOB()", ""),
    ("EMPTY_BLOB()", ""),
    ("TO_YMINTERVAL('+01-02')", "P1Y2M"),
    ("TO_YMINTERVAL('-01-02')", "-P1Y2M"),
    ("TO_DSINTERVAL('+01 02:03:04.500000')", "P1DT2H3M4.5S"),
    ("TO_DSINTERVAL('-00 00:00:07.000000')", "-P0DT0H0M7S"),
    ("Unsupported Type", UNAVAILABLE),
]


@pytest.mark.parametrize(("literal", "expected"), LITERALS, ids=[c[0][:40] for c in LITERALS])
def test_literal_in_insert_update_and_where(literal: str, expected: Any) -> None:
    ins = parse_redo(f'insert into "S"."T"("ID","C","Z") values (1,{literal},\'z\')')
    assert ins.after == {"ID": "1", "C": expected, "Z": "z"}
    upd = parse_redo(f'update "S"."T" set "C" = {literal}, "Z" = \'z\' where "ID" = 1 and "C" = {literal}')
    assert upd.before == {"ID": "1", "C": expected}
    assert upd.after == {"ID": "1", "C": expected, "Z": "z"}
    dele = parse_redo(f'delete from "S"."T" where "C" = {literal} and "ID" = 1')
    assert dele.before == {"C": expected, "ID": "1"}


def test_unavailable_is_a_picklable_falsy_singleton() -> None:
    assert repr(UNAVAILABLE) == "UNAVAILABLE"
    assert not UNAVAILABLE
    assert UNAVAILABLE is not None
    assert pickle.loads(pickle.dumps(UNAVAILABLE)) is UNAVAILABLE
    assert copy.deepcopy(UNAVAILABLE) is UNAVAILABLE
    assert type(UNAVAILABLE)() is UNAVAILABLE
    r = pickle.loads(pickle.dumps(parse_redo('insert into "S"."T"("U") values (Unsupported Type)')))
    assert r.after is not None and r.after["U"] is UNAVAILABLE


# ---- statement shapes (Debezium LogMinerDmlParserTest vectors) ----------------------------------


def test_insert_debezium_vector() -> None:
    r = parse_redo(
        'insert into "DEBEZIUM"."TEST"("ID","NAME","TS","UT","DATE","UT2","C1","C2") values '
        "('1','Acme',TO_TIMESTAMP('2020-02-01 00:00:00.'),Unsupported Type,"
        "TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS'),Unsupported Type,NULL,NULL);"
    )
    assert r == ParsedRedo("c", "DEBEZIUM", "TEST", None, {
        "ID": "1", "NAME": "Acme", "TS": "2020-02-01T00:00:00", "UT": UNAVAILABLE,
        "DATE": "2020-02-01T00:00:00", "UT2": UNAVAILABLE, "C1": None, "C2": None,
    })


def test_update_debezium_vector_with_eq_null_and_is_null() -> None:
    r = parse_redo(
        'update "DEBEZIUM"."TEST" set "NAME" = \'Bob\', "TS" = TO_TIMESTAMP(\'2020-02-02 00:00:00.\'), '
        '"UT" = Unsupported Type, "DATE" = TO_DATE(\'2020-02-02 00:00:00\', \'YYYY-MM-DD HH24:MI:SS\'), '
        '"C1" = NULL where "ID" = \'1\' and "NAME" = \'Acme\' and "TS" = TO_TIMESTAMP(\'2020-02-01 00:00:00.\') '
        'and "UT" = Unsupported Type and "C1" = NULL and "IS" IS NULL and "IS2" IS NULL;'
    )
    assert r.op == "u" and (r.schema, r.table) == ("DEBEZIUM", "TEST")
    assert r.before == {"ID": "1", "NAME": "Acme", "TS": "2020-02-01T00:00:00", "UT": UNAVAILABLE, "C1": None,
                        "IS": None, "IS2": None}
    assert r.after == {"ID": "1", "NAME": "Bob", "TS": "2020-02-02T00:00:00", "UT": UNAVAILABLE, "C1": None,
                       "IS": None, "IS2": None, "DATE": "2020-02-02T00:00:00"}


def test_delete_with_and_without_where() -> None:
    r = parse_redo('delete from "DEBEZIUM"."TEST" where "ID" = \'1\' and "NAME" = \'Bob\'\'s dog\'')
    assert r == ParsedRedo("d", "DEBEZIUM", "TEST", {"ID": "1", "NAME": "Bob's dog"}, None)
    assert parse_redo('delete from "DEBEZIUM"."TEST";') == ParsedRedo("d", "DEBEZIUM", "TEST", {}, None)


def test_update_without_where_knows_no_old_values() -> None:
    r = parse_redo('update "TICKETUSER"."CRS_ORDER" set "AMOUNT_PAID" = \'0\', "PAY_STATUS" = NULL, '
                   '"TM_UPDATE" = TO_DATE(\'2021-03-17 10:18:55\', \'YYYY-MM-DD HH24:MI:SS\');')
    assert r.before == {}
    assert r.after == {"AMOUNT_PAID": "0", "PAY_STATUS": None, "TM_UPDATE": "2021-03-17T10:18:55"}


def test_table_alias_forms() -> None:
    r = parse_redo('update "DEBEZIUM"."TEST" a set a."COL1" = \'1\', a."COL2" = NULL, a."COL3" = \'Hello2\' '
                   'where a."COL1" = \'0\'')
    assert r.before == {"COL1": "0"}
    assert r.after == {"COL1": "1", "COL2": None, "COL3": "Hello2"}
    d = parse_redo('delete from "DEBEZIUM"."TEST" a where a."COL1" = \'1\' and a."COL2" = \'2\' '
                   'and a."COL3" = Unsupported Type;')
    assert d.before == {"COL1": "1", "COL2": "2", "COL3": UNAVAILABLE}


def test_names_with_spaces_any_column_order_and_case_kept() -> None:
    r = parse_redo('insert into "UNKNOWN"."OBJ# 74858"("COL 2","COL 1","mixedCase") values (HEXTORAW(\'b\'),1,\'x\')')
    assert (r.schema, r.table) == ("UNKNOWN", "OBJ# 74858")
    assert r.after == {"COL 2": "b", "COL 1": "1", "mixedCase": "x"}
    u = parse_redo('update "DEBEZIUM"."DBZ3401" set "COL 2" = HEXTORAW(\'d\'), "COL 1" = HEXTORAW(\'c\') '
                   'where "COL 2" = HEXTORAW(\'b\') and "COL 1" = HEXTORAW(\'a\')')
    assert u.before == {"COL 2": "b", "COL 1": "a"}
    assert u.after == {"COL 2": "d", "COL 1": "c"}


def test_concatenated_fragments_in_set_and_where() -> None:
    frag = "UNISTR('\\0412\\044B') || UNISTR('\\043F\\043E')"
    r = parse_redo(f'update "DEBEZIUM"."TEST" set "COL2" = {frag} || \'!\' where "COL1" = \'1\' and "COL2" = {frag}')
    assert r.before == {"COL1": "1", "COL2": "Выпо"}
    assert r.after == {"COL1": "1", "COL2": "Выпо!"}


def test_keywords_case_insensitive_whitespace_and_optional_semicolon() -> None:
    r = parse_redo('  UPDATE "S"."T"\n   SET "A" = \'x\' ,\t"B" = 2\n WHERE "K" = 1 AND "B" IS NULL ;  \n')
    assert r.before == {"K": "1", "B": None}
    assert r.after == {"K": "1", "B": "2", "A": "x"}
    assert parse_redo('INSERT INTO "S"."T" ( "A" , "B" ) VALUES ( 1 , \'b\' )').after == {"A": "1", "B": "b"}


def test_rowid_condition_is_not_a_column() -> None:
    r = parse_redo('delete from "S"."T" where "ID" = 1 and ROWID = \'AAASgjAAMAAAACnAAA\'')
    assert r.before == {"ID": "1"}


# ---- relaxed quotes (LogMiner defect with EXTENDED strings) ------------------------------------


def test_relaxed_quotes_in_update() -> None:
    r = parse_redo(
        'update "SCHEMA"."TAB" set "DESCRIPTION" = \'Nello svolgere la sua attivita\', del liquido uticante '
        'scottando la pelle dei polsi\', "NAME" = \'Another field\', does it work?\' where "ID" = \'1\' and '
        '"NAME" = \'Acme\';'
    )
    assert r.before == {"ID": "1", "NAME": "Acme"}
    assert r.after == {
        "ID": "1",
        "NAME": "Another field', does it work?",
        "DESCRIPTION": "Nello svolgere la sua attivita', del liquido uticante scottando la pelle dei polsi",
    }


def test_relaxed_quotes_in_insert_keep_escaped_quotes() -> None:
    r = parse_redo('insert into "S"."T"("NAME","DATA") values (\'12345\',\'la pompe d\'aspiration, '
                   'puis il s\'est rincé; c\'\'est fini\')')
    assert r.after == {"NAME": "12345", "DATA": "la pompe d'aspiration, puis il s'est rincé; c'est fini"}


def test_relaxed_retry_failing_reports_the_strict_error() -> None:
    err = reason_of('insert into "S"."T"("A") values (\'it\'s\' garbage)')
    assert err.reason == "unexpected text after a string literal (unescaped quote?)"


# ---- errors ---------------------------------------------------------------------------------------


def test_error_not_dml() -> None:
    err = reason_of("select 1 from dual")
    assert err.reason == "not an INSERT, UPDATE or DELETE statement: 'select 1 from dual'"
    assert err.offset == 0
    assert "select 1 from dual" in str(err)


def test_error_truncated_statements() -> None:
    err = reason_of('insert into "S"."T"("A","B") values (\'1\',')
    assert err.reason == "statement ends after ',' (truncated?)"
    assert err.offset == len('insert into "S"."T"("A","B") values (\'1\',')
    assert reason_of('insert into "S"."T"("A") values (\'a\'').reason == (
        "expected ')' at the end of the values (truncated?)")
    assert reason_of('delete from "S"."T" where "A" = 1 and').reason == "statement ends after 'and' (truncated?)"
    assert reason_of('insert into "S"."T"("A")').reason == "expected 'values (' (statement ends early: truncated?)"


def test_error_unterminated_literal_points_at_the_quote() -> None:
    sql = 'update "S"."T" set "A" = \'abc where "ID" = 1'
    err = reason_of(sql)
    assert err.reason == "unterminated string literal"
    assert sql[err.offset:].startswith("'abc")
    lines = str(err).splitlines()
    assert lines[0] == f"cannot parse SQL_REDO: unterminated string literal (at offset {err.offset} of {len(sql)})"
    assert lines[1] == f"  {sql}"
    assert lines[2].index("^") == 2 + err.offset


def test_error_messages_truncate_long_statements() -> None:
    sql = 'insert into "S"."T"("A","B") values (\'' + "x" * 500 + "'," + "FOO(1))"
    err = reason_of(sql)
    assert err.reason == "unsupported expression FOO(...)"
    shown = str(err).splitlines()[1]
    assert shown.startswith("  ...") and len(shown) < 160 and "FOO(1))" in shown


def test_error_other_reasons() -> None:
    assert reason_of('insert into "S"."T"("A","B") values (1)').reason == "2 columns but 1 values"
    assert reason_of('update "S"."T" set "A" = 1 where "B" = 2 "C" = 3').reason == (
        "expected 'and' or the end of the statement")
    assert reason_of('update "S"."T" where "A" = 1').reason == "expected SET, found 'where'"
    assert reason_of("insert into \"S\".\"T\"(\"A\") values (UNISTR('\\d83d'))").reason == (
        "unpaired UTF-16 surrogate in UNISTR")
    assert reason_of("insert into \"S\".\"T\"(\"A\") values (TO_DATE('x', 'YYYY'))").reason == (
        "TO_DATE value 'x' does not match its format 'YYYY'")
    assert reason_of("insert into \"S\".\"T\"(\"A\") values (HEXTORAW('0G'))").reason == (
        "invalid hex digits in HEXTORAW('0G')")
    assert reason_of("update \"S\".\"T\" set \"A\" = 'x' || Unsupported Type").reason == (
        "'||' with an Unsupported Type value")
    assert reason_of("   ").reason == "empty statement"


def test_error_pickles_with_its_fields() -> None:
    err = reason_of("select 1 from dual")
    again = pickle.loads(pickle.dumps(err))
    assert (again.reason, again.offset, str(again)) == (err.reason, err.offset, str(err))
    assert isinstance(again, ValueError)


# ---- LOB statements (Debezium SelectLobParserTest / LOB_WRITE shapes) -------------------------

PREAMBLE = ("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6174); \n loc_b BLOB; \n buf_b RAW(6174); \n"
            " loc_t VARCHAR2(4000); \n  loc_x XMLType; \n  buf_x VARCHAR2(6174);BEGIN\n")


def test_lob_locator_clob_blob_xml() -> None:
    clob = parse_lob_locator(PREAMBLE + ' select "VAL_CLOB" into loc_c from "DEBEZIUM"."CLOB_TEST" '
                             "where \"ID\" = '1' and \"VAL_VARCHAR2\" IS NULL for update;")
    assert clob == LobLocator("DEBEZIUM", "CLOB_TEST", "VAL_CLOB", False, {"ID": "1", "VAL_VARCHAR2": None})
    blob = parse_lob_locator(PREAMBLE + ' select "VAL_BLOB" into loc_b from "DEBEZIUM"."BLOB_TEST" '
                             "where \"ID\" = '2' and \"VAL_DATA\" = 'Test2' for update;")
    assert blob == LobLocator("DEBEZIUM", "BLOB_TEST", "VAL_BLOB", True, {"ID": "2", "VAL_DATA": "Test2"})
    xml = parse_lob_locator(PREAMBLE + ' select "DOC" into loc_x from "S"."X" where "ID" = 3 for update;')
    assert (xml.column, xml.binary, xml.key) == ("DOC", False, {"ID": "3"})


def test_lob_locator_key_literals_and_quotes() -> None:
    r = parse_lob_locator(
        PREAMBLE + ' select "CLOB_COL" into loc_c from "DEBEZIUM"."BIG_TABLE" where "ID" = \'651900002\' and '
        '"ADRESS" = \'street:651900002 av: 651900002\' and "TD" = TO_DATE(\'15-MAY-21\', \'DD-MON-RR\') and '
        '"FLAG" IS NULL for update;'
    )
    assert r.key == {"ID": "651900002", "ADRESS": "street:651900002 av: 651900002", "TD": "2021-05-15T00:00:00",
                     "FLAG": None}
    q = parse_lob_locator(PREAMBLE + ' select "CLOB_COL" into loc_c from "DEBEZIUM"."QUOTE_TABLE" where "ID" = '
                          "'1' and \"NAME\" = '2\"''\" sd f\"\"\" '''''''' ''''' for update;")
    assert q.key == {"ID": "1", "NAME": "2\"'\" sd f\"\"\" '''' ''"}


def test_lob_locator_in_a_combined_block_and_errors() -> None:
    r = parse_lob_locator('DECLARE loc_c CLOB; BEGIN select "NOTE" into loc_c from "APP"."T" where "ID" = \'1\' '
                          "for update; buf_c := 'abc'; dbms_lob.write(loc_c, 3, 1, buf_c); END;")
    assert r == LobLocator("APP", "T", "NOTE", False, {"ID": "1"})
    with pytest.raises(RedoParseError, match="expected 'for update'"):
        parse_lob_locator('select "A" into loc_c from "S"."T" where "ID" = 1')
    with pytest.raises(RedoParseError, match="no 'select \"COLUMN\" into loc_x"):
        parse_lob_locator("select 1 from dual")


def test_lob_write_text_binary_and_wrapped() -> None:
    assert parse_lob_write(" buf_c := 'abc';\n  dbms_lob.write(loc_c, 3, 1, buf_c);") == LobWrite(1, 3, "abc")
    assert parse_lob_write(" buf_b := HEXTORAW('0A0B');\n  dbms_lob.write(loc_b, 2, 1, buf_b);") == (
        LobWrite(1, 2, "0a0b"))
    wrapped = ('DECLARE loc_c CLOB; BEGIN select "NOTE" into loc_c from "APP"."T" where "ID" = \'1\' for update; '
               "buf_c := 'it''s'; dbms_lob.write(loc_c, 4, 6145, buf_c); END;")
    assert parse_lob_write(wrapped) == LobWrite(6145, 4, "it's")
    assert parse_lob_write("buf_c := UNISTR('\\00e9') || 'x'; dbms_lob.write(loc_c, 2, 1, buf_c);").data == "éx"


def test_lob_write_relaxed_quotes_and_errors() -> None:
    assert parse_lob_write(" buf_c := 'l'arrière'; dbms_lob.write(loc_c, 9, 1, buf_c);").data == "l'arrière"
    with pytest.raises(RedoParseError, match="dbms_lob.write"):
        parse_lob_write(" buf_c := 'abc' dbms_lob.write(loc_c, 3, 1, buf_c);")
    with pytest.raises(RedoParseError, match="no 'buf_x := ...' assignment"):
        parse_lob_write("dbms_lob.trim(loc_c, 3);")


def test_lob_trim_and_erase() -> None:
    assert parse_lob_trim("DECLARE loc_c CLOB; BEGIN dbms_lob.trim(loc_c, 100); END;") == 100
    assert parse_lob_erase(" dbms_lob.erase(loc_c, 10, 5);") == (10, 5)
    with pytest.raises(RedoParseError, match="dbms_lob.trim"):
        parse_lob_trim("dbms_lob.erase(loc_c, 10, 5);")
    with pytest.raises(RedoParseError, match="dbms_lob.erase"):
        parse_lob_erase("dbms_lob.trim(loc_c, 100);")


# ---- XMLTYPE and extended strings (Debezium XmlBeginParser / XmlWriteParser / ExtendedStringParser) ----


def test_xml_begin_binary_and_text_storage_forms() -> None:
    # binary XML storage (INFO 'XML sql_redo not re-executable'), as mined from Oracle 19c
    sel = parse_xml_begin('XML DOC BEGIN:  select "XMLRECORD" from "C##MYUSER"."CUSTOMERS" where "RECID" = \'3\'')
    assert sel == LobLocator("C##MYUSER", "CUSTOMERS", "XMLRECORD", False, {"RECID": "3"})
    many = parse_xml_begin(
        'XML DOC BEGIN:  select "PROPERTIES" from "SCHEMA"."TABLE" where "COLUMN_A" = \'314107\' and '
        '"TIME_A" = TO_TIMESTAMP_TZ(\'2024-02-14 10:58:02.202590 +01:00\') and "MODIFICATIONTIME" IS NULL')
    assert many.key == {"COLUMN_A": "314107", "TIME_A": "2024-02-14T10:58:02.202590+01:00", "MODIFICATIONTIME": None}
    # text storage (INFO 'XML sql_redo needs assembly'); names with spaces
    upd = parse_xml_begin('update "DEBEZIUM OBJ"."XML_TEST OBJ" a set a."DATA OBJ" = XMLType(:1)  '
                          "where a.\"ID\" = '1' and a.\"NAME\" = 'O''Neil';")
    assert upd == LobLocator("DEBEZIUM OBJ", "XML_TEST OBJ", "DATA OBJ", False, {"ID": "1", "NAME": "O'Neil"})


def test_xml_begin_errors() -> None:
    with pytest.raises(RedoParseError, match="XML DOC BEGIN"):
        parse_xml_begin('XMLDOCBEGIN:  select "DATA" from "DEBEZIUM"."XML_TEST" where "ID" = \'1\'')
    with pytest.raises(RedoParseError, match="XML DOC BEGIN"):
        parse_xml_begin('updater "S"."T" a set a."D" = XMLType(:1) where a."ID" = \'1\';')
    with pytest.raises(RedoParseError, match="unexpected text"):
        parse_xml_begin('XML DOC BEGIN:  select "D" from "S"."T" where "ID" = \'1\' "X"')
    with pytest.raises(RedoParseError, match="empty XML_BEGIN"):
        parse_xml_begin(None)


def test_xml_write_text_escapes_concatenation_and_null() -> None:
    real = parse_xml_write("XML_REDO := '<Warehouse whNo=\"3\"> <Building>Owned</Building></Warehouse>'\n amount: 59")
    assert real == Fragment('<Warehouse whNo="3"> <Building>Owned</Building></Warehouse>', False, 59)
    assert parse_xml_write("XML_REDO := '<a>数符癸</a>':10") == Fragment("<a>数符癸</a>", False, 10)
    joined = parse_xml_write("XML_REDO := '<a t=''x''>' || UNISTR('\\00e9t\\00e9') || '</a>'\n amount: 15")
    assert joined == Fragment("<a t='x'>été</a>", False, 15)
    assert parse_xml_write("XML_REDO := NULL") == Fragment(None, False, None)
    assert parse_xml_write("XML_REDO := ''\n amount: 0") == Fragment("", False, 0)


def test_xml_write_hextoraw_with_and_without_its_closing_quote() -> None:
    assert parse_xml_write("XML_REDO := HEXTORAW('3C726F6F743EC3843C2F726F6F743E'):15") == (
        Fragment("3c726f6f743ec3843c2f726f6f743e", True, 15))
    # Oracle leaves the closing quote out of the last chunk of a document
    assert parse_xml_write("XML_REDO := HEXTORAW('3C2F613E):4") == Fragment("3c2f613e", True, 4)


def test_xml_write_unescaped_quotes_and_errors() -> None:
    assert parse_xml_write("XML_REDO := '<a>l'arbre</a>'\n amount: 13").data == "<a>l'arbre</a>"
    with pytest.raises(RedoParseError, match="HEXTORAW"):
        parse_xml_write("XML_REDO := <a>x</a>:8")
    with pytest.raises(RedoParseError, match="XML_REDO"):
        parse_xml_write(" buf_c := 'abc'; dbms_lob.write(loc_c, 3, 1, buf_c);")


EXT_BEGIN = ("DECLARE\n TempLob CLOB;\n buf_c   VARCHAR2(32767);\n Stmt    CLOB;\nBEGIN\n"
             " DBMS_LOB.CreateTemporary(TempLob, FALSE);\n Stmt := '{stmt}';")


def test_extended_string_begin_with_and_without_alias() -> None:
    aliased = EXT_BEGIN.format(stmt='update "DEBEZIUM"."TEST_TABLE" a set a."DATA" = :DATA '
                                    "where a.\"ID\" = ''1'' and a.\"NOTE\" = ''it''''s'' and a.\"N\" IS NULL;")
    assert parse_ext_string_begin(aliased) == LobLocator("DEBEZIUM", "TEST_TABLE", "DATA", False,
                                                         {"ID": "1", "NOTE": "it's", "N": None})
    plain = EXT_BEGIN.format(stmt='update "DEBEZIUM"."TEST_TABLE" set "DATA" = :DATA where "ID" = \'\'1\'\';')
    assert parse_ext_string_begin(plain).key == {"ID": "1"}
    raw = EXT_BEGIN.replace("TempLob CLOB", "TempLob BLOB").replace("buf_c   VARCHAR2", "buf_b   RAW").format(
        stmt='update "S"."T" a set a."BIN" = :BIN where a."ID" = \'\'7\'\';')
    assert parse_ext_string_begin(raw) == LobLocator("S", "T", "BIN", True, {"ID": "7"})


def test_extended_string_begin_errors() -> None:
    with pytest.raises(RedoParseError, match="Stmt := 'update"):
        parse_ext_string_begin("DECLARE\n TempLob CLOB;\nBEGIN\n DBMS_LOB.CreateTemporary(TempLob, FALSE);")
    with pytest.raises(RedoParseError, match=":BIND"):
        parse_ext_string_begin(EXT_BEGIN.format(stmt='delete from "S"."T" where "ID" = \'\'1\'\';'))


def test_extended_string_write_text_raw_and_unescaped_quotes() -> None:
    assert parse_ext_string_write("\n buf_c := 'abc''d';\n DBMS_LOB.WRITEAPPEND(TempLob, 5, buf_c);") == (
        Fragment("abc'd", False, 5))
    assert parse_ext_string_write("\n buf_b := HEXTORAW('0A0B');\n DBMS_LOB.WRITEAPPEND(TempLob, 2, buf_b);") == (
        Fragment("0a0b", True, 2))
    # DBZ-8034: LogMiner may leave a quote in an extended string unescaped
    assert parse_ext_string_write("\n buf_c := 'l'été';\n DBMS_LOB.WRITEAPPEND(TempLob, 6, buf_c);").data == "l'été"
    with pytest.raises(RedoParseError, match="WRITEAPPEND"):
        parse_ext_string_write("\n buf_c := 'abc';\n DBMS_LOB.WRITE(TempLob, 3, 1, buf_c);")
    with pytest.raises(RedoParseError, match="NULL or Unsupported Type"):
        parse_ext_string_write("\n buf_c := NULL;\n DBMS_LOB.WRITEAPPEND(TempLob, 0, buf_c);")


def test_lm_empty_string_is_unavailable_in_dml() -> None:
    ins = parse_redo('insert into "S"."T"("ID","BIG","BIN") values (\'1\',LM_EMPTY_STRING,LM_EMPTY_STRING)')
    assert ins.after == {"ID": "1", "BIG": UNAVAILABLE, "BIN": UNAVAILABLE}
    upd = parse_redo('update "S"."T" set "BIG" = LM_EMPTY_STRING, "N" = \'2\' where "ID" = \'1\'')
    assert upd.after == {"ID": "1", "BIG": UNAVAILABLE, "N": "2"}


def test_module_doctest() -> None:
    result = doctest.testmod(redo)
    assert result.attempted >= 6 and result.failed == 0


# ---- cdclake redo-parse -----------------------------------------------------------------------


def test_cli_redo_parse_reports_each_line_and_fails_on_bad_ones() -> None:
    lines = [
        'insert into "S"."T"("ID","NAME","U") values (1,UNISTR(\'Ren\\00e9\'),Unsupported Type)',
        "",
        "select 1 from dual",
        'update "S"."T" set "NAME" = \'x\' where "ID" = 1',
        'delete from "S"."T" where "ID" = 1;',
    ]
    result = CliRunner().invoke(cli, ["redo-parse"], input="\n".join(lines) + "\n")
    assert result.exit_code == 1
    out = result.stdout_bytes.decode("utf-8").splitlines()
    assert "René" in out[0]  # UTF-8, not \u escapes
    docs = [json.loads(line) for line in out]
    assert docs == [
        {"op": "c", "schema": "S", "table": "T", "before": None,
         "after": {"ID": "1", "NAME": "René", "U": {"unavailable": True}}},
        {"error": "not an INSERT, UPDATE or DELETE statement: 'select 1 from dual'", "line": 3,
         "statement": "select 1 from dual"},
        {"op": "u", "schema": "S", "table": "T", "before": {"ID": "1"}, "after": {"ID": "1", "NAME": "x"}},
        {"op": "d", "schema": "S", "table": "T", "before": {"ID": "1"}, "after": None},
    ]


def test_cli_redo_parse_success_and_long_statement_cut() -> None:
    ok = CliRunner().invoke(cli, ["redo-parse"], input='delete from "S"."T" where "ID" = 1\n')
    assert ok.exit_code == 0
    assert json.loads(ok.stdout) == {"op": "d", "schema": "S", "table": "T", "before": {"ID": "1"}, "after": None}
    bad = 'insert into "S"."T"("A") values (\'' + "y" * 300
    res = CliRunner().invoke(cli, ["redo-parse"], input=bad + "\n")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["line"] == 1 and doc["statement"] == bad[:200]
    assert doc["error"] == "unterminated string literal"
