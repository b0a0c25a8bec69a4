"""What the store's modules share to query by message id, to compare times and to keep tokens:
ids in chunks (`id_chunks`, `among`), times as stored (`as_utc`), tokens packed
(`pack_tokens`: the review queue's and the decided messages') and bytes found in a column's
(`HoldsBytes`)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import overload

from sqlalchemy import (
    ARRAY,
    Boolean,
    ColumnElement,
    Connection,
    LargeBinary,
    String,
    any_,
    bindparam,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import QueryableAttribute
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

CHUNK = 500  # ids per IN (...) query


def id_chunks(conn: Connection, ids: list[str]) -> list[list[str]]:
    """`ids` in pieces for `among`: one piece on PostgreSQL (an array parameter), else CHUNK ids."""
    if conn.dialect.name == "postgresql":
        return [ids] if ids else []
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


def among(column: QueryableAttribute[str], ids: list[str]) -> ColumnElement[bool]:
    """`column IN ids` (SQLite), or `column = ANY(:ids)` with one array parameter (PostgreSQL),
    which plans and binds far faster than thousands of parameters."""
    return (
        column.in_(ids)
        if len(ids) <= CHUNK
        else column == any_(bindparam(None, ids, type_=ARRAY(String)))
    )


class HoldsBytes(FunctionElement[bool]):
    """`HoldsBytes(column, needle)`: whether the bytes of a binary `column` hold `needle`
    somewhere (`instr` on SQLite, `position … in` on PostgreSQL): a filter the database applies
    before rows are read, which a caller that needs the needle at a given place checks again."""

    type = Boolean()
    inherit_cache = True
    name = "holds_bytes"


@compiles(HoldsBytes, "sqlite")
def _holds_bytes_sqlite(element: HoldsBytes, compiler: SQLCompiler, **kw: object) -> str:
    column, needle = element.clauses
    return f"instr({compiler.process(column, **kw)}, {compiler.process(needle, **kw)}) > 0"


@compiles(HoldsBytes, "postgresql")
def _holds_bytes_postgresql(element: HoldsBytes, compiler: SQLCompiler, **kw: object) -> str:
    column, needle = element.clauses
    return f"position({compiler.process(needle, **kw)} in {compiler.process(column, **kw)}) > 0"


def bytes_param(value: bytes) -> ColumnElement[bytes]:
    """`value` as a binary parameter (for `HoldsBytes`)."""
    return bindparam(None, value, type_=LargeBinary())


@overload
def as_utc(moment: datetime) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
@overload
def as_utc(moment: datetime | None) -> datetime | None: ...
def as_utc(moment: datetime | None) -> datetime | None:
    """`moment` in UTC; naive times are taken as UTC (SQLite gives back naive datetimes written as
    UTC), so that time windows compare alike on every database."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# The first byte of a token list kept as it is: no zlib stream starts with it (its first byte
# is 0x08 to 0x78: deflate, and the window's size).
_UNCOMPRESSED = b"\x00"
# Below this many bytes a list is kept as it is: zlib saves little or nothing on it (a card
# payment's four tokens and its id: 64 bytes compressed, 63 as they are), at the cost of
# setting up a compressor for each.
COMPRESS_FROM = 128


def pack_tokens(tokens: Iterable[str]) -> bytes:
    """Tokens as UTF-8, NUL between them (tokens hold no NUL and are never empty), compressed
    by zlib from `COMPRESS_FROM` bytes on, else after one NUL byte; any str is accepted, lone
    surrogates included. `unpack_tokens` reverses it.

    >>> unpack_tokens(pack_tokens(["win", "£1000", "subject:free", "\\ud800"]))
    ['win', '£1000', 'subject:free', '\\ud800']
    >>> long = ["token%d" % i for i in range(100)]
    >>> packed = pack_tokens(long)
    >>> packed[:1] != b"\\x00" and len(packed) < len("\\x00".join(long))
    True
    >>> unpack_tokens(packed) == long
    True
    >>> pack_tokens(["amount~2^5.5"]), unpack_tokens(pack_tokens([]))
    (b'\\x00amount~2^5.5', [])
    """
    raw = "\x00".join(tokens).encode("utf-8", "surrogatepass")
    if len(raw) < COMPRESS_FROM:
        return _UNCOMPRESSED + raw
    # A window and a hash table no larger than the input: with zlib's defaults each call
    # allocates and clears some 260 KB, whatever the input's size.
    wbits = min(15, max(9, len(raw).bit_length()))
    packer = zlib.compressobj(1, zlib.DEFLATED, wbits, min(8, wbits - 7))
    return packer.compress(raw) + packer.flush()


def unpack_tokens(data: bytes) -> list[str]:
    """The tokens `pack_tokens` packed (and those it packed before lists this short were kept
    uncompressed: every list was a zlib stream).

    >>> unpack_tokens(zlib.compress(b"win\\x00cash"))
    ['win', 'cash']
    """
    text = _unpacked(data).decode("utf-8", "surrogatepass")
    return text.split("\x00") if text else []


def packed_count(data: bytes) -> int:
    """How many tokens `pack_tokens` packed in `data`, without decoding them.

    >>> packed_count(pack_tokens(["win", "cash"])), packed_count(pack_tokens([]))
    (2, 0)
    """
    raw = _unpacked(data)
    return raw.count(b"\x00") + 1 if raw else 0


def _unpacked(data: bytes) -> bytes:
    return data[1:] if data[:1] == _UNCOMPRESSED else zlib.decompress(data)
