"""SQL tokens and a token cursor, shared by the hand-written DDL parsers (MySQL, Oracle).

The parsers read only table-shaping statements, but they tokenize every statement the log brings
(procedures, views, grants), so the tokenizer must know each database's quoting and comments. The
lexical rules that differ between databases are the fields of a :class:`SqlDialect`; the rest
(quoted names, strings, numbers, comments, punctuation, and the cursor that walks the tokens) is
one piece of code here. Nothing in this module knows a particular database.

>>> [(t.kind, t.text) for t in tokenize("x = 'it''s' -- a comment", SqlDialect())]
[('word', 'x'), ('punct', '='), ('str', "it's")]
>>> oracle_like = SqlDialect(unquoted_case="upper")
>>> sql = 'ALTER TABLE hr."Emp" ADD (note VARCHAR2(20), b DATE)'
>>> cur = TokenCursor(sql, tokenize(sql, oracle_like))
>>> cur.accept("ALTER", "TABLE"), cur.qualified_name()  # unquoted names fold, quoted ones do not
(True, ('HR', 'Emp'))
>>> cur.accept("ADD"), [cur.text(item[0], item[-1]) for item in cur.split_group()]
(True, ['note VARCHAR2(20)', 'b DATE'])
>>> cur.next()
Traceback (most recent call last):
    ...
cdclake.sqltokens.SqlParseError: unexpected end of statement
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SqlDialect", "SqlParseError", "Token", "TokenCursor", "tokenize"]


class SqlParseError(Exception):
    """A statement the tokenizer or a parser cannot read; ``offset`` is where (None: not known).

    ``str()`` is the reason alone: the parsers wrap it in :class:`~cdclake.errors.DdlParseError`,
    which shows the whole statement.
    """

    def __init__(self, reason: str, offset: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset

    def __reduce__(self) -> tuple[Any, ...]:  # keep the offset across pickling
        return (type(self), (self.reason, self.offset))


@dataclass(frozen=True)
class Token:
    """One token of a statement; ``sql[start:end]`` is its source text."""

    kind: str  # 'word' | 'ident' (quoted name) | 'str' | 'num' | 'lit' (b'..'/x'..') | 'punct'
    text: str  # unquoted, unescaped value for ident/str; the source text otherwise
    start: int
    end: int  # exclusive
    name: str  # what a word/ident names: unquoted words case-folded as the dialect says

    @property
    def up(self) -> str:
        """The keyword in upper case, or '' when this is not a bare word (a quoted name never is)."""
        return self.text.upper() if self.kind == "word" else ""

    def is_(self, *words: str) -> bool:
        """Is this one of the bare words (keywords) ``words``, given in upper case?"""
        return self.kind == "word" and self.text.upper() in words

    def is_punct(self, ch: str) -> bool:
        return self.kind == "punct" and self.text == ch

    @property
    def is_name(self) -> bool:
        return self.kind in ("word", "ident")


@dataclass(frozen=True)
class SqlDialect:
    """The lexical rules that differ between databases; the defaults are plain ANSI SQL."""

    ident_quote: str = '"'  # quotes a name: '"' (ANSI, Oracle) or '`' (MySQL)
    string_quotes: str = "'"  # MySQL quotes strings with '"' too
    backslash_escapes: bool = False  # MySQL strings: '\n', '\'' ...
    doubled_quote_in_names: bool = True  # `a``b` is a`b (MySQL); Oracle names cannot hold '"'
    empty_quoted_names: bool = True  # Oracle rejects "" (MySQL accepts `` as an alias)
    unquoted_case: Literal["keep", "upper", "lower"] = "keep"  # Oracle stores unquoted names upper-cased
    word_re: re.Pattern[str] = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # keywords and unquoted names
    number_re: re.Pattern[str] = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    # MySQL names may start with a digit (word_re must then match digits): '1col' is a name, '12.t'
    # a database and a table, and the '.5' in 't.5x' a qualifier dot, not a number.
    digit_led_names: bool = False
    hash_comments: bool = False  # MySQL: '# ...' to the end of the line
    dash_comment_needs_space: bool = False  # MySQL: '--' starts a comment only before white space
    executable_comments: bool = False  # MySQL: the text inside '/*! ... */' and '/*M!...*/' is SQL
    lenient_comments: bool = False  # MySQL: an unterminated '/*' runs to the end instead of failing
    bit_hex_literals: bool = False  # MySQL: b'0101' and x'1F' become 'lit' tokens
    q_quotes: bool = False  # Oracle: q'[...]' with [] {} <> () or a repeated character, no escapes
    national_prefix: bool = False  # Oracle: N'...' and Nq'...' are strings
    terminators: str = ""  # punctuation that ends a statement: dropped from the end (';', '/')

    def fold(self, unquoted: str) -> str:
        """The name an unquoted identifier stands for."""
        if self.unquoted_case == "upper":
            return unquoted.upper()
        if self.unquoted_case == "lower":
            return unquoted.lower()
        return unquoted


_EXEC_COMMENT = re.compile(r"/\*M?!\d*")
_Q_QUOTE = re.compile(r"[nN]?[qQ]'(.)")
_Q_CLOSE = {"[": "]", "{": "}", "<": ">", "(": ")"}
_BACKSLASH = {"n": "\n", "t": "\t", "0": "\0", "r": "\r", "Z": "\x1a", "b": "\b"}


def tokenize(sql: str, dialect: SqlDialect) -> list[Token]:
    """The tokens of ``sql`` (comments and white space dropped); raises :class:`SqlParseError`."""
    d = dialect
    toks: list[Token] = []
    i, n = 0, len(sql)
    open_exec = 0  # unwrapped /*! ... */ executable comments awaiting their */

    fold = None if d.unquoted_case == "keep" else d.fold  # skips a call a token where names keep their case

    def add(kind: str, text: str, start: int, end: int) -> None:
        toks.append(Token(kind, text, start, end, fold(text) if fold and kind == "word" else text))

    while i < n:
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("/*", i):
            m = _EXEC_COMMENT.match(sql, i) if d.executable_comments else None
            if m:  # its content is part of the statement: read on, and drop the '*/' that ends it
                open_exec += 1
                i = m.end()
                continue
            end = sql.find("*/", i + 2)
            if end < 0 and not d.lenient_comments:
                raise SqlParseError(f"unterminated comment at offset {i}", i)
            i = n if end < 0 else end + 2
        elif open_exec and sql.startswith("*/", i):
            open_exec -= 1
            i += 2
        elif (d.hash_comments and ch == "#") or (
            sql.startswith("--", i) and not (d.dash_comment_needs_space and i + 2 < n and not sql[i + 2].isspace())
        ):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif ch == d.ident_quote:
            value, after = _quoted(
                sql, i, i + 1, doubled=d.doubled_quote_in_names, backslash=False, what="quoted identifier"
            )
            if not value and not d.empty_quoted_names:
                raise SqlParseError(f"empty quoted identifier at offset {i}", i)
            add("ident", value, i, after)
            i = after
        elif ch in d.string_quotes or (d.national_prefix and ch in "nN" and sql.startswith("'", i + 1)):
            body = i + 1 if ch in d.string_quotes else i + 2  # N'...' : the quote follows the N
            value, after = _quoted(sql, i, body, doubled=True, backslash=d.backslash_escapes, what="string")
            add("str", value, i, after)
            i = after
        elif d.q_quotes and (m := _Q_QUOTE.match(sql, i)) is not None and (d.national_prefix or ch in "qQ"):
            close = _Q_CLOSE.get(m.group(1), m.group(1)) + "'"
            end = sql.find(close, m.end())
            if end < 0:
                raise SqlParseError(f"unterminated q-quoted string at offset {i}", i)
            add("str", sql[m.end() : end], i, end + 2)
            i = end + 2
        elif d.bit_hex_literals and ch in "bBxX" and sql.startswith("'", i + 1):
            end = sql.find("'", i + 2)
            if end < 0:
                raise SqlParseError(f"unterminated literal at offset {i}", i)
            add("lit", sql[i : end + 1], i, end + 1)
            i = end + 1
        else:
            word = d.word_re.match(sql, i)
            starts_number = ch.isdigit() or (
                ch == "." and i + 1 < n and sql[i + 1].isdigit()
                and not (d.digit_led_names and toks and toks[-1].is_name)
            )
            num = d.number_re.match(sql, i) if starts_number else None
            # With digit-led names, a number that runs on into name characters is a name (1e5x, 12abc).
            if num and not (d.digit_led_names and word and d.word_re.match(sql, num.end())):
                add("num", num.group(0), i, num.end())  # 12, 0.00, 1e5, .5
                i = num.end()
            elif word:
                add("word", word.group(0), i, word.end())  # keywords and unquoted names
                i = word.end()
            else:
                add("punct", ch, i, i + 1)
                i += 1
    while toks and toks[-1].kind == "punct" and toks[-1].text in d.terminators:
        toks.pop()
    return toks


def _quoted(sql: str, start: int, body: int, *, doubled: bool, backslash: bool, what: str) -> tuple[str, int]:
    """The value of the quoted token opened at ``start`` and the offset after it.

    ``sql[body - 1]`` is the quote. With ``doubled`` a doubled quote stands for one (SQL), with
    ``backslash`` a backslash escapes the next character (MySQL strings).
    """
    quote, n = sql[body - 1], len(sql)
    j, value = body, []
    while True:
        if j >= n:
            raise SqlParseError(f"unterminated {what} at offset {start}", start)
        c = sql[j]
        if backslash and c == "\\" and j + 1 < n:
            value.append(_BACKSLASH.get(sql[j + 1], sql[j + 1]))
            j += 2
        elif c != quote:
            value.append(c)
            j += 1
        elif doubled and j + 1 < n and sql[j + 1] == quote:
            value.append(quote)
            j += 2
        else:
            return "".join(value), j + 1


class TokenCursor:
    """Walks the tokens of one statement (or of a part of it, e.g. one item of a column list).

    Errors are :class:`SqlParseError` at the offset of the token the cursor stands at.
    """

    def __init__(self, sql: str, toks: Sequence[Token]) -> None:
        self.sql = sql  # the whole statement: text() cuts spans of it
        self.toks = list(toks)
        self.i = 0

    # -- looking ahead

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if 0 <= j < len(self.toks) else None

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def peek_is(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.is_(*words)

    def peek_punct(self, ch: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.is_punct(ch)

    def peek_text(self) -> str:
        tok = self.peek()
        return tok.text if tok is not None else "end of statement"

    # -- consuming

    def next(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of statement")
        self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume the word sequence ``words`` if it comes next (all of it or nothing)."""
        for k, w in enumerate(words):
            tok = self.peek(k)
            if tok is None or not tok.is_(w):
                return False
        self.i += len(words)
        return True

    def accept_any(self, *phrases: str) -> bool:
        """Consume the first of ``phrases`` (space-separated words) that comes next."""
        return any(self.accept(*p.split()) for p in phrases)

    def accept_punct(self, ch: str) -> bool:
        if self.peek_punct(ch):
            self.i += 1
            return True
        return False

    def expect_punct(self, ch: str) -> None:
        if not self.accept_punct(ch):
            raise self.error(f"expected {ch!r} but found {self.peek_text()!r}")

    def name(self) -> str:
        """A quoted or unquoted name, as the dialect stores it."""
        tok = self.peek()
        if tok is not None and not tok.is_name:
            raise self.error(f"expected a name but found {tok.text!r}")
        return self.next().name

    def qualified_name(self) -> tuple[str | None, str]:
        """``name`` or ``qualifier.name``: (database or owner, or None; table)."""
        first = self.name()
        if self.accept_punct("."):
            return first, self.name()
        return None, first

    # -- groups and clauses

    def split_group(self) -> list[list[Token]]:
        """Consume ``( a, b(c, d), e )`` and return its depth-0 comma-separated items."""
        self.expect_punct("(")
        items: list[list[Token]] = [[]]
        depth = 1
        while True:
            tok = self.next()
            if tok.is_punct("("):
                depth += 1
            elif tok.is_punct(")"):
                depth -= 1
                if depth == 0:
                    return [it for it in items if it]
            elif tok.is_punct(",") and depth == 1:
                items.append([])
                continue
            items[-1].append(tok)

    def skip_group(self) -> None:
        """Skip a balanced ``( ... )`` starting at the cursor."""
        self.split_group()

    def split_rest(self) -> list[list[Token]]:
        """Consume the remaining tokens and split them at depth-0 commas (a depth-0 ';' is dropped)."""
        items: list[list[Token]] = [[]]
        depth = 0
        while not self.at_end():
            tok = self.next()
            if tok.is_punct("("):
                depth += 1
            elif tok.is_punct(")"):
                depth -= 1
            elif tok.is_punct(";") and depth == 0:
                continue
            elif tok.is_punct(",") and depth == 0:
                items.append([])
                continue
            items[-1].append(tok)
        return [it for it in items if it]

    def skip_one(self) -> None:
        """Skip one token, or a whole ``( ... )`` group."""
        if self.peek_punct("("):
            self.skip_group()
        elif self.peek_punct(")"):
            raise self.error("unbalanced ')'")
        else:
            self.next()

    def take_until(self, stop: Callable[[TokenCursor], bool]) -> list[Token]:
        """Tokens up to (not including) the first depth-0 position where ``stop(self)`` holds."""
        start = self.i
        while not self.at_end() and not stop(self):
            self.skip_one()
        return self.toks[start : self.i]

    # -- source text and errors

    def text(self, first: Token, last: Token) -> str:
        """The statement's text from ``first`` to ``last`` (both included), as written."""
        return self.sql[first.start : last.end]

    def offset(self) -> int:
        """Where the cursor stands in the statement; past the last token at the end."""
        tok = self.peek()
        if tok is not None:
            return tok.start
        return self.toks[-1].end if self.toks else len(self.sql)

    def error(self, reason: str) -> SqlParseError:
        """An error at the cursor's position, for the caller to raise."""
        return SqlParseError(reason, self.offset())
