"""Errors that tell the operator what went wrong and how to fix it.

Every error cdclake raises on purpose is a :class:`CdcError` carrying a ``fix`` hint; the CLI prints
``problem`` and ``fix`` without a stack trace (``--debug`` shows it), then one machine-readable line,
``ERROR_TAG`` + JSON (problem, fix, kind, permanent), that orchestrators read: a ``permanent`` error
needs an operator (a retry cannot cure it), the others may pass on a retry. A plain :class:`CdcError`
is retryable unless raised with ``permanent=True``; its subclasses say it by class.

>>> CdcError("bronze lacks window 3", "re-mine it", permanent=True).permanent, CdcError("lock held").permanent
(True, False)
"""

from __future__ import annotations

import re
import shlex

ERROR_TAG = "cdclake-error: "


def command(verb: str, *args: str) -> str:
    """A ``cdclake`` command for a message, in backticks, each argument quoted for a shell: runnable as
    printed once the command line has added ``--config`` (:func:`cdclake.cli.complete_commands`).

    >>> command("snapshot", "--tables", table_regex("shop.orders"), "--force")
    "`cdclake snapshot --tables 'shop\\\\.orders' --force`"
    """
    return "`" + " ".join(["cdclake", verb, *(shlex.quote(a) for a in args)]) + "`"


def table_regex(table: str) -> str:
    """The ``--tables`` regex that selects ``table`` alone (it is matched whole)."""
    return re.escape(table)


class CdcError(Exception):
    """A problem the operator can act on: ``str(err)`` names the problem and the fix."""

    permanent = False  # True: retrying without a change by the operator cannot succeed

    def __init__(self, problem: str, fix: str | None = None, *, permanent: bool | None = None) -> None:
        self.problem = problem
        self.fix = fix
        if permanent is not None:  # this error's own answer, where its class's does not fit
            self.permanent = permanent
        super().__init__(problem if not fix else f"{problem}\n  fix: {fix}")


class ConfigError(CdcError):
    """The pipeline file is invalid (unknown key, wrong type, missing secret)."""

    permanent = True


class UsageError(CdcError):
    """A command was given options that do not go together."""

    permanent = True


class PreflightError(CdcError):
    """The source server is not set up for CDC (binlog off, wrong format, privileges...)."""

    permanent = True


class PositionLostError(CdcError):
    """The stored log position is no longer available on the source (purged logs)."""

    permanent = True


class DdlParseError(CdcError):
    """A DDL statement in the log could not be parsed; carries the statement and its position."""

    permanent = True

    def __init__(self, statement: str, position: str, reason: str) -> None:
        self.statement = statement
        self.position = position
        super().__init__(
            f"could not parse DDL at {position}: {reason}\n  statement: {statement}",
            "fix the statement's support in cdclake, or set 'mining.skip_unparsable_ddl: true' "
            "to skip it and record it in the schema history (the table schema may then drift)",
        )


class SchemaMismatchError(CdcError):
    """A row event does not fit the schema the history says is valid at its position."""

    permanent = True


class TablesParkedError(CdcError):
    """A run did its work, but some tables are parked: their capture stopped at a change cdclake
    cannot apply, until they are re-snapshotted (``cdclake backfill --table``)."""

    permanent = True


class ConcurrentRunError(CdcError):
    """Another run of the same pipeline holds the lock."""


class SnapshotDeferredError(CdcError):
    """New tables cannot be snapshotted yet (a transaction open at the snapshot began before the
    stream's position); mining the other tables may go on."""
