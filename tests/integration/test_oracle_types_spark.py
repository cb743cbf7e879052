"""Oracle type conversions evaluated in Spark: the canonical-to-Delta expressions, initial values of added
columns and the snapshot fix-ups give what the redo path gives (the Spark side of test_oracle_types)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from cdclake.schema import Column
from cdclake.sources.oracle.types import OracleTypeMapper, column_from_oracle

M = OracleTypeMapper()


def col(type_text: str, name: str = "C", **kw: Any) -> Column:
    return column_from_oracle(name, type_text, **kw)


# (type, canonical string, the Python value Spark returns for the Delta column)
SPARK_CASES: list[tuple[str, str | None, Any]] = [
    ("NUMBER(10,2)", "-12345678.99", Decimal("-12345678.99")),
    ("NUMBER(10,2)", ".5", Decimal("0.50")),
    ("NUMBER(38,38)", ".12345678901234567890123456789012345678", Decimal("0.12345678901234567890123456789012345678")),
    ("NUMBER(2,5)", ".00099", Decimal("0.00099")),
    ("NUMBER(1)", "-9", -9),
    ("NUMBER(4)", "9999", 9999),
    ("NUMBER(9)", "-999999999", -999999999),
    ("NUMBER(18)", "999999999999999999", 999999999999999999),
    ("NUMBER(5,-2)", "9999900", 9999900),
    ("NUMBER(38)", "-99999999999999999999999999999999999999", Decimal("-99999999999999999999999999999999999999")),
    ("INTEGER", "12345678901234567890123456789012345678", Decimal("12345678901234567890123456789012345678")),
    ("NUMBER(38,-5)", "1234567890123456789012345678901234567800000", "1234567890123456789012345678901234567800000"),
    ("NUMBER", "1234567890123456789012345678.123456789", "1234567890123456789012345678.123456789"),
    ("NUMBER", "-15000000000", "-15000000000"),
    ("NUMBER", "0.00000000004", "0.00000000004"),  # variable scale is kept exactly (STRING)
    ("FLOAT(63)", "3.14159265358979", "3.14159265358979"),
    ("BINARY_FLOAT", "3.40282347E+038", 3.4028234663852886e38),
    ("BINARY_FLOAT", "Infinity", float("inf")),
    ("BINARY_DOUBLE", "1.5E+000", 1.5),
    ("BINARY_DOUBLE", "-Infinity", float("-inf")),
    ("BINARY_DOUBLE", "0.1", 0.1),
    ("DATE", "2024-01-02T03:04:05", dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("DATE", "0001-01-01T00:00:00", dt.datetime(1, 1, 1)),
    ("TIMESTAMP", "9999-12-31T23:59:59.999999", dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    ("TIMESTAMP(0)", "2024-01-02T03:04:05.000000", dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("TIMESTAMP(9)", "2024-01-02T03:04:05.123456789", "2024-01-02T03:04:05.123456789"),
    ("TIMESTAMP WITH TIME ZONE", "2024-01-02T03:04:05.500000+02:00", "2024-01-02T03:04:05.500000+02:00"),
    ("TIMESTAMP WITH LOCAL TIME ZONE", "2024-01-02T01:04:05.500000Z", dt.datetime(2024, 1, 2, 1, 4, 5, 500000)),
    ("INTERVAL DAY TO SECOND", "P1DT2H3M4.5S", "P1DT2H3M4.5S"),
    ("RAW(4)", "0aff", b"\x0a\xff"),
    ("BLOB", "", b""),
    ("LONG RAW", "00ff00", b"\x00\xff\x00"),
    ("BOOLEAN", "true", True),
    ("CHAR(5)", "ab   ", "ab   "),
    ("CLOB", "héllo ✓", "héllo ✓"),
    ("BFILE", None, None),
    ("NUMBER(10,2)", None, None),
]


# (type, JDBC value as Spark would read it, canonical string after the fix-up)
FIXUP_CASES: list[tuple[str, str, str | None]] = [
    ("BLOB", "X'0AFF'", "0aff"),
    ("RAW(16)", "X'00'", "00"),
    ("LONG RAW", "X''", ""),
    ("BINARY_DOUBLE", "CAST(0.1 AS DOUBLE)", "0.1"),
    ("BINARY_DOUBLE", "CAST('Infinity' AS DOUBLE)", "Infinity"),
    ("BINARY_DOUBLE", "CAST('NaN' AS DOUBLE)", "NaN"),
    ("BINARY_FLOAT", "CAST('3.4028235E38' AS FLOAT)", "3.4028235E38"),
    ("INTERVAL YEAR TO MONTH", "'+01-02'", "P1Y2M"),
    ("INTERVAL YEAR(9) TO MONTH", "'-000000012-11'", "-P12Y11M"),
    ("INTERVAL YEAR TO MONTH", "'+00-00'", "P0Y0M"),
    ("INTERVAL DAY TO SECOND", "'+01 02:03:04.500000'", "P1DT2H3M4.5S"),
    ("INTERVAL DAY(9) TO SECOND(9)", "'-000000100 23:59:59.000000001'", "-P100DT23H59M59.000000001S"),
    ("INTERVAL DAY TO SECOND", "'+00 00:00:00.000000'", "P0DT0H0M0S"),
    ("INTERVAL DAY(2) TO SECOND(0)", "'+05 00:00:07'", "P5DT0H0M7S"),
    ("INTERVAL DAY TO SECOND", "'-00 00:00:00,250000'", "-P0DT0H0M0.25S"),
    ("INTERVAL DAY TO SECOND", "CAST(NULL AS STRING)", None),
    ("BLOB", "CAST(NULL AS BINARY)", None),
]


@pytest.mark.spark
def test_variable_number_snapshot_text_matches_redo_text(spark: Any) -> None:
    c = col("NUMBER")
    for tm9, redo in ((".5", ".50"), ("-.25", "-.25"), ("12", "12"), ("-1.5", "-1.5E+000")):
        fixed = spark.sql(f"SELECT {M.snapshot_fixup_sql(c, repr(tm9))}").first()[0]
        assert fixed == M.canonical_from_redo(c, redo), tm9


@pytest.mark.spark
def test_to_delta_sql_in_spark(spark: Any) -> None:
    """One SELECT evaluating every case with Spark (ANSI mode), and the result types."""
    select = []
    for k, (type_text, canonical, _want) in enumerate(SPARK_CASES):
        literal = "CAST(NULL AS STRING)" if canonical is None else "'" + canonical.replace("'", "\\'") + "'"
        select.append(f"{M.to_delta_sql(col(type_text), literal)} AS c{k}")
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    df = spark.sql("SELECT " + ", ".join(select))
    row = df.collect()[0]
    for k, (type_text, canonical, want) in enumerate(SPARK_CASES):
        got = row[k]
        assert got == want and type(got) is type(want), (type_text, canonical, got, want)
        assert df.schema[k].dataType.simpleString() == col(type_text).spark_type.lower(), type_text


@pytest.mark.spark
def test_failed_conversions_stop_the_run(spark: Any) -> None:
    """ANSI CAST: a value that does not fit the column's decimal is an error, not NULL."""
    expr = M.to_delta_sql(col("NUMBER(10,2)"), "'1E+30'")
    with pytest.raises(Exception, match="NUMERIC_VALUE_OUT_OF_RANGE|cannot be represented"):
        spark.sql(f"SELECT {expr}").collect()


