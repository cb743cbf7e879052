"""Registration of the MySQL/MariaDB source (:mod:`cdclake.spi.plugin`)."""

from __future__ import annotations

from cdclake.sources.mysql.config import MySqlSourceConfig
from cdclake.spi import SourcePlugin

PLUGIN = SourcePlugin(
    name="mysql",
    types=("mysql", "mariadb"),
    config_model=MySqlSourceConfig,
    source="cdclake.sources.mysql.source:MySqlSource",
    # the JDBC driver (snapshots) and the binlog decoder executors run (jvm/src/cdclake/mysql)
    jars=("org.mariadb.jdbc:mariadb-java-client:3.5.6", "com.zendesk:mysql-binlog-connector-java:0.30.1"),
    docs="docs/mysql.md",
    summary="MySQL and MariaDB: binlog over the replication protocol, JDBC snapshots under LOCK TABLES",
)
