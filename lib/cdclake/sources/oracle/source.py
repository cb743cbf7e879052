"""The Oracle source: ``AS OF SCN`` snapshots over Spark JDBC and LogMiner mining decoded in Spark.

Live mode talks to the database with python-oracledb (thin mode); ``mode: export`` mines exported
``V$LOGMNR_CONTENTS`` rows (CSV or Parquet) with the same decoder, for backfills, audits and
support cases. Design notes: ``docs/oracle-design.md``.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from cdclake.errors import CdcError, DdlParseError, PositionLostError, PreflightError
from cdclake.schema import TableSchema
from cdclake.sources.oracle import preflight
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.config import OracleSourceConfig
from cdclake.sources.oracle.connection import OracleConnector
from cdclake.sources.oracle.decode import DecodePlan, decode_deferred, decode_prepared, prepare
from cdclake.sources.oracle.logminer import RAW_COLUMNS, LogMinerClient, MiningSettings, raw_arrow_schema
from cdclake.sources.oracle.position import LogPoint, ScnPosition
from cdclake.sources.oracle.snapshot import OracleSnapshotReader, SnapshotReadFunction
from cdclake.spi import (
    PENDING_SCAN_EVENTS,
    Ddl,
    FrameLogReader,
    MinedWindow,
    PendingChanges,
    Position,
    Source,
    SourceContext,
    WindowRequest,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

RAW_DDL = (
    "WINDOW_ID BIGINT, IDX BIGINT, SCN BIGINT, START_SCN BIGINT, COMMIT_SCN BIGINT, TIMESTAMP TIMESTAMP, "
    "COMMIT_TIMESTAMP TIMESTAMP, XID STRING, OPERATION_CODE INT, OPERATION STRING, SEG_OWNER STRING, "
    "TABLE_NAME STRING, ROW_ID STRING, ROLLBACK INT, RS_ID STRING, SSN BIGINT, CSF INT, SQL_REDO STRING, "
    "THREAD INT, USERNAME STRING, INFO STRING, K INT"
)
# redo_log_catalog: the one-row table whose row names the pipeline that builds dictionaries (queries.py).
DICTIONARY_CLAIM_TABLE = "CDCLAKE_DICTIONARY_CLAIM"


class SparkRawSink:
    """Mined Arrow chunks → Parquet under ``root/batch=N`` (a retried batch is cleared first).

    A local (or ``file:``) root is written with pyarrow directly; other file systems through Spark.
    """

    chunk_rows = 200_000

    def __init__(self, spark: SparkSession, root: str) -> None:
        self.spark = spark
        self.root = root
        self.rows = 0
        self.continuations = False  # any CSF = 1 row: statements to join in Spark
        local = root[len("file:"):] if root.startswith("file:") else root
        self._local = local if local.startswith("/") else None
        self._chunks = 0

    def _path(self, batch: int) -> str:
        return f"{self.root}/batch={batch:06d}"

    def write(self, batch: int, table: Any) -> None:
        import pyarrow.compute as pc

        if not self.continuations and pc.any(pc.equal(table["CSF"], 1)).as_py():
            self.continuations = True
        if self._local is not None:
            import os

            import pyarrow.parquet as pq

            directory = f"{self._local}/batch={batch:06d}"
            os.makedirs(directory, exist_ok=True)
            self._chunks += 1
            pq.write_table(table, f"{directory}/part-{self._chunks:06d}.parquet")
        else:
            self.spark.createDataFrame(table, schema=RAW_DDL).write.mode("append").parquet(self._path(batch))
        self.rows += table.num_rows

    def discard(self, batch: int) -> None:
        from cdclake.hadoopfs import hadoop_delete

        hadoop_delete(self.spark, self._path(batch))


class OracleSource(Source):
    connector = "oracle"
    position_type = ScnPosition

    def __init__(self, config: OracleSourceConfig, context: SourceContext,
                 connect: Callable[[], Any] | None = None,
                 snapshot_reader: SnapshotReadFunction | None = None) -> None:
        from cdclake.sources.oracle.types import OracleTypeMapper

        super().__init__(config, context, OracleTypeMapper())
        # Names this pipeline in the redo_log_catalog claim ("<pipeline>@<lake root>").
        self.pipeline_id = context.pipeline_id
        self._identity: tuple[int, str, int] | None = None  # DBID, DATABASE_ROLE, RESETLOGS_CHANGE# (preflight)
        self.skip_unparsable_ddl = context.skip_unparsable_ddl
        self._connect = connect or OracleConnector(config).connect
        m = config.mining
        self.client = LogMinerClient(self._connect, MiningSettings(
            dictionary=m.dictionary, archive_log_only=m.archive_log_only, archive_destination=m.archive_destination,
            batch_size_min=m.batch_size_min, batch_size_max=m.batch_size_max,
            batch_size_default=m.batch_size_default, batch_size_increment=m.batch_size_increment,
            gap_size_min=m.gap_size_min, gap_interval_ms=m.gap_interval_ms, fetch_size=m.fetch_size, lob=m.lob,
            retries=m.retries, retry_backoff_s=m.retry_backoff_s, flush_table=m.flush_table, pdb=config.pdb,
        ))
        self._user: str | None = None
        self._export: DataFrame | None = None
        self.snapshot = OracleSnapshotReader(self, snapshot_reader)
        self.log = OracleLogReader(self)

    @property
    def export_mode(self) -> bool:
        return self.config.mode == "export"

    @property
    def user(self) -> str:
        if self._user is None:
            self._user = str(self.client.query(Q.SESSION_USER)[0][0]).upper()
        return self._user

    def preflight(self) -> None:
        if self.export_mode:
            path = self.config.export.path if self.config.export else ""
            if "://" not in path and not Path(path).exists():
                raise PreflightError(f"export file {path} does not exist", "fix source.export.path")
            return
        tables = self.captured_tables()
        facts = preflight.check(self.client, self.config.pdb, tables, self.user,
                                archive_log_only=self.config.mining.archive_log_only, lob=self.config.mining.lob)
        self._identity = (int(facts["dbid"]), str(facts["role"]), int(facts["resetlogs"]))
        self.client.with_retry("listing archive destinations", self.client.archive_destination)
        if self.config.mining.dictionary == "redo_log_catalog":
            self._claim_dictionary(str(facts["database"]))

    def _claim_dictionary(self, database: str) -> None:
        """Only one pipeline per database may use redo_log_catalog: each builds the whole LogMiner
        dictionary into the redo every run. The claim is a one-row table in the capture user's schema."""
        c, table = self.client, DICTIONARY_CLAIM_TABLE
        if not int(c.query(Q.FLUSH_TABLE_EXISTS, name=table)[0][0]):
            try:
                c.execute(Q.DICTIONARY_CLAIM_CREATE.format(table=table))
            except Exception as exc:
                if "ORA-00955" not in str(exc):  # not: created by another pipeline a moment ago
                    raise
        rows = c.query(Q.DICTIONARY_CLAIM_READ.format(table=table))
        if not rows:
            try:
                c.execute(Q.DICTIONARY_CLAIM_INSERT.format(table=table), pipeline=self.pipeline_id)
                c.conn.commit()
                return
            except Exception as exc:
                if "ORA-00001" not in str(exc):  # not: another pipeline claimed it first
                    raise
                c.conn.rollback()
                rows = c.query(Q.DICTIONARY_CLAIM_READ.format(table=table))
        holder = str(rows[0][0]) if rows else None
        if holder != self.pipeline_id:
            raise PreflightError(
                f"pipeline {holder} already mines database {database} with source.mining.dictionary: "
                f"redo_log_catalog; a second one ({self.pipeline_id}) is not allowed: every pipeline would build "
                "the whole LogMiner dictionary into the redo on each run",
                f"set source.mining.dictionary: online_catalog for this pipeline; or, if {holder} no longer uses "
                f"redo_log_catalog, release its claim: DELETE FROM {self.user}.{table}; COMMIT;",
            )

    def captured_tables(self) -> list[str]:
        if self.export_mode:
            return sorted(t for t in self.export_schemas() if self.config.captures(t))
        rows = self.client.query(Q.TABLES.format(system_schemas=Q.sql_list(Q.SYSTEM_SCHEMAS)))
        return [f"{o}.{t}" for o, t in rows if self.config.captures(f"{o}.{t}") and not _internal_table(t)]

    def database(self) -> tuple[int, str, int]:
        """DBID, DATABASE_ROLE and RESETLOGS_CHANGE# (from preflight, or read now)."""
        if self._identity is not None:
            return self._identity
        dbid, role, _, resetlogs = self.client.database_identity()
        return dbid, role, resetlogs

    def export_frame(self) -> DataFrame:
        if self._export is None:
            from pyspark.sql import SparkSession

            spark = SparkSession.getActiveSession()
            if spark is None:
                raise CdcError("no Spark session for export mode", "this is a bug in the caller", permanent=True)
            exp = self.config.export
            assert exp is not None
            reader = spark.read
            frame = (reader.option("header", "true").option("multiLine", "true").option("escape", '"')
                     .csv(exp.path) if exp.format == "csv" else reader.parquet(exp.path))
            missing = [c for c in Q.CONTENTS_COLUMNS if c not in frame.columns]
            if missing:
                raise CdcError(f"export {exp.path} lacks the column(s) {', '.join(missing)}",
                               "export V$LOGMNR_CONTENTS with the columns named as in the view (see docs/oracle.md)",
                               permanent=True)
            from pyspark.sql import functions as F

            typed = frame.select(
                *[F.col(f"`{c}`").cast(_export_type(c)).alias(c.replace("#", "")) for c in Q.CONTENTS_COLUMNS])
            self._export = typed.withColumn("__file_order", F.monotonically_increasing_id())
        return self._export

    def export_window(self, lo: int, hi: int, window_id: int, max_events: int | None) -> DataFrame:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        rows = self.export_frame().where(f"SCN > {lo} AND SCN <= {hi}")
        ordered = rows.withColumn("IDX", F.row_number().over(Window.orderBy("SCN", "__file_order")) - 1)
        return ordered.withColumn("WINDOW_ID", F.lit(window_id).cast("bigint")).select(
            "WINDOW_ID", "IDX", *RAW_COLUMNS)

    def export_schemas(self) -> dict[str, TableSchema]:
        from cdclake.sources.oracle.ddl import apply_ddl

        exp = self.config.export
        registry: dict[str, TableSchema] = {}
        statements: list[tuple[str, str | None]] = []
        if exp and exp.ddl_file:
            text = Path(exp.ddl_file).read_text()
            statements += [(s, None) for s in _split_statements(text)]
        else:
            for r in self.export_frame().where(f"OPERATION_CODE = {Q.OP_DDL}").orderBy("SCN", "__file_order") \
                    .select("SQL_REDO", "SEG_OWNER").collect():
                statements.append((r.SQL_REDO, r.SEG_OWNER))
        for statement, owner in statements:
            if re.match(r"\s*CREATE\s+TABLE", statement, re.I):
                outcome = apply_ddl(statement, registry, owner)
                registry.update({t: s for t, s in outcome.changes.items() if s is not None})
        return registry


    def close(self) -> None:
        self.snapshot.end()
        self.client.close()
        self.log.release()


