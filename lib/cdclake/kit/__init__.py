"""The source kit: what every source needs and is written once here.

A source is a few focused parts on this kit (``docs/architecture.md``, "Writing a source"):

* :mod:`cdclake.kit.config` — the ``source:`` block's shared keys: :class:`ServerConfig` (host, port,
  credentials, driver and JDBC options) and :class:`SnapshotOptions` (``source.snapshot``);
* :mod:`cdclake.kit.connection` — a connection that cannot be opened becomes one clear, retryable error
  (:func:`cannot_connect`);
* :mod:`cdclake.kit.jdbc` — every Spark JDBC read of a source's rows (:func:`read_jdbc`);
* :mod:`cdclake.kit.snapshot` — the chunked, key-range-partitioned JDBC snapshot read
  (:class:`JdbcSnapshotReader`): a source supplies only its few queries;
* :mod:`cdclake.kit.ddl` — the schema registry a DDL parser applies one statement to
  (:class:`SchemaRegistry`), which makes its :class:`~cdclake.spi.DdlOutcome`.

The kit imports :mod:`cdclake.spi` and the basics only; the engine does not use it.
"""

from cdclake.kit.config import ServerConfig, SnapshotOptions
from cdclake.kit.connection import Connector, Session, cannot_connect
from cdclake.kit.ddl import SchemaRegistry
from cdclake.kit.jdbc import JdbcEndpoint, read_jdbc
from cdclake.kit.snapshot import ChunkPlan, HeldTables, JdbcSnapshotReader, KeyRange

__all__ = ["ChunkPlan", "Connector", "HeldTables", "JdbcEndpoint", "JdbcSnapshotReader", "KeyRange", "SchemaRegistry",
           "ServerConfig", "Session", "SnapshotOptions", "cannot_connect", "read_jdbc"]
