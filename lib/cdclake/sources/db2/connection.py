"""Connections to Db2: ``ibm_db_dbi`` for the driver's planning queries, IBM's JCC driver for Spark's reads."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from cdclake.errors import CdcError, PreflightError
from cdclake.kit import Connector, JdbcEndpoint, Session
from cdclake.sources.db2 import catalog
from cdclake.sources.db2 import queries as Q
from cdclake.sources.db2.config import Db2SourceConfig
from cdclake.sources.db2.position import CommitSeqPosition, clock_after
from cdclake.sources.db2.reads import jdbc_properties


class Db2Connector(Connector):
    system = "Db2"
    fix = "check source.host, port, database, user and password, and that the server accepts TCP/IP connections"

    config: Db2SourceConfig

    def where(self) -> str:
        return f"{self.config.host}:{self.config.port}/{self.config.database} as {self.config.user}"

    def open(self) -> Any:
        import ibm_db_dbi

        return ibm_db_dbi.connect(self.config.dsn(), self.config.user, self.config.password.get_secret_value())

    def jdbc(self) -> JdbcEndpoint:
        return JdbcEndpoint(self.config.spark_jdbc_url(), jdbc_properties(self.config))


class Db2Server(Session):
    """The source's driver connection (it plans, reads the register and catalog, counts) and Capture's state:
    registrations, synchpoint and the commit clock of positions."""

    def __init__(self, config: Db2SourceConfig, connect: Callable[[], Any] | None = None) -> None:
        super().__init__(Db2Connector(config), connect)
        self.config = config
        self.cs = config.control_schema
        #: positions the lake's tables stand at: the commit clock counts on from them
        self.anchors: list[CommitSeqPosition] = []

    def fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = self.conn()
        try:
            return catalog.fetch(conn, sql, params)
        finally:
            conn.rollback()  # no read transaction stays open: it would block REMOVETABLE's DROP

    # ---- tables -------------------------------------------------------------------------------------------

    def registrations(self) -> dict[str, catalog.Registration]:
        try:
            return catalog.registrations(self.conn(), self.cs)
        except Exception as exc:
            if "SQL0204N" in str(exc):
                raise PreflightError(f"{self.cs}.IBMSNAP_REGISTER does not exist: SQL Replication's Capture control "
                                     f"tables are not in schema {self.cs}",
                                     "create them (asncdctables.sql, docs/db2.md) or set source.control_schema to "
                                     "the schema that has them (ASNCDC in Debezium's set-up, ASN in a classic "
                                     "one)") from None
            raise
        finally:
            self.conn().rollback()

    def capture_behind(self, hwm: catalog.Synchpoint) -> float | None:
        """Seconds from Capture's ``SYNCHTIME`` to the server's clock (None if Capture has not set one)."""
        if hwm.time is None:
            return None
        now = self.fetch(Q.RETENTION.format(cs=self.cs))[0][2]
        return None if now is None else (now - dt.datetime.fromisoformat(hwm.time)).total_seconds()

    def high_water_mark(self, required: bool = True) -> catalog.Synchpoint | None:
        try:
            hwm = catalog.high_water_mark(self.conn(), self.cs)
        finally:
            self.conn().rollback()
        if hwm is None and required:
            raise CdcError(f"Capture has no synchpoint in {self.cs}.IBMSNAP_REGISTER (it has not run)",
                           f"start Capture: VALUES {self.cs}.ASNCDCSERVICES('start','asncdc')", permanent=True)
        return hwm

    # ---- positions ------------------------------------------------------------------------------------------

    def uow_count(self, lo: str, hi: str) -> int:
        rows = self.fetch(Q.UOW_COUNT.format(cs=self.cs), (bytes.fromhex(lo), bytes.fromhex(hi)))
        return int(rows[0][0] or 0)

    def position_at(self, commitseq: str, anchors: list[CommitSeqPosition] | None = None,
                     captured_at: str | None = None) -> CommitSeqPosition:
        return CommitSeqPosition(commitseq, clock_after(self.anchors if anchors is None else anchors, commitseq,
                                                        self.uow_count), captured_at)

    def position_at_hwm(self) -> CommitSeqPosition:
        hwm = self.high_water_mark()
        assert hwm is not None
        return self.position_at(hwm.seq, captured_at=hwm.time)

