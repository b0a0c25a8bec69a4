"""What the store's modules share to query by message id, to compare times and to keep tokens:
ids in chunks (`id_chunks`, `among`), times as stored (`as_utc`) and tokens packed
(`pack_tokens`: the review queue's and the decided messages')."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import overload

from sqlalchemy import ARRAY, ColumnElement, Connection, String, any_, bindparam
from sqlalchemy.orm import QueryableAttribute

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


def pack_tokens(tokens: Iterable[str]) -> bytes:
    """Tokens as zlib-compressed UTF-8, NUL between them (tokens hold no NUL and are never
    empty); any str is accepted, lone surrogates included. `unpack_tokens` reverses it.

    >>> unpack_tokens(pack_tokens(["win", "£1000", "subject:free", "\\ud800"]))
    ['win', '£1000', 'subject:free', '\\ud800']
    >>> unpack_tokens(pack_tokens([]))
    []
    """
    return zlib.compress("\x00".join(tokens).encode("utf-8", "surrogatepass"), 1)


def unpack_tokens(data: bytes) -> list[str]:
    """The tokens `pack_tokens` packed."""
    text = zlib.decompress(data).decode("utf-8", "surrogatepass")
    return text.split("\x00") if text else []
