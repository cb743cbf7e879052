"""Flashback snapshots over Spark JDBC: every chunk of every table reads ``AS OF SCN`` the same SCN.

Chunks are key ranges when the table has a single numeric key (Spark's ``partitionColumn``), else
``ORA_HASH(ROWID, n - 1) = i`` slices. Every read goes through :func:`cdclake.kit.read_jdbc`: a
``CHAR(n)`` value keeps exactly the blanks Oracle padded it with (to n *bytes* for byte semantics),
which is what the redo carries; Spark's own read-side padding would pad to n characters. A failed
chunk is retried by Spark at the same SCN (the SCN is in the statement). ORA-01555 and ORA-01466
come back as errors that say what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError
from cdclake.kit import ChunkPlan, JdbcEndpoint, JdbcSnapshotReader, KeyRange, read_jdbc
from cdclake.sources.oracle.config import TIMEZONE_AS_REGION
from cdclake.sources.oracle.connection import OracleConnector

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.schema import TableSchema
    from cdclake.sources.oracle.config import OracleSourceConfig



def _filter(where: str | None) -> str:
    return f" WHERE {where}" if where else ""


def snapshot_query(types: Any, schema: TableSchema, scn: int, where: str | None = None) -> str:
    """The flashback SELECT of one table, returning canonical strings.

    >>> from cdclake.schema import Column, TableSchema
    >>> class T:
    ...     def snapshot_select_sql(self, c): return f'TO_CHAR("{c.name}")'
    >>> snapshot_query(T(), TableSchema("HR", "EMP", [Column("ID", "NUMBER(10)", "BIGINT")]), 42)
    'SELECT TO_CHAR("ID") AS "ID" FROM "HR"."EMP" AS OF SCN 42'
    """
    cols = ", ".join(f'{types.snapshot_select_sql(c)} AS "{c.name}"' for c in schema.columns)
    sql = f'SELECT {cols} FROM "{schema.database}"."{schema.table}" AS OF SCN {int(scn)}'
    return sql + _filter(where)


class FlashbackRead(JdbcSnapshotReader):
    """The chunked read's queries for Oracle: ``AS OF SCN`` selects, key ranges from a flashback MIN/MAX, and
    ``ORA_HASH(ROWID)`` slices for a table without an integer key. A subclass sets the SCN (``_snapshot_scn``)."""

    def __init__(self, config: OracleSourceConfig, types: Any) -> None:
        super().__init__(config.snapshot)
        self.config = config
        self.connector = OracleConnector(config)
        self.types = types
        self._snapshot_scn: int | None = None

    def at_scn(self, scn: int) -> None:
        """Read as of ``scn`` from now on."""
        self._snapshot_scn = scn

    @property
    def scn(self) -> int:
        assert self._snapshot_scn is not None
        return self._snapshot_scn

    def endpoint(self) -> JdbcEndpoint:
        return self.connector.jdbc()

    def chunk_column(self, key: str) -> str:
        return f'"{key}"'

    def select_sql(self, schema: TableSchema, where: str | None, chunks: ChunkPlan) -> str:
        if not chunks.slices:
            return f"({snapshot_query(self.types, schema, self.scn, where)}) q"
        cols = ", ".join(f'{self.types.snapshot_select_sql(c)} AS "{c.name}"' for c in schema.columns)
        return (f'(SELECT {cols}, ROWID AS RID FROM "{schema.database}"."{schema.table}" AS OF SCN {self.scn}'
                f'{_filter(where)}) q')

    def slice_predicates(self, schema: TableSchema, parts: int) -> tuple[str, ...]:
        return tuple(f"ORA_HASH(RID, {parts - 1}) = {i}" for i in range(parts))

    def key_range(self, spark: SparkSession, schema: TableSchema, key: str, where: str | None) -> KeyRange | None:
        # read through Spark's JDBC source like the rows: the same connection settings, and AS OF the same SCN
        endpoint = self.endpoint()
        bounds = read_jdbc(spark, endpoint.url, f'(SELECT MIN("{key}") AS LO, MAX("{key}") AS HI FROM '
                                                f'"{schema.database}"."{schema.table}" AS OF SCN {self.scn}'
                                                f'{_filter(where)}) b', endpoint.properties).first()
        if bounds is None or bounds[0] is None:
            return None
        return KeyRange(int(bounds[0]), int(bounds[1]))  # no row count: as many chunks as snapshot.partitions

    def canonical(self, frame: DataFrame, schema: TableSchema) -> DataFrame:
        select = []
        for c in schema.columns:
            expr = f"`{c.name}`"
            fix = getattr(self.types, "snapshot_fixup_sql", None)
            fixed = fix(c, expr) if fix else None
            select.append(f"CAST({fixed or expr} AS STRING) AS `{c.name}`")
        return frame.selectExpr(*select)


def explain_snapshot_error(exc: BaseException, scn: int | None) -> CdcError | None:
    text = str(exc)
    if "ORA-01555" in text:
        return CdcError(
            f"the snapshot at SCN {scn} outlived the undo retention (ORA-01555 snapshot too old)",
            "raise UNDO_RETENTION (ALTER SYSTEM SET UNDO_RETENTION = <seconds>, online) above the snapshot's "
            "duration, or snapshot fewer tables per run (--tables) with more snapshot.partitions; then run again",
            permanent=True,  # the same snapshot takes as long again
        )
    if "ORA-01466" in text:
        return CdcError(
            f"a table's definition changed while it was read at SCN {scn} (ORA-01466)",
            "run the snapshot again (it takes a new SCN); avoid DDL on the captured tables during snapshots",
        )
    if "ORA-01882" in text:
        return CdcError(
            f"the snapshot at SCN {scn} failed: a time zone region is unknown (ORA-01882 timezone region not found)",
            f"cdclake sends the session time zone as an offset ({TIMEZONE_AS_REGION}=false); check that no "
            f"-D{TIMEZONE_AS_REGION}=true is set in spark.driver/executor extraJavaOptions; if it persists, a "
            "TIMESTAMP WITH TIME ZONE value names a region the JDBC driver's time zone data lacks: upgrade the "
            "ojdbc jar (tools/jars.txt) or align the database's time zone file (DBMS_DST), then run again",
            permanent=True,
        )
    return None
