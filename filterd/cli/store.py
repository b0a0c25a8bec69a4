"""The store as the commands reach it: `store_errors` (the database's problems as one-line
errors), `open_store` and `open_model` (a mistyped SQLite path creates nothing), the options
`--db`, `--model` and `--min-docs`, and the helpers that show what the store holds (`when`,
`fraction`, `delivered_text`) or bound what goes into it (`bounded`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

import click

from filterd.cli.common import OptionError, setting_type
from filterd.service.config import DEFAULTS
from filterd.store import database
from filterd.store.errors import (
    BadDatabaseURL,
    ModelChanged,
    SchemaMissing,
    StoreError,
    UnknownModel,
    UnknownRevision,
    UnsupportedDatabase,
)
from filterd.store.handle import ModelStore, Store
from filterd.store.sql import as_utc

if TYPE_CHECKING:
    from filterd.store.drift import Delivered


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Problems with the database, its schema migrations or a file as one-line errors."""
    try:
        yield
    # a scheme filterd does not run on, a missing driver (psycopg), a SQLite directory that
    # cannot be made: the message says what to do
    except UnsupportedDatabase as error:
        raise click.ClickException(str(error)) from None
    except BadDatabaseURL as error:  # a malformed URL, or a scheme SQLAlchemy has no dialect for
        raise click.ClickException(f"bad database URL: {error}") from None
    except SchemaMissing:
        raise click.ClickException(
            "the database has no filterd schema, or an older one: run `filterd db upgrade`"
        ) from None
    except UnknownRevision as error:  # an unknown revision, a downgrade that cannot be
        raise click.ClickException(f"{error} (revisions: {_revisions()})") from None
    except StoreError as error:
        raise click.ClickException(f"database error: {error}") from None
    except (UnknownModel, ModelChanged, ValueError) as error:
        raise click.ClickException(str(error.args[0] if error.args else error)) from None
    except OSError as error:  # an export file that cannot be read or written…
        where = f"{error.filename}: " if error.filename else ""
        raise click.ClickException(where + (error.strerror or str(error))) from None


def open_store(url: str | None, *, writes: bool = False) -> Store:
    """The store at `url`, checked first (`database.check_file`: a SQLite file must exist, so
    that a mistyped path creates nothing). Within `store_errors()`."""
    database.check_file(url, writes=writes)
    return Store.open(url)


def open_model(url: str | None, name: str, *, writes: bool = False) -> ModelStore:
    """Model `name` of the store at `url` (`open_store`); an UnknownModel that lists the store's
    models if there is none. Within `store_errors()`."""
    return open_store(url, writes=writes).model(name)


def _revisions() -> str:
    """The schema revisions this filterd knows, oldest first, for an error message."""
    known = Store.revisions()
    return ", ".join(["base", *known[:-1], f"{known[-1]} (head)"] if known else ["base"])


def _checked_url(_ctx: click.Context, _param: click.Parameter, url: str | None) -> str | None:
    """--db (or $FILTERD_DATABASE_URL, or the default) checked before anything connects: a
    scheme filterd supports, or one line saying which are."""
    with store_errors():
        database.database_url(url)
    return url


DB_HELP = f"Database URL (default: ${database.URL_VARIABLE}, else {database.DEFAULT_URL})."
db_option = click.option("--db", "url", metavar="URL", help=DB_HELP, callback=_checked_url)
model_option = click.option(
    "--model", "name", default=DEFAULTS.model.name, show_default=True, help="Model name."
)
min_docs_option = click.option(
    "--min-docs",
    type=setting_type("model.min_docs"),
    default=DEFAULTS.model.min_docs,
    show_default=True,
    help="Learned documents each class needs before the model decides.",
)


def bounded(value: str | None, option: str, most: int) -> str | None:
    """`value` if it fits a column of `most` characters, else a one-line error."""
    if value is not None and len(value) > most:
        raise OptionError(f"{option}: at most {most} characters, not {len(value)}")
    return value


def when(moment: datetime) -> str:
    """`moment` in UTC, to the second: "2026-01-31 12:00:00 UTC"."""
    return f"{as_utc(moment):%Y-%m-%d %H:%M:%S} UTC"


def fraction(value: float | None) -> str:
    """A measure to four decimals, or "n/a" when there is none."""
    return "n/a" if value is None else f"{value:.4f}"


def delivered_text(
    d: Delivered, target: str, number: Callable[[float | None], str] = fraction
) -> str:
    """Recall of the target items and specificity of the others, with their counts."""
    recall = (
        f"recall {number(d.recall)} of {d.n_pos:,} {target} ({d.missed:,} missed)"
        if d.n_pos
        else f"no {target} yet"
    )
    kept = f"specificity {number(d.specificity)} of {d.n_neg:,}" if d.n_neg else "no others yet"
    return f"{recall}, {kept}"
