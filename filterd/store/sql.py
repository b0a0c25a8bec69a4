"""What the store's modules share to query by message id and to compare times: ids in chunks
(`id_chunks`, `among`) and times as stored (`as_utc`)."""

from __future__ import annotations

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
