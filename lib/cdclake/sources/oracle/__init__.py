"""Oracle source: LogMiner mining, SQL_REDO parsing, flashback snapshots."""
