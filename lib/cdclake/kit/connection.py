"""Opening a connection to a source: one error for every driver when the server cannot be reached."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from cdclake.errors import PreflightError
from cdclake.kit.jdbc import JdbcEndpoint


def cannot_connect(system: str, where: str, reason: object, fix: str) -> PreflightError:
    """The error a failed connection attempt raises (``raise cannot_connect(...) from None``).

    It is retryable (``permanent=False``): a server unreachable now may answer the next run. ``reason`` is the
    driver's message (never the password: drivers do not echo it, and it is not passed here).

    >>> err = cannot_connect("PostgreSQL", "db:5432/shop as cdc", "timeout expired\\n", "check source.host")
    >>> err.problem, err.permanent
    ('cannot connect to PostgreSQL at db:5432/shop as cdc: timeout expired', False)
    """
    text = str(reason).strip() or type(reason).__name__
    return PreflightError(f"cannot connect to {system} at {where}: {text}", fix, permanent=False)


class Connector(abc.ABC):
    """One place where a source's connection settings become a Python connection and Spark JDBC reads.

    A source subclasses it once: :meth:`open` calls its driver with the settings, :meth:`jdbc` gives the
    URL and properties of Spark's reads; :meth:`connect` turns a failed attempt into :func:`cannot_connect`'s
    error, naming :attr:`system`, :meth:`where` and :attr:`fix`. Connection security (TLS, verification)
    is added here, for every source alike.
    """

    system: str  # for messages, e.g. "PostgreSQL"
    fix: str = "check source.host, source.port, source.user and the password variable, and that the server runs"

    def __init__(self, config: Any) -> None:
        self.config = config  # the source's model of the ``source:`` block

    def connect_errors(self) -> tuple[type[BaseException], ...]:
        """The driver's exceptions that mean "could not connect" (others propagate as they are)."""
        return (Exception,)

    @abc.abstractmethod
    def where(self) -> str:
        """Where the connection goes and as whom, for messages (never the password)."""

    @abc.abstractmethod
    def open(self) -> Any:
        """A new driver connection."""

    @abc.abstractmethod
    def jdbc(self) -> JdbcEndpoint:
        """URL and properties of Spark's JDBC reads of this server."""

    def connect(self, open_connection: Callable[[], Any] | None = None) -> Any:
        """:meth:`open` (or ``open_connection``, e.g. an emulator's), with a failed attempt raised as a retryable
        error that says what to check."""
        try:
            return (open_connection or self.open)()
        except self.connect_errors() as exc:
            raise cannot_connect(self.system, self.where(), exc, self.fix) from None


class Session:
    """A source's one driver connection, opened on first use (:meth:`Connector.connect`) and kept for the run."""

    def __init__(self, connector: Connector, open_connection: Callable[[], Any] | None = None) -> None:
        self.connector = connector
        self._open = open_connection  # e.g. an emulator's connect (default: the connector's driver)
        self._conn: Any = None

    def connect_new(self) -> Any:
        """A connection of its own (e.g. one that holds a snapshot's locks)."""
        return self.connector.connect(self._open)

    def conn(self) -> Any:
        if self._conn is None:
            self._conn = self.connect_new()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