class OracleLogReader(FrameLogReader):
    """LogMiner's rows of a window, fetched by the driver in batches and decoded in Spark."""

    def __init__(self, source: OracleSource) -> None:
        self.source = source
        self.config = source.config
        self._persisted: list[DataFrame] = []

    def current_position(self) -> ScnPosition:
        if self.source.export_mode:
            last = self.source.export_frame().agg({"SCN": "max"}).first()[0]
            return ScnPosition(int(last or 0))
        dictionary = None
        if self.config.mining.dictionary == "redo_log_catalog":
            # Built before the window end is read, so the next window (from that end) can use it; in
            # archive-log-only mode it is found among the archived logs once archived.
            built = self.source.client.build_dictionary()
            dictionary = None if self.config.mining.archive_log_only else built
        dbid, role, resetlogs = self.source.database()
        return ScnPosition(self.source.client.plan_end(), dbid=dbid, role=role, dictionary=dictionary,
                           resetlogs=resetlogs)

    def check_available(self, start: Position) -> None:
        assert isinstance(start, ScnPosition)
        if not self.source.export_mode:
            self._check_same_database(start)
            self.source.client.check_available(start.mine_from)

    def _check_same_database(self, start: ScnPosition) -> None:
        """A position continues only on the database whose SCNs it counts: same DBID (a promoted
        physical standby keeps it), never a logical standby after a primary (its SCNs are its own),
        and not past an OPEN RESETLOGS that discarded changes the lake already holds."""
        if start.dbid is None:
            return  # a position from before DBIDs were recorded
        dbid, role, resetlogs = self.source.database()
        if start.dbid == dbid and not (start.role == "PRIMARY" and role == "LOGICAL STANDBY"):
            self._check_incarnation(start, dbid, resetlogs)
            return
        what = "a logical standby's SCNs are its own" if role == "LOGICAL STANDBY" else "SCNs of another database"
        raise PositionLostError(
            f"the pipeline's position ({start.describe()}) was taken on database DBID {start.dbid} ({start.role}), "
            f"but source.dsn now reaches DBID {dbid} ({role}): {what} and do not continue that checkpoint",
            "point source.dsn back at the database the pipeline was snapshotted on (or at its promoted physical "
            "standby, which keeps the DBID); or re-snapshot from this database into a new pipeline (another "
            "pipeline name or lake.root): tables that are streaming are never re-snapshotted in place",
        )

    @staticmethod
    def _check_incarnation(start: ScnPosition, dbid: int, resetlogs: int) -> None:
        """After an OPEN RESETLOGS (point-in-time recovery, FLASHBACK DATABASE, a failover) the database
        has no changes at or above its RESETLOGS_CHANGE# from before it. A checkpoint below that SCN
        continues (the new incarnation's redo follows it); one at or above it may hold changes the
        database lost, so the lake would keep rows the source no longer has."""
        if start.resetlogs is None or resetlogs == start.resetlogs:
            return
        if start.scn < resetlogs:
            log.info("database DBID %s opened with RESETLOGS at SCN %s, after the checkpoint (%s): continuing "
                     "into the new incarnation", dbid, resetlogs, start.describe())
            return
        raise PositionLostError(
            f"database DBID {dbid} was opened with RESETLOGS at SCN {resetlogs} (a point-in-time recovery, "
            f"FLASHBACK DATABASE or failover), but the pipeline's checkpoint is at {start.describe()}, in the "
            f"incarnation of RESETLOGS_CHANGE# {start.resetlogs}: changes the lake took from SCN {resetlogs} on "
            "were discarded by the database, so the lake may hold rows the source no longer has",
            "re-snapshot from this database into a new pipeline (another pipeline name or lake.root), or restore "
            "the lake to a copy taken before SCN " + str(resetlogs) + " and mine from there",
        )

    def assemble_pieces(self, rows: DataFrame) -> DataFrame:
        if not self.config.mining.lob:
            return rows
        from cdclake.sources.oracle.lobs import assemble

        return assemble(rows)

    def release(self) -> None:
        """Drop cached frames of the last window (after the engine has consumed it)."""
        for frame in self._persisted:
            frame.unpersist()
        self._persisted.clear()

    def pending_changes(self, positions: Mapping[str, Position],
                        carried: Mapping[str, frozenset[str]] | None = None,
                        max_events: int = PENDING_SCAN_EVENTS) -> PendingChanges:
        """SCNs to the current SCN and each table's oldest pending commit, from the redo (:mod:`.lag`)."""
        from cdclake.sources.oracle import lag

        return lag.pending_changes(self.source, positions, carried, max_events)

    def frame(self, spark: SparkSession, request: WindowRequest) -> MinedWindow:
        """DDL at or below a table's floor (its position) is in its snapshot already; DDL at or below
        ``start`` is skipped for every table."""
        window_id, schemas, versions, floors = request.window_id, request.schemas, request.versions, request.floors
        max_events, staging, next_schema_version = request.max_events, request.staging, request.next_schema_version
        start, end_limit = request.start, request.end_limit
        assert isinstance(start, ScnPosition) and isinstance(end_limit, ScnPosition)
        lo, hi = start.mine_from, end_limit.scn
        here, _, here_resetlogs = (None, None, None) if self.source.export_mode else self.source.database()
        other_dbid = end_limit.dbid is not None and end_limit.dbid != here
        other_incarnation = end_limit.resetlogs is not None and end_limit.resetlogs != here_resetlogs
        if here is not None and (other_dbid or other_incarnation):
            # Planned on another database (that run was refused before mining) or before an OPEN
            # RESETLOGS: its end is no SCN of this lineage. Nothing of the window was mined, so it may
            # end lower.
            log.warning("window %s was planned on DBID %s (RESETLOGS_CHANGE# %s) up to SCN %s; mining it on DBID %s "
                        "(RESETLOGS_CHANGE# %s) up to the current SCN", window_id, end_limit.dbid,
                        end_limit.resetlogs, end_limit.scn, here, here_resetlogs)
            end_limit = ScnPosition(self.source.client.plan_end(), dbid=here, resetlogs=here_resetlogs)
            hi = min(hi, end_limit.scn)
        if self.source.export_mode:
            raw = self.source.export_window(lo, hi, window_id, max_events)
            mined_hi = hi if max_events is None else _export_hi(raw, hi, max_events)
            raw = raw.where(f"SCN <= {mined_hi}")
            prepared = prepare(raw, not raw.where("CSF = 1").limit(1).isEmpty(), rank=True).persist()
            self._persisted.append(prepared)
            ddl_rows = [r.asDict() for r in prepared.where(f"OPERATION_CODE = {Q.OP_DDL}").orderBy("IDX").collect()]
            commit_scn = {int(r[0] or 1): int(r[1]) for r in prepared.where(f"OPERATION_CODE = {Q.OP_COMMIT}")
                          .groupBy("THREAD").agg({"SCN": "max"}).collect()}
            batches = 1
            nothing_fetched = False  # not known without a job
        else:
            sink = SparkRawSink(spark, f"{staging}/raw")
            owners = sorted({t.split(".", 1)[0] for t in {*schemas, *self.source.captured_tables()}} | {"UNKNOWN"})
            excluded = [self.source.user, *[u.upper() for u in self.config.mining.exclude_users]]
            mined = self.source.client.mine(lo, hi, owners, excluded, window_id, sink, max_events, start.dictionary)
            mined_hi, batches, commit_scn = mined.hi, len(mined.batches), mined.commit_scn
            ddl_rows = _join_ddl_pieces(mined.ddl)
            raw = spark.read.schema(RAW_DDL).parquet(f"{staging}/raw") if sink.rows else spark.createDataFrame(
                [], RAW_DDL)
            prepared = prepare(raw, sink.continuations, rank=False)
            nothing_fetched = not sink.rows
        plan, ddl, extra = self._schema_changes(spark, [SimpleNamespace(**r) for r in ddl_rows], schemas, versions,
                                                start.ordinal, floors,
                                                next_schema_version, window_id)
        decoded = decode_prepared(prepared, plan)
        if extra is not None:
            decoded = decoded.unionByName(extra, allowMissingColumns=True)
        # The dictionary built when this window was planned serves the next one once mined past it.
        newer = end_limit.dictionary if end_limit.dictionary and end_limit.dictionary[1] <= mined_hi else None
        end = start.after_window(mined_hi, commit_scn, None, newer, end_limit.resetlogs)
        return MinedWindow(end, decoded, ddl, {"mined_to_scn": str(mined_hi), "mining_batches": batches},
                           known_empty=nothing_fetched and extra is None,
                           decode_deferred=functools.partial(decode_deferred, plan, prepared))

    def _schema_changes(self, spark: SparkSession, ddl_rows: list[Any], schemas: dict[str, TableSchema],
                        versions: dict[str, int], through: int, floors: dict[str, int] | None, next_version: int,
                        window_id: int) -> tuple[DecodePlan, list[Ddl], DataFrame | None]:
        """Apply the window's DDL in order: schema versions for the decoder, history records, truncates.

        DDL at or below ``through`` (the window start's ordinal; every table's position is at or above
        it) or below its table's floor is skipped: the table definitions read at the snapshot hold it
        already (a window after a snapshot starts below it when transactions were open at it)."""
        from cdclake.sources.oracle.ddl import apply_ddl

        plan = DecodePlan(self.config.include_tables, self.config.exclude_tables, self.config.mining.lob)
        for t, s in schemas.items():
            plan.versions[t] = [(-1, versions.get(t, 0), s.to_json())]
        registry = dict(schemas)
        out: list[Ddl] = []
        truncates: list[tuple[Any, ...]] = []
        version = next_version
        for r in ddl_rows:
            point = LogPoint(int(r.SCN), int(r.K), r.THREAD)
            subject = f"{r.SEG_OWNER}.{r.TABLE_NAME}" if r.TABLE_NAME else ""
            if point.ordinal <= max(through, (floors or {}).get(subject, -1)):
                continue
            statement = r.SQL_REDO or ""
            try:
                outcome = apply_ddl(statement, registry, r.SEG_OWNER)
            except DdlParseError as exc:
                subject = f"{r.SEG_OWNER}.{r.TABLE_NAME}" if r.TABLE_NAME else None
                if subject and subject not in registry and not self.config.captures(subject):
                    log.debug("ignoring DDL on %s (not captured) that does not parse: %s", subject, exc.problem)
                    continue
                if self.source.skip_unparsable_ddl:
                    out.append(Ddl(point, statement, r.SEG_OWNER, {}, r.TIMESTAMP, skipped_reason=exc.problem))
                    version += 1
                    continue
                if not subject:
                    raise DdlParseError(statement, point.describe(), exc.problem) from None
                # Only this table stops (parked until re-snapshotted); the others go on.
                registry.pop(subject, None)
                out.append(Ddl(point, statement, r.SEG_OWNER, {}, r.TIMESTAMP,
                               parked={subject: f"cdclake cannot apply the statement ({exc.problem})"}))
                plan.versions.setdefault(subject, []).append((int(r.IDX), version, None))
                version += 1
                continue
            changes = {t: s for t, s in outcome.changes.items() if self.config.captures(t)}
            for t, s in outcome.changes.items():
                if s is None:
                    registry.pop(t, None)
                else:
                    registry[t] = s
            renamed = {new: old for new, old in getattr(outcome, "renamed_from", {}).items() if new in changes}
            if changes:
                out.append(Ddl(point, statement, r.SEG_OWNER, changes, r.TIMESTAMP, renamed,
                               {t: c for t, c in getattr(outcome, "column_renames", {}).items() if t in changes},
                               created=[t for t in outcome.created if t in changes],
                               reread={t: why for t, why in outcome.reread.items() if changes.get(t) is not None}))
                for t, s in changes.items():
                    plan.versions.setdefault(t, []).append((int(r.IDX), version, None if s is None else s.to_json()))
                    version += 1
            for t in getattr(outcome, "truncated", []) or []:
                if self.config.captures(t):
                    truncates.append((t, point, r))
        extra = None
        if truncates:
            from decimal import Decimal

            rows = []
            for t, point, r in truncates:
                txid = f"ddl-{point.scn}-{point.k}"
                common = (window_id, int(r.IDX))
                rows.append((*common, "change", txid, t, "t", None, None, None, None, Decimal(point.ordinal),
                             point.describe(), r.TIMESTAMP, None, None))
                rows.append((*common, "commit", txid, None, None, None, None, None, None, Decimal(point.ordinal),
                             point.describe(), r.TIMESTAMP, None, None))
            from cdclake.spi.logrows import LOG_ROWS_DDL

            extra = spark.createDataFrame(rows, LOG_ROWS_DDL)
        return plan, out, extra

