"""Checklist item 27 (JDBC time zone) and the Oracle mining config rules of items 9 and 25, without
Spark or a database: the snapshot's JDBC reads always pass ``oracle.jdbc.timezoneAsRegion=false``,
ORA-01882 comes back explained, and options that would break a rule are config errors."""

from __future__ import annotations

from typing import Any

import pytest
from cdclake.config import load_config_text
from cdclake.errors import CdcError, ConfigError
from cdclake.schema import TableSchema
from cdclake.sources.oracle.connection import jdbc_properties
from cdclake.sources.oracle.snapshot import FlashbackRead, explain_snapshot_error
from cdclake.sources.oracle.types import OracleTypeMapper, column_from_oracle


def oracle_config(source_extra: str = "", mining: str = "") -> Any:
    return load_config_text(
        "pipeline: p\nsource:\n  type: oracle\n  dsn: db.example.com:1521/ORCLPDB1\n  user: C##CDC\n"
        "  password: secret\n" + source_extra + "  mining:\n    retry_backoff_s: 0\n"
        + "".join(f"    {line}\n" for line in mining.splitlines()) + "lake: {root: /tmp/lake}\n")


class _Frame:
    def selectExpr(self, *exprs: str) -> _Frame:
        return self

    def first(self) -> tuple[int, int]:
        return (1, 100)


class _Conf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {"spark.sql.readSideCharPadding": "true"}

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class _Reader:
    def __init__(self, conf: _Conf) -> None:
        self.conf = conf
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.settings: list[dict[str, str]] = []  # the session's settings at each read

    def jdbc(self, url: str, table: str, **kw: Any) -> _Frame:
        self.calls.append((url, table, kw))
        self.settings.append(dict(self.conf.values))
        return _Frame()


class _Spark:
    def __init__(self) -> None:
        self.conf = _Conf()
        self.read = _Reader(self.conf)


class _Flashback(FlashbackRead):
    def start(self, tables: list[str]) -> Any:
        raise AssertionError("not used")


SCHEMA = TableSchema("APP", "T", [column_from_oracle("ID", "NUMBER(10)"),
                                  column_from_oracle("AT", "TIMESTAMP(6) WITH TIME ZONE")], ["ID"])


@pytest.mark.parametrize("partitions", [1, 4])
def test_every_snapshot_jdbc_read_passes_timezone_as_region_false(partitions: int) -> None:
    config = oracle_config("  jdbc_options: {oracle.net.CONNECT_TIMEOUT: '10000'}\n"
                           f"  snapshot: {{partitions: {partitions}}}\n")
    spark = _Spark()
    reader = _Flashback(config.source, OracleTypeMapper())
    reader.at_scn(4242)
    reader.read(spark, SCHEMA)  # type: ignore[arg-type]
    assert spark.read.calls, "no JDBC read"
    for url, table, kw in spark.read.calls:
        props = kw["properties"]
        assert props["oracle.jdbc.timezoneAsRegion"] == "false"
        assert props["oracle.net.CONNECT_TIMEOUT"] == "10000"  # the user's other options are kept
        assert props["driver"] == "oracle.jdbc.OracleDriver"
        assert url == "jdbc:oracle:thin:@//db.example.com:1521/ORCLPDB1"
        assert "AS OF SCN 4242" in table
    # Every read ran without Spark's CHAR padding (Oracle pads CHAR itself, to bytes); then the
    # session's own settings are back.
    for settings in spark.read.settings:
        assert settings["spark.sql.legacy.charVarcharAsString"] == "true"
        assert settings["spark.sql.readSideCharPadding"] == "false"
    assert spark.conf.values == {"spark.sql.readSideCharPadding": "true"}


def test_a_user_option_cannot_turn_timezone_as_region_back_on() -> None:
    with pytest.raises(ConfigError) as err:
        oracle_config("  jdbc_options: {oracle.jdbc.timezoneAsRegion: 'true'}\n")
    assert "source.jdbc_options" in err.value.problem and "ORA-01882" in err.value.problem
    kept = oracle_config("  jdbc_options: {oracle.jdbc.timezoneAsRegion: 'FALSE'}\n")
    assert jdbc_properties(kept.source)["oracle.jdbc.timezoneAsRegion"] == "false"


def test_ora_01882_is_explained() -> None:
    error = explain_snapshot_error(RuntimeError("java.sql.SQLException: ORA-01882: timezone region not found"), 77)
    assert isinstance(error, CdcError)
    assert "ORA-01882" in error.problem and "SCN 77" in error.problem
    assert "oracle.jdbc.timezoneAsRegion=false" in (error.fix or "") and "extraJavaOptions" in (error.fix or "")
    assert explain_snapshot_error(RuntimeError("ORA-00942: table or view does not exist"), 77) is None


@pytest.mark.parametrize(("mining", "message"), [
    ("dictionary: redo_log_catalog\nlob: true", "redo_log_catalog cannot be combined with lob: true"),
    ("dictionary: hybrid", "'hybrid'"),
    ("flush_table: null", "flush_table: null would let mining read online redo that LGWR has not written"),
])
def test_mining_option_rules_are_config_errors(mining: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        oracle_config(mining=mining)
    assert message in err.value.problem and "source.mining" in err.value.problem


def test_allowed_mining_combinations() -> None:
    oracle_config(mining="dictionary: redo_log_catalog")
    oracle_config(mining="flush_table: null\narchive_log_only: true")  # archived redo is complete: no flush
    oracle_config(mining="lob: true")
