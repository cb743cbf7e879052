"""LOB capture: LOB, XMLTYPE and extended-string rows → column values.

With ``source.mining.lob: true`` the decoder turns each such row into a ``piece`` row (the row key
in ``before``; the operation in ``after``). Once a transaction committed, its pieces are replayed in
redo order:

* ``SELECT_LOB_LOCATOR`` / ``LOB_WRITE`` / ``LOB_TRIM`` / ``LOB_ERASE`` (CLOB, NCLOB, BLOB): writes at
  1-based offsets (characters for CLOB/NCLOB, bytes for BLOB), trims and erases, per locator. A
  write that does not start at offset 1 of a LOB whose old value the transaction does not know
  cannot be rebuilt: the column stays *unavailable* and keeps the lake's value.
* ``XML_BEGIN`` / ``XML_WRITE`` / ``XML_END`` (XMLTYPE) and ``32K_BEGIN`` / ``32K_WRITE`` / ``32K_END``
  (VARCHAR2 over 4000 bytes, RAW over 2000 under ``MAX_STRING_SIZE=EXTENDED``): the value is
  rewritten whole, as the concatenation of the fragments between begin and end (hex for RAW; XML
  sent as ``HEXTORAW`` is UTF-8 text, decoded once the document is complete because a character
  may span two fragments). No fragment with data (``XML_REDO := NULL``) is NULL.

The value then lands on the newest earlier change of the same row in the transaction (an INSERT
with ``EMPTY_CLOB()`` or ``LM_EMPTY_STRING``, an UPDATE), or becomes an UPDATE of its own when the
statement only wrote the LOB. The row is the one with the same ``ROW_ID``, or, where LogMiner gives
none (``AAAAAAAAAAAAAAAAAA``), the one whose values match the key the begin/locator row names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from cdclake.spi.logrows import KIND_CHANGE, KIND_PIECE, UNAVAILABLE_KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NULL_ROWID = "AAAAAAAAAAAAAAAAAA"  # the ROW_ID LogMiner gives rows it cannot place
_UNKNOWN: Any = object()  # a value the pieces do not determine: the column stays unavailable


def piece(op: str, column: str | None = None, binary: bool = False, offset: int = 0, length: int = 0,
          data: str | None = "") -> str:
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

    error: str | None = None

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

    def value(self) -> Any:
        if not self.known or self.partial:
            return _UNKNOWN
        return bytes(self.buf).hex() if self.binary else "".join(self.buf)  # type: ignore[arg-type]


class _Appended:
    """An XML document or extended string rebuilt whole from the fragments after its begin row."""

    def __init__(self, rec: dict[str, Any], column: str, binary: bool) -> None:
        self.rec, self.column, self.binary = rec, column, binary
        self.table, self.locator, self.key, self.at = rec["source_table"], rec.get("locator"), rec["before"], rec["idx"]
        self.chunks: list[str] = []  # text, or lowercase hex of a binary (RAW) value
        self.pending = bytearray()  # HEXTORAW fragments of a text value, decoded together
        self.has_data = False
        self.error: str | None = None

    def append(self, data: str | None, hexed: bool) -> None:
        if data is None:
            return  # XML_REDO := NULL
        self.has_data = True
        if self.binary:
            if not hexed:
                self.error = f"{self.table}.{self.column}: a text fragment for a binary value"
            self.chunks.append(data)
        elif hexed:
            self.pending.extend(bytes.fromhex(data))
        else:
            self._flush()
            self.chunks.append(data)

    def _flush(self) -> None:
        if self.pending:
            try:
                self.chunks.append(self.pending.decode("utf-8"))
            except UnicodeDecodeError as exc:
                self.error = (f"{self.table}.{self.column}: the HEXTORAW fragments of the XML document are not UTF-8 "
                              f"({exc.reason} at byte {exc.start}); cdclake reads them as AL32UTF8, the database "
                              "character set LogMiner supports for XML")
            self.pending = bytearray()

    def value(self) -> Any:
        self._flush()
        if self.error is not None:
            return _UNKNOWN
        return "".join(self.chunks) if self.has_data else None


def _same_row(rec: dict[str, Any], table: str, locator: str | None, key: dict[str, Any]) -> bool:
    """``rec`` is a change of the row a piece names: same ROW_ID, or (no ROW_ID) the key's values."""
    if rec["kind"] != KIND_CHANGE or rec["source_table"] != table:
        return False
    if locator is not None and locator != NULL_ROWID:
        return bool(rec.get("locator") == locator)
    img = orjson.loads(rec["after"]) if rec["after"] else {}
    known = [(c, v) for c, v in key.items() if c != UNAVAILABLE_KEY and c in img]
    return bool(known) and all(img[c] == v for c, v in known)


