"""The LogMiner client: plan a window, mine it in SCN batches, stage the raw rows as Parquet.

One window ``SCN > lo AND SCN <= hi`` is mined in batches. Each batch adds the redo files that cover
it (per thread, :mod:`.logfiles`), starts LogMiner for exactly that range, array-fetches the
``V$LOGMNR_CONTENTS`` rows (:func:`.queries.contents_query`) and ends the session, so PGA use stays
bounded. Batch sizes adapt like Debezium's ``log.mining.batch.size.*``: they grow while far behind
the window end and a large, nearly empty SCN gap is mined in one batch instead of being crawled.

Rows go unparsed (plus the window id and their redo order ``IDX``) to a :class:`RawSink` as Arrow
tables built by a chunk-at-a-time column transpose: no per-row Python work. Parsing happens in
Spark. A lost connection retries the batch with backoff; the sink discards the batch's rows first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cdclake.errors import CdcError, PositionLostError
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.logfiles import (
    LogFile,
    Thread,
    archived_horizon,
    covering_logs,
    merge_online_and_archived,
)

log = logging.getLogger(__name__)

# python-oracledb / Oracle errors that mean "the connection is gone": retry on a new one.
_CONNECTION_LOST = ("DPY-4011", "DPY-1001", "DPI-1080", "ORA-03113", "ORA-03114", "ORA-03135", "ORA-12170",
                    "ORA-12537", "ORA-12547", "ORA-01012", "ORA-02396", "ORA-00028")
_LOG_MISSING = ("ORA-01291", "ORA-01292", "ORA-00308", "ORA-01284", "ORA-01289")
# An online log was archived and its group reused (overwritten) while a session read it.
_LOG_OVERWRITTEN = ("ORA-00310", "ORA-00334", "ORA-00368", "ORA-00353")
# Sessions of one batch started over on a fresh log list before a missing/overwritten log is an error.
LOG_LIST_ATTEMPTS = 3

RAW_COLUMNS = [c.replace("#", "") if c == "THREAD#" else c for c in Q.CONTENTS_COLUMNS]  # THREAD# -> THREAD


@dataclass(frozen=True)
class MiningSettings:
    dictionary: str = "online_catalog"  # or redo_log_catalog
    archive_log_only: bool = False
    archive_destination: str | None = None  # a DEST_NAME, e.g. LOG_ARCHIVE_DEST_1
    batch_size_min: int = 1_000
    batch_size_max: int = 100_000
    batch_size_default: int = 20_000
    batch_size_increment: int = 20_000
    gap_size_min: int = 1_000_000
    gap_interval_ms: int = 20_000
    fetch_size: int = 10_000
    lob: bool = False
    retries: int = 3
    retry_backoff_s: float = 1.0
    flush_table: str | None = "CDCLAKE_FLUSH"
    pdb: str | None = None


@dataclass
class BatchReport:
    lo: int
    hi: int
    rows: int
    files: int


@dataclass
class MinedRaw:
    """What a window's mining staged, and what the driver noted on the way (DDL rows, commit SCNs)."""

    hi: int
    rows: int
    ddl: list[dict[str, Any]] = field(default_factory=list)  # DDL rows, in redo order (with K)
    commit_scn: dict[int, int] = field(default_factory=dict)  # redo thread -> newest commit SCN
    batches: list[BatchReport] = field(default_factory=list)


def is_connection_lost(exc: BaseException) -> bool:
    text = str(exc)
    return any(code in text for code in _CONNECTION_LOST)


class _LogsChanged(Exception):
    """The listed log files changed under a batch (archived and reused, or removed): list them again.

    ``error`` is what the operator sees when a fresh list does not help either."""

    def __init__(self, error: PositionLostError) -> None:
        super().__init__(error.problem)
        self.error = error


