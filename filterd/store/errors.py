"""The store's errors: what code outside `filterd.store` catches, never SQLAlchemy's, the
driver's or Alembic's exceptions.

`StoreError`: the database failed an operation; its message is the database's own first line.
Its kinds, for the callers that tell them apart:
- `StoreUnavailable`: the database cannot be reached now (down, a connection lost, a SQLite file
  locked, a pool's wait timed out): worth retrying, which is what the daemon does;
- `SchemaMissing`: the database has no filterd schema, or an older one;
- `ValueRefused`: the database refused a value filterd sent: a fault of filterd's, not an outage;
- `BadDatabaseURL` (`UnsupportedDatabase`): a URL that cannot be used;
- `UnknownRevision`: a schema revision the migrations cannot go to.
`translated()` turns the others' exceptions into these: the methods of `filterd.store.handle`
and the URL functions of `filterd.store.database` run in it.

Errors in what was asked, not of the database: `UnknownModel`, `ModelExists`, `ModelChanged`.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy.exc import ArgumentError, SQLAlchemyError


class StoreError(Exception):
    """The database failed an operation."""


class StoreUnavailable(StoreError):
    """The database cannot be reached now; a later try may succeed."""


class SchemaMissing(StoreError):
    """The database has no filterd schema, or an older one (`filterd db upgrade`)."""


class ValueRefused(StoreError):
    """The database refused a value filterd sent (out of range, malformed)."""


class BadDatabaseURL(StoreError):
    """A database URL that cannot be used: malformed, or of a scheme with no dialect."""


class UnsupportedDatabase(BadDatabaseURL):
    """A URL of a database filterd does not run on, or whose driver is not installed, or a
    SQLite path that cannot work; the message says what to do."""


class UnknownRevision(StoreError):
    """A schema revision the migrations do not know, or cannot go to from here."""


class UnknownModel(LookupError):
    """No model of that name in the store."""

    @classmethod
    def among(cls, name: str, names: Sequence[str]) -> UnknownModel:
        """The error for `name`, listing the models the store holds (`names`), so that a
        mistyped name shows the right one."""
        if not names:
            return cls(
                f"no model named {name!r} in the store, which holds none yet: "
                f"`filterd model create {name}` creates it"
            )
        return cls(
            f"no model named {name!r} in the store (its models: "
            f"{', '.join(map(repr, names))}); `filterd model create NAME` adds one"
        )


class ModelExists(ValueError):
    """A model of that name is in the store already."""


class ModelChanged(RuntimeError):
    """The model changed (a learner wrote to it) since the caller looked: nothing was done."""


def error_detail(error: BaseException) -> str:
    """The first line of a database error's message (the driver's, when there is one)."""
    lines = str(getattr(error, "orig", None) or error).strip().splitlines()
    return lines[0] if lines else error.__class__.__name__


@contextmanager
def translated() -> Iterator[None]:
    """Run the body with SQLAlchemy's, the driver's and Alembic's exceptions raised as the
    store's own (the original as the cause). The store's bulk writes use the driver's cursor
    directly, so the driver's exceptions reach here unwrapped too."""
    try:
        yield
    except ArgumentError as error:  # make_url's, create_engine's: the URL, before any database
        raise BadDatabaseURL(str(error)) from error
    except SQLAlchemyError as error:
        raise _kind(error)(error_detail(error)) from error
    except Exception as error:
        if _is_alembic_command_error(error):
            raise UnknownRevision(str(error)) from error
        if not isinstance(error, _driver_errors()):
            raise
        raise _kind(error)(error_detail(error)) from error


def _is_alembic_command_error(error: Exception) -> bool:
    """Whether Alembic raised it (read from `sys.modules`: Alembic is imported only by a
    migration, and an error of a migration cannot come before its import)."""
    alembic_util = sys.modules.get("alembic.util")
    return alembic_util is not None and isinstance(error, alembic_util.CommandError)


def _driver_errors() -> tuple[type[Exception], ...]:
    """The base exceptions of the database drivers loaded (psycopg only once something uses it)."""
    psycopg = sys.modules.get("psycopg")
    return (sqlite3.Error,) if psycopg is None else (sqlite3.Error, psycopg.Error)


def _kind(error: Exception) -> type[StoreError]:
    """The store's error for a database error. By the DB-API's class names (PEP 249), which
    SQLAlchemy's wrappers share with the drivers' own: an OperationalError, or an error that
    is not a DatabaseError at all (a connection closed, a pool timeout), is an outage."""
    detail = error_detail(error)
    if "no such table" in detail or ("relation" in detail and "does not exist" in detail):
        return SchemaMissing
    kinds = {cls.__name__ for cls in type(error).__mro__}
    if "DataError" in kinds:
        return ValueRefused
    if "OperationalError" in kinds or "DatabaseError" not in kinds:
        return StoreUnavailable
    return StoreError
