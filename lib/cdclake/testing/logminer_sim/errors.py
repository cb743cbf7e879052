"""The simulator's errors: ``oracledb``-like database errors (``ORA-``/``DPY-`` codes) and unknown statements."""

from __future__ import annotations

import re

# ---- errors --------------------------------------------------------------------------------------

_CONNECTION_LOST = ("DPY-4011", "DPY-1001", "DPI-1080", "ORA-03113", "ORA-03114", "ORA-03135", "ORA-12537",
                    "ORA-12547", "ORA-01012", "ORA-00028", "ORA-02396", "ORA-12170")
_RE_CODE = re.compile(r"(ORA|DPY|DPI|PLS)-(\d+)")


class OracleErrorInfo:
    """Like python-oracledb's ``_Error``: ``exc.args[0]`` with ``full_code``, ``code``, ``message``."""

    def __init__(self, message: str) -> None:
        self.message = message
        m = _RE_CODE.match(message)
        self.full_code = m.group(0) if m else ""
        self.code = int(m.group(2)) if m else 0
        self.isrecoverable = False
        self.offset = 0

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"OracleErrorInfo({self.message!r})"


class SimulatedDatabaseError(Exception):
    """A database error; ``str(exc)`` starts with the ``ORA-``/``DPY-`` code (as ``oracledb.DatabaseError``)."""

    def __init__(self, message: str) -> None:
        super().__init__(OracleErrorInfo(message))

    @property
    def full_code(self) -> str:
        return self.args[0].full_code

    @property
    def message(self) -> str:
        return self.args[0].message


class SimulatedOperationalError(SimulatedDatabaseError):
    """The connection is gone (``DPY-4011``, ``ORA-03113``...); the connection is unusable afterwards."""


class RowLockedError(SimulatedDatabaseError):
    """Another open transaction holds the row (Oracle would block; the simulator refuses at once)."""


class UnknownStatementError(RuntimeError):
    """The simulator does not know the statement (deliberately not a database error: never retried)."""


def _db_error(message: str) -> SimulatedDatabaseError:
    if any(code in message for code in _CONNECTION_LOST):
        return SimulatedOperationalError(message)
    return SimulatedDatabaseError(message)
