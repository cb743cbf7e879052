"""What an Oracle source committed that the lake does not hold yet (``cdclake status``'s lag).

:func:`pending_changes` answers :meth:`cdclake.spi.Source.pending_changes` from the redo, with one
LogMiner session over the SCNs after the lowest position of the tables asked about.

Why the redo: the SCN moves on an idle database (every ``CURRENT_SCN`` read, background jobs, other
schemas, the pipeline's own flush table), so "position = current SCN" never holds, and the SCN
distance alone says nothing about the captured tables. The views that look cheaper do not answer:
``ALL_TAB_MODIFICATIONS`` reaches the dictionary only every few minutes (or after
``DBMS_STATS.FLUSH_DATABASE_MONITORING_INFO``, a write) and has no commit times;
``MAX(ORA_ROWSCN)`` reads the whole table (and is per block without ``ROWDEPENDENCIES``);
``FLASHBACK_TRANSACTION_QUERY`` mines undo transaction by transaction, slower still. The redo
between the position and now is what the next mining window reads anyway; the status session
reads it only until it has its answer.

The session (``START_LOGMNR`` over ``(mine_from, CURRENT_SCN]`` of the lowest position) uses the
online catalog whatever ``source.mining.dictionary`` says, and writes nothing: no dictionary build,
no flush-table update. Its ``V$LOGMNR_CONTENTS`` query has mining's ``WHERE``
(:func:`~cdclake.sources.oracle.queries.contents_query`: COMMIT and ROLLBACK rows of every
transaction, DML and DDL rows of the captured owners, without the pipeline's own user and
``source.mining.exclude_users``) but only narrow columns (no ``SQL_REDO``). Rows come in SCN order:

* a transaction is pending for a table when it changed the table (a DML row not undone by a
  ``ROLLBACK = 1`` row of a partial rollback, or a change the engine holds in flight: ``carried``,
  for transactions open at the position) and its COMMIT row's SCN is above the table's position;
  the commit time is ``COALESCE(COMMIT_TIMESTAMP, TIMESTAMP)`` of the COMMIT row, as bronze has it;
* a DDL row naming the table is pending at its own SCN and ``TIMESTAMP``.

The session ends when every table behind has its first pending commit, at the current SCN, or
after ``max_events`` rows (``complete=False``; ``scanned_to`` is the ``TIMESTAMP`` of the last row).
Distance: SCNs from each table's position to the current SCN. Redo LGWR has not written yet (a
``COMMIT WRITE NOWAIT`` a moment ago) is seen once it is; with ``archive_log_only`` only archived
redo is read, so commits after the archived horizon are unknown (``complete=False``). Export mode
has no live database: the answer is "unknown".
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from cdclake.errors import PositionLostError
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.position import ScnPosition
from cdclake.spi import PendingChanges

log = logging.getLogger(__name__)
DISTANCE_UNIT = "scn"
FETCH_ROWS = 2_000
# Mining's columns that tell a transaction's tables, end and commit time (no SQL_REDO).
PENDING_COLUMNS = ("SCN", "TIMESTAMP", "COMMIT_TIMESTAMP", "RAWTOHEX(XID)", "OPERATION_CODE", "SEG_OWNER",
                   "TABLE_NAME", "ROLLBACK", "CSF")
_LOG_MISSING = ("ORA-01291", "ORA-01292", "ORA-00308", "ORA-01284", "ORA-01289", "ORA-00310", "ORA-00334")


class RedoSource(Protocol):
    """What :func:`pending_changes` needs of :class:`~cdclake.sources.oracle.source.OracleSource`."""

    config: Any  # OracleSourceConfig
    client: Any  # LogMinerClient
    export_mode: bool

    @property
    def user(self) -> str: ...


def pending_query(owners: Iterable[str], excluded_users: Iterable[str], lob: bool, pdb: str | None) -> str:
    """Mining's contents query (same ``WHERE``) with :data:`PENDING_COLUMNS` only."""
    full = Q.contents_query(owners, excluded_users, lob, pdb)
    head, where = full.split(" FROM V$LOGMNR_CONTENTS WHERE ", 1)
    assert head.startswith("SELECT ")
    return f"SELECT {', '.join(PENDING_COLUMNS)} FROM V$LOGMNR_CONTENTS WHERE {where}"


