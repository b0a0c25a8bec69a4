"""Connecting to the store and migrating its schema (Alembic: the top-level `migrations/`, shipped
in the package as `filterd.migrations`).

The URL comes from the caller (CLI flag), else the environment variable FILTERD_DATABASE_URL,
else the default SQLite file. `postgresql://` URLs use psycopg 3 (`pip install filterd[postgres]`).
A URL that cannot be used is a `BadDatabaseURL` (`UnsupportedDatabase`: one that says what to
do). Opening an engine (`connect`) touches nothing: a SQLite file's folder is made at the first
connection. Code outside the store migrates through `filterd.store.handle.Store`.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Dialect, Engine, column, create_engine, event, inspect, select, table
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import ConnectionPoolEntry

from filterd.store.errors import BadDatabaseURL, StoreError, UnsupportedDatabase

if TYPE_CHECKING:
    from alembic.config import Config

DEFAULT_URL = "sqlite:///var/filterd.db"
URL_VARIABLE = "FILTERD_DATABASE_URL"
SUPPORTED_BACKENDS = ("sqlite", "postgresql")
# where the package's migrations are, in a checkout (editable install) or an installed wheel
MIGRATIONS = Path(str(importlib.resources.files("filterd.migrations")))


def database_url(url: str | None = None) -> str:
    """The URL to use: `url`, else $FILTERD_DATABASE_URL, else the default SQLite file; a
    relative SQLite path made absolute (it is relative to the working directory, which logs and
    messages should not leave to guessing). BadDatabaseURL (`UnsupportedDatabase`) says what is
    wrong with a URL that cannot be used."""
    url = url or os.environ.get(URL_VARIABLE) or DEFAULT_URL
    parsed = _parsed(url)
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise UnsupportedDatabase(
            f"unsupported database URL scheme {backend!r}: filterd supports "
            f"{' and '.join(f'{b}://' for b in SUPPORTED_BACKENDS)}"
        )
    if backend == "postgresql" and not _installed("psycopg"):
        raise UnsupportedDatabase(
            "PostgreSQL needs the psycopg driver, which is not installed: "
            "pip install 'filterd[postgres]'"
        )
    if parsed.drivername in ("postgresql", "postgres"):
        url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    elif (
        parsed.get_backend_name() == "sqlite"
        and parsed.database not in (None, "", ":memory:")
        and not Path(parsed.database).is_absolute()
    ):
        absolute = str(Path(parsed.database).resolve())
        url = parsed.set(database=absolute).render_as_string(hide_password=False)
    return url


def _parsed(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as error:
        raise BadDatabaseURL(str(error)) from None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules without a spec: imported but unusable
        return False


def sqlite_file(url: str | None = None) -> Path | None:
    """The file of a SQLite URL, absolute; None for PostgreSQL and in-memory SQLite."""
    parsed = _parsed(database_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(str(parsed.database))


def check_file(url: str | None = None, *, missing_ok: bool = False, writes: bool = False) -> None:
    """A SQLite store's file checked before anything opens it, so that a mistyped path neither
    creates a file nor waits as if for an outage: UnsupportedDatabase naming the path when it
    is a folder, not a SQLite database, cannot be read (`writes`: or written), or does not
    exist (unless `missing_ok`). Nothing for PostgreSQL."""
    path = sqlite_file(url)
    if path is None:
        return
    if path.is_dir():
        raise UnsupportedDatabase(f"{path}: a folder, not a SQLite database file")
    if not path.exists():
        if missing_ok:
            return
        raise UnsupportedDatabase(
            f"no SQLite database at {path}: check the path (`filterd db upgrade` creates a store)"
        )
    if not os.access(path, os.R_OK | (os.W_OK if writes else 0)):
        raise UnsupportedDatabase(
            f"{path}: permission denied (filterd needs to read {'and write ' if writes else ''}it)"
        )
    # Read through SQLite, not open() and close(): closing any descriptor of the file would drop
    # the POSIX locks the process's other connections to it hold (sqlite.org/howtocorrupt.html).
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as probe:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        # anything else (a lock, a missing -shm) is for the store's own connection to meet
        if getattr(error, "sqlite_errorname", "") == "SQLITE_NOTADB":
            raise UnsupportedDatabase(f"{path}: not a SQLite database file") from None


WAL_CHECKPOINT_PAGES = 10_000


def connect(url: str | None = None) -> Engine:
    """An engine for the store; SQLite gets WAL, NORMAL sync and enforced foreign keys, and its
    file's folder made at the first connection (UnsupportedDatabase if it cannot be)."""
    url = database_url(url)
    parsed = _parsed(url)
    try:
        if parsed.get_backend_name() != "sqlite":
            return create_engine(url, pool_pre_ping=True)
        engine = create_engine(url)
    except ArgumentError as error:  # a driver SQLAlchemy has no dialect for
        raise BadDatabaseURL(str(error)) from None
    path = sqlite_file(url)
    if path is not None:
        folder = path.parent

        @event.listens_for(engine, "do_connect")
        def _folder(_dialect: Dialect, _record: ConnectionPoolEntry, *_: Any) -> None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise UnsupportedDatabase(
                    f"cannot create {folder} for the SQLite store ({error.strerror})"
                ) from None

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        # A learner's batch dirties pages all over token_stats; a checkpoint every 1,000 pages
        # (SQLite's default) copies them back to the database file after nearly every commit,
        # about half of a learner's time. Every 10,000 pages (about 40 MB of WAL), a page
        # rewritten by several batches is copied once.
        cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        cursor.close()

    return engine


# Alembic is imported where a migration runs, not at the top: importing it costs every command
# (the daemon's start, a one-line error) a third of a second.


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database_url(url).replace("%", "%%"))
    return config


def upgrade(url: str | None = None, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def downgrade(url: str | None, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


VERSION_TABLE = "alembic_version"
"""Where Alembic keeps the schema's revision (read here without importing Alembic)."""


def current(engine: Engine) -> str | None:
    """The schema revision of the database (None when it has never been migrated, or is a
    SQLite file that does not exist: asking does not create it)."""
    path = sqlite_file(engine.url.render_as_string(hide_password=False))
    if path is not None and not path.exists():
        return None
    with engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        versions = (
            connection.execute(select(table(VERSION_TABLE, column("version_num")).c.version_num))
            .scalars()
            .all()
        )
    if len(versions) > 1:
        raise StoreError(f"the schema has several revisions at once: {', '.join(versions)}")
    return versions[0] if versions else None


def revisions() -> list[str]:
    """The schema revisions this version of filterd knows, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [r.revision for r in script.walk_revisions()][::-1]


def head() -> str | None:
    """The newest schema revision this version of filterd knows (None only if `migrations/`
    held no revision)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
