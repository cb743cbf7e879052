"""Connections to an Oracle database: python-oracledb (thin) for LogMiner and the catalog, ojdbc for Spark's reads."""

from __future__ import annotations

from typing import Any

from cdclake.kit import Connector, JdbcEndpoint
from cdclake.sources.oracle.config import TIMEZONE_AS_REGION, OracleSourceConfig

DRIVER = "oracle.jdbc.OracleDriver"


def jdbc_url(config: OracleSourceConfig) -> str:
    dsn = config.jdbc_url or config.snapshot_dsn or config.connect_string()
    return dsn if dsn.startswith("jdbc:") else f"jdbc:oracle:thin:@{dsn if '(' in dsn else '//' + dsn}"


def jdbc_properties(config: OracleSourceConfig) -> dict[str, str]:
    """Connection properties of Spark's reads. ``oracle.jdbc.timezoneAsRegion`` is always ``false``, last, so
    the session time zone goes as an offset, never a region name the database may not know (ORA-01882); the
    config refuses another value in ``source.jdbc_options``."""
    return {
        "driver": DRIVER, "user": config.user or "", "password": config.password.get_secret_value()
        if config.password else "", "fetchsize": str(config.snapshot.fetch_size),
        **config.jdbc_options, TIMEZONE_AS_REGION: "false",
    }


class OracleConnector(Connector):
    system = "Oracle"
    config: OracleSourceConfig
    fix = "check source.dsn (or host/port/service_name), source.user and the password variable"

    def where(self) -> str:
        return f"{self.config.connect_string()} as {self.config.user}"

    def connect_errors(self) -> tuple[type[BaseException], ...]:
        import oracledb

        return (oracledb.Error,)

    def open(self) -> Any:
        import oracledb

        password = self.config.password.get_secret_value() if self.config.password else None
        return oracledb.connect(user=self.config.user, password=password, dsn=self.config.connect_string(),
                                tcp_connect_timeout=self.config.connect_timeout, expire_time=1)  # keepalive: 1 min

    def jdbc(self) -> JdbcEndpoint:
        return JdbcEndpoint(jdbc_url(self.config), jdbc_properties(self.config))
