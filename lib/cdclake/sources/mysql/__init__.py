"""MySQL / MariaDB source: binlog mining over the replication protocol, JDBC snapshots."""

import logging


class _NoMetadataAdvice(logging.Filter):
    """python-mysql-replication warns on every stream that ``binlog_row_metadata`` is not FULL (or
    that the server predates it). cdclake decodes rows with the schema history's column names and
    types, never the binlog's optional metadata, so that advice does not apply and is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        return "BINLOG_ROW_METADATA" not in text and "Before using MARIADB 10.5.0" not in text


logging.getLogger("pymysqlreplication").addFilter(_NoMetadataAdvice())
