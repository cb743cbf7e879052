"""Column selection and masking: ``tables.<t>.include_columns / exclude_columns / mask_columns``.

A column left out is never read by a snapshot, backfill or reconcile, and is dropped from every change
image before anything is written; a masked column is masked there too. So neither raw value reaches a
file under the lake root: not bronze, not staging, not the in-flight buffer, not a target. The schema
history keeps the source's column list (names and types, never values): windows are decoded with it.

Masks apply to text columns (Delta ``STRING`` whose value is the source's text), as Debezium's
``column.mask.hash`` does: a mask of text gives the same output whatever path brought the value, so a
hashed column still joins across tables and runs.

>>> from cdclake.config import MaskRule
>>> mask_value(MaskRule(hash="sha256"), "pepper", "ann@example.com")[:16]
'831740710d6a8225'
>>> mask_value(MaskRule(truncate=3), "", "4111111111111111"), mask_value(MaskRule(text="***"), "", "x")
('411', '***')
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.engine.history import HistoryEntry
from cdclake.engine.lake import quote
from cdclake.engine.names import source_name
from cdclake.errors import ConfigError
from cdclake.schema import RowKey, TableSchema
from cdclake.spi import FILL, KIND_CHANGE, KIND_ERROR, KIND_PIECE, KIND_UNDO, UNAVAILABLE_KEY, UNLOGGED, Ddl, TypeMapper

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdclake.config import MaskRule, PipelineConfig, TableOptions
    from cdclake.schema import Column

log = logging.getLogger(__name__)

MASKED_DEFAULT = "cdclake_masked_default"  # Column.attrs: the default in the schema history is masked already
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'")


def mask_value(rule: MaskRule, salt: str, value: str) -> str:
    """``value`` masked by ``rule``: the one implementation, on the driver and in Spark tasks."""
    if rule.hash:
        return hashlib.new(rule.hash, (salt + value).encode("utf-8")).hexdigest()
    if rule.truncate is not None:
        return value[: rule.truncate]
    return rule.text or ""


@dataclass(frozen=True)
class TableColumns:
    """One table's column rules, names compared case-insensitively."""

    table: str
    include: frozenset[str] | None
    exclude: frozenset[str]
    masks: Mapping[str, MaskRule]  # lower-case name -> rule

    @classmethod
    def of(cls, table: str, options: TableOptions) -> TableColumns | None:
        if options.include_columns is None and not options.exclude_columns and not options.mask_columns:
            return None
        include = options.include_columns
        return cls(table, None if include is None else frozenset(c.lower() for c in include),
                   frozenset(c.lower() for c in options.exclude_columns),
                   {c.lower(): r for c, r in options.mask_columns.items()})

    def landed(self, column: str) -> bool:
        low = column.lower()
        return low not in self.exclude and (self.include is None or low in self.include)

    def mask(self, column: str) -> MaskRule | None:
        return self.masks.get(column.lower())

    def key(self) -> str:
        return f"tables.{self.table}"

    def mask_image(self, image: dict[str, Any], salt: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in image.items():
            if name == UNAVAILABLE_KEY:
                out[name] = [c for c in value if self.landed(c)]
            elif self.landed(name):
                rule = self.mask(name)
                out[name] = value if rule is None or value is None else mask_value(rule, salt, str(value))
        return out


class ColumnPolicy:
    """The pipeline's column rules, applied on every path (see the module docstring).

    >>> from cdclake.config import MaskRule, TableOptions
    >>> from cdclake.schema import Column
    >>> opts = TableOptions(exclude_columns=["ssn"], mask_columns={"email": MaskRule(truncate=2)})
    >>> policy = ColumnPolicy({"shop.c": opts}, None, None)
    >>> policy.mask_image("shop.c", {"id": 1, "ssn": "078-05-1120", "email": "ann@x"})
    {'id': 1, 'email': 'an'}
    >>> t = TableSchema("shop", "c", [Column("id", "int", "BIGINT"), Column("ssn", "char(11)", "STRING")])
    >>> policy.lake_schema(t).column_names
    ['id']
    """

    def __init__(self, tables: Mapping[str, TableOptions], salt: str | None, types: TypeMapper | None) -> None:
        self.salt = salt or ""
        self.types = types
        self.tables = {t: r for t, o in tables.items() if (r := TableColumns.of(t, o)) is not None}

    @classmethod
    def from_config(cls, config: PipelineConfig, types: TypeMapper | None) -> ColumnPolicy:
        salt = config.masking.salt.get_secret_value() if config.masking.salt is not None else None
        return cls(config.tables, salt, types)

    def __bool__(self) -> bool:
        return bool(self.tables)

    def rules(self, table: str) -> TableColumns | None:
        return self.tables.get(table)

    # ---- schemas --------------------------------------------------------------------------------

    def lake_schema(self, schema: TableSchema) -> TableSchema:
        """``schema`` as the lake holds it: the columns left out are gone, and so are the columns the
        source's log never carries (:data:`~cdclake.spi.UNLOGGED`: no change would keep them exact;
        compute them downstream)."""
        rules = self.rules(schema.qualified_name)
        kept = [c for c in schema.columns
                if not c.attrs.get(UNLOGGED) and (rules is None or rules.landed(source_name(c)))]
        return schema if len(kept) == len(schema.columns) else schema.with_columns(kept)

    def check_table(self, schema: TableSchema, key: RowKey, warn_unknown: bool = True) -> None:
        """Refuse rules that cannot be honoured on ``schema``; ``warn_unknown``: log the names that are
        not columns (yet: a rule applies as soon as such a column appears, but a typo would let a raw
        column land)."""
        rules = self.rules(schema.qualified_name)
        if rules is None:
            return
        where = rules.key()
        names = {c.name.lower() for c in schema.columns}
        missing = sorted({n for n in [*(rules.include or ()), *rules.exclude, *rules.masks] if n not in names})
        if warn_unknown and missing:
            log.warning("%s names %s, which %s does not have (columns: %s): check the spelling", where,
                        ", ".join(missing), schema.qualified_name, ", ".join(schema.column_names))
        for name in key.columns:
            if not rules.landed(name):
                raise ConfigError(
                    f"{where}: {name} is a column of the row key ({key.describe()}) and cannot be left out",
                    f"land it (include_columns/exclude_columns), or name other key columns in {where}.key_columns")
            rule = rules.mask(name)
            if rule is not None and not rule.hash:
                raise ConfigError(
                    f"{where}.mask_columns.{name}: a {rule.kind} mask of a key column would make distinct rows "
                    "one row", f"mask the key column with a hash ({where}.mask_columns.{name}: {{hash: sha256}})")
        for column in schema.columns:
            if rules.mask(column.name) is not None and not self.maskable(column):
                raise ConfigError(
                    f"{where}.mask_columns.{column.name}: {schema.qualified_name}.{column.name} is "
                    f"{column.source_type} (Delta {column.spark_type}); masks apply to text columns",
                    f"leave the column out instead ({where}.exclude_columns: [{column.name}])")

    def maskable(self, column: Column) -> bool:
        """A text column whose Delta value is its canonical value (the same on every path)."""
        if column.spark_type.strip().upper() != "STRING":
            return False
        if self.types is None:
            return True
        return (self.types.canonical_type(column).strip().upper() == "STRING"
                and self.types.to_delta_sql(column, "v") == "v")

    def check_ddl(self, ddl: Ddl, key_of: Callable[[TableSchema], RowKey]) -> None:
        """Stop before any row after ``ddl`` is written if it takes a column out of reach of its rule: a
        ruled table renamed to one without the same rules, a ruled column renamed, a masked column made
        non-text. ``key_of(schema)`` gives a table's :class:`RowKey`."""
        at = ddl.position.describe()
        for new, old in ddl.renamed_from.items():
            if old in self.tables and self.tables[old] != _renamed(self.tables.get(new), old):
                raise ConfigError(
                    f"table {old}, which has column rules ({self.tables[old].key()}), was renamed to {new} at {at}",
                    f"give tables.{new} the same include_columns/exclude_columns/mask_columns in the pipeline "
                    "file, then run again")
        for table, schema in ddl.changes.items():
            rules = self.rules(table)
            if rules is None or schema is None:
                continue
            for old_name, new_name in ddl.column_renames.get(table, {}).items():
                ruled = (not rules.landed(old_name) and rules.include is None) or rules.mask(old_name) is not None
                same = rules.landed(new_name) == rules.landed(old_name) and rules.mask(new_name) == rules.mask(old_name)
                if ruled and not same:
                    raise ConfigError(
                        f"column {table}.{old_name}, which {rules.key()} leaves out or masks, was renamed to "
                        f"{new_name} at {at}", f"give {new_name} the same rule under {rules.key()}, then run again")
                if rules.include is not None and rules.landed(old_name) and not rules.landed(new_name):
                    log.warning("column %s.%s was renamed to %s at %s, which %s.include_columns does not list: "
                                "it leaves the lake", table, old_name, new_name, at, rules.key())
            self.check_table(schema, key_of(schema), warn_unknown=False)

    # ---- values ---------------------------------------------------------------------------------

    def mask_image(self, table: str, image: dict[str, Any] | None) -> dict[str, Any] | None:
        """A change image with the columns left out dropped and the masked ones masked."""
        rules = self.rules(table)
        return image if rules is None or image is None else rules.mask_image(image, self.salt)

    def mask_frame(self, table: str, rows: DataFrame) -> DataFrame:
        """Rows of ``table`` (Delta values, column per source column) with the rules applied."""
        from pyspark.sql import functions as F

        rules = self.rules(table)
        if rules is None:
            return rows
        rows = rows.drop(*[c for c in rows.columns if not c.startswith("__") and not rules.landed(c)])
        for name in rows.columns:
            rule = rules.mask(name)
            if rule is not None:
                rows = rows.withColumn(name, _mask_udf(rule, self.salt)(F.col(quote(name))))
        return rows

    def mask_log_rows(self, rows: DataFrame) -> DataFrame:
        """Log rows (:mod:`cdclake.spi.logrows`) with the rules applied to images; the source's ``raw``
        text of a ruled table is withheld; a ``piece`` (a fragment of a value) of a column left out is
        dropped, and one of a masked column stops the run (a fragment cannot be masked)."""
        from pyspark.sql import functions as F

        if not self.tables:
            return rows
        ruled = F.col("source_table").isin(list(self.tables))
        images = _image_udf(self.tables, self.salt)
        piece_column = F.lower(F.get_json_object("after", "$.column"))
        excluded = F.lit(False)
        masked = F.lit(False)
        for table, rules in self.tables.items():
            this = F.col("source_table") == table
            if rules.include is not None:
                excluded = excluded | (this & ~piece_column.isin(list(rules.include)))
            if rules.exclude:
                excluded = excluded | (this & piece_column.isin(list(rules.exclude)))
            if rules.masks:
                masked = masked | (this & piece_column.isin(list(rules.masks)))
        is_piece = F.col("kind") == KIND_PIECE
        rows = rows.where(~(is_piece & ruled & F.coalesce(excluded, F.lit(False))))
        stop = is_piece & ruled & F.coalesce(masked, F.lit(False))
        has_images = ruled & F.col("kind").isin(KIND_CHANGE, KIND_UNDO)
        stopped = (F.concat(F.lit("a LOB fragment of masked column "), F.col("source_table"), F.lit("."),
                            F.get_json_object("after", "$.column"),
                            F.lit(": a fragment cannot be masked before its value is whole; exclude the column "
                                  "(tables.<table>.exclude_columns) or stop mining LOBs")))
        replaced = {
            "kind": F.when(stop, F.lit(KIND_ERROR)).otherwise(F.col("kind")),
            "error": F.when(stop, stopped).otherwise(F.col("error")),
            # a piece's before image is its row key
            "before": F.when(stop, F.lit(None)).when(has_images | (is_piece & ruled), images("source_table", "before"))
            .otherwise(F.col("before")),
            "after": F.when(stop, F.lit(None)).when(has_images, images("source_table", "after"))
            .otherwise(F.col("after")),
            "raw": F.when(ruled, F.lit(None)).otherwise(F.col("raw")),
        }
        return rows.select(*[replaced[c].alias(c) if c in replaced else F.col(c) for c in rows.columns])

    def redact(self, entry: HistoryEntry) -> HistoryEntry:
        """A schema-history entry of a ruled table as the lake keeps it: the statement's string literals
        redacted (a default may be a value), the default of a column left out dropped and that of a
        masked column masked. Column names and types stay: windows are decoded with them.

        >>> from cdclake.config import MaskRule, TableOptions
        >>> from cdclake.schema import Column
        >>> policy = ColumnPolicy({"s.t": TableOptions(mask_columns={"c": MaskRule(text="x")})}, None, None)
        >>> t = TableSchema("s", "t", [Column("c", "varchar(9)", "STRING", default="'secret'")])
        >>> e = policy.redact(HistoryEntry(1, "s.t", 1, "p", "ALTER TABLE t ADD c VARCHAR(9) DEFAULT 'it''s'",
        ...                                "ddl", t, None, {}, 1))
        >>> e.ddl, e.schema.columns[0].default
        ("ALTER TABLE t ADD c VARCHAR(9) DEFAULT '…'", "'x'")
        """
        rules = self.rules(entry.table)
        if rules is None:
            return entry
        schema = entry.schema
        if schema is not None:
            columns = []
            for c in schema.columns:
                rule = rules.mask(c.name)
                if not rules.landed(c.name):
                    # the value existing rows got (a source's "fill") is a value like the default
                    c = replace(c, default=None, attrs={k: v for k, v in c.attrs.items() if k != FILL})
                elif rule is not None and not c.attrs.get(MASKED_DEFAULT):
                    attrs, default = dict(c.attrs), c.default
                    if attrs.get(FILL) is not None:
                        attrs[FILL] = mask_value(rule, self.salt, str(attrs[FILL]))
                    literal = _STRING_LITERAL.fullmatch((c.default or "").strip())
                    if literal:  # a text literal (other defaults are expressions, NULL or numbers)
                        text = literal.group(0)[1:-1].replace("''", "'").replace("\\'", "'")
                        default = "'" + mask_value(rule, self.salt, text).replace("'", "''") + "'"
                    if attrs != c.attrs or default != c.default:
                        c = replace(c, default=default, attrs={**attrs, MASKED_DEFAULT: True})
                columns.append(c)
            schema = replace(schema, columns=columns)
        return replace(entry, ddl=_STRING_LITERAL.sub("'…'", entry.ddl), schema=schema)

    def initial_value_sql(self, spark: SparkSession, table: str, column: Column, sql: str | None) -> str | None:
        """The value rows older than an added masked column get, masked (``sql``: the unmasked one)."""
        rules = self.rules(table)
        rule = rules.mask(source_name(column)) if rules else None  # (a lake schema's column: names.py)
        if rule is None or sql is None or column.attrs.get(MASKED_DEFAULT):
            return sql
        value = spark.sql(f"SELECT CAST({sql} AS STRING) AS v").first()[0]  # a literal or current_timestamp()
        if value is None:
            return None
        return "'" + mask_value(rule, self.salt, value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _renamed(rules: TableColumns | None, old: str) -> TableColumns | None:
    return None if rules is None else TableColumns(old, rules.include, rules.exclude, rules.masks)


def _mask_udf(rule: MaskRule, salt: str) -> Any:
    from pyspark.sql import functions as F

    def masked(value: str | None) -> str | None:
        return None if value is None else mask_value(rule, salt, value)

    return F.udf(masked, "string", useArrow=True)


def _image_udf(tables: Mapping[str, TableColumns], salt: str) -> Any:
    from pyspark.sql import functions as F

    def images(table: str | None, text: str | None) -> str | None:
        rules = tables.get(table or "")
        if text is None or rules is None:
            return text
        image = orjson.loads(text)
        return orjson.dumps(rules.mask_image(image, salt)).decode() if isinstance(image, dict) else text

    return F.udf(images, "string", useArrow=True)


__all__ = ["ColumnPolicy", "TableColumns", "mask_value"]
