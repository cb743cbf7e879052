"""Oracle type mapping, redo value canonicalisation, snapshot SQL, and the Spark side of both."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from cdclake.schema import Column
from cdclake.sources.oracle.redo import UNAVAILABLE
from cdclake.sources.oracle.types import VARIABLE_NUMBER_SPARK, OracleTypeMapper, column_from_oracle

M = OracleTypeMapper()


def col(type_text: str, name: str = "C", **kw: Any) -> Column:
    return column_from_oracle(name, type_text, **kw)


# ---- type text -> Column -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_text", "source_type", "spark_type"),
    [
        # NUMBER(p, s > 0): DECIMAL(p, s); s > p: DECIMAL(s, s)
        ("NUMBER(10,2)", "NUMBER(10,2)", "DECIMAL(10,2)"),
        ("number ( 10 , 2 )", "NUMBER(10,2)", "DECIMAL(10,2)"),
        ("NUMBER(38,38)", "NUMBER(38,38)", "DECIMAL(38,38)"),
        ("NUMBER(2,5)", "NUMBER(2,5)", "DECIMAL(5,5)"),
        ("NUMBER(5,127)", "NUMBER(5,127)", "STRING"),
        # NUMBER(p, s <= 0): integers by p - s digits
        ("NUMBER(1)", "NUMBER(1,0)", "TINYINT"),
        ("NUMBER(2,0)", "NUMBER(2,0)", "TINYINT"),
        ("NUMBER(3)", "NUMBER(3,0)", "SMALLINT"),
        ("NUMBER(4)", "NUMBER(4,0)", "SMALLINT"),
        ("NUMBER(5)", "NUMBER(5,0)", "INT"),
        ("NUMBER(9,0)", "NUMBER(9,0)", "INT"),
        ("NUMBER(10)", "NUMBER(10,0)", "BIGINT"),
        ("NUMBER(18)", "NUMBER(18,0)", "BIGINT"),
        ("NUMBER(19)", "NUMBER(19,0)", "DECIMAL(19,0)"),
        ("NUMBER(38)", "NUMBER(38,0)", "DECIMAL(38,0)"),
        ("NUMBER(5,-2)", "NUMBER(5,-2)", "INT"),  # 7 digits
        ("NUMBER(1,-2)", "NUMBER(1,-2)", "SMALLINT"),  # 3 digits
        ("NUMBER(17,-2)", "NUMBER(17,-2)", "DECIMAL(19,0)"),
        ("NUMBER(36,-2)", "NUMBER(36,-2)", "DECIMAL(38,0)"),
        ("NUMBER(38,-5)", "NUMBER(38,-5)", "STRING"),  # 43 digits do not fit any Spark decimal
        # INTEGER & co. are NUMBER(38,0) (NUMBER(*,0) in the dictionary)
        ("INTEGER", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("int", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("SMALLINT", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("DECIMAL", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("NUMERIC", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("NUMBER(*,0)", "NUMBER(*,0)", "DECIMAL(38,0)"),
        ("NUMBER(*,2)", "NUMBER(*,2)", "DECIMAL(38,2)"),
        ("DECIMAL(12)", "NUMBER(12,0)", "BIGINT"),
        ("NUMERIC(12,4)", "NUMBER(12,4)", "DECIMAL(12,4)"),
        ("DEC(5,1)", "NUMBER(5,1)", "DECIMAL(5,1)"),
        # variable scale
        ("NUMBER", "NUMBER", VARIABLE_NUMBER_SPARK),
        ("NUMBER(*)", "NUMBER", VARIABLE_NUMBER_SPARK),
        ("FLOAT", "FLOAT(126)", VARIABLE_NUMBER_SPARK),
        ("FLOAT(63)", "FLOAT(63)", VARIABLE_NUMBER_SPARK),
        ("FLOAT(1)", "FLOAT(1)", VARIABLE_NUMBER_SPARK),
        ("REAL", "FLOAT(63)", VARIABLE_NUMBER_SPARK),
        ("DOUBLE PRECISION", "FLOAT(126)", VARIABLE_NUMBER_SPARK),
        # IEEE
        ("BINARY_FLOAT", "BINARY_FLOAT", "FLOAT"),
        ("BINARY_DOUBLE", "BINARY_DOUBLE", "DOUBLE"),
        # datetimes
        ("DATE", "DATE", "TIMESTAMP_NTZ"),
        ("TIMESTAMP", "TIMESTAMP(6)", "TIMESTAMP_NTZ"),
        ("TIMESTAMP(0)", "TIMESTAMP(0)", "TIMESTAMP_NTZ"),
        ("TIMESTAMP(3)", "TIMESTAMP(3)", "TIMESTAMP_NTZ"),
        ("TIMESTAMP(7)", "TIMESTAMP(7)", "STRING"),
        ("TIMESTAMP(9)", "TIMESTAMP(9)", "STRING"),
        ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP(6) WITH TIME ZONE", "STRING"),
        ("TIMESTAMP(3)  with time   zone", "TIMESTAMP(3) WITH TIME ZONE", "STRING"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP"),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIMESTAMP(9) WITH LOCAL TIME ZONE", "TIMESTAMP"),
        ("INTERVAL YEAR TO MONTH", "INTERVAL YEAR(2) TO MONTH", "STRING"),
        ("INTERVAL YEAR(4) TO MONTH", "INTERVAL YEAR(4) TO MONTH", "STRING"),
        ("INTERVAL DAY TO SECOND", "INTERVAL DAY(2) TO SECOND(6)", "STRING"),
        ("INTERVAL DAY(2) TO SECOND(6)", "INTERVAL DAY(2) TO SECOND(6)", "STRING"),
        ("interval day (9) to second (0)", "INTERVAL DAY(9) TO SECOND(0)", "STRING"),
        # text
        ("CHAR", "CHAR(1)", "STRING"),
        ("CHAR(10)", "CHAR(10)", "STRING"),
        ("CHAR(10 CHAR)", "CHAR(10 CHAR)", "STRING"),
        ("CHARACTER(3)", "CHAR(3)", "STRING"),
        ("NCHAR(5)", "NCHAR(5)", "STRING"),
        ("NATIONAL CHARACTER(5)", "NCHAR(5)", "STRING"),
        ("VARCHAR2(20)", "VARCHAR2(20)", "STRING"),
        ("VARCHAR2(20 BYTE)", "VARCHAR2(20)", "STRING"),
        ("VARCHAR2(20 CHAR)", "VARCHAR2(20 CHAR)", "STRING"),
        ("VARCHAR(30)", "VARCHAR2(30)", "STRING"),
        ("CHARACTER VARYING(30)", "VARCHAR2(30)", "STRING"),
        ("NVARCHAR2(40)", "NVARCHAR2(40)", "STRING"),
        ("NCHAR VARYING(40)", "NVARCHAR2(40)", "STRING"),
        ("CLOB", "CLOB", "STRING"),
        ("NCLOB", "NCLOB", "STRING"),
        ("LONG", "LONG", "STRING"),
        ("XMLTYPE", "XMLTYPE", "STRING"),
        ("SYS.XMLTYPE", "XMLTYPE", "STRING"),
        ('"SYS"."XMLTYPE"', "XMLTYPE", "STRING"),
        ("ROWID", "ROWID", "STRING"),
        ("UROWID", "UROWID", "STRING"),
        ("UROWID(4000)", "UROWID", "STRING"),
        # binary
        ("RAW(16)", "RAW(16)", "BINARY"),
        ("BLOB", "BLOB", "BINARY"),
        ("LONG RAW", "LONG RAW", "BINARY"),
        # boolean (Oracle 23)
        ("BOOLEAN", "BOOLEAN", "BOOLEAN"),
        ("BOOL", "BOOLEAN", "BOOLEAN"),
        # unsupported: always unavailable
        ("BFILE", "BFILE", "STRING"),
        ("JSON", "JSON", "STRING"),
        ("VECTOR(3, FLOAT32)", "VECTOR", "STRING"),
        ("SDO_GEOMETRY", "SDO_GEOMETRY", "STRING"),
        ("MDSYS.SDO_GEOMETRY", "SDO_GEOMETRY", "STRING"),
        ('"MDSYS"."SDO_GEOMETRY"', "SDO_GEOMETRY", "STRING"),
        ("SYS.ANYDATA", "ANYDATA", "STRING"),
        ('"HR"."Address Type"', "Address Type", "STRING"),
        ("REF HR.ADDR_T", "REF HR.ADDR_T", "STRING"),
    ],
)
def test_type_mapping(type_text: str, source_type: str, spark_type: str) -> None:
    c = col(type_text)
    assert (c.source_type, c.spark_type, M.canonical_type(c)) == (source_type, spark_type, "STRING")


def test_attrs_hold_the_facts() -> None:
    assert col("NUMBER(10,2)").attrs == {
        "base": "NUMBER", "precision": 10, "scale": 2, "lob": False, "unsupported": False
    }
    assert col("NUMBER").attrs["precision"] is None and col("NUMBER").attrs["scale"] is None
    assert col("INTEGER").attrs["scale"] == 0
    ts = col("TIMESTAMP(9) WITH LOCAL TIME ZONE").attrs
    assert (ts["fsp"], ts["tz"]) == (9, "ltz")
    assert col("TIMESTAMP(3) WITH TIME ZONE").attrs["tz"] == "tz"
    assert col("TIMESTAMP").attrs["tz"] == "none"
    assert col("INTERVAL DAY(3) TO SECOND(2)").attrs == {
        "base": "INTERVAL DAY TO SECOND", "precision": 3, "fsp": 2, "lob": False, "unsupported": False
    }
    for lob in ("CLOB", "NCLOB", "BLOB", "XMLTYPE"):
        assert col(lob).attrs["lob"] is True, lob
    for plain in ("VARCHAR2(10)", "RAW(4)", "LONG", "DATE"):
        assert col(plain).attrs["lob"] is False, plain
    for unsupported in ("BFILE", "SDO_GEOMETRY", "SYS.ANYDATA", "JSON", "VECTOR", "HR.MY_TYPE"):
        assert col(unsupported).attrs["unsupported"] is True, unsupported
    assert col("VARCHAR2(20 CHAR)").attrs["char_semantics"] is True
    assert col("NVARCHAR2(20)").attrs["char_semantics"] is True
    assert col("CHAR(3)").attrs == {
        "base": "CHAR", "length": 3, "char_semantics": False, "lob": False, "unsupported": False
    }


@pytest.mark.parametrize(
    ("text", "kwargs"),
    [
        ("NUMBER(10,2)", {"data_precision": 10, "data_scale": 2}),
        ("NUMBER(9,0)", {"data_precision": 9, "data_scale": 0}),
        ("INTEGER", {"data_precision": None, "data_scale": 0}),
        ("NUMBER", {"data_precision": None, "data_scale": None}),
        ("NUMBER(5,-2)", {"data_precision": 5, "data_scale": -2}),
        ("VARCHAR2(20 CHAR)", {"data_length": 20, "char_used": "C"}),
        ("VARCHAR2(20)", {"data_length": 20, "char_used": "B"}),
        ("NVARCHAR2(10)", {"data_length": 10, "char_used": "C"}),
        ("CHAR(3)", {"data_length": 3, "char_used": "B"}),
        ("RAW(16)", {"data_length": 16}),
        ("FLOAT(63)", {"data_precision": 63}),
    ],
)
def test_dictionary_columns_equal_ddl_columns(text: str, kwargs: dict[str, Any]) -> None:
    """ALL_TAB_COLUMNS facts (DATA_TYPE + precision/scale/length) give the same Column as DDL."""
    data_type = text.split("(")[0] if text not in ("INTEGER",) else "NUMBER"
    assert column_from_oracle("C", data_type, **kwargs) == col(text)


@pytest.mark.parametrize(
    "bad", ["NUMBER(10", "NUMBER(39)", "NUMBER(5,200)", "FLOAT(127)", "VARCHAR2", "VARCHAR2(20 CHARS)",
            "TIMESTAMP WITH TZ", "TIMESTAMP(10)", "RAW", "NUMBER(a)", ""],
)
def test_malformed_types_raise(bad: str) -> None:
    with pytest.raises(ValueError):
        col(bad)


# ---- canonical_from_redo -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_text", "value", "canonical"),
    [
        ("NUMBER(10,2)", "123.45", "123.45"),
        ("NUMBER(10,2)", ".5", ".5"),
        ("NUMBER(10,2)", "-.5", "-.5"),
        ("NUMBER(10,2)", "+7", "7"),
        ("NUMBER(10,2)", " 1,5 ", "1.5"),  # a session with ',' as the decimal character
        ("NUMBER", "-1.5E+10", "-15000000000"),  # variable scale: exact plain text
        ("NUMBER", "-.50", "-0.5"),
        ("NUMBER", "1E-130", "0." + "0" * 129 + "1"),
        ("NUMBER(9)", "1E+2", "100"),  # integers: Spark's CAST to INT does not
        ("NUMBER(9)", "12.0", "12"),
        ("NUMBER(5,-2)", "12300", "12300"),
        ("INTEGER", "99999999999999999999999999999999999999", "99999999999999999999999999999999999999"),
        ("FLOAT(63)", "3.14159", "3.14159"),
        ("NUMBER(9)", "", None),
        ("BINARY_DOUBLE", "1.5E+000", "1.5E+000"),
        ("BINARY_DOUBLE", "Inf", "Infinity"),
        ("BINARY_DOUBLE", "-Inf", "-Infinity"),
        ("BINARY_DOUBLE", "Nan", "NaN"),
        ("BINARY_FLOAT", "BINARY_FLOAT_INFINITY", "Infinity"),
        ("BINARY_FLOAT", "-3.40282347E+038", "-3.40282347E+038"),
        ("DATE", "2024-01-02T03:04:05", "2024-01-02T03:04:05"),
        ("DATE", "2024-01-02 03:04:05", "2024-01-02T03:04:05"),
        ("DATE", "2024-01-02T03:04:05.987654321", "2024-01-02T03:04:05"),  # TO_TIMESTAMP given to a DATE
        ("DATE", "2024-01-02", "2024-01-02T00:00:00"),
        ("DATE", "-4712-01-01T00:00:00", "-4712-01-01T00:00:00"),
        ("TIMESTAMP", "2024-01-02T03:04:05.123456", "2024-01-02T03:04:05.123456"),
        ("TIMESTAMP(3)", "2024-01-02T03:04:05.5", "2024-01-02T03:04:05.500000"),
        ("TIMESTAMP(0)", "2024-01-02T03:04:05", "2024-01-02T03:04:05.000000"),
        ("TIMESTAMP(6)", "2024-01-02T03:04:05.123456789", "2024-01-02T03:04:05.123456"),
        ("TIMESTAMP(9)", "2024-01-02T03:04:05.123456789", "2024-01-02T03:04:05.123456789"),
        ("TIMESTAMP(9)", "2024-01-02T03:04:05.1", "2024-01-02T03:04:05.100000000"),
        ("TIMESTAMP(7)", "2024-01-02T03:04:05", "2024-01-02T03:04:05.000000000"),
        ("TIMESTAMP WITH TIME ZONE", "2024-01-02T03:04:05.5+02:00", "2024-01-02T03:04:05.500000+02:00"),
        ("TIMESTAMP(9) WITH TIME ZONE", "2024-01-02T03:04:05.5-05:30", "2024-01-02T03:04:05.500000000-05:30"),
        ("TIMESTAMP WITH TIME ZONE", "2024-01-02T03:04:05.5 Europe/Paris",
         "2024-01-02T03:04:05.500000 Europe/Paris"),
        ("TIMESTAMP(0) WITH TIME ZONE", "2024-01-02T03:04:05+2:00", "2024-01-02T03:04:05.000000+02:00"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-02T03:04:05.123456", "2024-01-02T03:04:05.123456Z"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-02T03:04:05.5+02:00", "2024-01-02T01:04:05.500000Z"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-01T00:30:00-01:00", "2024-01-01T01:30:00.000000Z"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-07-01T12:00:00 Europe/Paris", "2024-07-01T10:00:00.000000Z"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-01T12:00:00 EUROPE/PARIS", "2024-01-01T11:00:00.000000Z"),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", "2024-01-02T03:04:05.123456789", "2024-01-02T03:04:05.123456Z"),
        ("INTERVAL YEAR TO MONTH", "P1Y2M", "P1Y2M"),
        ("INTERVAL YEAR TO MONTH", "-P1Y2M", "-P1Y2M"),
        ("INTERVAL YEAR TO MONTH", "P14M", "P1Y2M"),
        ("INTERVAL YEAR TO MONTH", "P0Y0M", "P0Y0M"),
        ("INTERVAL YEAR TO MONTH", "-P0Y0M", "P0Y0M"),
        ("INTERVAL YEAR TO MONTH", "+01-02", "P1Y2M"),  # Oracle's own text
        ("INTERVAL DAY TO SECOND", "P1DT2H3M4.5S", "P1DT2H3M4.5S"),
        ("INTERVAL DAY TO SECOND", "-P1DT2H3M4.500000S", "-P1DT2H3M4.5S"),
        ("INTERVAL DAY TO SECOND", "PT26H", "P1DT2H0M0S"),
        ("INTERVAL DAY TO SECOND", "P3D", "P3DT0H0M0S"),
        ("INTERVAL DAY TO SECOND", "PT0.000001S", "P0DT0H0M0.000001S"),
        ("INTERVAL DAY TO SECOND", "+01 02:03:04.500000", "P1DT2H3M4.5S"),
        ("INTERVAL DAY TO SECOND", "-00 00:00:00.000000", "P0DT0H0M0S"),
        ("RAW(4)", "0aff", "0aff"),
        ("RAW(4)", "0AFF", "0aff"),
        ("RAW(4)", b"\x0a\xff", "0aff"),
        ("RAW(4)", "", None),  # HEXTORAW('') is NULL in Oracle
        ("BLOB", "", ""),  # EMPTY_BLOB()
        ("LONG RAW", "00", "00"),
        ("BOOLEAN", "1", "true"),
        ("BOOLEAN", "FALSE", "false"),
        ("CHAR(5)", "ab   ", "ab   "),  # blank padding kept
        ("VARCHAR2(10)", "O'Brien", "O'Brien"),
        ("VARCHAR2(10)", "", None),
        ("NVARCHAR2(10)", "René", "René"),
        ("CLOB", "", ""),  # EMPTY_CLOB()
        ("CLOB", "long text", "long text"),
        ("XMLTYPE", "<a>1</a>", "<a>1</a>"),
        ("ROWID", "AAASgjAAMAAAACnAAA", "AAASgjAAMAAAACnAAA"),
        ("LONG", "x", "x"),
    ],
)
def test_canonical_from_redo(type_text: str, value: Any, canonical: Any) -> None:
    assert M.canonical_from_redo(col(type_text), value) == canonical


@pytest.mark.parametrize("type_text", ["NUMBER", "DATE", "TIMESTAMP(9) WITH TIME ZONE", "BLOB", "CLOB",
                                       "INTERVAL DAY TO SECOND", "RAW(2)", "BOOLEAN", "BINARY_FLOAT"])
def test_null_and_unavailable_pass_through(type_text: str) -> None:
    c = col(type_text)
    assert M.canonical_from_redo(c, None) is None
    assert M.canonical_from_redo(c, UNAVAILABLE) is UNAVAILABLE


@pytest.mark.parametrize("type_text", ["BFILE", "SDO_GEOMETRY", "JSON", "VECTOR", "SYS.ANYDATA", "HR.T_ADDR"])
def test_unsupported_columns_are_always_unavailable(type_text: str) -> None:
    c = col(type_text)
    for value in (None, "x", UNAVAILABLE):
        assert M.canonical_from_redo(c, value) is UNAVAILABLE


@pytest.mark.parametrize(
    ("type_text", "value"),
    [("DATE", "yesterday"), ("DATE", "2024-01-02T03:04:05+02:00"), ("TIMESTAMP", "2024-01-02 Europe/Paris"),
     ("INTERVAL YEAR TO MONTH", "P1D"), ("INTERVAL DAY TO SECOND", "P1Y"), ("BOOLEAN", "maybe"),
     ("NUMBER(5)", "1.5.5"), ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-02T03:04:05 Nowhere/City")],
)
def test_malformed_redo_values_raise_naming_the_column(type_text: str, value: str) -> None:
    with pytest.raises(ValueError, match="'C'"):
        M.canonical_from_redo(col(type_text), value)


def test_converters_are_built_once_per_column_and_survive_pickling() -> None:
    mapper = OracleTypeMapper()
    c = col("NUMBER(9)")
    assert mapper.converter(c) is mapper.converter(c)
    assert mapper.converter(col("NUMBER(9)")) is mapper.converter(c)  # equal columns share it
    clone = pickle.loads(pickle.dumps(mapper))
    assert clone.canonical_from_redo(c, "1E+2") == "100"
    assert clone.canonical_from_redo(c, UNAVAILABLE) is UNAVAILABLE


# ---- snapshot SQL --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_text", "sql"),
    [
        ("NUMBER(10,2)", """TO_CHAR("C", 'TM9', 'NLS_NUMERIC_CHARACTERS=''.,''')"""),
        ("FLOAT(63)", """TO_CHAR("C", 'TM9', 'NLS_NUMERIC_CHARACTERS=''.,''')"""),
        ("DATE", """LTRIM(TO_CHAR("C", 'SYYYY-MM-DD"T"HH24:MI:SS'), ' +')"""),
        ("TIMESTAMP(3)", """LTRIM(TO_CHAR("C", 'SYYYY-MM-DD"T"HH24:MI:SS.FF6'), ' +')"""),
        ("TIMESTAMP(9)", """LTRIM(TO_CHAR("C", 'SYYYY-MM-DD"T"HH24:MI:SS.FF9'), ' +')"""),
        ("TIMESTAMP WITH LOCAL TIME ZONE",
         """LTRIM(TO_CHAR(SYS_EXTRACT_UTC("C"), 'SYYYY-MM-DD"T"HH24:MI:SS.FF6"Z"'), ' +')"""),
        ("INTERVAL DAY TO SECOND", 'TO_CHAR("C")'),
        ("XMLTYPE", 'XMLSERIALIZE(CONTENT "C" AS CLOB)'),
        ("ROWID", 'ROWIDTOCHAR("C")'),
        ("UROWID", 'CAST("C" AS VARCHAR2(4000))'),
        ("BOOLEAN", """CASE WHEN "C" THEN 'true' WHEN NOT "C" THEN 'false' END"""),
        ("BFILE", "CAST(NULL AS VARCHAR2(1))"),
        ("SDO_GEOMETRY", "CAST(NULL AS VARCHAR2(1))"),
        ("CLOB", '"C"'),
        ("CHAR(3)", '"C"'),
        ("BLOB", '"C"'),
        ("RAW(16)", '"C"'),
        ("BINARY_DOUBLE", '"C"'),
    ],
)
def test_snapshot_select_sql(type_text: str, sql: str) -> None:
    assert M.snapshot_select_sql(col(type_text)) == sql


def test_snapshot_select_sql_quotes_names_as_they_are() -> None:
    assert M.snapshot_select_sql(col("CLOB", name="my col$#")) == '"my col$#"'
    tstz = M.snapshot_select_sql(col("TIMESTAMP(9) WITH TIME ZONE", name="Ts"))
    assert tstz.startswith('CASE WHEN "Ts" IS NULL THEN NULL ')  # Oracle's NULL || ' ' is not NULL
    assert "FF9TZH:TZM" in tstz and "TO_CHAR(\"Ts\", 'TZR')" in tstz


def test_snapshot_fixup_only_where_needed() -> None:
    for type_text in ("BLOB", "RAW(4)", "LONG RAW", "BINARY_FLOAT", "BINARY_DOUBLE", "INTERVAL YEAR TO MONTH",
                      "INTERVAL DAY TO SECOND", "NUMBER", "FLOAT(63)"):
        assert M.needs_snapshot_fixup(col(type_text)), type_text
        assert M.snapshot_fixup_sql(col(type_text), "x") != "x"
    for type_text in ("NUMBER(10,2)", "DATE", "TIMESTAMP", "CLOB", "VARCHAR2(3)", "BFILE", "XMLTYPE"):
        assert not M.needs_snapshot_fixup(col(type_text)), type_text
        assert M.snapshot_fixup_sql(col(type_text), "x") == "x"


# ---- to_delta_sql / initial_value_sql (text) -----------------------------------------------------


def test_to_delta_sql_text() -> None:
    assert M.to_delta_sql(col("NUMBER(10,2)"), "v") == "CAST(v AS DECIMAL(10,2))"
    assert M.to_delta_sql(col("NUMBER(9)"), "v") == "CAST(CAST(v AS DECIMAL(38,0)) AS INT)"
    assert M.to_delta_sql(col("DATE"), "v") == "CAST(v AS TIMESTAMP_NTZ)"
    assert M.to_delta_sql(col("TIMESTAMP WITH LOCAL TIME ZONE"), "v") == "CAST(v AS TIMESTAMP)"
    assert M.to_delta_sql(col("RAW(2)"), "v") == "unhex(v)"
    for text in ("TIMESTAMP(9)", "TIMESTAMP WITH TIME ZONE", "INTERVAL DAY TO SECOND", "CLOB", "BFILE"):
        assert M.to_delta_sql(col(text), "v") == "v"


@pytest.mark.parametrize(
    ("type_text", "default", "sql"),
    [
        ("NUMBER(9)", "0", "CAST(CAST('0' AS DECIMAL(38,0)) AS INT)"),
        ("NUMBER(10,2)", "(-1.5)", "CAST('-1.5' AS DECIMAL(10,2))"),
        ("VARCHAR2(10)", "'it''s'", "'it\\'s'"),
        ("CHAR(3)", "'a'", "'a  '"),  # existing rows hold the padded value
        ("DATE", "DATE '2024-01-02'", "CAST('2024-01-02T00:00:00' AS TIMESTAMP_NTZ)"),
        ("TIMESTAMP", "TIMESTAMP '2024-01-02 03:04:05.5'", "CAST('2024-01-02T03:04:05.500000' AS TIMESTAMP_NTZ)"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP '2024-01-02 03:04:05 +02:00'",
         "CAST('2024-01-02T01:04:05.000000Z' AS TIMESTAMP)"),
        ("RAW(2)", "'0AFF'", "unhex('0aff')"),
        ("BOOLEAN", "TRUE", "CAST('true' AS BOOLEAN)"),
        ("CLOB", "EMPTY_CLOB()", "''"),
        ("DATE", "SYSDATE", None),
        ("NUMBER", "my_seq.NEXTVAL", None),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP '2024-01-02 03:04:05'", None),  # session zone unknown
        ("NUMBER", None, None),
        ("NUMBER(9)", "NULL", None),
        ("BFILE", "NULL", None),
    ],
)
def test_initial_value_sql(type_text: str, default: str | None, sql: str | None) -> None:
    c = column_from_oracle("C", type_text, default=default)
    assert M.initial_value_sql(c) == sql


# ---- Spark: to_delta_sql and snapshot_fixup_sql evaluated ----------------------------------------


@pytest.mark.parametrize("type_text", ["NUMBER(10)", "NUMBER(12,2)", "INTEGER", "DATE", "TIMESTAMP(3)", "TIMESTAMP",
                                       "TIMESTAMP(9)", "VARCHAR2(30)", "CHAR(3)"])
def test_fast_paths_give_what_the_general_converters_give(type_text: str) -> None:
    """Common literal forms skip the general parse; the result must be the same, value for value."""
    import random

    from cdclake.sources.oracle import types as T

    column = col(type_text)
    mapper = OracleTypeMapper()
    fast = mapper.converter(column)
    rng = random.Random(type_text)
    values = ["", "0", "-0", "007", "-12", "5", "2024-01-02T03:04:05", "2024-06-01T12:00:00.", "x", " 1",
              "2024-06-01T12:00:00.123456789", "0999-12-31T23:59:59.5", "+5", "1.50", "1e3"]
    values += [str(rng.randint(-10**12, 10**12)) for _ in range(50)]
    values += [f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
               f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
               + rng.choice(["", ".", "." + str(rng.randint(0, 10**9))]) for _ in range(50)]
    general = T._build_converter(column, UNAVAILABLE, fast_paths=False)
    for value in values:
        try:
            expected: Any = general(value)
        except ValueError:
            expected = ValueError
        try:
            got: Any = fast(value)
        except ValueError:
            got = ValueError
        assert got == expected, (type_text, value, got, expected)


def test_unbounded_number_keeps_every_digit_beyond_python_decimal_precision() -> None:
    """NUMBER without precision holds up to 40 significant digits; 28 is only Python's default."""
    from cdclake.sources.oracle.types import OracleTypeMapper, column_from_oracle

    column = column_from_oracle("FREE", "NUMBER")
    convert = OracleTypeMapper().converter(column)
    assert convert("1000000000000000000000000000007") == "1000000000000000000000000000007"
    assert convert("-12345678901234567890.12345678901234567890") == "-12345678901234567890.1234567890123456789"
    assert convert("1.50E+3") == "1500"
