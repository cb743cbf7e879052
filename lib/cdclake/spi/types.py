"""Type mapping: how a source's column values reach Delta, the same way from a snapshot and from the log."""

from __future__ import annotations

import abc

from cdclake.schema import Column

# A column attribute: the source's log never carries this column's values (e.g. a virtual column
# whose value the database computes on read), so no change could keep it exact: it does not land.
UNLOGGED = "unlogged"
# A column attribute: the canonical value the rows existing before an added column got (the source
# knows it exactly; the engine gives it to them, masked like any value of the column).
FILL = "fill"


class TypeMapper(abc.ABC):
    """How values of one source's columns reach Delta.

    A value travels as a *canonical* value (JSON-friendly, produced identically by the log decoder
    and by the snapshot ``SELECT``) and is turned into the Delta column's type by one Spark SQL
    expression, whatever path brought it.
    """

    @abc.abstractmethod
    def canonical_type(self, column: Column) -> str:
        """Spark SQL type of the canonical value (what the log decoder emits into JSON and what the
        snapshot SELECT returns), e.g. ``STRING`` for DECIMAL, ``BIGINT`` for INT."""

    @abc.abstractmethod
    def to_delta_sql(self, column: Column, expr: str) -> str:
        """Spark SQL expression converting canonical ``expr`` to ``column.spark_type``."""

    def initial_value_sql(self, column: Column) -> str | None:
        """Spark SQL value that rows existing before ``column`` was added hold (None: NULL)."""
        return None

    def filter_literal_kind(self, column: Column) -> str | None:
        """How a Delta value of ``column`` is written in a filter that the source's SQL and Spark SQL
        read the same way (``cdclake reconcile --repair`` selects keys with it): ``"number"`` (bare
        digits), ``"string"`` (single-quoted, no quote or backslash inside) or ``"date"``
        (``DATE 'YYYY-MM-DD'``); ``None`` when no such literal is known (the repair is refused).

        Only say so when the source column compared with that literal selects exactly the rows whose
        Delta value it is: a wrong literal makes a repair delete the lake row and read nothing back.
        """
        return None
