"""Flashback snapshots over Spark JDBC: every chunk of every table reads ``AS OF SCN`` the same SCN.

Chunks are key ranges when the table has a single numeric key (Spark's ``partitionColumn``), else
``ORA_HASH(ROWID, n - 1) = i`` slices. Every read goes through :func:`cdclake.kit.read_jdbc`: a
``CHAR(n)`` value keeps exactly the blanks Oracle padded it with (to n *bytes* for byte semantics),
which is what the redo carries; Spark's own read-side padding would pad to n characters. A failed
chunk is retried by Spark at the same SCN (the SCN is in the statement). ORA-01555 and ORA-01466
come back as errors that say what to do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from cdclake.errors import CdcError
from cdclake.kit import ChunkPlan, JdbcEndpoint, JdbcSnapshotReader, KeyRange, read_jdbc
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.config import TIMEZONE_AS_REGION
from cdclake.sources.oracle.connection import OracleConnector
from cdclake.sources.oracle.position import ScnPosition
from cdclake.spi import Position, SnapshotStart

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


class OracleDatabase(Protocol):
    """What the snapshot reader asks of the source: its LogMiner client, identity and export-mode rows."""

    config: OracleSourceConfig
    types: Any
    client: Any

    @property
    def export_mode(self) -> bool: ...

    def database(self) -> tuple[int, str, int]: ...

    def export_schemas(self) -> dict[str, TableSchema]: ...

    def export_frame(self) -> DataFrame: ...


def _lob_text(value: Any) -> str:
    return value.read() if hasattr(value, "read") else str(value)


#: a test's stand-in for the JDBC read (the LogMiner simulator's flashback rows): (spark, schema, scn) -> rows
SnapshotReadFunction = Callable[["SparkSession", "TableSchema", int], "DataFrame"]
_ORACLE_PLAIN_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


class OracleSnapshotReader(FlashbackRead):
    """Every chunk of every table read ``AS OF SCN`` one SCN (or the simulator's reader, or nothing in export mode)."""

    def __init__(self, source: OracleDatabase, snapshot_reader: SnapshotReadFunction | None = None) -> None:
        super().__init__(source.config, source.types)
        self.source = source
        self._snapshot_reader = snapshot_reader

    def start(self, tables: list[str]) -> SnapshotStart:
        from cdclake.sources.oracle.ddl import apply_ddl

        if self.source.export_mode:
            schemas = self.source.export_schemas()
            first = self.source.export_frame().agg({"SCN": "min"}).first()[0]
            scn = int(first) - 1 if first is not None else 0
            self.at_scn(scn)
            return SnapshotStart(ScnPosition(scn), {t: schemas[t] for t in tables},
                                 {t: f"-- from {self.config.export.ddl_file or 'export DDL rows'}" for t in tables})
        # The dictionary build comes before the locks (it commits) and before the snapshot SCN.
        client = self.source.client
        dictionary = client.build_dictionary() if self.config.mining.dictionary == "redo_log_catalog" else None
        dbid, role, resetlogs = self.source.database()
        conn = client.conn
        locked = self.config.snapshot.lock_mode == "shared"
        try:
            if locked:
                for t in tables:
                    owner, name = t.split(".", 1)
                    self.source.client.execute(Q.LOCK_TABLE.format(owner=owner, table=name))
            scn = self.source.client.current_scn()
            ddl: dict[str, str] = {}
            schemas: dict[str, TableSchema] = {}
            for t in tables:
                owner, name = t.split(".", 1)
                text = _lob_text(self.source.client.query(Q.TABLE_DDL, name=name, owner=owner)[0][0])
                outcome = apply_ddl(text, dict(schemas), owner)
                if t not in outcome.changes or outcome.changes[t] is None:
                    raise CdcError(f"the definition of {t} from DBMS_METADATA did not parse into a table",
                                   "report the statement; exclude the table meanwhile", permanent=True)
                schemas[t] = outcome.changes[t]
                ddl[t] = text
        finally:
            if locked:
                conn.rollback()  # releases the ROW SHARE locks
        oldest = self.source.client.oldest_open_transaction_scn()
        resume = None if oldest is None or oldest > scn else oldest - 1
        self.at_scn(scn)
        return SnapshotStart(ScnPosition(scn, resume, dbid=dbid, role=role, dictionary=dictionary,
                                         resetlogs=resetlogs), schemas, ddl)

    def read(self, spark: SparkSession, schema: TableSchema, where: str | None = None) -> DataFrame:
        if self._snapshot_scn is None:
            raise CdcError("a snapshot read before its start", "this is a bug in the caller", permanent=True)
        if self._snapshot_reader is not None:
            frame = self._snapshot_reader(spark, schema, self._snapshot_scn)
            return frame.where(where) if where else frame
        if self.source.export_mode:
            ddl = ", ".join(f"`{c.name}` STRING" for c in schema.columns)
            return spark.createDataFrame([], ddl)
        return super().read(spark, schema, where)

    def prepare(self, position: Position) -> None:
        assert isinstance(position, ScnPosition)
        self.at_scn(position.scn)

    def filter_identifier(self, name: str) -> str | None:
        """Only an upper-case plain name: Oracle folds a bare name to upper case (Spark ignores case),
        and the two have no quoting in common (Oracle ``"x"`` is a string in Spark SQL)."""
        return name if _ORACLE_PLAIN_NAME.fullmatch(name) else None

    def explain_error(self, exc: BaseException) -> CdcError | None:
        return explain_snapshot_error(exc, self._snapshot_scn)

    def deferred_hint(self) -> str:
        return "run the snapshot again once that transaction has ended (GV$TRANSACTION shows it)"