def pending_changes(source: RedoSource, positions: Mapping[str, ScnPosition],
                    carried: Mapping[str, frozenset[str]] | None, max_events: int) -> PendingChanges:
    """See the module docstring; ``positions`` maps tables to their positions."""
    if source.export_mode:
        return PendingChanges(note="export mode mines a file, not a live database: pending changes are unknown")
    asked = {t: p for t, p in positions.items() if source.config.captures(t)}
    client = source.client
    archive_only = bool(client.settings.archive_log_only)
    current = int(client.with_retry("reading the current SCN", client.current_scn))
    # Archive-only: the archived horizon (plan_end reads it without writing); else the current SCN.
    hi = int(client.plan_end()) if archive_only else current
    end = ScnPosition(current)
    distance = {t: max(current - p.scn, 0) for t, p in asked.items()}
    behind = {t: p for t, p in asked.items() if p.scn < hi}
    if not behind:
        return PendingChanges(True, end, {}, not archive_only or hi >= current, None, distance, DISTANCE_UNIT)
    lo = min(p.mine_from for p in behind.values())
    owners = sorted({t.split(".", 1)[0] for t in behind})
    excluded = [source.user, *[u.upper() for u in source.config.mining.exclude_users]]
    sql = pending_query(owners, excluded, bool(source.config.mining.lob), client.settings.pdb)

    def scan() -> RedoScan:
        s = RedoScan(behind, carried or {})
        s.read(client, sql, lo, hi, max_events)
        return s

    s = client.with_retry(f"reading the redo of SCN {lo + 1}..{hi}", scan)
    complete = s.complete and (not archive_only or hi >= current)
    note = None if not archive_only or hi >= current else (
        f"archive_log_only: redo after SCN {hi} is not archived yet, so commits after it are not seen")
    return PendingChanges(True, end, dict(s.found), complete, None if complete else s.last_ts, distance,
                          DISTANCE_UNIT, s.rows, note)


class RedoScan:
    """One LogMiner read for the tables ``behind`` (table -> position)."""

    def __init__(self, behind: Mapping[str, ScnPosition], carried: Mapping[str, frozenset[str]]) -> None:
        self.behind = {t: p.scn for t, p in behind.items()}
        self.carried = {x.lower(): frozenset(ts) & set(behind) for x, ts in carried.items()}
        self.changes: dict[str, dict[str, int]] = {}  # xid -> table -> changes not undone
        self.found: dict[str, datetime] = {}
        self.rows = 0
        self.last_ts: datetime | None = None
        self.complete = True

    def _pending(self, tables: Iterable[str], scn: int, ts: datetime | None) -> None:
        for table in tables:
            if table not in self.found and self.behind[table] < scn and ts is not None:
                self.found[table] = ts

    def row(self, scn: int, ts: Any, commit_ts: Any, xid: str | None, op: int, owner: str | None,
            name: str | None, rollback: int | None, csf: int | None) -> None:
        xid = (xid or "").lower()
        if isinstance(ts, datetime):
            self.last_ts = ts
        table = f"{owner}.{name}" if owner and name else None
        if op == Q.OP_COMMIT:
            tables = {t for t, n in self.changes.pop(xid, {}).items() if n > 0} | self.carried.get(xid, frozenset())
            self._pending(tables, scn, commit_ts or ts)
        elif op == Q.OP_ROLLBACK:
            self.changes.pop(xid, None)
        elif op == Q.OP_DDL:
            if table in self.behind and csf != 1:
                self._pending([table], scn, ts)
        elif table in self.behind and csf != 1:
            counts = self.changes.setdefault(xid, {})
            counts[table] = counts.get(table, 0) + (-1 if rollback == 1 else 1)

    def read(self, client: Any, sql: str, lo: int, hi: int, max_events: int) -> None:
        """Mine ``(lo, hi]`` until every table has its answer or ``max_events`` rows were read."""
        try:
            for f in client.logs_for(lo, hi):
                self._run(client, Q.ADD_LOGFILE, (lo, hi), name=f.name)
            self._run(client, Q.START_LOGMNR.format(options=Q.START_OPTIONS["online_catalog"]), (lo, hi),
                      lo=lo + 1, hi=hi)
            cur = client.conn.cursor()
            cur.arraysize = FETCH_ROWS
            try:
                cur.execute(sql, {"lo": lo, "hi": hi})
                self._consume(cur, max_events)
            finally:
                cur.close()
        finally:
            try:
                client.execute(Q.END_LOGMNR)
            except Exception as exc:  # no session, or the connection is gone: nothing to end
                log.debug("END_LOGMNR: %s", exc)

    def _consume(self, cur: Any, max_events: int) -> None:
        while len(self.found) < len(self.behind):
            chunk = cur.fetchmany(FETCH_ROWS)
            if not chunk:
                return
            for r in chunk:
                self.rows += 1
                self.row(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6], r[7], r[8])
                if len(self.found) == len(self.behind):
                    return
                if self.rows >= max_events:
                    self.complete = False
                    return

    @staticmethod
    def _run(client: Any, sql: str, span: tuple[int, int], **binds: Any) -> None:
        lo, hi = span
        try:
            client.execute(sql, **binds)
        except Exception as exc:
            if any(code in str(exc) for code in _LOG_MISSING):
                raise PositionLostError(
                    f"the redo of SCN {lo + 1}..{hi} cannot be read ({exc}), so how far the lake is behind "
                    "cannot be told",
                    "run 'cdclake mine' (it names the remedy): restore the archived logs, or re-snapshot",
                ) from exc
            raise
