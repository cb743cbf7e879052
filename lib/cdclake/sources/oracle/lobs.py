"""LOB capture: ``SELECT_LOB_LOCATOR`` / ``LOB_WRITE`` / ``LOB_TRIM`` / ``LOB_ERASE`` rows → column values.

With ``source.mining.lob: true`` the decoder turns each LOB row into a ``piece`` row (the locator's
row key in ``before``; the operation in ``after``). Once a transaction committed, its pieces are
replayed in redo order per locator: writes at 1-based offsets (characters for CLOB/NCLOB, bytes for
BLOB), trims and erases. The value then lands on the newest earlier change of the same row in the
transaction (an INSERT with ``EMPTY_CLOB()``, an UPDATE), or becomes an UPDATE of its own when the
statement only wrote the LOB. A write that does not start at offset 1 of a LOB whose old value the
transaction does not know cannot be rebuilt: the column stays *unavailable* and keeps the lake's value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from cdclake.engine.events import KIND_CHANGE, KIND_PIECE, UNAVAILABLE_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def piece(op: str, column: str | None = None, binary: bool = False, offset: int = 0, length: int = 0,
          data: str = "") -> str:
    return orjson.dumps({"op": op, "column": column, "binary": binary, "offset": offset, "length": length,
                         "data": data}).decode()


def assemble(rows: DataFrame) -> DataFrame:
    """Committed change + piece rows → change rows (only transactions holding pieces are regrouped)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    flag = F.max(F.when(F.col("kind") == KIND_PIECE, 1).otherwise(0)).over(Window.partitionBy("txid"))
    marked = rows.withColumn("__lob", flag)
    plain = marked.where("__lob = 0").drop("__lob")
    with_lobs = marked.where("__lob = 1").drop("__lob")
    folded = with_lobs.groupBy("txid").applyInPandas(_fold_transaction, schema=with_lobs.schema)
    return plain.unionByName(folded)


class _Lob:
    """One locator's value being rebuilt; ``rec`` is its locator row (the template of a new change)."""

    def __init__(self, rec: dict[str, Any], column: str, binary: bool, base: Any) -> None:
        self.rec, self.column, self.binary = rec, column, binary
        self.table, self.locator, self.key, self.at = rec["source_table"], rec.get("locator"), rec["before"], rec["idx"]
        self.known = base is not None
        self.partial = False
        self.buf: bytearray | list[str] = (bytearray.fromhex(base) if binary else list(base)) if self.known else (
            bytearray() if binary else [])

    def write(self, offset: int, data: str) -> None:
        chunk: bytearray | list[str] = bytearray.fromhex(data) if self.binary else list(data)
        if not self.known:
            if offset != 1:
                self.partial = True  # writing into the middle of a value this transaction never saw
            self.known = True  # a write from offset 1 rewrites the value (what LogMiner logs for an update)
        start = offset - 1
        pad = (b"\x00" if self.binary else " ")
        while len(self.buf) < start:
            self.buf.append(pad[0] if self.binary else pad)  # type: ignore[arg-type]
        self.buf[start:start + len(chunk)] = chunk  # type: ignore[index,assignment]

    def trim(self, length: int) -> None:
        del self.buf[length:]

    def erase(self, amount: int, offset: int) -> None:
        fill = 0 if self.binary else " "
        for i in range(offset - 1, min(len(self.buf), offset - 1 + amount)):
            self.buf[i] = fill  # type: ignore[call-overload]

    def value(self) -> str | None:
        if not self.known or self.partial:
            return None
        return bytes(self.buf).hex() if self.binary else "".join(self.buf)  # type: ignore[arg-type]


def _fold_transaction(frame: Any) -> Any:
    import pandas as pd

    frame = frame.sort_values(["window_id", "idx"], kind="stable").reset_index(drop=True)
    records = frame.to_dict("records")
    out: list[dict[str, Any]] = []
    current: _Lob | None = None

    def finish(lob: _Lob | None) -> None:
        if lob is None:
            return
        value = lob.value()
        target = None
        for rec in reversed(out):  # the newest change of the same row before the locator
            if (rec["window_id"], rec["idx"]) > (lob.rec["window_id"], lob.at):
                continue
            if rec["kind"] == KIND_CHANGE and rec["source_table"] == lob.table and rec["op"] in ("c", "u") and (
                    lob.locator is not None and rec.get("locator") == lob.locator):
                target = rec
                break
        if target is None:
            if value is None:
                return  # nothing known to apply
            key = orjson.loads(lob.key) if lob.key else {}
            missing = key.pop(UNAVAILABLE_KEY, [])
            after = {**key, lob.column: value}
            if missing:
                after[UNAVAILABLE_KEY] = [c for c in missing if c != lob.column]
            target = {**lob.rec, "kind": KIND_CHANGE, "source_table": lob.table, "op": "u",
                      "before": orjson.dumps(key).decode(), "after": orjson.dumps(after).decode(),
                      "locator": lob.locator, "idx": lob.at, "error": None, "raw": None}
            out.append(target)
            return
        after = orjson.loads(target["after"]) if target["after"] else {}
        unavailable = [c for c in after.get(UNAVAILABLE_KEY, []) if c != lob.column]
        if value is None:
            after.pop(lob.column, None)
            unavailable.append(lob.column)
        else:
            after[lob.column] = value
        if unavailable:
            after[UNAVAILABLE_KEY] = unavailable
        else:
            after.pop(UNAVAILABLE_KEY, None)
        target["after"] = orjson.dumps(after).decode()

    for rec in records:
        if rec["kind"] != KIND_PIECE:
            out.append(rec)
            continue
        p = orjson.loads(rec["after"])
        if p["op"] == "locator":
            finish(current)
            base = None
            for prev in reversed(out):  # a row inserted in this transaction starts from its inserted value
                if prev["kind"] == KIND_CHANGE and prev.get("locator") == rec.get("locator") and prev["op"] == "c":
                    img = orjson.loads(prev["after"]) if prev["after"] else {}
                    base = img.get(p["column"], "")
                    base = "" if base is None else base
                    break
            current = _Lob(dict(rec), p["column"], p["binary"], base)
        elif current is not None:
            if p["op"] == "write":
                current.write(int(p["offset"]), p["data"])
            elif p["op"] == "trim":
                current.trim(int(p["length"]))
            elif p["op"] == "erase":
                current.erase(int(p["length"]), int(p["offset"]))
    finish(current)
    # Keep the input's dtypes (pandas 3 would infer Arrow-backed strings, which Spark's return path rejects).
    result = pd.DataFrame({c: pd.Series([r.get(c) for r in out], dtype=frame[c].dtype) for c in frame.columns}) \
        if out else frame.iloc[0:0]
    return result.sort_values(["window_id", "idx"], kind="stable")