class LogMinerClient:
    """Talks to one database through DB-API connections made by ``connect``."""

    def __init__(self, connect: Callable[[], Any], settings: MiningSettings,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._connect = connect
        self.settings = settings
        self._sleep = sleep
        self._conn: Any = None
        self._dest_id: int | None = None

    # ---- connection ------------------------------------------------------------------------------

    @property
    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def reset(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None

    def close(self) -> None:
        self.reset()

    def query(self, sql: str, **binds: Any) -> list[tuple[Any, ...]]:
        cur = self.conn.cursor()
        try:
            cur.execute(sql, binds) if binds else cur.execute(sql)
            return list(cur.fetchall())
        finally:
            cur.close()

    def execute(self, sql: str, **binds: Any) -> None:
        cur = self.conn.cursor()
        try:
            cur.execute(sql, binds) if binds else cur.execute(sql)
        finally:
            cur.close()

    def with_retry(self, what: str, action: Callable[[], Any]) -> Any:
        """Run ``action``; on a lost connection reconnect and retry with backoff, then fail clearly."""
        attempt = 0
        while True:
            try:
                return action()
            except Exception as exc:
                if not is_connection_lost(exc):
                    raise
                attempt += 1
                self.reset()
                if attempt > self.settings.retries:
                    raise CdcError(
                        f"lost the connection to Oracle {attempt} times while {what}: {exc}",
                        "check the network path to the database (keepalive, firewalls idle timeouts, "
                        "'(ENABLE=broken)' in the connect descriptor) and run again; mining resumes from "
                        "the last checkpoint",
                    ) from exc
                delay = self.settings.retry_backoff_s * (2 ** (attempt - 1))
                log.warning("connection lost while %s (%s); retry %d in %.1fs", what, exc, attempt, delay)
                self._sleep(delay)

    # ---- positions -------------------------------------------------------------------------------

    def current_scn(self) -> int:
        return int(self.query(Q.CURRENT_SCN)[0][0])

    def flush_redo(self, scn: int) -> None:
        """Make LGWR write redo up to ``scn``: a committed update of the flush table forces it."""
        table = self.settings.flush_table
        if not table:
            return
        if not int(self.query(Q.FLUSH_TABLE_EXISTS, name=table.split(".")[-1].upper())[0][0]):
            self.execute(Q.FLUSH_TABLE_CREATE.format(table=table))
            self.execute(Q.FLUSH_TABLE_INIT.format(table=table))
        self.execute(Q.FLUSH.format(table=table), scn=scn)
        self.conn.commit()

    def plan_end(self) -> int:
        """The SCN a window planned now may mine up to (flushed or archived redo only)."""
        def plan() -> int:
            if self.settings.archive_log_only:
                threads, files = self._threads(), self._available_logs(0)
                horizon = archived_horizon(files, threads)
                if horizon is None:
                    raise CdcError("no archived log yet for an open redo thread (archive_log_only mode)",
                                   "wait for a log switch, or set source.mining.archive_log_only: false")
                return horizon
            scn = self.current_scn()
            self.flush_redo(scn)
            return scn
        return int(self.with_retry("reading the current SCN", plan))

    def database_identity(self) -> tuple[int, str, str, int]:
        """DBID, DATABASE_ROLE, OPEN_MODE and RESETLOGS_CHANGE# of the database the miner talks to."""
        dbid, role, open_mode, resetlogs = self.with_retry("reading the database role",
                                                           lambda: self.query(Q.DATABASE_ROLE))[0]
        return int(dbid), str(role).upper(), str(open_mode).upper(), int(resetlogs)

    def build_dictionary(self) -> tuple[int, int]:
        """``DBMS_LOGMNR_D.BUILD`` into the redo; the SCNs read just before and just after it."""
        def build() -> tuple[int, int]:
            before = self.current_scn()
            self.execute(Q.BUILD_DICTIONARY)
            return before, self.current_scn()
        return self.with_retry("building the LogMiner dictionary", build)

    def oldest_open_transaction_scn(self) -> int | None:
        value = self.with_retry("reading open transactions", lambda: self.query(Q.OLDEST_OPEN_TRANSACTION))[0][0]
        return None if value is None else int(value)

    # ---- log files -------------------------------------------------------------------------------

    def _threads(self) -> list[Thread]:
        return [Thread(int(t), str(s), str(e)) for t, s, e in self.query(Q.THREADS)]

    def archive_destination(self) -> int:
        """DEST_ID of the archive destination mining reads, read again (a configured one must be VALID LOCAL)."""
        self._dest_id = None
        return self._destination()

    def _destination(self) -> int:
        if self._dest_id is None:
            dests = self.query(Q.ARCHIVE_DESTINATIONS)
            wanted = self.settings.archive_destination
            if wanted:
                match = [int(d) for d, name in dests if str(name).upper() == wanted.upper()]
                if not match:
                    names = ", ".join(str(n) for _, n in dests) or "none"
                    raise CdcError(f"archive destination {wanted} is not a VALID LOCAL destination (valid: {names})",
                                   "set source.mining.archive_destination to one of the valid DEST_NAMEs",
                                   permanent=True)
                self._dest_id = match[0]
            elif dests:
                self._dest_id = int(dests[0][0])  # the lowest valid local destination, never a random one
            else:
                self._dest_id = -1
        return self._dest_id

    def _available_logs(self, lo: int) -> list[LogFile]:
        online = [LogFile(int(t), int(s), int(f), int(n) if n is not None else 2**64 - 1, str(m), True, str(st))
                  for t, s, f, n, st, m in self.query(Q.ONLINE_LOGS)]
        dest = self._destination()
        archived = [] if dest < 0 else [
            LogFile(int(t), int(s), int(f), int(n), str(name), False)
            for t, s, f, n, name in self.query(Q.ARCHIVED_LOGS, dest_id=dest, lo=lo)
        ]
        return merge_online_and_archived(online, archived, self.settings.archive_log_only)

    def logs_for(self, lo: int, hi: int) -> list[LogFile]:
        return covering_logs(self._available_logs(lo), self._threads(), lo, hi)

    def _archived_dictionary(self, lo: int) -> int | None:
        """The SCN after which the newest archived dictionary ending at or before ``lo`` starts."""
        dest = self._destination()
        if dest < 0:
            return None
        rows = self.query(Q.DICTIONARY_LOGS, dest_id=dest, lo=lo + 1)
        end = next((r for r in rows if str(r[3]).upper() == "YES"), None)
        if end is None:
            return None
        begin = next((r for r in rows if str(r[2]).upper() == "YES" and int(r[0]) <= int(end[0])), None)
        return None if begin is None else int(begin[0]) - 1

    def batch_dictionary(self, lo: int, tracked: tuple[int, int] | None) -> tuple[str, int, int | None]:
        """How a batch from ``lo`` gets its dictionary: (START_OPTIONS key, add logs from SCN, cap on hi).

        ``redo_log_catalog`` needs a dictionary build wholly below ``lo``: the one the position tracks
        (built at the snapshot or when the window was planned) or the newest archived one. Redo below
        the snapshot's build (early changes of transactions open at the snapshot) is read with the
        online catalog: no dictionary of the redo exists for it.
        """
        if self.settings.dictionary != "redo_log_catalog":
            return self.settings.dictionary, lo, None
        candidates = [tracked[0]] if tracked is not None and tracked[1] <= lo else []
        archived = self._archived_dictionary(lo)
        if archived is not None:
            candidates.append(archived)
        if candidates:
            return "redo_log_catalog", min(max(candidates), lo), None
        if tracked is not None and lo < tracked[1]:
            return "online_catalog", lo, tracked[1]
        raise PositionLostError(
            f"no LogMiner dictionary in the redo at or before SCN {lo} (source.mining.dictionary: redo_log_catalog "
            "decodes redo with a DBMS_LOGMNR_D.BUILD written before it; none is available for this position)",
            "re-snapshot the tables with dictionary: redo_log_catalog set (the snapshot builds the dictionary), or "
            "set source.mining.dictionary: online_catalog; if archived logs holding a build were purged, restore "
            "them",
        )

    def check_available(self, lo: int) -> None:
        self.with_retry("listing redo logs", lambda: self.logs_for(lo, lo + 1))

    def scn_seconds_apart(self, lo: int, hi: int) -> float | None:
        try:
            a, b = self.query(Q.SCN_TIMES, lo=lo, hi=hi)[0]
        except Exception as exc:
            if is_connection_lost(exc):
                raise
            return None  # ORA-08181: too old to map to a time
        if not isinstance(a, datetime) or not isinstance(b, datetime):
            return None
        return (b - a).total_seconds()

    # ---- mining ----------------------------------------------------------------------------------

    def mine(self, lo: int, hi: int, owners: list[str], excluded_users: list[str], window_id: int,
             sink: RawSink, max_rows: int | None = None, dictionary: tuple[int, int] | None = None) -> MinedRaw:
        """Mine ``(lo, hi]`` into ``sink``; stop after the batch that passes ``max_rows`` rows.

        ``dictionary``: the dictionary build the position tracks (``redo_log_catalog``)."""
        sql = Q.contents_query(owners, excluded_users, self.settings.lob, self.settings.pdb)
        s = self.settings
        size = s.batch_size_default
        out = MinedRaw(hi=lo, rows=0)
        self._ranks = _CommitRanks()
        batch_lo = lo
        while batch_lo < hi:
            batch_hi = min(hi, batch_lo + size)
            number = len(out.batches)
            report = self._mine_batch_listing_again(sql, batch_lo, batch_hi, window_id, out, sink, number,
                                                    dictionary)
            batch_hi = report.hi  # lower when the batch stopped where a dictionary takes over
            out.batches.append(report)
            out.rows += report.rows
            out.hi = batch_hi
            if max_rows is not None and out.rows >= max_rows:
                break
            remaining = hi - batch_hi
            if remaining > s.gap_size_min and report.rows == 0:
                apart = self.with_retry("reading SCN times", lambda a=batch_hi: self.scn_seconds_apart(a, hi))
                if apart is not None and apart * 1000 < s.gap_interval_ms:
                    size = remaining  # an SCN jump: mine the rest in one batch, not thousands of empty ones
                    batch_lo = batch_hi
                    continue
            if remaining > size:
                size = min(s.batch_size_max, size + s.batch_size_increment)
            else:
                size = max(s.batch_size_min, min(size, s.batch_size_default))
            batch_lo = batch_hi
        return out

    def _mine_batch_listing_again(self, sql: str, lo: int, hi: int, window_id: int, out: MinedRaw, sink: RawSink,
                                  number: int, dictionary: tuple[int, int] | None) -> BatchReport:
        """One batch; when its log files changed under it (an online log archived and overwritten
        between the listing and the read, a file removed) it starts over on a fresh list: the
        archived copy replaces the reused online log. Batch bounds never change, so rows are not
        duplicated (the sink discards the failed attempt's rows)."""
        for attempt in range(1, LOG_LIST_ATTEMPTS + 1):
            try:
                return self.with_retry(f"mining SCN {lo + 1}..{hi}",
                                       lambda: self._mine_batch(sql, lo, hi, window_id, out, sink, number, dictionary))
            except _LogsChanged as changed:
                if attempt == LOG_LIST_ATTEMPTS:
                    raise changed.error from changed.__cause__
                log.warning("log files changed while mining SCN %d..%d (%s); listing them again", lo + 1, hi,
                            changed)
        raise AssertionError("unreachable")

    def _mine_batch(self, sql: str, lo: int, hi: int, window_id: int, out: MinedRaw, sink: RawSink,
                    number: int, dictionary: tuple[int, int] | None = None) -> BatchReport:
        import pyarrow as pa

        first_idx = out.rows
        ranks = self._ranks.copy()  # a retried batch ranks its commits again from the same state
        ddl: list[dict[str, Any]] = []
        commits: dict[int, int] = {}

        mode, files_from, cap = self.batch_dictionary(lo, dictionary)
        if cap is not None and cap < hi:
            hi = cap  # the rest of the batch is mined with the dictionary (callers see report.hi)
        files = self.logs_for(files_from, hi)
        sink.discard(number)  # rows of an attempt that lost its connection
        for f in files:
            try:
                self.execute(Q.ADD_LOGFILE, name=f.name)
            except Exception as exc:
                if any(code in str(exc) for code in _LOG_MISSING):
                    raise _LogsChanged(PositionLostError(
                        f"redo log {f.name} (thread {f.thread}, sequence {f.sequence}, SCN "
                        f"{f.first_change}..{f.next_change - 1}) cannot be added to LogMiner: {exc}",
                        "the file was removed after it was listed; restore it into the archive destination "
                        "and run again, or re-snapshot",
                    )) from exc
                raise
        options = Q.START_OPTIONS[mode]
        rows = 0
        try:
            try:
                # STARTSCN is inclusive: the session starts at lo + 1, whose log the listing holds (a log
                # ending exactly at lo, e.g. at an archive-only horizon, is not needed and not listed).
                self.execute(Q.START_LOGMNR.format(options=options), lo=lo + 1, hi=hi)
            except Exception as exc:
                if any(code in str(exc) for code in _LOG_MISSING):
                    raise _LogsChanged(PositionLostError(
                        f"LogMiner cannot mine SCN {lo + 1}..{hi}: {exc}",
                        "restore the missing archived logs for this SCN range and run again, or re-snapshot",
                    )) from exc
                if "ORA-01371" in str(exc):
                    raise PositionLostError(
                        f"LogMiner found no complete dictionary in the redo logs added for SCN {lo + 1}..{hi} "
                        f"(from SCN {files_from + 1}): {exc}",
                        "re-snapshot the tables with source.mining.dictionary: redo_log_catalog (the snapshot "
                        "builds the dictionary), or set source.mining.dictionary: online_catalog",
                    ) from exc
                raise
            cur = self.conn.cursor()
            cur.arraysize = self.settings.fetch_size
            cur.prefetchrows = self.settings.fetch_size + 1
            pending: list[Any] = []
            pending_rows = 0
            try:
                cur.execute(sql, {"lo": lo, "hi": hi})
                while True:
                    chunk = cur.fetchmany(self.settings.fetch_size)
                    if not chunk:
                        break
                    table = _arrow_chunk(pa, chunk, window_id, first_idx + rows, ranks)
                    _note(table, ddl, commits)
                    pending.append(table)
                    rows += len(chunk)
                    pending_rows += len(chunk)
                    if pending_rows >= sink.chunk_rows:
                        sink.write(number, pa.concat_tables(pending))
                        pending, pending_rows = [], 0
                if pending:
                    sink.write(number, pa.concat_tables(pending))
            except Exception as exc:
                if any(code in str(exc) for code in _LOG_OVERWRITTEN):
                    raise _LogsChanged(PositionLostError(
                        f"an online redo log was overwritten while SCN {lo + 1}..{hi} was read from it, again "
                        f"after {LOG_LIST_ATTEMPTS} fresh log lists: {exc}",
                        "the redo logs switch faster than a batch is read: add or enlarge online redo log "
                        "groups, lower source.mining.batch_size_max, or set source.mining.archive_log_only: "
                        "true; then run again (the window resumes)",
                    )) from exc
                raise
            finally:
                cur.close()
        except BaseException:
            self._end_quietly()
            raise
        self._end_quietly()
        self._ranks = ranks
        out.ddl.extend(ddl)
        for thread, scn in commits.items():
            out.commit_scn[thread] = max(scn, out.commit_scn.get(thread, 0))
        return BatchReport(lo, hi, rows, len(files))

    def _end_quietly(self) -> None:
        try:
            self.execute(Q.END_LOGMNR)
        except Exception as exc:
            if not is_connection_lost(exc) and "ORA-01307" not in str(exc):  # no LogMiner session active
                log.debug("END_LOGMNR: %s", exc)


class RawSink(Protocol):
    """Where mined rows go: Arrow tables per batch; a retried batch discards its earlier rows."""

    chunk_rows: int

    def write(self, batch: int, table: Any) -> None: ...

    def discard(self, batch: int) -> None: ...


RAW_ARROW_TYPES: dict[str, str] = {
    "SCN": "int64", "START_SCN": "int64", "COMMIT_SCN": "int64", "TIMESTAMP": "timestamp",
    "COMMIT_TIMESTAMP": "timestamp", "XID": "string", "OPERATION_CODE": "int32", "OPERATION": "string",
    "SEG_OWNER": "string", "TABLE_NAME": "string", "ROW_ID": "string", "ROLLBACK": "int32", "RS_ID": "string",
    "SSN": "int64", "CSF": "int32", "SQL_REDO": "string", "THREAD": "int32", "USERNAME": "string",
    "INFO": "string",
}


def raw_arrow_schema(pa: Any) -> Any:
    kinds = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string(),
             "timestamp": pa.timestamp("us", tz="UTC")}  # database times, read as UTC (Spark TIMESTAMP)
    fields = [pa.field(name, kinds[RAW_ARROW_TYPES[name]]) for name in RAW_COLUMNS]
    return pa.schema([pa.field("WINDOW_ID", pa.int64()), pa.field("IDX", pa.int64()), *fields,
                      pa.field("K", pa.int32())])


class _CommitRanks:
    """Numbers commits and DDL sharing an SCN in redo order, across chunks and batches (rows come
    in SCN order). A continued statement (CSF = 1) is ranked on its last piece."""

    def __init__(self, scn: int = -1, k: int = 0) -> None:
        self.scn, self.k = scn, k

    def copy(self) -> _CommitRanks:
        return _CommitRanks(self.scn, self.k)

    def rank(self, codes: list[Any], scns: list[Any], csf: list[Any]) -> list[int | None]:
        out: list[int | None] = [None] * len(codes)
        for i, code in enumerate(codes):  # only commit/DDL rows do work here
            if (code == Q.OP_COMMIT or code == Q.OP_DDL) and csf[i] != 1:
                scn = scns[i]
                self.k = self.k + 1 if scn == self.scn else 1
                self.scn = scn
                out[i] = self.k
        return out


def _arrow_chunk(pa: Any, chunk: list[tuple[Any, ...]], window_id: int, first_idx: int,
                 ranks: _CommitRanks) -> Any:
    schema = raw_arrow_schema(pa)
    columns = list(zip(*chunk, strict=True))
    n = len(chunk)
    arrays = [pa.array([window_id] * n, pa.int64()), pa.array(range(first_idx, first_idx + n), pa.int64())]
    for f, values in zip(list(schema)[2:-1], columns, strict=True):
        arrays.append(pa.array(values, f.type))
    at = {name: i for i, name in enumerate(RAW_COLUMNS)}
    arrays.append(pa.array(ranks.rank(columns[at["OPERATION_CODE"]], columns[at["SCN"]], columns[at["CSF"]]),
                           pa.int32()))
    return pa.Table.from_arrays(arrays, schema=schema)


def _note(table: Any, ddl: list[dict[str, Any]], commits: dict[int, int]) -> None:
    """DDL rows (few) for the driver, and the newest commit SCN per thread, by Arrow compute."""
    import pyarrow.compute as pc

    codes = table["OPERATION_CODE"]
    ddl_rows = table.filter(pc.equal(codes, Q.OP_DDL))
    if ddl_rows.num_rows:
        ddl.extend(ddl_rows.to_pylist())
    done = table.filter(pc.equal(codes, Q.OP_COMMIT)).group_by("THREAD").aggregate([("SCN", "max")])
    for thread, scn in zip(done["THREAD"].to_pylist(), done["SCN_max"].to_pylist(), strict=True):
        key = int(thread or 1)
        commits[key] = max(int(scn), commits.get(key, 0))