def _set_column(target: dict[str, Any], column: str, value: Any) -> None:
    after = orjson.loads(target["after"]) if target["after"] else {}
    unavailable = [c for c in after.get(UNAVAILABLE_KEY, []) if c != column]
    if value is _UNKNOWN:
        after.pop(column, None)
        unavailable.append(column)
    else:
        after[column] = value
    if unavailable:
        after[UNAVAILABLE_KEY] = unavailable
    else:
        after.pop(UNAVAILABLE_KEY, None)
    target["after"] = orjson.dumps(after).decode()


def _fold_transaction(frame: Any) -> Any:
    import pandas as pd

    frame = frame.sort_values(["window_id", "idx"], kind="stable").reset_index(drop=True)
    records = frame.to_dict("records")
    out: list[dict[str, Any]] = []
    current: _Lob | _Appended | None = None

    def finish(lob: _Lob | _Appended | None) -> None:
        if lob is None:
            return
        value = lob.value()
        key = orjson.loads(lob.key) if lob.key else {}
        target = None
        for rec in reversed(out):  # the newest change of the same row before the locator
            if (rec["window_id"], rec["idx"]) > (lob.rec["window_id"], lob.at):
                continue
            if rec["kind"] == KIND_CHANGE and rec["op"] in ("c", "u") and _same_row(rec, lob.table, lob.locator, key):
                target = rec
                break
        if target is None:
            if value is _UNKNOWN and lob.error is None:
                return  # nothing known to apply
            missing = key.pop(UNAVAILABLE_KEY, [])
            after = {**key, UNAVAILABLE_KEY: missing} if missing else dict(key)
            target = {**lob.rec, "kind": KIND_CHANGE, "source_table": lob.table, "op": "u",
                      "before": orjson.dumps(key).decode(), "after": orjson.dumps(after).decode(),
                      "locator": lob.locator, "idx": lob.at, "error": None, "raw": None}
            out.append(target)
        _set_column(target, lob.column, value)
        if lob.error is not None:
            target["error"] = lob.error  # the change is dead-lettered, never applied without this column

    for rec in records:
        if rec["kind"] != KIND_PIECE:
            out.append(rec)
            continue
        p = orjson.loads(rec["after"])
        op = p["op"]
        if op == "locator":
            finish(current)
            base = None
            key = orjson.loads(rec["before"]) if rec["before"] else {}
            for prev in reversed(out):  # a row inserted in this transaction starts from its inserted value
                if prev["kind"] == KIND_CHANGE and prev["op"] == "c" and _same_row(
                        prev, rec["source_table"], rec.get("locator"), key):
                    img = orjson.loads(prev["after"]) if prev["after"] else {}
                    base = img.get(p["column"], "")
                    base = "" if base is None else base
                    break
            current = _Lob(dict(rec), p["column"], p["binary"], base)
        elif op == "begin":
            finish(current)
            current = _Appended(dict(rec), p["column"], p["binary"])
        elif op == "end":
            finish(current)
            current = None
        elif isinstance(current, _Appended):
            if op == "append":
                current.append(p["data"], p["binary"])
        elif current is not None:
            if op == "write":
                current.write(int(p["offset"]), p["data"])
            elif op == "trim":
                current.trim(int(p["length"]))
            elif op == "erase":
                current.erase(int(p["length"]), int(p["offset"]))
    finish(current)
    # Keep the input's dtypes (pandas 3 would infer Arrow-backed strings, which Spark's return path rejects).
    result = pd.DataFrame({c: pd.Series([r.get(c) for r in out], dtype=frame[c].dtype) for c in frame.columns}) \
        if out else frame.iloc[0:0]
    return result.sort_values(["window_id", "idx"], kind="stable")
