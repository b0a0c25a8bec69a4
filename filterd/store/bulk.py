"""Many rows in one INSERT (or upsert): the ledger, holdout and prequential writes of a batch.

On PostgreSQL the rows go as one array per column in one statement,

    INSERT INTO t (a, b, …) SELECT * FROM unnest(%b::A[], %b::B[], …) [ON CONFLICT (…) DO UPDATE …]

instead of SQLAlchemy's executemany, which runs one INSERT per row on the server. Elsewhere
(SQLite, in process) executemany is already cheap and is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine.interfaces import DBAPICursor


def driver_cursor(conn: Connection) -> DBAPICursor:
    """A cursor of the driver's own connection (psycopg's, sqlite3's) under `conn`, for the
    statements that bypass SQLAlchemy's per-row parameter handling."""
    driver = conn.connection.driver_connection
    if driver is None:  # only once the connection is closed or invalidated
        raise RuntimeError("the database connection is closed")
    cursor: DBAPICursor = driver.cursor()
    return cursor


def insert_rows(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]],
                conflict: Sequence[str] = (), update: Sequence[str] = ()) -> None:  # fmt: skip
    """INSERT `rows` (mappings with the same keys) into `table`; with `update`, a row whose
    `conflict` columns exist already gets those columns from the new row instead."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        statement = sqlite.insert(table)
        if update:
            statement = statement.on_conflict_do_update(
                index_elements=list(conflict), set_={c: statement.excluded[c] for c in update}
            )
        conn.execute(statement, list(rows))
        return
    columns = list(rows[0])
    # %b: arrays in binary form, whose elements need no quoting or escaping (cheaper to dump)
    arrays = ", ".join(f"%b::{table.c[c].type.compile(dialect=conn.dialect)}[]" for c in columns)
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) SELECT * FROM unnest({arrays})"
    if update:
        sets = ", ".join(f"{c} = excluded.{c}" for c in update)
        sql += f" ON CONFLICT ({', '.join(conflict)}) DO UPDATE SET {sets}"
    driver_cursor(conn).execute(sql, [[row[c] for row in rows] for c in columns])
