"""MySQL / MariaDB source: binlog mining over the replication protocol, JDBC snapshots."""
