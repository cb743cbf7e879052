"""The consistent parallel snapshot: a slot created with its snapshot exported, held open by one session,
and imported by every Spark JDBC partition (docs/postgresql-design.md, section 3).

``CREATE_REPLICATION_SLOT ... (SNAPSHOT 'export')`` needs a replication connection, and its snapshot lives
only while that connection runs no other command. A *holder* session imports it at once and exports it again
(``pg_export_snapshot()``); that id stays valid while the holder's transaction is open, whatever happens to
the replication connection. Each Spark partition then runs, before its query, inside its own transaction
(Spark's PostgreSQL dialect turns autocommit off when ``fetchsize`` > 0)::

    SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET TRANSACTION SNAPSHOT '<id>'; ...

so every partition reads the database exactly as of the slot's consistent point: the snapshot needs no lock
and no re-applied changes. A read that did not import the snapshot fails (:data:`GUARD`) instead of
silently reading current rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdclake.errors import CdcError
from cdclake.sources.postgresql.config import SESSION_SETTINGS
from cdclake.sources.postgresql.pgoutput import parse_lsn


@dataclass
class ExportedSnapshot:
    """A slot's consistent point and the snapshot every read of the tables imports."""

    slot: str
    consistent_point: int  # LSN: the snapshot holds every transaction committed before it, none after
    snapshot_id: str  # the holder's export
    xmin_text: str  # pg_current_snapshot() in the snapshot: the guard's expected value
    holder: Any  # the psycopg connection whose open transaction keeps ``snapshot_id`` importable

    def release(self) -> None:
        """End the holder's transaction: the snapshot can no longer be imported."""
        if self.holder is not None:
            try:
                self.holder.rollback()
            finally:
                self.holder.close()
                self.holder = None


def session_settings_sql() -> str:
    return "; ".join(f"SET {name} = '{value}'" for name, value in SESSION_SETTINGS.items())


def create_slot_with_snapshot(settings: dict[str, Any], slot: str, temporary: bool = False) -> ExportedSnapshot:
    """Create logical slot ``slot`` (pgoutput) with its snapshot exported and held (``settings``: psycopg's
    connection keywords). A temporary slot lasts only as long as this call: it serves a snapshot of tables
    added to a pipeline whose own slot already holds the WAL."""
    import psycopg

    try:
        repl = psycopg.connect(**settings, replication="database", autocommit=True)
    except psycopg.OperationalError as exc:
        raise CdcError(f"cannot open a replication connection to create slot {slot}: {exc}".strip(),
                       "allow it in pg_hba.conf (a 'host <database> <user>' line also serves replication=database "
                       "connections) and give the user REPLICATION", permanent=True) from None
    try:
        kind = "TEMPORARY LOGICAL" if temporary else "LOGICAL"
        # no query parameters: a replication connection speaks only the simple query protocol
        row = repl.execute(f"CREATE_REPLICATION_SLOT {slot} {kind} pgoutput (SNAPSHOT 'export')").fetchone()
        assert row is not None
        consistent_point, exported = parse_lsn(str(row[1])), str(row[2])
        holder = psycopg.connect(**settings, autocommit=False)
        try:
            holder.execute("SET idle_in_transaction_session_timeout = 0")
            holder.commit()
            holder.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            holder.read_only = True
            holder.execute(f"SET TRANSACTION SNAPSHOT '{exported}'")
            snapshot_id, xmin_text = holder.execute("SELECT pg_export_snapshot(), pg_current_snapshot()::text"
                                                    ).fetchone()  # type: ignore[misc]
        except BaseException:
            holder.close()
            raise
    finally:
        repl.close()  # the holder's export outlives it
    return ExportedSnapshot(slot, consistent_point, str(snapshot_id), str(xmin_text), holder)


def jdbc_options(snapshot: ExportedSnapshot, fetch_size: int) -> dict[str, str]:
    """Spark JDBC options that make each partition read inside ``snapshot``."""
    return {
        "fetchsize": str(max(1, fetch_size)),  # > 0: Spark's PostgreSQL dialect opens a transaction for the read
        "sessionInitStatement": (f"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; "
                                 f"SET TRANSACTION SNAPSHOT '{snapshot.snapshot_id}'; {session_settings_sql()}"),
    }


#: the guard's column: 1 inside the snapshot; a division by zero outside it
GUARD = "cdclake_in_snapshot"


def guarded(select: str, snapshot: ExportedSnapshot) -> str:
    """``select`` with a :data:`GUARD` column that fails the read unless it runs inside ``snapshot``.

    The check is a scalar subquery (an init plan: evaluated once, and only when a row is produced, so Spark's
    schema probe, which reads no row outside any snapshot, passes). The reader must use the column
    (``.where(f"{GUARD} = 1")``): a column Spark prunes is never evaluated."""
    return (f"SELECT q.*, (SELECT 1 / (pg_current_snapshot()::text = '{snapshot.xmin_text}')::int) AS {GUARD} "
            f"FROM ({select}) q")
