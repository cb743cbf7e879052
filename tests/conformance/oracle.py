"""The Oracle conformance driver: the workload on the LogMiner simulator (two redo threads, as RAC).

The two workload sessions are two :meth:`SimulatedOracle.begin` transactions open at once, one per
redo thread; DDL is the simulator's DDL with the statement text a user would issue (``DATE '...'``
defaults, ``MODIFY``, ``RENAME COLUMN``). One transaction stays open across every window: LogMiner
windows end anywhere, inside open transactions, and the source must carry them over (the in-flight
buffer) and apply them once, when they commit. The comparison reads the simulator's committed rows,
so an open transaction does not disturb it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.logminer_sim import SimulatedOracle, SimulatedTransaction

from tests.conformance.workload import (
    BIGINT,
    CRASH_POINTS,
    DATE,
    DDL_KINDS,
    DEC,
    INT,
    KEY,
    STR,
    WIDE_STR,
    AddColumn,
    Begin,
    Commit,
    Create,
    Delete,
    Driver,
    DropColumn,
    DropTable,
    Insert,
    Op,
    RenameColumn,
    Rollback,
    Truncate,
    Update,
    UpdateKey,
    WidenColumn,
)
from tests.integration.oracle_helpers import assert_lake_equals_simulated, oracle_pipeline

OWNER = "APP"
ORACLE_TYPES = {KEY: "NUMBER(10)", INT: "NUMBER(9)", BIGINT: "NUMBER(18)", DEC: "NUMBER(12,2)",
                STR: "VARCHAR2(20 CHAR)", WIDE_STR: "VARCHAR2(40 CHAR)", DATE: "DATE"}


def literal(value: Any) -> str:
    """An Oracle SQL literal of a workload value (as a DEFAULT clause spells it)."""
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


class OracleDriver(Driver):
    name = "oracle"
    seed = 20260302  # kills the create_table round after bronze; small window in the rename_column round
    supported_ddl = frozenset(DDL_KINDS)
    crash_points = (*CRASH_POINTS, "inflight")
    open_transactions_across_windows = True

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.db = SimulatedOracle(threads=2, seed=self.seed)
        self.open: dict[int, SimulatedTransaction] = {}

    def source_table(self, table: str) -> str:
        return f"{OWNER}.{table.upper()}"

    def pipeline(self, spark: Any, lake_path: Path) -> Pipeline:
        return oracle_pipeline(spark, self.db, lake_path, name="conformance")

    def assert_lake_equals_source(self, pipeline: Pipeline, tables: list[str]) -> None:
        assert_lake_equals_simulated(self.spark, pipeline, self.db, [self.source_table(t) for t in tables])

    def close(self) -> None:
        for tx in self.open.values():
            tx.rollback()
        self.open.clear()

    # ---- the operations ----------------------------------------------------------------------------

    @staticmethod
    def _row(values: Any) -> dict[str, Any]:
        return {c.upper(): dt.datetime.combine(v, dt.time()) if isinstance(v, dt.date) else v
                for c, v in values.items()}

    def apply(self, op: Op) -> None:
        db = self.db
        if isinstance(op, Begin):
            assert op.tx not in self.open
            self.open[op.tx] = db.begin(thread=op.tx + 1)
        elif isinstance(op, Commit):
            self.open.pop(op.tx).commit()
        elif isinstance(op, Rollback):
            self.open.pop(op.tx).rollback()
        elif isinstance(op, Insert):
            self.open[op.tx].insert(OWNER, op.table.upper(), self._row(op.values))
        elif isinstance(op, Update):
            self.open[op.tx].update(OWNER, op.table.upper(), self._row(op.key), self._row(op.changes))
        elif isinstance(op, UpdateKey):
            self.open[op.tx].update(OWNER, op.table.upper(), self._row(op.key), self._row(op.new_key))
        elif isinstance(op, Delete):
            self.open[op.tx].delete(OWNER, op.table.upper(), self._row(op.key))
        elif isinstance(op, Create):
            db.create_table(OWNER, op.table.upper(), [(c.upper(), ORACLE_TYPES[t]) for c, t in op.columns],
                            [k.upper() for k in op.key])
        elif isinstance(op, Truncate):
            db.truncate_table(OWNER, op.table.upper())
        elif isinstance(op, DropTable):
            db.drop_table(OWNER, op.table.upper())
        else:
            self._alter(op)

    def _alter(self, op: Op) -> None:
        """ALTER TABLE: the redo's statement text, and the simulator's new column list."""
        assert isinstance(op, AddColumn | DropColumn | RenameColumn | WidenColumn), op
        table = op.table.upper()
        qualified = f'"{OWNER}"."{table}"'
        columns = [(c.name, c.type_text) for c in self.db.table(OWNER, table).columns]
        column = op.column.upper()
        if isinstance(op, DropColumn):
            self.db.drop_column(OWNER, table, column)
        elif isinstance(op, AddColumn):
            type_text = ORACLE_TYPES[op.type]
            self.db.alter_table(OWNER, table,
                                f'ALTER TABLE {qualified} ADD ("{column}" {type_text} DEFAULT {literal(op.default)})',
                                [*columns, (column, type_text)], defaults=self._row({op.column: op.default}))
        elif isinstance(op, RenameColumn):
            new = op.new_name.upper()
            self.db.alter_table(OWNER, table, f'ALTER TABLE {qualified} RENAME COLUMN "{column}" TO "{new}"',
                                [(new if c == column else c, t) for c, t in columns], renamed={column: new})
        else:
            type_text = ORACLE_TYPES[op.new_type]
            self.db.alter_table(OWNER, table, f'ALTER TABLE {qualified} MODIFY ("{column}" {type_text})',
                                [(c, type_text if c == column else t) for c, t in columns])


def make_driver(request: pytest.FixtureRequest) -> OracleDriver:
    """A simulated database of its own and the shared Spark session."""
    return OracleDriver(request.getfixturevalue("spark"))
