"""A Db2 capture emulator: a database with ASN Capture's control and change-data tables, behind the drivers
the Db2 source uses (an ``ibm_db_dbi``-shaped connection, and a real JDBC driver for Spark's reads).

No Db2 server can run in the test environment. :class:`EmulatedDb2` keeps tables in SQLite files (one per
schema) with the real layouts of ``ASNCDC``'s control tables and of the CD tables ``ASNCDC.ADDTABLE`` makes,
a log of interleaved transactions, and :class:`CaptureAgent`, which turns committed work into CD and UOW rows
in commit cycles and moves the register's synchpoint. :meth:`EmulatedDb2.connect` returns a connection that
answers only :mod:`cdclake.sources.db2.queries` (:class:`UnknownStatementError` otherwise); Spark reads the
same files through ``org.xerial:sqlite-jdbc`` with the source's own read SQL.

What the emulator cannot prove: Db2's exact text for ``CAST(... AS VARCHAR)`` of DECFLOAT and TIMESTAMP
(emulated from IBM's documentation), JCC's type conversions (emulated by the stored forms), Capture's
behaviour beyond what ``docs/db2.md`` describes; the opt-in live suite (``make test-db2-live``) runs the same
scenarios on a real Db2.
"""

from cdclake.testing.db2_emulator.database import CaptureAgent, EmulatedDb2, Transaction
from cdclake.testing.db2_emulator.dbapi import (
    EmulatedConnection,
    Error,
    OperationalError,
    ProgrammingError,
    UnknownStatementError,
    to_python,
)
from cdclake.testing.db2_emulator.values import (
    JDBC_DRIVER,
    ColumnType,
    EmulatorError,
    db2_timestamp_text,
    parse_type,
    store,
)

__all__ = [
    "JDBC_DRIVER", "CaptureAgent", "ColumnType", "EmulatedConnection", "EmulatedDb2", "EmulatorError", "Error",
    "OperationalError", "ProgrammingError", "Transaction", "UnknownStatementError", "db2_timestamp_text",
    "parse_type", "store", "to_python",
]
