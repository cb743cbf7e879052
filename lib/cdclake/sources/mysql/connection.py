"""Connections to a MySQL or MariaDB server: pymysql for the driver's queries, the MariaDB JDBC driver for Spark."""

from __future__ import annotations

from typing import Any

import pymysql

from cdclake.kit import Connector, JdbcEndpoint
from cdclake.sources.mysql.config import MySqlSourceConfig


class MySqlConnector(Connector):
    config: MySqlSourceConfig

    def __init__(self, config: MySqlSourceConfig) -> None:
        super().__init__(config)
        self.system = config.type

    def connect_errors(self) -> tuple[type[BaseException], ...]:
        return (pymysql.err.OperationalError,)

    def where(self) -> str:
        return f"{self.config.host}:{self.config.port} as {self.config.user}"

    def settings(self) -> dict[str, Any]:
        """pymysql's (and python-mysql-replication's) connection keywords."""
        c = self.config
        return {"host": c.host, "port": c.port, "user": c.user, "password": c.password.get_secret_value(),
                "connect_timeout": c.connect_timeout}

    def open(self) -> pymysql.connections.Connection:
        return pymysql.connect(**self.settings(), autocommit=True, charset="utf8mb4")

    def jdbc(self) -> JdbcEndpoint:
        # The mysql scheme makes Spark pick its MySQL dialect (backquoted identifiers); the MariaDB
        # driver accepts it with permitMysqlScheme.
        url = self.config.jdbc_url or f"jdbc:mysql://{self.config.host}:{self.config.port}/?permitMysqlScheme"
        return JdbcEndpoint(url, {
            "driver": "org.mariadb.jdbc.Driver", "user": self.config.user,
            "password": self.config.password.get_secret_value(),
            # Canonical values must not depend on the server's or the JVM's zone.
            "sessionInitStatement": "SET time_zone = '+00:00'",
            **self.config.jdbc_options,
        })
