r"""Parse Oracle LogMiner ``SQL_REDO`` statements into column values, without a table schema.

:func:`parse_redo` turns one INSERT / UPDATE / DELETE statement into a :class:`ParsedRedo`; the
values follow the canonical-value contract of ``docs/oracle-design.md`` (strings, ``None`` or
:data:`UNAVAILABLE`, whatever the column type). :func:`parse_lob_locator`, :func:`parse_lob_write`,
:func:`parse_lob_trim` and :func:`parse_lob_erase` read the statements LogMiner emits for LOB
changes (operation codes 9, 10, 11 and 29); :func:`parse_xml_begin` / :func:`parse_xml_write` the
XMLTYPE writes (68, 70; XML_END, 71, has no SQL) and :func:`parse_ext_string_begin` /
:func:`parse_ext_string_write` the writes of extended VARCHAR2/RAW values (91, 92; 93 ends them).
``LM_EMPTY_STRING`` in a DML statement (an extended value that follows as 32K_WRITE rows) parses as
:data:`UNAVAILABLE`.

>>> r = parse_redo('''insert into "HR"."EMP"("ID","NAME","HIRED","PHOTO") values '''
...                '''(7,'O''Brien',TO_DATE('2024-01-02 03:04:05', 'YYYY-MM-DD HH24:MI:SS'),NULL)''')
>>> r.op, r.schema, r.table, r.before
('c', 'HR', 'EMP', None)
>>> r.after
{'ID': '7', 'NAME': "O'Brien", 'HIRED': '2024-01-02T03:04:05', 'PHOTO': None}
>>> parse_redo(r'''update "HR"."EMP" set "NAME" = UNISTR('Ren\00e9') where "NAME" = 'Rene' and "ID" = 7''')
ParsedRedo(op='u', schema='HR', table='EMP', before={'NAME': 'Rene', 'ID': '7'}, after={'NAME': 'René', 'ID': '7'})
>>> parse_redo('delete from "HR"."EMP" where "ID" = 7 and "PHOTO" = Unsupported Type').before
{'ID': '7', 'PHOTO': UNAVAILABLE}

Statement shapes (LogMiner started with ``NO_ROWID_IN_STMT`` / ``NO_SQL_DELIMITER``; a trailing
``;`` and an ``and ROWID = '...'`` condition are tolerated anyway):

- ``insert into "S"."T"("C1","C2") values ('1',NULL)``: ``after`` = the listed columns. Columns the
  statement does not list are absent (the caller knows the table: for an INSERT they are NULL, or
  arrive later as LOB writes).
- ``update "S"."T" [alias] set [alias.]"C" = v, ... [where "K" = v and "X" IS NULL ...]``: ``before``
  = the WHERE values (the supplementally logged old image; ``{}`` without a WHERE clause), ``after``
  = ``before`` overlaid with the SET values. Columns in neither are unknown, not NULL.
- ``delete from "S"."T" [alias] [where ...]``: ``before`` = the WHERE values.

Identifiers come back unquoted with their case as written; they may contain spaces. Keywords are
case-insensitive; columns may come in any order. ``TO_DATE`` with a format other than LogMiner's
``'YYYY-MM-DD HH24:MI:SS'`` (``'DD-MON-RR'`` occurs in LOB locator keys) goes through a small
interpreter of Oracle format elements; ``RR`` / ``YY`` years depend on the current date, as in Oracle.

Unescaped quotes (a LogMiner defect with ``MAX_STRING_SIZE=EXTENDED``, DBZ-8034): when the strict
grammar fails at or right after a quote, the statement is parsed again with a relaxed rule under
which a quote ends a string literal only where the statement can go on after it: before ``||``,
before ``,`` followed by something that starts a value or column (``"``, ``'``, a digit or sign,
``NULL``, ``Unsupported Type``, a known function), before the ``)`` that ends the statement, before
`` and "COL"`` / `` where "COL"``, or at the end. Other quotes are text (``''`` still means one
quote). If the relaxed parse fails too, the strict error is raised. This is a best effort: a value
whose text itself looks like such a boundary (``x', "Y" = 'z``) cannot be told apart from structure.

Speed (this runs in Spark executors on every change row): each clause is tokenised by one compiled
regular expression (``findall``; a catch-all alternative marks text no rule accepts, so nothing is
skipped silently), with few capture groups per token, and strings, numbers and NULL are converted
inline. Offsets for error messages are recomputed only when a statement fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

__all__ = [
    "UNAVAILABLE",
    "Fragment",
    "LobLocator",
    "LobWrite",
    "ParsedRedo",
    "RedoParseError",
    "parse_ext_string_begin",
    "parse_ext_string_write",
    "parse_lob_erase",
    "parse_lob_locator",
    "parse_lob_trim",
    "parse_lob_write",
    "parse_redo",
    "parse_xml_begin",
    "parse_xml_write",
]


# ---- public types ------------------------------------------------------------------------------


class _Unavailable:
    """Type of :data:`UNAVAILABLE`: one instance per process, kept across pickling."""

    __slots__ = ()
    _instance: _Unavailable | None = None

    def __new__(cls) -> _Unavailable:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNAVAILABLE"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # pickle stores a reference to the module global, so unpickling (on a Spark executor or
        # back on the driver) yields this same object and `value is UNAVAILABLE` keeps working
        return "UNAVAILABLE"

    def __copy__(self) -> _Unavailable:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Unavailable:
        return self


UNAVAILABLE = _Unavailable()
"""A value LogMiner did not supply (``Unsupported Type``): never write it over the lake's value.

