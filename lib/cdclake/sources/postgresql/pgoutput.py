"""Decoding of ``pgoutput`` logical replication messages (protocol version 1), as
``pg_logical_slot_peek_binary_changes`` returns them: one message per row, in commit order.

Pure Python with no dependency, so the same code runs on the driver and in Spark's Python workers.
Values stay the text PostgreSQL's output function gave (the ``t`` kind); converting them is the
type mapper's work. Reference: PostgreSQL's "Logical Replication Message Formats".

>>> decode(bytes.fromhex("42") + (0x1996DA0).to_bytes(8, "big") + (0).to_bytes(8, "big") + (809).to_bytes(4, "big"))
Begin(final_lsn=26832288, commit_time_us=0, xid=809)
>>> decode(b"I" + (16384).to_bytes(4, "big") + b"N" + (2).to_bytes(2, "big") + b"t" + (1).to_bytes(4, "big")
...        + b"7" + b"u")
Insert(relid=16384, new=(Value(kind='t', text='7'), Value(kind='u', text=None)))
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass

#: pgoutput's timestamps count microseconds from this instant (PostgreSQL's epoch), UTC
PG_EPOCH = dt.datetime(2000, 1, 1)

NULL, UNCHANGED_TOAST, TEXT, BINARY = "n", "u", "t", "b"


class ProtocolError(ValueError):
    """A message that is not pgoutput protocol 1 (names the message kind and the offset)."""


@dataclass(frozen=True)
class Value:
    """One column of a tuple: ``kind`` ``n`` (NULL), ``u`` (an unchanged TOASTed value: not sent), ``t``
    (``text``: the output function's text) or ``b`` (binary send format, only with the ``binary`` option)."""

    kind: str
    text: str | None = None


@dataclass(frozen=True)
class RelationColumn:
    name: str
    type_oid: int
    typmod: int
    key: bool  # part of the replica identity (every column under REPLICA IDENTITY FULL)


@dataclass(frozen=True)
class Begin:
    final_lsn: int  # the commit record's LSN
    commit_time_us: int
    xid: int


@dataclass(frozen=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int  # the LSN after the commit record: resuming there skips this transaction
    commit_time_us: int


@dataclass(frozen=True)
class Origin:
    lsn: int
    name: str


@dataclass(frozen=True)
class Relation:
    relid: int
    namespace: str
    name: str
    replica_identity: str  # d(efault), n(othing), f(ull), i(ndex)
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True)
class Type:
    oid: int
    namespace: str
    name: str


@dataclass(frozen=True)
class Insert:
    relid: int
    new: tuple[Value, ...]


@dataclass(frozen=True)
class Update:
    relid: int
    old: tuple[Value, ...] | None  # the old key (K) or the whole old row (O, REPLICA IDENTITY FULL), or None
    old_kind: str | None  # "K", "O" or None
    new: tuple[Value, ...]


@dataclass(frozen=True)
class Delete:
    relid: int
    old: tuple[Value, ...]
    old_kind: str  # "K" or "O"


@dataclass(frozen=True)
class Truncate:
    relids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(frozen=True)
class Message:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Decoded = Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | Message


def commit_time(us: int) -> dt.datetime:
    """A pgoutput timestamp as a naive UTC datetime."""
    return PG_EPOCH + dt.timedelta(microseconds=us)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error:
            raise ProtocolError(f"message {self.data[:1]!r} ends at byte {self.pos}: truncated") from None
        self.pos += struct.calcsize(fmt)
        return int(value)

    def byte(self) -> str:
        if self.pos >= len(self.data):
            raise ProtocolError(f"message {self.data[:1]!r} ends at byte {self.pos}: truncated")
        self.pos += 1
        return chr(self.data[self.pos - 1])

    def string(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolError(f"message {self.data[:1]!r}: unterminated string at byte {self.pos}")
        text = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return text

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ProtocolError(f"message {self.data[:1]!r}: {n} bytes at byte {self.pos} run past its end")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(out)

    def tuple(self) -> tuple[Value, ...]:
        out = []
        for _ in range(self.take(">h")):
            kind = self.byte()
            if kind in (NULL, UNCHANGED_TOAST):
                out.append(Value(kind))
            elif kind in (TEXT, BINARY):
                raw = self.raw(self.take(">i"))
                out.append(Value(kind, raw.decode("utf-8") if kind == TEXT else raw.hex()))
            else:
                raise ProtocolError(f"tuple column kind {kind!r} at byte {self.pos - 1} is not n, u, t or b")
        return tuple(out)


def decode(data: bytes | bytearray | memoryview) -> Decoded:
    """One message (the ``data`` column of ``pg_logical_slot_peek_binary_changes``)."""
    r = _Reader(bytes(data))
    kind = r.byte()
    if kind == "B":
        return Begin(r.take(">Q"), r.take(">q"), r.take(">I"))
    if kind == "C":
        return Commit(r.take(">B"), r.take(">Q"), r.take(">Q"), r.take(">q"))
    if kind == "O":
        return Origin(r.take(">Q"), r.string())
    if kind == "R":
        relid, namespace, name, identity = r.take(">I"), r.string(), r.string(), r.byte()
        cols = []
        for _ in range(r.take(">h")):
            flags = r.take(">B")
            cols.append(RelationColumn(r.string(), r.take(">I"), r.take(">i"), bool(flags & 1)))
        return Relation(relid, namespace, name, identity, tuple(cols))
    if kind == "Y":
        return Type(r.take(">I"), r.string(), r.string())
    if kind == "I":
        relid = r.take(">I")
        if r.byte() != "N":
            raise ProtocolError("an Insert message without its new tuple (N)")
        return Insert(relid, r.tuple())
    if kind == "U":
        relid = r.take(">I")
        tag = r.byte()
        old: tuple[Value, ...] | None = None
        old_kind = None
        if tag in ("K", "O"):
            old, old_kind = r.tuple(), tag
            tag = r.byte()
        if tag != "N":
            raise ProtocolError(f"an Update message with {tag!r} where its new tuple (N) belongs")
        return Update(relid, old, old_kind, r.tuple())
    if kind == "D":
        relid = r.take(">I")
        tag = r.byte()
        if tag not in ("K", "O"):
            raise ProtocolError(f"a Delete message with {tag!r} where its old key (K) or row (O) belongs")
        return Delete(relid, r.tuple(), tag)
    if kind == "T":
        n, options = r.take(">I"), r.take(">B")
        return Truncate(tuple(r.take(">I") for _ in range(n)), bool(options & 1), bool(options & 2))
    if kind == "M":
        flags, lsn, prefix = r.take(">B"), r.take(">Q"), r.string()
        return Message(bool(flags & 1), lsn, prefix, r.raw(r.take(">I")))
    raise ProtocolError(f"message kind {kind!r} is not one of pgoutput protocol 1 (B C O R Y I U D T M); "
                        "streamed transactions (S E c A) are never requested")


def lsn_text(lsn: int) -> str:
    """PostgreSQL's form of an LSN.

    >>> lsn_text(0x1996DA0), parse_lsn("0/1996DA0")
    ('0/1996DA0', 26832288)
    """
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)
