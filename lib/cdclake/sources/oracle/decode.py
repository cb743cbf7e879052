"""Raw ``V$LOGMNR_CONTENTS`` rows → the engine's log rows, in Spark executors.

Steps, all on DataFrames:

1. **continuations** — a ``SQL_REDO`` longer than 4000 bytes comes as several rows, ``CSF = 1`` on
   all but the last; they are joined back in redo order (only the chains are shuffled);
2. **ranks** — commits and DDL that share an SCN are numbered in redo order, giving each a unique
   commit ordinal (:func:`~cdclake.sources.oracle.position.commit_ordinal`);
3. **decoding** (``mapInArrow``) — DML rows are parsed (:mod:`.redo`) and their values turned into
   canonical JSON images with the table's schema *as of that row* (the schema history's version,
   or the version a DDL earlier in the window created); partial-rollback rows (``ROLLBACK = 1``)
   become ``undo`` rows keyed by ``ROW_ID``. A row that does not decode keeps its statement and the
   reason; the engine dead-letters it if its transaction commits.

DDL rows are read on the driver first (there are few) so the decoder knows every schema version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdclake.schema import TableSchema
from cdclake.sources.oracle import queries as Q
from cdclake.sources.oracle.position import SCN_SPAN
from cdclake.spi.logrows import (
    KIND_CHANGE,
    KIND_COMMIT,
    KIND_DEFERRED,
    KIND_ERROR,
    KIND_PIECE,
    KIND_ROLLBACK,
    KIND_UNDO,
    LOG_ROWS_DDL,
    UNAVAILABLE_KEY,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

COMMIT_LIKE = (Q.OP_COMMIT, Q.OP_DDL)
log = logging.getLogger(__name__)


@dataclass
class DecodePlan:
    """What executors need: schema versions per table (by window row index) and the table filter."""

    include: list[str]
    exclude: list[str]
    lob: bool = False
    # table -> [(from_idx, version, schema JSON or None when dropped)], sorted by from_idx
    versions: dict[str, list[tuple[int, int, str | None]]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"include": self.include, "exclude": self.exclude, "versions": self.versions,
                           "lob": self.lob})


def join_continuations(raw: DataFrame) -> DataFrame:
    """Concatenate ``CSF = 1`` continuation rows with the row that ends the statement."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ident = ["THREAD", "XID", "SCN", "RS_ID", "SSN"]
    chain_keys = raw.where("CSF = 1").select(*ident).distinct()
    in_chain = raw.join(chain_keys, ident, "left_semi")
    alone = raw.join(chain_keys, ident, "left_anti")
    order = Window.partitionBy(*ident).orderBy("IDX")
    starts = in_chain.withColumn(
        "__start", F.when(F.coalesce(F.lag("CSF").over(order), F.lit(0)) == 1, 0).otherwise(1))
    chained = starts.withColumn("__chain", F.sum("__start").over(
        order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    others = [c for c in raw.columns if c not in (*ident, "IDX", "SQL_REDO", "CSF", "K")]
    rank = [F.max("K").alias("K")] if "K" in raw.columns else []  # the last piece carries the rank
    merged = chained.groupBy(*ident, "__chain").agg(
        F.min("IDX").alias("IDX"),
        F.array_join(F.transform(F.array_sort(F.collect_list(F.struct("IDX", "SQL_REDO"))),
                                 lambda s: s["SQL_REDO"]), "").alias("SQL_REDO"),
        F.lit(0).alias("CSF"),
        *[F.min_by(c, F.col("IDX")).alias(c) for c in others], *rank,
    ).drop("__chain")
    return alone.unionByName(merged.select(*raw.columns))


def rank_commits(raw: DataFrame) -> DataFrame:
    """Add ``K``: the rank of a commit/DDL row among those at its SCN (null on other rows)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    codes = ", ".join(str(c) for c in COMMIT_LIKE)
    commit_like = raw.where(f"OPERATION_CODE IN ({codes})").withColumn(
        "K", F.row_number().over(Window.partitionBy("SCN").orderBy("IDX")))
    rest = raw.where(f"OPERATION_CODE IS NULL OR OPERATION_CODE NOT IN ({codes})").withColumn(
        "K", F.lit(None).cast("int"))
    return commit_like.unionByName(rest)


# ---- executor side ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _load_plan(text: str) -> _Plan:
    return _Plan(json.loads(text))


class _Plan:
    def __init__(self, raw: dict[str, Any]) -> None:
        from cdclake.sources.oracle.types import OracleTypeMapper

        self.include = [re.compile(p) for p in raw["include"]]
        self.exclude = [re.compile(p) for p in raw["exclude"]]
        self.mapper = OracleTypeMapper()
        self.lob = bool(raw.get("lob"))
        self.versions: dict[str, list[tuple[int, int, _Decoder | None]]] = {}
        for table, items in raw["versions"].items():
            self.versions[table] = [
                (int(idx), int(v), None if s is None else _Decoder(TableSchema.from_json(s), self.mapper))
                for idx, v, s in items
            ]
        self._captured: dict[str, bool] = {}

    def captures(self, table: str) -> bool:
        hit = self._captured.get(table)
        if hit is None:
            hit = self._captured[table] = _captured(table, self.include, self.exclude)
        return hit

    def decoder(self, table: str, idx: int) -> tuple[int, _Decoder | None] | None:
        found = None
        for start, version, decoder in self.versions.get(table, ()):
            if start < idx:
                found = (version, decoder)
            else:
                break
        return found


def _captured(table: str, include: list[re.Pattern[str]], exclude: list[re.Pattern[str]]) -> bool:
    return any(p.fullmatch(table) for p in include) and not any(p.fullmatch(table) for p in exclude)


class _Decoder:
    """Values of one table schema version: parsed SQL_REDO values → canonical JSON images."""

    def __init__(self, schema: TableSchema, mapper: Any) -> None:
        from cdclake.sources.oracle.redo import UNAVAILABLE

        self.unavailable = UNAVAILABLE
        self.schema = schema
        self.convert = {c.name: _converter(mapper, c) for c in schema.columns}
        # LOBs come by LOB_WRITE (or not at all), virtual columns are never logged, unsupported types
        # print as "Unsupported Type": missing from a statement means unknown, not NULL.
        self.lob_like = {c.name for c in schema.columns
                         if c.attrs.get("lob") or c.attrs.get("unsupported") or c.attrs.get("virtual")}
        self.names = [c.name for c in schema.columns]

    def image(self, values: dict[str, Any] | None, missing_is_unavailable: bool) -> tuple[str | None, str | None]:
        """(JSON image, error)."""
        if values is None:
            return None, None
        out, unavailable, error = self._canonical(values, None, None)
        if error is not None:
            return None, error
        return self._json(out, unavailable, missing_is_unavailable), None

    def update_images(self, before: dict[str, Any], after: dict[str, Any]
                      ) -> tuple[str | None, str | None, str | None]:
        """(before JSON, after JSON, error) of an update: the after image shares the WHERE values
        (the same objects), so only the SET values are converted again."""
        b_out, b_unavailable, error = self._canonical(before, None, None)
        if error is not None:
            return None, None, error
        a_out, a_unavailable, error = self._canonical(after, before, b_out)
        if error is not None:
            return None, None, error
        return (self._json(b_out, b_unavailable, False), self._json(a_out, a_unavailable, True), None)

    def _canonical(self, values: dict[str, Any], shared: dict[str, Any] | None, shared_out: dict[str, Any] | None
                   ) -> tuple[dict[str, Any], list[str], str | None]:
        out: dict[str, Any] = {}
        unavailable: list[str] = []
        convert = self.convert
        marker = self.unavailable
        for name, value in values.items():
            conv = convert.get(name)
            if conv is None:
                return out, unavailable, f"column {name!r} is not in {self.schema.qualified_name} (schema history)"
            if value is marker:
                unavailable.append(name)
                continue
            if shared_out is not None and name in shared_out and shared.get(name) is value:  # type: ignore[union-attr]
                out[name] = shared_out[name]
                continue
            try:
                canonical = conv(value)
            except Exception as exc:  # a value the column type cannot hold
                return out, unavailable, f"column {name}: value {str(value)[:80]!r} does not fit: {exc}"
            if canonical is marker:
                unavailable.append(name)
            else:
                out[name] = canonical
        return out, unavailable, None

    def _json(self, out: dict[str, Any], unavailable: list[str], missing_is_unavailable: bool) -> str:
        import orjson

        if self.lob_like or (missing_is_unavailable and len(out) + len(unavailable) < len(self.names)):
            unavailable = list(unavailable)
            for name in self.names:
                if name not in out and name not in unavailable and (missing_is_unavailable or name in self.lob_like):
                    unavailable.append(name)
        if unavailable:
            out = {**out, UNAVAILABLE_KEY: unavailable}
        return orjson.dumps(out).decode()


def _converter(mapper: Any, column: Any) -> Any:
    if hasattr(mapper, "converter"):
        return mapper.converter(column)
    return functools.partial(mapper.canonical_from_redo, column)


class _Out:
    """Output columns of one batch; ``taken`` is the input row of each output row (window id and
    redo index are copied by Arrow). ``emit`` runs once per emitted LogMiner row."""

    __slots__ = ("taken", "kinds", "txids", "tables", "ops", "befores", "afters", "versions", "locators",
                 "ordinals", "positions", "stamps", "errors", "raws")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, [])

    def emit(self, i: int, kind: str, txid: str | None, table: str | None, op: str | None, before: str | None,
             after: str | None, version: int | None, ordinal: int, position: str, ts: Any,
             error: str | None = None, raw: str | None = None, locator: str | None = None) -> None:
        self.taken.append(i)
        self.kinds.append(kind)
        self.txids.append(txid)
        self.tables.append(table)
        self.ops.append(op)
        self.befores.append(before)
        self.afters.append(after)
        self.versions.append(version)
        self.locators.append(locator)
        self.ordinals.append(ordinal)
        self.positions.append(position)
        self.stamps.append(ts)
        self.errors.append(error)
        self.raws.append(raw)

    def columns(self) -> list[list[Any]]:
        """In :data:`LOG_ROWS_DDL` order, after window_id and idx."""
        return [self.kinds, self.txids, self.tables, self.ops, self.befores, self.afters, self.versions,
                self.locators, self.ordinals, self.positions, self.stamps, self.errors, self.raws]


def decode_partition(plan_json: str, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: raw rows (with ``K``) → log rows."""
    import pyarrow as pa

    from cdclake.sources.oracle.redo import RedoParseError, parse_redo

    plan = _load_plan(plan_json)
    schema = _log_rows_arrow_schema(pa)
    dml = (Q.OP_INSERT, Q.OP_UPDATE, Q.OP_DELETE, Q.OP_UNSUPPORTED)
    for batch in batches:
        cols = batch.to_pydict()
        out = _Out()
        emit = out.emit
        codes, scns, xids, threads = cols["OPERATION_CODE"], cols["SCN"], cols["XID"], cols["THREAD"]
        stamps_in, owners, names, redo = cols["TIMESTAMP"], cols["SEG_OWNER"], cols["TABLE_NAME"], cols["SQL_REDO"]
        rowids, rollbacks, idxs = cols["ROW_ID"], cols["ROLLBACK"], cols["IDX"]
        for i in range(batch.num_rows):
            code = codes[i]
            if code == Q.OP_START or code == Q.OP_DDL:  # DDL is handled on the driver
                continue
            scn = scns[i]
            xid = xids[i]
            txid = xid.lower() if xid else None
            thread = threads[i]
            where = f"SCN {scn} (thread {thread})" if thread is not None else f"SCN {scn}"
            if code == Q.OP_COMMIT:
                ts = cols["COMMIT_TIMESTAMP"][i] or stamps_in[i]
                emit(i, KIND_COMMIT, txid, None, None, None, None, None, scn * SCN_SPAN + cols["K"][i], where, ts)
                continue
            if code == Q.OP_ROLLBACK:
                emit(i, KIND_ROLLBACK, txid, None, None, None, None, None, scn * SCN_SPAN, where, stamps_in[i])
                continue
            if code == Q.OP_MISSING_SCN:
                emit(i, KIND_ERROR, txid, None, None, None, None, None, scn * SCN_SPAN, where, stamps_in[i],
                     "LogMiner reported MISSING_SCN: part of the redo for this SCN could not be read", redo[i])
                continue
            lob_row = code in _LOB_PIECES
            if not lob_row and code not in dml:
                continue  # other operations LogMiner reports (internal, DPI, SELECT_FOR_UPDATE ...)
            owner, name = owners[i], names[i]
            table = f"{owner}.{name}"
            ts = stamps_in[i]
            ordinal = scn * SCN_SPAN
            sql = redo[i]
            if owner == "UNKNOWN" or (name or "").startswith("OBJ# "):
                emit(i, KIND_CHANGE, txid, table, None, None, None, None, ordinal, where, ts,
                     f"LogMiner could not name the object ({table}): its dictionary changed after this SCN; "
                     "mine with source.mining.dictionary: redo_log_catalog, or re-snapshot the table", sql)
                continue
            if not plan.captures(table):
                continue
            if rollbacks[i] == 1:
                emit(i, KIND_UNDO, txid, table, None, None, None, None, ordinal, where, ts, locator=rowids[i])
                continue
            if code == Q.OP_UNSUPPORTED:
                emit(i, KIND_CHANGE, txid, table, None, None, None, None, ordinal, where, ts,
                     "LogMiner cannot reconstruct this change (OPERATION UNSUPPORTED): the table uses a type or "
                     "storage LogMiner does not support", sql)
                continue
            if lob_row and not plan.lob:
                continue
            found = plan.decoder(table, idxs[i])
            if lob_row and found is not None and found[1] is not None:
                try:
                    before, after = _lob_piece(code, sql, found[1])
                except (RedoParseError, ValueError) as exc:
                    emit(i, KIND_CHANGE, txid, table, None, None, None, found[0], ordinal, where, ts, str(exc), sql)
                    continue
                emit(i, KIND_PIECE, txid, table, None, before, after, found[0], ordinal, where, ts,
                     locator=rowids[i])
                continue
            if found is None or found[1] is None:
                emit(i, KIND_CHANGE, txid, table, None, None, None, None, ordinal, where, ts,
                     f"{table} has no schema in the schema history at {where}", sql)
                continue
            version, decoder = found
            try:
                parsed = parse_redo(sql)
            except RedoParseError as exc:
                emit(i, KIND_CHANGE, txid, table, None, None, None, version, ordinal, where, ts, str(exc), sql)
                continue
            op = parsed.op
            if op == "u":
                before, after, err = decoder.update_images(parsed.before, parsed.after)  # type: ignore[arg-type]
            elif op == "c":
                before, (after, err) = None, decoder.image(parsed.after, missing_is_unavailable=False)
            else:
                (before, err), after = decoder.image(parsed.before, missing_is_unavailable=False), None
            emit(i, KIND_CHANGE, txid, table, op, before, after, version, ordinal, where, ts, err,
                 sql if err else None, rowids[i])
        rows = pa.array(out.taken, pa.int64())
        arrays = [batch.column("WINDOW_ID").take(rows), batch.column("IDX").take(rows), *out.columns()]
        yield pa.RecordBatch.from_arrays([a if isinstance(a, pa.Array) else pa.array(a, f.type)
                                          for a, f in zip(arrays, schema, strict=True)], schema=schema)


_LOB_PIECES = (Q.OP_SELECT_LOB_LOCATOR, Q.OP_LOB_WRITE, Q.OP_LOB_TRIM, Q.OP_LOB_ERASE,
               Q.OP_XML_BEGIN, Q.OP_XML_WRITE, Q.OP_XML_END,
               Q.OP_EXT_STRING_BEGIN, Q.OP_EXT_STRING_WRITE, Q.OP_EXT_STRING_END)
# XMLTYPE and extended-string (MAX_STRING_SIZE=EXTENDED) values: begin, fragments appended, end.
_APPENDED_PIECES = frozenset((Q.OP_XML_BEGIN, Q.OP_XML_WRITE, Q.OP_XML_END,
                              Q.OP_EXT_STRING_BEGIN, Q.OP_EXT_STRING_WRITE, Q.OP_EXT_STRING_END))


def _lob_piece(code: int, sql: str | None, decoder: _Decoder) -> tuple[str | None, str]:
    """(row key image, piece JSON) of a LOB, XML or extended-string row."""
    from cdclake.sources.oracle.lobs import piece
    from cdclake.sources.oracle.redo import (
        RedoParseError,
        parse_lob_erase,
        parse_lob_locator,
        parse_lob_trim,
        parse_lob_write,
    )

    if code in _APPENDED_PIECES:
        return _appended_piece(code, sql, decoder)
    if sql is None:
        raise RedoParseError("a LOB row without SQL_REDO", 0, "")
    if code == Q.OP_SELECT_LOB_LOCATOR:
        loc = parse_lob_locator(sql)
        key, error = decoder.image(loc.key, missing_is_unavailable=True)
        if error:
            raise ValueError(error)
        return key, piece("locator", loc.column, loc.binary)
    if code == Q.OP_LOB_WRITE:
        w = parse_lob_write(sql)
        return None, piece("write", offset=w.offset, length=w.length, data=w.data)
    if code == Q.OP_LOB_TRIM:
        return None, piece("trim", length=parse_lob_trim(sql))
    amount, offset = parse_lob_erase(sql)
    return None, piece("erase", offset=offset, length=amount)


def _appended_piece(code: int, sql: str | None, decoder: _Decoder) -> tuple[str | None, str]:
    """XML_BEGIN/32K_BEGIN -> ``begin`` (column, row key; the value is rewritten whole),
    XML_WRITE/32K_WRITE -> ``append`` (text, or hex when ``binary``; ``data`` null for
    ``XML_REDO := NULL``), XML_END/32K_END -> ``end`` (their SQL is not read: XML_END's is NULL)."""
    from cdclake.sources.oracle.lobs import piece
    from cdclake.sources.oracle.redo import (
        parse_ext_string_begin,
        parse_ext_string_write,
        parse_xml_begin,
        parse_xml_write,
    )

    if code == Q.OP_XML_END or code == Q.OP_EXT_STRING_END:
        return None, piece("end")
    if code == Q.OP_XML_WRITE or code == Q.OP_EXT_STRING_WRITE:
        f = parse_xml_write(sql) if code == Q.OP_XML_WRITE else parse_ext_string_write(sql)
        return None, piece("append", binary=f.hex, length=f.length or 0, data=f.data)
    loc = parse_xml_begin(sql) if code == Q.OP_XML_BEGIN else parse_ext_string_begin(sql)
    if loc.column not in decoder.convert:
        raise ValueError(f"column {loc.column!r} is not in {decoder.schema.qualified_name} (schema history)")
    key, error = decoder.image(loc.key, missing_is_unavailable=True)
    if error:
        raise ValueError(error)
    return key, piece("begin", loc.column, loc.binary)


def _log_rows_arrow_schema(pa: Any) -> Any:
    """The Arrow form of :data:`LOG_ROWS_DDL` (built without a Spark session: this runs in workers)."""
    kinds = {"BIGINT": pa.int64(), "STRING": pa.string(), "DECIMAL(38,0)": pa.decimal128(38, 0),
             "TIMESTAMP": pa.timestamp("us", tz="UTC")}
    fields = [item.strip().split(" ", 1) for item in LOG_ROWS_DDL.split(", ")]
    return pa.schema([pa.field(name, kinds[kind]) for name, kind in fields])


def prepare(raw: DataFrame, continuations: bool = True, rank: bool = True) -> DataFrame:
    """Continuations joined (when there are any) and commits ranked (unless the rows carry ``K``
    already, as the live miner writes them): the rows the decoder reads."""
    joined = join_continuations(raw) if continuations else raw
    return rank_commits(joined) if rank else joined


def decode_prepared(prepared: DataFrame, plan: DecodePlan, jvm: bool = True) -> DataFrame:
    """Decode prepared rows (the result has :data:`LOG_ROWS_DDL`).

    With ``jvm`` (and cdclake's jar on the classpath), commits, rollbacks and the DML statements the
    JVM fast path takes (:func:`fast_path_plan`) are decoded in Spark SQL, once per row; every other row
    is left as a ``deferred`` row (only its place, ``idx``, and position), which :func:`decode_deferred`
    (the Python decoder, which gives the same rows for those the JVM takes:
    tests/integration/test_oracle_fast_path.py) decodes from the prepared rows at those places once the
    engine staged the window. Deferred rows carry no raw columns: writing them (null on every other row)
    cost the staging pass more than the decoding.
    """
    python = functools.partial(decode_partition, plan.to_json())
    udf = register_fast_path(prepared.sparkSession, plan) if jvm else None
    if udf is None:
        return prepared.mapInArrow(python, LOG_ROWS_DDL)
    from pyspark.sql import functions as F

    dml = ", ".join(str(c) for c in (Q.OP_INSERT, Q.OP_UPDATE, Q.OP_DELETE))
    rows = prepared.withColumn("__fast", F.expr(
        f"CASE WHEN OPERATION_CODE IN ({dml}) AND coalesce(ROLLBACK, 0) <> 1 "
        f"THEN {udf}(CAST(SQL_REDO AS STRING), concat(SEG_OWNER, '.', TABLE_NAME), CAST(IDX AS BIGINT), "
        "CAST(OPERATION_CODE AS INT)) END"))
    in_sql = f"(OPERATION_CODE IN ({Q.OP_COMMIT}, {Q.OP_ROLLBACK}) OR __fast IS NOT NULL)"
    skipped = f"OPERATION_CODE IN ({Q.OP_START}, {Q.OP_DDL})"  # DDL is read on the driver
    ordinal = f"CAST(CAST(SCN AS DECIMAL(20,0)) * {SCN_SPAN} AS DECIMAL(38,0))"
    change = "__fast IS NOT NULL"
    return rows.where(f"NOT ({skipped})").selectExpr(
        "CAST(WINDOW_ID AS BIGINT) AS window_id", "CAST(IDX AS BIGINT) AS idx",
        f"CASE WHEN {change} THEN '{KIND_CHANGE}' WHEN OPERATION_CODE = {Q.OP_COMMIT} THEN '{KIND_COMMIT}' "
        f"WHEN OPERATION_CODE = {Q.OP_ROLLBACK} THEN '{KIND_ROLLBACK}' ELSE '{KIND_DEFERRED}' END AS kind",
        f"CASE WHEN {in_sql} THEN CASE WHEN XID = '' THEN NULL ELSE lower(XID) END END AS txid",
        f"CASE WHEN {change} THEN concat(SEG_OWNER, '.', TABLE_NAME) END AS source_table",
        "__fast.op AS op", "__fast.before AS before", "__fast.after AS after",
        "__fast.version AS schema_version", f"CASE WHEN {change} THEN ROW_ID END AS locator",
        f"CAST(CASE WHEN OPERATION_CODE = {Q.OP_COMMIT} THEN {ordinal} + K ELSE {ordinal} END AS DECIMAL(38,0)) "
        "AS ordinal",
        "CASE WHEN THREAD IS NULL THEN concat('SCN ', CAST(SCN AS BIGINT)) "
        "ELSE concat('SCN ', CAST(SCN AS BIGINT), ' (thread ', CAST(THREAD AS BIGINT), ')') END AS position",
        f"CAST(CASE WHEN OPERATION_CODE = {Q.OP_COMMIT} THEN coalesce(COMMIT_TIMESTAMP, TIMESTAMP) ELSE TIMESTAMP END "
        "AS TIMESTAMP) AS event_ts",
        "CAST(NULL AS STRING) AS error", "CAST(NULL AS STRING) AS raw",
    )


def decode_deferred(plan: DecodePlan, prepared: DataFrame, rows: DataFrame) -> DataFrame:
    """The Python decoder over the prepared rows at the places (``idx``) of the ``deferred`` log rows in
    ``rows``. Their places are broadcast: a window defers the statements the JVM decoder has no form for,
    which are few (a table none of whose columns it takes defers all its rows: its places are still only
    8 bytes a row)."""
    from pyspark.sql import functions as F

    python = functools.partial(decode_partition, plan.to_json())
    places = rows.where(f"kind = '{KIND_DEFERRED}'").select(F.col("idx").alias("IDX"))
    return prepared.join(F.broadcast(places), "IDX", "left_semi").mapInArrow(python, LOG_ROWS_DDL)


def decode_all(prepared: DataFrame, plan: DecodePlan, jvm: bool = True) -> DataFrame:
    """Both decoders chained in one frame of log rows (the fast path then runs twice per deferred row: for
    tests and tools; a window is staged between the two)."""
    first = decode_prepared(prepared, plan, jvm)
    return first.where(f"kind <> '{KIND_DEFERRED}'").unionByName(decode_deferred(plan, prepared, first))


FAST_PATH_CLASS = "cdclake.oracle.RedoFastPath"


def fast_path_plan(plan: DecodePlan) -> str | None:
    """The JVM fast path's plan: per captured table, its schema versions with each column's kind
    (:meth:`~cdclake.sources.oracle.types.OracleTypeMapper.fast_path_kind`), null for a version
    it cannot decode. None when no version qualifies."""
    from cdclake.sources.oracle.types import OracleTypeMapper

    mapper = OracleTypeMapper()
    include = [re.compile(p) for p in plan.include]
    exclude = [re.compile(p) for p in plan.exclude]
    tables: dict[str, list[Any]] = {}
    any_kinds = False
    for table, items in plan.versions.items():
        if not _captured(table, include, exclude):
            continue
        versions = []
        for idx, version, text in items:
            kinds = None
            if text is not None:
                schema = TableSchema.from_json(text)
                found = [(c.name, mapper.fast_path_kind(c)) for c in schema.columns]
                if all(kind is not None for _, kind in found):
                    kinds = [[name, kind] for name, kind in found]
                    any_kinds = True
            versions.append([int(idx), int(version), kinds])
        tables[table] = versions
    return json.dumps(tables) if any_kinds else None


def register_fast_path(spark: Any, plan: DecodePlan) -> str | None:
    """Register the JVM fast path for ``plan``; its SQL function name, or None (no table qualifies,
    or cdclake's jar is not on the classpath: ``make setup`` builds it; Python decodes everything)."""
    text = fast_path_plan(plan)
    if text is None:
        return None
    name = f"cdclake_redo_{hashlib.sha1(text.encode()).hexdigest()[:16]}"
    try:
        # pyspark reaches JVM classes only through its private gateway handles
        spark._jvm.cdclake.oracle.RedoFastPath.register(spark._jsparkSession, name, text)  # noqa: SLF001
    except Exception as exc:  # py4j: class not found when the jar is missing
        if not _warned_missing_jar:
            _warned_missing_jar.append(True)
            log.warning("the JVM decoder (%s, in .cache/jars/cdclake-jvm.jar) is not available (%s); decoding "
                        "in Python only, which is slower: run 'make setup' or add the jar to spark.jars",
                        FAST_PATH_CLASS, str(exc).splitlines()[0][:200])
        return None
    return name


_warned_missing_jar: list[bool] = []
