"""The Db2 conformance driver: the workload on the capture emulator (docs/db2.md).

The two workload sessions are two emulated transactions; Capture runs a commit cycle after every commit and
every schema procedure, so a window always reads whole transactions. DDL follows the procedures Db2's
SQL Replication needs: the registration is deactivated, the source table and its CD table are altered alike,
and the registration is activated again. Creating, truncating and dropping tables are not captured by Capture
and are left out; the Db2 source does not bound a window by ``max_events``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cdclake.engine.pipeline import Pipeline
from cdclake.testing.db2_emulator import EmulatedDb2, Transaction

from tests.conformance.workload import (
    BIGINT,
    DATE,
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
    Insert,
    Op,
    RenameColumn,
    Rollback,
    Update,
    UpdateKey,
    WidenColumn,
)
from tests.integration.db2_helpers import assert_lake_equals_emulated, db2_pipeline

SCHEMA = "APP"
DB2_TYPES = {KEY: "INTEGER", INT: "INTEGER", BIGINT: "BIGINT", DEC: "DECIMAL(12,2)", STR: "VARCHAR(20)",
             WIDE_STR: "VARCHAR(40)", DATE: "DATE"}


class Db2Driver(Driver):
    name = "db2"
    seed = 20261127
    supported_ddl = frozenset({AddColumn.kind, WidenColumn.kind, RenameColumn.kind, DropColumn.kind})
    supports_max_events = False

    def __init__(self, spark: Any, root: Path) -> None:
        self.spark = spark
        self.db = EmulatedDb2(root)
        self.open: dict[int, Transaction] = {}

    def source_table(self, table: str) -> str:
        return f"{SCHEMA}.{table.upper()}"

    def pipeline(self, spark: Any, lake_path: Path) -> Pipeline:
        self.db.capture.cycle()
        return db2_pipeline(spark, self.db, lake_path, name="conformance")

    def assert_lake_equals_source(self, pipeline: Pipeline, tables: list[str]) -> None:
        assert_lake_equals_emulated(self.spark, pipeline, self.db, [self.source_table(t) for t in tables])

    def close(self) -> None:
        for tx in self.open.values():
            tx.rollback()
        self.open.clear()

    @staticmethod
    def _row(values: Any) -> dict[str, Any]:
        return {c.upper(): v for c, v in values.items()}

    def apply(self, op: Op) -> None:
        db = self.db
        if isinstance(op, Begin):
            self.open[op.tx] = db.begin()
        elif isinstance(op, Commit):
            self.open.pop(op.tx).commit()
            db.capture.cycle()
        elif isinstance(op, Rollback):
            self.open.pop(op.tx).rollback()
        elif isinstance(op, Insert):
            self.open[op.tx].insert(SCHEMA, op.table.upper(), self._row(op.values))
        elif isinstance(op, Update):
            self.open[op.tx].update(SCHEMA, op.table.upper(), self._row(op.key), self._row(op.changes))
        elif isinstance(op, UpdateKey):
            self.open[op.tx].update(SCHEMA, op.table.upper(), self._row(op.key), self._row(op.new_key))
        elif isinstance(op, Delete):
            self.open[op.tx].delete(SCHEMA, op.table.upper(), self._row(op.key))
        elif isinstance(op, Create):
            table = op.table.upper()
            db.create_table(SCHEMA, table, [(c.upper(), DB2_TYPES[t], t != KEY) for c, t in op.columns],
                            [k.upper() for k in op.key])
            db.add_table(SCHEMA, table)
        else:
            self._procedure(op)

    def _procedure(self, op: Op) -> None:
        """A schema change as docs/db2.md's online procedure does it: deactivate, alter source and CD table,
        activate."""
        db, table = self.db, op.table.upper()  # type: ignore[attr-defined]
        cd = f"CDC_{SCHEMA}_{table}"
        db.capture.cycle()
        db.set_state(SCHEMA, table, "I")
        if isinstance(op, AddColumn):
            for schema, name in ((SCHEMA, table), (db.control_schema, cd)):
                default = op.default if schema == SCHEMA else None
                db.add_column(schema, name, op.column.upper(), DB2_TYPES[op.type], default=default)
        elif isinstance(op, DropColumn):
            for schema, name in ((SCHEMA, table), (db.control_schema, cd)):
                db.drop_column(schema, name, op.column.upper())
        elif isinstance(op, RenameColumn):  # Capture keeps the CD table's old name
            db.rename_column(SCHEMA, table, op.column.upper(), op.new_name.upper())
        elif isinstance(op, WidenColumn):
            for schema, name in ((SCHEMA, table), (db.control_schema, cd)):
                db.set_data_type(schema, name, op.column.upper(), DB2_TYPES[op.new_type])
        else:
            raise AssertionError(op)
        db.set_state(SCHEMA, table, "A")
        db.capture.cycle()


def make_driver(request: pytest.FixtureRequest) -> Db2Driver:
    """An emulated database of its own and the shared Spark session."""
    return Db2Driver(request.getfixturevalue("spark"), request.getfixturevalue("tmp_path") / "db2")