Falsy, so ``if value:`` does not mistake it for data; test for it with ``value is UNAVAILABLE``
(it is not ``None``: the column must be kept, not set to NULL)."""


@dataclass(slots=True)
class ParsedRedo:
    """One parsed DML statement: ``op`` is ``"c"``, ``"u"`` or ``"d"``."""

    op: str
    schema: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None


@dataclass(slots=True)
class LobLocator:
    """A ``SELECT_LOB_LOCATOR`` (op 9): the LOB column the following writes go to, and its row."""

    schema: str
    table: str
    column: str
    binary: bool  # BLOB (``loc_b``): data of the writes is hex; CLOB/NCLOB/XML: text
    key: dict[str, Any]  # the WHERE values that identify the row


@dataclass(slots=True)
class LobWrite:
    """A ``LOB_WRITE`` (op 10): ``length`` units of ``data`` written at 1-based ``offset``."""

    offset: int
    length: int
    data: str  # text, or lowercase hex for a BLOB


class RedoParseError(ValueError):
    """A ``SQL_REDO`` statement that does not parse; ``reason`` says why, ``offset`` where."""

    def __init__(self, reason: str, offset: int, sql: str) -> None:
        self.reason = reason
        self.offset = offset
        self.sql = sql
        self.near_quote = False  # failed at/right after a quote: parse_redo retries with relaxed quotes
        super().__init__(_error_message(reason, offset, sql))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.offset, self.sql))


def _error_message(reason: str, offset: int, sql: str, width: int = 70) -> str:
    lo = max(0, offset - width)
    hi = min(len(sql), offset + width)
    shown = sql[lo:hi].translate(_FLATTEN)
    prefix = "..." if lo > 0 else ""
    suffix = "..." if hi < len(sql) else ""
    caret = " " * (2 + len(prefix) + offset - lo) + "^"
    return (
        f"cannot parse SQL_REDO: {reason} (at offset {offset} of {len(sql)})\n"
        f"  {prefix}{shown}{suffix}\n{caret}"
    )


_FLATTEN = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


# ---- the grammar -------------------------------------------------------------------------------

_FLAGS = re.IGNORECASE | re.DOTALL

# A string literal; group `s` is its text between the quotes (still with '' escapes).
_STRICT_STR = r"'(?P<s>[^']*(?:''[^']*)*)'"
# relaxed: a quote ends the literal only where the statement can go on after it (see module doc)
_RELAXED_END = r"""(?:
    \s+(?:and|where)\s+[\w$\#.]*(?:"|ROWID\b)
  | \s*(?: \|\|
         | ,\s*(?: [\w$\#.]*" | ' | [-+.\d] | NULL\b | Unsupported\s+Type | LM_EMPTY_STRING\b
                 | (?:TO_DATE|TO_TIMESTAMP|TO_TIMESTAMP_TZ|UNISTR|HEXTORAW|EMPTY_CLOB|EMPTY_BLOB
                     |TO_YMINTERVAL|TO_DSINTERVAL)\( )
         | \)\s*;?\s*\Z
         | ;?\s*\Z ))"""
# The literal ends at the first run of quotes followed by such an end: the run's last quote closes
# it, the others are text. Every quote run is consumed whole (`'+(?!')`) and other characters one
# at a time, so the scan never backtracks into a run: linear even on a failing statement.
_RELAXED_STR = rf"'(?P<s>(?:[^']|'+(?!'|{_RELAXED_END}))*'*)'(?={_RELAXED_END})"

# One value: a string literal (group `s`), or anything else (group `v`: NULL, a number,
# Unsupported Type, LM_EMPTY_STRING, or a function call such as TO_DATE(...), told apart in
# Python). Few groups keep findall fast: its cost grows with the number of groups per token.
_TERM = r"""(?:{STR}|(?P<v>
      NULL\b
    | Unsupported\s+Type
    | LM_EMPTY_STRING\b
    | [-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:E[-+]?\d+)?
    | [A-Z_][A-Z_0-9]*\((?:[^')]|'[^']*(?:''[^']*)*')*\)
))"""

# SET / WHERE items (groups: sep col s v bad). A ROWID = '...' condition (statements mined without
# NO_ROWID_IN_STMT) matches the group-less branch: a token whose groups are all empty.
_ITEM = r"""\s*(?:
    (?P<sep>,|\|\||(?:and|where|set)\b)\s*
    (?:[\w$\#.]*"(?P<col>[^"]*)"\s*(?:=|IS\b)\s*)?
    {TERM}
  | (?:and|where)\s+ROWID\s*=\s*'[^']*'
  )|(?P<bad>.)"""
# The same without '||' continuations or ROWID conditions, and with the column required: the
# common case, about 20% faster (an optional group per token is costly); a statement it does not
# tokenise cleanly is tokenised again with _ITEM.
_ITEM_FAST = r"""\s*(?P<sep>,|(?:and|where|set)\b)\s*[\w$\#.]*"(?P<col>[^"]*)"\s*(?:=|IS\b)\s*{TERM}|(?P<bad>.)"""
# INSERT values (groups: sep s v bad); the closing ')' is a token whose groups are all empty
_VALUES = r"""\s*(?:(?P<sep>[(,]|\|\|)\s*{TERM}|\))|(?P<bad>.)"""
# one value of a PL/SQL assignment (LOB writes), optionally continued with || (groups: sep s v)
_TERM_AT = r"""\s*(?:(?P<sep>\|\|)\s*)?{TERM}"""


def _compile(template: str, string: str) -> re.Pattern[str]:
    term = _TERM.replace("{STR}", string)
    return re.compile(template.replace("{TERM}", term), _FLAGS | re.VERBOSE)


@dataclass(frozen=True)
class _Grammar:
    items: re.Pattern[str]
    values: re.Pattern[str]
    term_at: re.Pattern[str]
    fast_items: re.Pattern[str] | None = None
    relaxed: bool = False

    def tokens(self, regex: re.Pattern[str], text: str, pos: int) -> list[tuple[str, ...]]:
        """``regex.findall(text, pos)``; relaxed: up to the first bad token (a relaxed literal that
        fails scans to the end of the statement, so scanning on would be quadratic)."""
        if not self.relaxed:
            return regex.findall(text, pos)
        out = []
        for m in regex.finditer(text, pos):
            out.append(m.groups(""))
            if m.group("bad") is not None:
                break
        return out


_STRICT = _Grammar(_compile(_ITEM, _STRICT_STR), _compile(_VALUES, _STRICT_STR), _compile(_TERM_AT, _STRICT_STR),
                   _compile(_ITEM_FAST, _STRICT_STR))
_RELAXED = _Grammar(_compile(_ITEM, _RELAXED_STR), _compile(_VALUES, _RELAXED_STR), _compile(_TERM_AT, _RELAXED_STR),
                    relaxed=True)

_NAME = r'"(?P<schema>[^"]*)"\s*\.\s*"(?P<table>[^"]*)"'
_ALIAS = r"(?:\s+(?!(?:set|where|for)\b)[A-Za-z_][\w$#]*)?"
_INSERT_HEAD = re.compile(
    rf'\s*insert\s+into\s+{_NAME}\s*\(\s*(?P<cols>"[^"]*"(?:\s*,\s*"[^"]*")*)\s*\)\s*values\s*(?=\()', _FLAGS
)
_UPDATE_HEAD = re.compile(rf"\s*update\s+{_NAME}{_ALIAS}(?=\s)", _FLAGS)
_DELETE_HEAD = re.compile(rf"\s*delete\s+from\s+{_NAME}{_ALIAS}(?=\s|\Z)", _FLAGS)
_QUOTED = re.compile(r'"([^"]*)"')

# step-by-step versions of the heads, only used to explain a failure
_IDENT_STEP = (r'"[^"]*"\s*\.\s*"[^"]*"', 'expected "SCHEMA"."TABLE"')
_HEAD_STEPS = {
    "c": [
        (r"\s*insert\s+into\b\s*", "expected 'insert into'"),
        _IDENT_STEP,
        (r"\s*\(", "expected '(' and the column list"),
        (r'\s*"[^"]*"(?:\s*,\s*"[^"]*")*\s*\)', "expected a list of quoted column names and ')'"),
        (r"\s*values\s*\(", "expected 'values ('"),
    ],
    "u": [
        (r"\s*update\s+", "expected 'update'"),
        _IDENT_STEP,
        (_ALIAS + r"\s+set\b", "expected 'set'"),
    ],
    "d": [
        (r"\s*delete\s+from\s+", "expected 'delete from'"),
        _IDENT_STEP,
        (_ALIAS + r"(?:\s+where\b|\s*\Z)", "expected 'where' or the end of the statement"),
    ],
}

_SEP_AT = re.compile(r"\s*(,|\|\||\(|(?:and|where|set)\b)\s*", _FLAGS)
_COL_AT = re.compile(r'[\w$#.]*"[^"]*"\s*(?:=|IS\b)\s*', _FLAGS)
_FUNC_AT = re.compile(r"([A-Za-z_]\w*)\s*\(", _FLAGS)


# ---- errors inside the hot loops ---------------------------------------------------------------


class _Fail(Exception):
    """Raised by the token loops; turned into a located :class:`RedoParseError` by the caller."""

    def __init__(self, reason: str, group: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.group = group  # the group of the failing token whose start is the error offset
        self.token: tuple[str, ...] | None = None


def _locate(sql: str, pos: int, regex: re.Pattern[str], tokens: list[tuple[str, ...]], fail: _Fail,
            context: str) -> RedoParseError:
    """The :class:`RedoParseError` for a failure on one of ``tokens`` (``regex.findall(sql, pos)``)."""
    if fail.token is None:
        return RedoParseError(fail.reason, len(sql), sql)
    index = next(i for i, t in enumerate(tokens) if t is fail.token)
    for i, m in enumerate(regex.finditer(sql, pos)):
        if i == index:
            if m.group("bad") is not None:
                if any(t[0].lower() == "where" for t in tokens[:index]):
                    context = "where"
                err = _explain(sql, m.start(), context)
                p = _skip_ws(sql, m.start())
                err.near_quote = sql[p:p + 1] == "'" or sql[:p].rstrip()[-1:] == "'"
                return err
            start = m.start(fail.group or "v")
            if start < 0:
                start = m.start()
            return RedoParseError(fail.reason, _skip_ws(sql, start), sql)
    return RedoParseError(fail.reason, len(sql), sql)  # pragma: no cover - the scan is deterministic


def _skip_ws(sql: str, pos: int) -> int:
    n = len(sql)
    while pos < n and sql[pos].isspace():
        pos += 1
    return pos


def _explain(sql: str, pos: int, context: str) -> RedoParseError:
    """Why no token rule accepts the text at ``pos``: truncation, an unterminated literal, ..."""
    p = _skip_ws(sql, pos)
    if p >= len(sql):
        return RedoParseError("unexpected end of statement (truncated?)", p, sql)
    sep = _SEP_AT.match(sql, p)
    if sep is None:
        prev = sql[:p].rstrip()[-1:]
        if prev == "'":
            return RedoParseError("unexpected text after a string literal (unescaped quote?)", p, sql)
        expected = {"values": "',' or ')'", "set": "',' or 'where'", "where": "'and'"}[context]
        return RedoParseError(f"expected {expected} or the end of the statement", p, sql)
    q = sep.end()
    if q >= len(sql):
        return RedoParseError(f"statement ends after {sep.group(1)!r} (truncated?)", q, sql)
    if context != "values" and sep.group(1) != "||":
        col = _COL_AT.match(sql, q)
        if col is None:
            return RedoParseError("expected a quoted column name and '=' or 'IS'", q, sql)
        q = col.end()
        if q >= len(sql):
            return RedoParseError("statement ends before a value (truncated?)", q, sql)
    if sql[q] == "'":
        return RedoParseError("unterminated string literal", q, sql)
    func = _FUNC_AT.match(sql, q)
    if func is not None:
        name = func.group(1).upper()
        if name in _FUNCTIONS:
            return RedoParseError(f"malformed or unterminated {name}(...) literal", q, sql)
        return RedoParseError(f"unsupported expression {func.group(1)}(...)", q, sql)
    return RedoParseError("expected a value", q, sql)


def _head_error(sql: str, op: str) -> RedoParseError:
    pos = 0
    for pattern, reason in _HEAD_STEPS[op]:
        m = re.compile(pattern, _FLAGS).match(sql, pos)
        if m is None:
            p = _skip_ws(sql, pos)
            if p >= len(sql):
                reason += " (statement ends early: truncated?)"
            return RedoParseError(reason, p, sql)
        pos = m.end()
    return RedoParseError("malformed statement head", _skip_ws(sql, pos), sql)  # pragma: no cover


# ---- values --------------------------------------------------------------------------------------


def _value(v: str) -> Any:
    """The value of a non-string term (group ``v``): NULL, Unsupported Type, a number or a call."""
    if v[-1] == ")":
        return _call(v)
    c = v[0]
    if c == "N" or c == "n":
        return None
    if c == "U" or c == "u" or c == "L" or c == "l":
        return UNAVAILABLE  # Unsupported Type; LM_EMPTY_STRING (an extended string sent as 32K_WRITE rows)
    return v  # a number, as written


_STD_DATE_PREFIX = "TO_DATE('"
_STD_DATE_SUFFIX = "', 'YYYY-MM-DD HH24:MI:SS')"
_STD_DATE_LEN = len(_STD_DATE_PREFIX) + 19 + len(_STD_DATE_SUFFIX)
_CALL = re.compile(r"([A-Z_][A-Z_0-9]*)\(\s*(?:'([^']*(?:''[^']*)*)'\s*(?:,\s*'([^']*)'\s*)?)?\)", _FLAGS)


def _call(v: str) -> str:
    if len(v) == _STD_DATE_LEN and v.startswith(_STD_DATE_PREFIX) and v.endswith(_STD_DATE_SUFFIX):
        text = v[len(_STD_DATE_PREFIX):len(_STD_DATE_PREFIX) + 19]  # LogMiner's usual DATE shape
        if text[10] == " ":
            return f"{text[:10]}T{text[11:]}"
    m = _CALL.fullmatch(v)
    name = m.group(1).upper() if m is not None else v[:v.index("(")].strip().upper()
    if m is None or name not in _FUNCTIONS:
        if name in _FUNCTIONS:
            raise _Fail(f"malformed {name}(...) literal")
        raise _Fail(f"unsupported expression {v[:v.index('(')]}(...)")
    arg, fmt = m.group(2), m.group(3)
    if name in ("EMPTY_CLOB", "EMPTY_BLOB"):
        if arg is not None:
            raise _Fail(f"malformed {name}(...) literal")
        return ""
    if arg is None or (fmt is not None) != (name == "TO_DATE"):
        raise _Fail(f"malformed {name}(...) literal")
    if name == "TO_DATE":
        return _to_date(arg, fmt)
    if name == "UNISTR":
        return _unistr(arg)
    if "''" in arg:
        raise _Fail(f"malformed {name}(...) literal")
    return _FUNCTIONS[name](arg)


_STD_DATE_FORMAT = "YYYY-MM-DD HH24:MI:SS"


def _to_date(text: str, fmt: str) -> str:
    if fmt == _STD_DATE_FORMAT and len(text) == 19 and text[10] == " ":
        return f"{text[:10]}T{text[11:]}"
    return _oracle_datetime(text, fmt, "TO_DATE")


def _to_timestamp(text: str) -> str:
    day, _, clock = text.strip().partition(" ")
    if not day or not clock or " " in clock:
        raise _Fail(f"unexpected TO_TIMESTAMP literal {text!r}")
    if clock.endswith("."):  # LogMiner writes a bare '.' when the fraction is empty
        clock = clock[:-1]
    return f"{day}T{clock}"


_TZ_OFFSET = re.compile(r"([+-])(\d{1,2}):(\d{2})")


def _to_timestamp_tz(text: str) -> str:
    parts = text.strip().split(None, 2)
    if len(parts) != 3:
        raise _Fail(f"unexpected TO_TIMESTAMP_TZ literal {text!r} (expected date, time and zone)")
    day, clock, zone = parts
    if clock.endswith("."):
        clock = clock[:-1]
    m = _TZ_OFFSET.fullmatch(zone)
    if m is not None:
        return f"{day}T{clock}{m.group(1)}{int(m.group(2)):02d}:{m.group(3)}"
    return f"{day}T{clock} {zone}"


_UNISTR_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{4})|\\\\|\\")


def _unistr_escape(m: re.Match[str]) -> str:
    code = m.group(1)
    if code is not None:
        return chr(int(code, 16))
    if m.group(0) == "\\\\":
        return "\\"
    raise _Fail("invalid escape in UNISTR (expected \\XXXX or \\\\)")


def _unistr(body: str) -> str:
    if "''" in body:
        body = body.replace("''", "'")
    if "\\" not in body:
        return body
    text = _UNISTR_ESCAPE.sub(_unistr_escape, body)
    try:  # join UTF-16 surrogate pairs (\d83d\de00 -> one character)
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise _Fail("unpaired UTF-16 surrogate in UNISTR") from None


_HEX = re.compile(r"[0-9A-Fa-f]*")


def _hextoraw(body: str) -> str:
    if _HEX.fullmatch(body) is None:
        raise _Fail(f"invalid hex digits in HEXTORAW({body[:40]!r})")
    return body.lower()


_YM = re.compile(r"\s*([-+]?)(\d+)-(\d+)\s*")
_DS = re.compile(r"\s*([-+]?)(\d+)\s+(\d+):(\d+):(\d+)(?:\.(\d*))?\s*")


def _to_yminterval(text: str) -> str:
    m = _YM.fullmatch(text)
    if m is None:
        raise _Fail(f"unexpected TO_YMINTERVAL literal {text!r}")
    sign = "-" if m.group(1) == "-" else ""
    return f"{sign}P{int(m.group(2))}Y{int(m.group(3))}M"


def _to_dsinterval(text: str) -> str:
    m = _DS.fullmatch(text)
    if m is None:
        raise _Fail(f"unexpected TO_DSINTERVAL literal {text!r}")
    sign = "-" if m.group(1) == "-" else ""
    frac = (m.group(6) or "").rstrip("0")
    seconds = f"{int(m.group(5))}.{frac}" if frac else str(int(m.group(5)))
    return f"{sign}P{int(m.group(2))}DT{int(m.group(3))}H{int(m.group(4))}M{seconds}S"


_FUNCTIONS: dict[str, Any] = {
    "TO_DATE": _to_date, "TO_TIMESTAMP": _to_timestamp, "TO_TIMESTAMP_TZ": _to_timestamp_tz, "UNISTR": _unistr,
    "HEXTORAW": _hextoraw, "EMPTY_CLOB": None, "EMPTY_BLOB": None, "TO_YMINTERVAL": _to_yminterval,
    "TO_DSINTERVAL": _to_dsinterval,
}


def _concat(left: Any, right: Any) -> str:
    if left is UNAVAILABLE or right is UNAVAILABLE:
        raise _Fail("'||' with an Unsupported Type value")
    return (left or "") + (right or "")  # Oracle: NULL || 'x' = 'x'


# Oracle datetime formats other than LogMiner's usual 'YYYY-MM-DD HH24:MI:SS' (e.g. 'DD-MON-RR'
# seen in SELECT_LOB_LOCATOR keys): a small interpreter, off the hot path.
_FMT_ELEMENT = re.compile(
    r'(SYYYY|YYYY|RRRR|YY|RR|MONTH|MON|MM|DD|HH24|HH12|HH|MI|SS|FF[1-9]?|A\.M\.|P\.M\.|AM|PM)'
    r'|("[^"]*")|([-/,.;:\s]+)|(.)', re.IGNORECASE)
_FMT_PATTERN = {
    "SYYYY": r"(?P<Y>[-+]?\d{1,4})", "YYYY": r"(?P<Y>[-+]?\d{1,4})", "RRRR": r"(?P<Y4>\d{1,4})",
    "YY": r"(?P<YY>\d{1,2})", "RR": r"(?P<RR>\d{1,2})", "MONTH": r"(?P<MONTH>[A-Za-z]+)",
    "MON": r"(?P<MON>[A-Za-z]{3})", "MM": r"(?P<M>\d{1,2})", "DD": r"(?P<D>\d{1,2})",
    "HH24": r"(?P<H24>\d{1,2})", "HH12": r"(?P<H12>\d{1,2})", "HH": r"(?P<H12>\d{1,2})",
    "MI": r"(?P<MI>\d{1,2})", "SS": r"(?P<S>\d{1,2})", "FF": r"(?P<F>\d*)",
    "AM": r"(?P<AP>[AP]\.?M\.?)", "PM": r"(?P<AP>[AP]\.?M\.?)", "A.M.": r"(?P<AP>[AP]\.?M\.?)",
    "P.M.": r"(?P<AP>[AP]\.?M\.?)",
}
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"])}


def _rr_year(yy: int, today: date | None = None) -> int:
    """Oracle's RR rule: a two-digit year near the current one."""
    current = (today or date.today()).year
    century, last = divmod(current, 100)
    if yy < 50:
        return (century if last < 50 else century + 1) * 100 + yy
    return (century - 1 if last < 50 else century) * 100 + yy


def _oracle_datetime(text: str, fmt: str, func: str) -> str:
    parts: list[str] = []
    for m in _FMT_ELEMENT.finditer(fmt):
        element, literal, separator, other = m.groups()
        if element:
            key = element.upper()
            key = "FF" if key.startswith("FF") else key
            pattern = _FMT_PATTERN[key]
            if pattern in parts:
                raise _Fail(f"unsupported {func} format {fmt!r} (element {element} repeated)")
            parts.append(pattern)
        elif literal:
            parts.append(re.escape(literal[1:-1]))
        elif separator:
            parts.append(r"[-/,.;:\s]+")
        else:
            raise _Fail(f"unsupported {func} format {fmt!r}")
    try:
        m = re.fullmatch("".join(parts), text.strip(), re.IGNORECASE)
    except re.error:
        raise _Fail(f"unsupported {func} format {fmt!r}") from None
    if m is None:
        raise _Fail(f"{func} value {text!r} does not match its format {fmt!r}")
    g = m.groupdict()
    if g.get("Y"):
        year = int(g["Y"])
    elif g.get("Y4"):
        year = int(g["Y4"]) if len(g["Y4"]) > 2 else _rr_year(int(g["Y4"]))
    elif g.get("RR"):
        year = _rr_year(int(g["RR"]))
    elif g.get("YY"):
        year = date.today().year // 100 * 100 + int(g["YY"])
    else:
        year = date.today().year
    if g.get("MON") or g.get("MONTH"):
        month = _MONTHS.get((g.get("MON") or g["MONTH"])[:3].upper(), 0)
    else:
        month = int(g.get("M") or 1)
    day = int(g.get("D") or 1)
    if g.get("H24") is not None:
        hour = int(g["H24"])
    elif g.get("H12") is not None:
        hour = int(g["H12"]) % 12
        if (g.get("AP") or "A").upper().startswith("P"):
            hour += 12
    else:
        hour = 0
    minute, second = int(g.get("MI") or 0), int(g.get("S") or 0)
    frac = (g.get("F") or "").rstrip("0")
    try:
        datetime(year if 1 <= year <= 9999 else 2000, month, day, hour, minute, second)
    except ValueError:
        raise _Fail(f"{func} value {text!r} is not a valid date for format {fmt!r}") from None
    y = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    return f"{y}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{'.' + frac if frac else ''}"


# ---- the token loops (hot path) ----------------------------------------------------------------


def _values(tokens: list[tuple[str, str, str, str]]) -> list[Any]:
    """INSERT values from ``_VALUES`` tokens (the last one, ``)``, already removed)."""
    out: list[Any] = []
    t: tuple[str, ...] = ()
    try:
        for t in tokens:
            sep, s, v, bad = t
            if s:
                if "''" in s:
                    s = s.replace("''", "'")
            elif v:
                s = _value(v)
            elif bad:
                raise _Fail("unexpected text")
            elif not sep:
                raise _Fail("unexpected ')'")
            else:
                s = None  # '': Oracle reads an empty string as NULL
            if sep == ",":
                out.append(s)
            elif sep == "||":
                out[-1] = _concat(out[-1], s)
            elif sep == "(" and not out:
                out.append(s)
            else:
                raise _Fail(f"unexpected {sep!r}", "sep")
    except _Fail as fail:
        fail.token = t
        raise
    return out


def _items(tokens: list[tuple[str, str, str, str, str]], update: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(WHERE values, SET values) from ``_ITEM`` tokens.

    An UPDATE must start with ``set``; DELETE and the LOB locator's SELECT with ``where``.
    """
    where: dict[str, Any] = {}
    sets: dict[str, Any] = {}
    target = sets
    phase = 0  # 0 = before the first keyword, 1 = in SET, 2 = in WHERE
    last: str | None = None
    t: tuple[str, ...] = ()
    try:
        for t in tokens:
            sep, col, s, v, bad = t
            if s:
                if "''" in s:
                    s = s.replace("''", "'")
            elif v:
                s = _value(v)
            elif bad:
                raise _Fail("unexpected text")
            elif not sep:
                last = None  # and ROWID = '...': not a column
                continue
            else:
                s = None  # '': Oracle reads an empty string as NULL
            if sep == "," or sep == "and":
                if phase != (1 if sep == "," else 2):
                    raise _Fail(f"unexpected {sep!r}", "sep")
            elif sep == "||":
                if col:
                    raise _Fail("expected a value after '||'", "col")
                if last is not None:
                    target[last] = _concat(target[last], s)
                continue
            else:
                keyword = sep.lower()
                if keyword == "where" and phase == (1 if update else 0):
                    phase, target = 2, where
                elif keyword == "set" and update and phase == 0:
                    phase = 1
                elif keyword == "and" and phase == 2:
                    pass
                elif phase == 0:
                    raise _Fail(f"expected {'SET' if update else 'WHERE'}, found {sep!r}", "sep")
                else:
                    raise _Fail(f"unexpected {sep!r}", "sep")
            if not col:
                raise _Fail("expected a quoted column name", "sep")
            target[col] = s
            last = col
    except _Fail as fail:
        fail.token = t
        raise
    if update and phase == 0:
        raise _Fail("an UPDATE without a SET clause")
    return where, sets


# ---- statements ----------------------------------------------------------------------------------


def _statement_end(sql: str) -> str:
    """``sql`` without trailing blanks and one trailing ``;`` (offsets stay valid)."""
    sql = sql.rstrip()
    if sql.endswith(";"):
        sql = sql[:-1].rstrip()
    return sql


def _parse(sql: str, g: _Grammar) -> ParsedRedo:
    text = _statement_end(sql)
    kind = text.lstrip()[:1]
    if kind == "i" or kind == "I":
        m = _INSERT_HEAD.match(text)
        if m is None:
            raise _head_error(text, "c")
        pos = m.end()
        tokens = g.tokens(g.values, text, pos)
        closing = tokens.pop()  # the head ends before '(', so there is at least one token
        try:
            if any(closing):  # not the final ')': report the first token that does not fit
                tokens.append(closing)
                _values(tokens)
                raise RedoParseError("expected ')' at the end of the values (truncated?)", len(text), text)
            vals = _values(tokens)
        except _Fail as fail:
            raise _locate(text, pos, g.values, tokens, fail, "values") from None
        cols = _QUOTED.findall(m.group("cols"))
        if len(cols) != len(vals):
            raise RedoParseError(f"{len(cols)} columns but {len(vals)} values", pos, text)
        return ParsedRedo("c", m.group("schema"), m.group("table"), None, dict(zip(cols, vals)))
    if kind == "u" or kind == "U":
        m = _UPDATE_HEAD.match(text)
        op = "u"
    elif kind == "d" or kind == "D":
        m = _DELETE_HEAD.match(text)
        op = "d"
    else:
        raise RedoParseError(f"not an INSERT, UPDATE or DELETE statement: {text.lstrip()[:30]!r}",
                             _skip_ws(text, 0), text)
    if m is None:
        raise _head_error(text, op)
    pos = m.end()
    try:
        if g.fast_items is None:
            raise _Fail("no fast path")
        where, sets = _items(g.fast_items.findall(text, pos), op == "u")
    except _Fail:
        tokens = g.tokens(g.items, text, pos)
        try:
            where, sets = _items(tokens, op == "u")
        except _Fail as fail:
            raise _locate(text, pos, g.items, tokens, fail, "where" if op == "d" else "set") from None
    if op == "d":
        return ParsedRedo("d", m.group("schema"), m.group("table"), where, None)
    after = dict(where)
    after.update(sets)
    return ParsedRedo("u", m.group("schema"), m.group("table"), where, after)


def parse_redo(sql: str) -> ParsedRedo:
    """Parse one LogMiner INSERT / UPDATE / DELETE ``SQL_REDO`` statement (see the module doc).

    Raises :class:`RedoParseError` with the reason and offset when the statement does not parse.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise RedoParseError("empty statement", 0, sql if isinstance(sql, str) else "")
    try:
        return _parse(sql, _STRICT)
    except RedoParseError as err:
        if not err.near_quote:
            raise
        strict_error = err
    try:
        return _parse(sql, _RELAXED)
    except RedoParseError:
        raise strict_error from None


# ---- LOB statements ------------------------------------------------------------------------------

_LOB_SELECT = re.compile(
    r'\bselect\s+(?:[A-Za-z_][\w$#]*\.)?"(?P<col>[^"]*)"\s+into\s+(?P<loc>loc_\w+)\s+from\s+'
    + _NAME + _ALIAS, _FLAGS)
_FOR_UPDATE = re.compile(r"\s*for\s+update\b", _FLAGS)
_LOB_ASSIGN = re.compile(r"\b(?P<buf>buf_\w+)\s*:=\s*", _FLAGS)
_LOB_WRITE_CALL = re.compile(
    r"\s*;\s*dbms_lob\.write\s*\(\s*(?P<loc>loc_\w+)\s*,\s*(?P<len>\d+)\s*,\s*(?P<off>\d+)\s*,\s*"
    r"(?P<buf>buf_\w+)\s*\)", _FLAGS)
_LOB_WRITE_RELAXED = re.compile(r":=\s*(?P<hex>HEXTORAW\(\s*)?'(?P<d>.*)'(?(hex)\s*\))\s*;\s*dbms_lob\.write\s*\(",
                                _FLAGS)
_LOB_TRIM = re.compile(r"\bdbms_lob\.trim\s*\(\s*loc_\w+\s*,\s*(?P<len>\d+)\s*\)", _FLAGS)
_LOB_ERASE = re.compile(r"\bdbms_lob\.erase\s*\(\s*loc_\w+\s*,\s*(?P<amount>\d+)\s*,\s*(?P<off>\d+)\s*\)", _FLAGS)


def parse_lob_locator(sql: str) -> LobLocator:
    """Parse a ``SELECT_LOB_LOCATOR`` statement (op 9).

    The ``DECLARE ... BEGIN`` preamble is skipped; the ``select "COL" into loc_x from "S"."T" where
    ... for update`` gives the column and the row key. ``loc_b`` is a BLOB (binary); ``loc_c`` (CLOB,
    NCLOB) and ``loc_x`` (XMLType) are text.
    """
    m = _LOB_SELECT.search(sql)
    if m is None:
        raise RedoParseError('no \'select "COLUMN" into loc_x from "SCHEMA"."TABLE"\' in a LOB locator statement',
                             0, sql)
    pos = m.end()
    matches: list[re.Match[str]] = []
    for t in _STRICT.items.finditer(sql, pos):
        if t.group("bad") is not None and _FOR_UPDATE.match(sql, t.start()):
            break
        matches.append(t)
    else:
        raise RedoParseError("expected 'for update' after the WHERE clause", len(sql.rstrip()), sql)
    tokens = [t.groups("") for t in matches]
    try:
        key, _ = _items(tokens, update=False)
    except _Fail as fail:
        raise _locate(sql, pos, _STRICT.items, tokens, fail, "where") from None
    return LobLocator(m.group("schema"), m.group("table"), m.group("col"), m.group("loc").lower() == "loc_b", key)


def parse_lob_write(sql: str) -> LobWrite:
    """Parse a ``LOB_WRITE`` statement (op 10): ``buf_c := 'text'; dbms_lob.write(loc_c, 4, 1, buf_c);``.

    ``data`` is the text, or lowercase hex for ``buf_b := HEXTORAW('..')``; ``offset`` is Oracle's
    1-based offset, as written. A surrounding ``DECLARE ... BEGIN ... END;`` is ignored.
    """
    m = _LOB_ASSIGN.search(sql)
    if m is None:
        raise RedoParseError("no 'buf_x := ...' assignment in a LOB write statement", 0, sql)
    value, end = _assigned_value(sql, m.end())
    call = _LOB_WRITE_CALL.match(sql, end) if end >= 0 else None
    if call is None:
        relaxed = _LOB_WRITE_RELAXED.search(sql, m.start())
        call = _LOB_WRITE_CALL.search(sql, m.end()) if relaxed is not None else None
        if relaxed is None or call is None:
            offset = end if end >= 0 else m.end()
            raise RedoParseError("expected a literal and '; dbms_lob.write(loc_x, length, offset, buf_x)'", offset, sql)
        data = relaxed.group("d")
        value = data.lower() if relaxed.group("hex") else data.replace("''", "'")
    if not isinstance(value, str):
        raise RedoParseError("a LOB write of NULL or Unsupported Type", m.end(), sql)
    return LobWrite(int(call.group("off")), int(call.group("len")), value)


def _assigned_value(sql: str, pos: int) -> tuple[Any, int]:
    """The (possibly ``||``-concatenated) literal at ``pos`` and where it ends; ``(None, -1)`` if none."""
    value: Any = None
    first = True
    while True:
        m = _STRICT.term_at.match(sql, pos)
        if m is None or (m.group("sep") is None) != first:
            return (value, pos) if not first else (None, -1)
        try:
            s = m.group("s")
            v = s.replace("''", "'") if s is not None else _value(m.group("v"))
            value = v if first else _concat(value, v)
        except _Fail:
            return None, -1
        first, pos = False, m.end()


def parse_lob_trim(sql: str) -> int:
    """The new length of a ``LOB_TRIM`` statement (op 11): ``dbms_lob.trim(loc_c, 100);`` -> 100."""
    m = _LOB_TRIM.search(sql)
    if m is None:
        raise RedoParseError("no 'dbms_lob.trim(loc_x, length)' call", 0, sql)
    return int(m.group("len"))


def parse_lob_erase(sql: str) -> tuple[int, int]:
    """(amount, offset) of a ``LOB_ERASE`` statement (op 29): ``dbms_lob.erase(loc_c, 10, 5);``."""
    m = _LOB_ERASE.search(sql)
    if m is None:
        raise RedoParseError("no 'dbms_lob.erase(loc_x, amount, offset)' call", 0, sql)
    return int(m.group("amount")), int(m.group("off"))


# ---- XMLTYPE and extended-string statements ------------------------------------------------------
#
# Both are written whole, as a begin row naming the table, column and row key, the value in
# fragments appended in order, and an end row (XML_END's SQL_REDO is NULL). Shapes as Debezium's
# LogMiner parsers accept them (XmlBeginParser, XmlWriteParser, ExtendedStringParser):
#
#   68 XML_BEGIN  XML DOC BEGIN:  select "DOC" from "S"."T" where "ID" = '1'        (binary XML storage)
#                 update "S"."T" a set a."DOC" = XMLType(:1)  where a."ID" = '1';   (text storage)
#   70 XML_WRITE  XML_REDO := '<a>..</a>'\n amount: 9  |  XML_REDO := HEXTORAW('3c61'):2  |  XML_REDO := NULL
#   91 32K_BEGIN  DECLARE ... TempLob CLOB; ... BEGIN ... Stmt := 'update "S"."T" a set a."C" = :C
#                 where a."ID" = ''1'';';                                            (TempLob BLOB: RAW)
#   92 32K_WRITE  \n buf_c := 'text';\n DBMS_LOB.WRITEAPPEND(TempLob, 4, buf_c);


@dataclass(slots=True)
class Fragment:
    """An ``XML_WRITE`` (op 70) or ``32K_WRITE`` (op 92): the next piece of a value built by appending."""

    data: str | None  # text, or lowercase hex when ``hex``; None for ``XML_REDO := NULL``
    hex: bool  # HEXTORAW: the bytes of a RAW value, or of the document's text (UTF-8) for XML
    length: int | None  # the amount LogMiner wrote (characters of text, bytes of hex), when it wrote one


_COLUMN_REF = r'(?:[A-Za-z_][\w$#]*\.)?"(?P<col>[^"]*)"'
_XML_BEGIN_SELECT = re.compile(rf"\s*XML\s+DOC\s+BEGIN\s*:\s*select\s+{_COLUMN_REF}\s+from\s+{_NAME}{_ALIAS}", _FLAGS)
_XML_BEGIN_UPDATE = re.compile(
    rf"\s*update\s+{_NAME}{_ALIAS}\s+set\s+{_COLUMN_REF}\s*=\s*XMLType\s*\(\s*:\w+\s*\)", _FLAGS)
_KEY_END = re.compile(r"\s*(?:for\s+update\b)?\s*;?\s*\Z", _FLAGS)
_XML_REDO = re.compile(r"\s*XML_REDO\s*:=\s*", _FLAGS)
_XML_NULL = re.compile(r"NULL\s*;?\s*\Z", _FLAGS)
_XML_AMOUNT = r"(?:\s*;?\s*(?:amount\s*)?:\s*(?P<n>\d+))?\s*;?\s*\Z"
_XML_TAIL = re.compile(_XML_AMOUNT, _FLAGS)
# Oracle sometimes leaves the closing quote out of the last HEXTORAW chunk (noted in Debezium)
_XML_HEX = re.compile(r"HEXTORAW\(\s*'(?P<h>[0-9A-Fa-f]*)'?\s*\)" + _XML_AMOUNT, _FLAGS)
_XML_RELAXED = re.compile(r"'(?P<d>.*)'" + _XML_AMOUNT, _FLAGS)
_EXT_STMT = re.compile(r"\bStmt\s*:=\s*'(?P<s>[^']*(?:''[^']*)*)'\s*;\s*(?:END\s*;\s*)?\Z", _FLAGS)
_EXT_STMT_RELAXED = re.compile(r"\bStmt\s*:=\s*'(?P<s>.*)'\s*;\s*(?:END\s*;\s*)?\Z", _FLAGS)
_EXT_UPDATE = re.compile(rf"\s*update\s+{_NAME}{_ALIAS}\s+set\s+{_COLUMN_REF}\s*=\s*:\w+", _FLAGS)
_EXT_BINARY = re.compile(r"\bTempLob\s+BLOB\b", _FLAGS)
_EXT_ASSIGN = re.compile(r"\bbuf_\w+\s*:=\s*", _FLAGS)
_EXT_APPEND_CALL = re.compile(
    r"\s*;\s*DBMS_LOB\.WRITEAPPEND\s*\(\s*TempLob\s*,\s*(?P<len>\d+)\s*,\s*buf_\w+\s*\)", _FLAGS)
_EXT_APPEND_RELAXED = re.compile(
    r":=\s*(?P<hex>HEXTORAW\(\s*)?'(?P<d>.*)'(?(hex)\s*\))\s*;\s*DBMS_LOB\.WRITEAPPEND\s*\(", _FLAGS)
_HEXTORAW_AT = re.compile(r"HEXTORAW\s*\(", _FLAGS)


def _statement(sql: str | None, what: str) -> str:
    if not isinstance(sql, str) or not sql.strip():
        raise RedoParseError(f"empty {what} statement", 0, sql if isinstance(sql, str) else "")
    return sql


def _where_key(sql: str, pos: int) -> dict[str, Any]:
    """The values of ``where "K" = v and ...`` from ``pos`` to the end of ``sql`` (a trailing
    ``for update`` and ``;`` allowed): the row key of a begin statement; ``{}`` without a WHERE."""
    matches: list[re.Match[str]] = []
    if _KEY_END.match(sql, pos) is None:
        for t in _STRICT.items.finditer(sql, pos):
            matches.append(t)
            if t.group("bad") is not None:
                if _KEY_END.match(sql, t.start()) is not None:
                    matches.pop()
                break
    tokens = [t.groups("") for t in matches]
    try:
        key, _ = _items(tokens, update=False)
    except _Fail as fail:
        raise _locate(sql, pos, _STRICT.items, tokens, fail, "where") from None
    return key


def parse_xml_begin(sql: str | None) -> LobLocator:
    """Parse an ``XML_BEGIN`` statement (op 68): the XMLTYPE column the following writes rebuild, and
    its row (``binary`` is False: the document is text).

    >>> parse_xml_begin('XML DOC BEGIN:  select "DOC" from "APP"."T" where "ID" = \\'1\\'')
    LobLocator(schema='APP', table='T', column='DOC', binary=False, key={'ID': '1'})
    """
    sql = _statement(sql, "XML_BEGIN")
    m = _XML_BEGIN_SELECT.match(sql) or _XML_BEGIN_UPDATE.match(sql)
    if m is None:
        raise RedoParseError('expected \'XML DOC BEGIN:  select "COLUMN" from "SCHEMA"."TABLE"\' or '
                             '\'update "SCHEMA"."TABLE" set "COLUMN" = XMLType(:1)\'', _skip_ws(sql, 0), sql)
    return LobLocator(m.group("schema"), m.group("table"), m.group("col"), False, _where_key(sql, m.end()))


def parse_xml_write(sql: str | None) -> Fragment:
    """Parse an ``XML_WRITE`` statement (op 70): ``XML_REDO := <value>`` and the amount.

    The value is a string literal (``''`` escapes, ``||`` and ``UNISTR`` as in DML), ``HEXTORAW``
    of the document's bytes (out-of-line storage; the closing quote may be missing), or ``NULL``
    (the column set to NULL). A literal with unescaped quotes is taken from the first quote to the
    last one before the amount.

    >>> parse_xml_write("XML_REDO := '<a x=\\"1\\">it''s</a>'\\n amount: 18")
    Fragment(data='<a x="1">it\\'s</a>', hex=False, length=18)
    """
    sql = _statement(sql, "XML_WRITE")
    m = _XML_REDO.match(sql)
    if m is None:
        raise RedoParseError("expected 'XML_REDO := ...' in an XML_WRITE statement", _skip_ws(sql, 0), sql)
    pos = m.end()
    if _XML_NULL.match(sql, pos) is not None:
        return Fragment(None, False, None)
    h = _XML_HEX.match(sql, pos)
    if h is not None:
        return Fragment(h.group("h").lower(), True, int(h.group("n")) if h.group("n") else None)
    value, end = _assigned_value(sql, pos)
    tail = _XML_TAIL.match(sql, end) if end >= 0 else None
    if tail is not None and isinstance(value, str):
        return Fragment(value, False, int(tail.group("n")) if tail.group("n") else None)
    r = _XML_RELAXED.match(sql, pos)
    if r is None:
        raise RedoParseError("expected a string literal, HEXTORAW('...') or NULL, then the amount",
                             end if end >= 0 else pos, sql)
    return Fragment(r.group("d").replace("''", "'"), False, int(r.group("n")) if r.group("n") else None)


def parse_ext_string_begin(sql: str | None) -> LobLocator:
    """Parse a ``32K_BEGIN`` statement (op 91): a VARCHAR2/NVARCHAR2/RAW value over the standard size
    (``MAX_STRING_SIZE=EXTENDED``) is built in a temporary LOB and set by the quoted ``Stmt``:
    ``update "S"."T" a set a."C" = :C where ...``. ``binary`` when the temporary LOB is a BLOB (RAW).
    """
    sql = _statement(sql, "32K_BEGIN")
    s = _EXT_STMT.search(sql)
    stmt = s.group("s").replace("''", "'") if s is not None else None
    if s is None:
        r = _EXT_STMT_RELAXED.search(sql)
        if r is None:
            raise RedoParseError("expected \"Stmt := 'update ...';\" at the end of a 32K_BEGIN statement",
                                 len(sql.rstrip()), sql)
        stmt = r.group("s").replace("''", "'")
    m = _EXT_UPDATE.match(stmt)
    if m is None:
        raise RedoParseError('expected \'update "SCHEMA"."TABLE" set "COLUMN" = :BIND\' in the 32K_BEGIN Stmt',
                             _skip_ws(stmt, 0), stmt)
    binary = _EXT_BINARY.search(sql) is not None
    return LobLocator(m.group("schema"), m.group("table"), m.group("col"), binary, _where_key(stmt, m.end()))


def parse_ext_string_write(sql: str | None) -> Fragment:
    """Parse a ``32K_WRITE`` statement (op 92): ``buf_c := 'text'; DBMS_LOB.WRITEAPPEND(TempLob, n, buf_c);``
    (``buf_b := HEXTORAW('..')`` for RAW). Unescaped quotes (DBZ-8034) are tolerated as in LOB writes.

    >>> parse_ext_string_write("\\n buf_c := 'abc';\\n DBMS_LOB.WRITEAPPEND(TempLob, 3, buf_c);")
    Fragment(data='abc', hex=False, length=3)
    """
    sql = _statement(sql, "32K_WRITE")
    m = _EXT_ASSIGN.search(sql)
    if m is None:
        raise RedoParseError("no 'buf_x := ...' assignment in a 32K_WRITE statement", 0, sql)
    hexed = _HEXTORAW_AT.match(sql, m.end()) is not None
    value, end = _assigned_value(sql, m.end())
    call = _EXT_APPEND_CALL.match(sql, end) if end >= 0 else None
    if call is None:
        relaxed = _EXT_APPEND_RELAXED.search(sql, m.start())
        call = _EXT_APPEND_CALL.search(sql, m.end()) if relaxed is not None else None
        if relaxed is None or call is None:
            raise RedoParseError("expected a literal and '; DBMS_LOB.WRITEAPPEND(TempLob, length, buf_x)'",
                                 end if end >= 0 else m.end(), sql)
        hexed = relaxed.group("hex") is not None
        data = relaxed.group("d")
        value = data.lower() if hexed else data.replace("''", "'")
    if not isinstance(value, str):
        raise RedoParseError("a 32K_WRITE of NULL or Unsupported Type", m.end(), sql)
    return Fragment(value, hexed, int(call.group("len")))