@pytest.mark.spark
def test_initial_values_evaluate_in_spark(spark: Any) -> None:
    cases = [
        (column_from_oracle("C", "NUMBER(9)", default="42"), 42),
        (column_from_oracle("C", "CHAR(3)", default="'a'"), "a  "),
        (column_from_oracle("C", "DATE", default="DATE '2024-01-02'"), dt.datetime(2024, 1, 2)),
        (column_from_oracle("C", "RAW(2)", default="'0AFF'"), b"\x0a\xff"),
    ]
    row = spark.sql("SELECT " + ", ".join(f"{M.initial_value_sql(c)} AS c{k}" for k, (c, _) in enumerate(cases)))
    assert list(row.collect()[0]) == [want for _, want in cases]


@pytest.mark.spark
def test_snapshot_fixup_in_spark(spark: Any) -> None:
    """The snapshot's fix-ups give the same canonical strings as canonical_from_redo."""
    select = [f"{M.snapshot_fixup_sql(col(t), jdbc)} AS c{k}" for k, (t, jdbc, _) in enumerate(FIXUP_CASES)]
    row = spark.sql("SELECT " + ", ".join(select)).collect()[0]
    for k, (type_text, jdbc, want) in enumerate(FIXUP_CASES):
        assert row[k] == want, (type_text, jdbc, row[k])
        if want is not None and type_text.startswith("INTERVAL"):
            # the redo path's normalisation of Oracle's interval text agrees with the Spark fix-up
            assert M.canonical_from_redo(col(type_text), jdbc.strip("'")) == want