def _join_ddl_pieces(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A DDL text over 4000 bytes comes in pieces (CSF = 1 on all but the last): join them."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for r in rows:
        if r.get("CSF") == 1:
            pending.append(r.get("SQL_REDO") or "")
            continue
        if pending:
            r = {**r, "SQL_REDO": "".join(pending) + (r.get("SQL_REDO") or "")}
            pending = []
        out.append(r)
    return out


def _export_hi(raw: DataFrame, hi: int, max_events: int) -> int:
    """The SCN at which an export window reaches ``max_events`` rows (whole SCNs only)."""
    row = raw.where(f"IDX = {max_events - 1}").select("SCN").first()
    return hi if row is None else int(row[0])


def _export_type(column: str) -> str:
    kind = {"int64": "bigint", "int32": "int", "string": "string", "timestamp": "timestamp"}
    from cdclake.sources.oracle.logminer import RAW_ARROW_TYPES

    return kind[RAW_ARROW_TYPES[column.replace("#", "")]]


def _split_statements(text: str) -> list[str]:
    """Split a DDL file on ``;`` or ``/`` lines outside quotes."""
    out, buf, quote = [], [], None
    for ch in text:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
        if ch == ";":
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    tail = "".join(buf).strip()
    if tail:
        out.append(tail)
    return [s.strip().rstrip("/").strip() for s in out if s.strip().strip("/")]


def _internal_table(name: str) -> bool:
    return bool(re.match(r"^(CMP[34]\$\d+|SYS_IOT_OVER_|MDRT_|MDRS_|MDXT_)", name))


__all__ = ["OracleSource", "RAW_DDL", "SparkRawSink", "raw_arrow_schema"]
