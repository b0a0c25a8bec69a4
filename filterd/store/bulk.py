"""Many rows in one INSERT (or upsert): the ledger, holdout, prequential and label-event writes
of a batch.

`insert_rows` takes a mapping per row, `insert_columns` a list per column. On PostgreSQL the
rows go as one array per column in one statement,

    INSERT INTO t (a, b, …) SELECT * FROM unnest(%b::A[], %b::B[], …) [ON CONFLICT (…) DO UPDATE …]

instead of SQLAlchemy's executemany, which runs one INSERT per row on the server. On SQLite they
go as VALUES lists of up to 4,096 rows (`execute_rows`, `chunk_sizes`), not executemany:
sqlite3 releases the GIL around every statement's step, and in a daemon each release can hand
the GIL to a busy thread for a whole switch interval (a batch of token rows took several times
longer there than alone). The values are converted column by column with the column types' own
bind processors (SQLite keeps times as text, in the format SQLAlchemy reads back; JSON as its
text, encoded by the JSON type's own processor there and here for PostgreSQL, which would take a
list for an array). Either way column defaults are not applied: rows give every column they
fill.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

from sqlalchemy import JSON, Connection, LargeBinary, Table
from sqlalchemy.engine.interfaces import DBAPICursor


def driver_cursor(conn: Connection) -> DBAPICursor:
    """A cursor of the driver's own connection (psycopg's, sqlite3's) under `conn`, for the
    statements that bypass SQLAlchemy's per-row parameter handling."""
    driver = conn.connection.driver_connection
    if driver is None:  # only once the connection is closed or invalidated
        raise RuntimeError("the database connection is closed")
    cursor: DBAPICursor = driver.cursor()
    return cursor


def insert_rows(
    conn: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
) -> None:
    """INSERT `rows` (mappings with the same keys) into `table`; with `update`, a row whose
    `conflict` columns exist already gets those columns from the new row instead."""
    if rows:
        insert_columns(
            conn, table, {c: [row[c] for row in rows] for c in rows[0]}, conflict, update
        )


def insert_columns(
    conn: Connection,
    table: Table,
    columns: Mapping[str, Sequence[Any]],
    conflict: Sequence[str] = (),
    update: Sequence[str] = (),
) -> None:
    """`insert_rows` for rows given column by column: {column: its values, one per row}, all of
    one length. A writer that has its values by column skips building a mapping per row."""
    if not any(columns.values()):
        return
    names = list(columns)
    quote = conn.dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(table.name)} ({', '.join(map(quote, names))}) "
    tail = ""
    if update:
        sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in update)
        tail = f" ON CONFLICT ({', '.join(map(quote, conflict))}) DO UPDATE SET {sets}"
    cursor = driver_cursor(conn)
    if conn.dialect.name == "postgresql":
        # %b: arrays in binary form, whose elements need no quoting or escaping (cheaper to dump)
        arrays = ", ".join(f"%b::{table.c[c].type.compile(dialect=conn.dialect)}[]" for c in names)
        cursor.execute(
            f"{head}SELECT * FROM unnest({arrays}){tail}",
            [
                _json_text(v) if isinstance(table.c[c].type, JSON) else list(v)
                for c, v in columns.items()
            ],
        )
        return
    values = []
    for name, column in columns.items():
        process = table.c[name].type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
        if isinstance(table.c[name].type, LargeBinary):
            process = None  # sqlite3 binds bytes as a BLOB: no memoryview around each
        values.append(column if process is None else _processed(column, process))
    flat = list(chain.from_iterable(zip(*values)))
    execute_rows(
        cursor, f"{head}SELECT * FROM {{rows}} WHERE true{tail}", [quote(c) for c in names], flat
    )


def execute_rows(
    cursor: DBAPICursor,
    sql: str,
    names: Sequence[str],
    flat: Sequence[Any],
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
) -> int:
    """SQLite: run `sql`, in which `{rows}` stands for a table of the columns `names` (its rows
    given one after another in `flat`), once per chunk of rows bound as one VALUES list, with
    the parameters `before` and `after` those of `sql` around `{rows}`; returns the number of
    rows the statements changed.

    >>> import sqlite3
    >>> cursor = sqlite3.connect(":memory:").cursor()
    >>> _ = cursor.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    >>> execute_rows(cursor, "INSERT INTO t SELECT a + ?, b FROM {rows}", ["a", "b"],
    ...              [1, "x", 2, "y", 3, "z"], before=[10])
    3
    >>> cursor.execute("SELECT a, b FROM t").fetchall()
    [(11, 'x'), (12, 'y'), (13, 'z')]
    """
    width = len(names)
    columns = ", ".join(f"column{i + 1} AS {name}" for i, name in enumerate(names))
    row = f"({', '.join('?' * width)})"
    changed = start = 0
    for size in chunk_sizes(len(flat) // width, width, len(before) + len(after)):
        rows = f"(SELECT {columns} FROM (VALUES {', '.join([row] * size)})) AS u"
        chunk = flat[start * width : (start + size) * width]
        cursor.execute(sql.format(rows=rows), (*before, *chunk, *after))
        changed += cursor.rowcount
        start += size
    return changed


# SQLite's default limit on a statement's parameters (SQLITE_MAX_VARIABLE_NUMBER, since 3.32)
SQLITE_VARIABLES = 32_766


def chunk_sizes(rows: int, width: int, others: int = 0) -> list[int]:
    """Statement sizes, in rows, for `rows` rows of `width` values besides `others` parameters:
    powers of two, largest first, each as large as SQLite's parameter limit allows, so that a
    few statement shapes recur and sqlite3's statement cache saves preparing them again.

    >>> chunk_sizes(10_000, 5, 3)
    [4096, 4096, 1024, 512, 256, 16]
    """
    size = 1 << ((SQLITE_VARIABLES - others) // width).bit_length() - 1
    sizes = []
    while rows:
        while size > rows:
            size //= 2
        sizes.append(size)
        rows -= size
    return sizes


def _json_text(column: Sequence[Any]) -> list[str | None]:
    """JSON values as text, which PostgreSQL casts to json (a list would be sent as an array)."""
    return [None if v is None else json.dumps(v) for v in column]


def _processed(column: Sequence[Any], process: Callable[[Any], Any]) -> list[Any]:
    """`process` applied to each value, once per run of the same object: a batch's time (SQLite's
    processor formats a datetime as text in ≈4 µs) is one object repeated down its column."""
    out: list[Any] = []
    last: object = _NOTHING
    done = None
    for value in column:
        if value is not last:
            last, done = value, process(value)
        out.append(done)
    return out


_NOTHING = object()
