"""The bronze change log: every committed change of every window, append-only, and a marker per window.

A window's rows and its marker (a ``w`` row holding the end position and the window's statistics)
are one Delta commit, idempotent per window (``txnAppId``/``txnVersion``): a window is in bronze
whole or not at all, and the marker is how a re-run knows it was mined.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from cdclake.engine.events import BRONZE_COLUMNS, BRONZE_DDL, WINDOW_MARKER_OP, event_seq
from cdclake.engine.lake import LakeLayout, local_frame, read_delta, sql_str

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.spi import Position


class BronzeLog:
    def __init__(self, spark: SparkSession, layout: LakeLayout) -> None:
        self.spark = spark
        self.path = layout.bronze
        self.app = f"cdclake:{layout.pipeline}"

    def read(self) -> DataFrame:
        return read_delta(self.spark, self.path)

    def marker(self, window_id: int) -> dict[str, Any] | None:
        """The marker of window ``window_id`` (``end``: its end position's dict), if it was mined."""
        rows = self.markers().where(f"window_id = {int(window_id)}").select("after").collect()
        return json.loads(rows[0].after) if rows else None

    def markers(self) -> DataFrame:
        return self.read().where(f"op = '{WINDOW_MARKER_OP}'")

    def windows_present(self, first: int, last: int) -> set[int]:
        """The windows between ``first`` and ``last`` that bronze holds (retention deletes old ones)."""
        rows = self.markers().where(f"window_id BETWEEN {int(first)} AND {int(last)}").select("window_id").collect()
        return {int(r.window_id) for r in rows}

    def changes(self, window_id: int, table: str | None = None) -> DataFrame:
        """The change rows of window ``window_id`` (of ``table`` only, if given)."""
        where = f"window_id = {int(window_id)} AND op <> '{WINDOW_MARKER_OP}'"
        if table is not None:
            where += f" AND source_table = '{sql_str(table)}'"
        return self.read().where(where)

    def changes_after(self, table: str, seq: int) -> DataFrame:
        """Every change of ``table`` sequenced after ``seq``, whatever its window."""
        return self.read().where(f"source_table = '{sql_str(table)}' AND op <> '{WINDOW_MARKER_OP}' AND seq > {seq}")

    def commit(self, window_id: int, rows: DataFrame | None, end: Position, marker: dict[str, Any],
               app: str = "bronze") -> None:
        """Append the window's rows and its marker in one commit, once per ``(app, window_id)``."""
        marker_df = local_frame(
            self.spark,
            [(window_id, "", WINDOW_MARKER_OP, Decimal(event_seq(end.ordinal, 0)), end.describe(), None, None, None,
              None, json.dumps(marker, default=str))],
            BRONZE_DDL,
        )
        frame = marker_df if rows is None else rows.select(*BRONZE_COLUMNS).unionByName(marker_df)
        (frame.write.format("delta").mode("append").option("txnAppId", f"{self.app}:{app}")
         .option("txnVersion", window_id).save(self.path))
