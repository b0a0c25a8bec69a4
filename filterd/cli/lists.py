"""`filterd lists …`: the allow, block and review lists per entity (`filterd.entities.lists`),
which every scorer reads within seconds: `add`, `remove` (asks first), `show`, `log`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click

from filterd.cli.common import OptionError, confirmed, quoted, shown
from filterd.cli.store import bounded, db_option, model_option, open_model, store_errors
from filterd.entities.lists import LIST_OUTCOMES, ListEntry, outcome_of
from filterd.entities.memory import MAX_VALUE_LENGTH
from filterd.service.config import parse_duration


@click.group(name="lists")
def lists() -> None:
    """Allow, block and review lists per entity (a card, a customer, a terminal, a sender)."""


@lists.command(name="add")
@click.argument("key")
@click.argument("value")
@click.option(
    "--outcome",
    type=click.Choice(LIST_OUTCOMES),
    required=True,
    help="block: decided the target class; allow: decided not the target class (whatever the "
    "score); review: decided by the model and queued for an analyst.",
)
@click.option(
    "--for",
    "duration",
    metavar="DURATION",
    help="Until when: 7d, 12h (default: until removed). `--outcome allow --for 7d` snoozes.",
)
@click.option("--reason", metavar="TEXT", help="Why, on the decisions' evidence and the log.")
@click.option("--analyst", metavar="NAME", help="Who (on the log).")
@db_option
@model_option
def lists_add(
    key: str,
    value: str,
    outcome: str,
    duration: str | None,
    reason: str | None,
    analyst: str | None,
    url: str | None,
    name: str,
) -> None:
    """Put the entity KEY=VALUE (an attribute, dotted if nested, or sender or tenant) on a
    list, replacing its entry if it has one, e.g. `filterd lists add customer c596 --outcome
    block --for 30d --reason "stolen card"`."""
    expires = None
    if duration is not None:
        try:
            expires = datetime.now(UTC) + parse_duration(duration)
        except ValueError as error:
            raise OptionError(f"--for: {error}") from None
    entry = ListEntry(
        _text(key, "KEY"),
        _text(value, "VALUE"),
        outcome_of(outcome),
        expires,
        bounded(reason, "--reason", 2000),
        bounded(analyst, "--analyst", 200),
    )
    with store_errors():
        open_model(url, name, writes=True).put_on_list(entry)
    click.echo(entry.describe())


@lists.command(name="remove")
@click.argument("key")
@click.argument("value")
@click.option("--analyst", metavar="NAME", help="Who (on the log).")
@click.option("--yes", is_flag=True, help="Do not ask first.")
@db_option
@model_option
def lists_remove(
    key: str, value: str, analyst: str | None, yes: bool, url: str | None, name: str
) -> None:
    """Take the entity KEY=VALUE off its list."""
    with store_errors():
        model = open_model(url, name, writes=True)
        (entry,) = model.list_entries(key, value) or (None,)
        if entry is None:
            raise click.ClickException(f"{shown(key)} {shown(value)} is on no list")
        confirmed(f"taking {entry.describe()} off its list", yes)
        model.remove_from_list(key, value, bounded(analyst, "--analyst", 200))
    click.echo(f"removed {entry.describe()}")


@lists.command(name="show")
@click.option("--key", metavar="KEY", help="Only the entities of this key.")
@db_option
@model_option
def lists_show(key: str | None, url: str | None, name: str) -> None:
    """The entities on the lists, one a line; an entry past its expiry says so (it no longer
    applies, and stays until removed)."""
    with store_errors():
        entries = open_model(url, name).list_entries(key)
    now = datetime.now(UTC)
    for entry in entries:
        expired = "" if entry.active(now) else "  (expired)"
        by = f"  by {shown(entry.created_by)}" if entry.created_by else ""
        click.echo(f"{shown(entry.describe())}{by}{expired}")


@lists.command(name="log")
@click.option("--limit", type=click.IntRange(min=0), default=100, help="The newest N (0: all).")
@db_option
@model_option
def lists_log(limit: int, url: str | None, name: str) -> None:
    """Every change to the lists, newest first: who put or took which entity on which list,
    when, and why."""
    with store_errors():
        changes = open_model(url, name).list_changes(limit or None)
    for change in changes:
        until = f" until {change.expires_at:%Y-%m-%d %H:%MZ}" if change.expires_at else ""
        who = f"  {shown(change.analyst)}" if change.analyst else ""
        why = f"  {quoted(change.reason)}" if change.reason else ""
        click.echo(
            f"{change.changed_at:%Y-%m-%d %H:%M:%SZ}  {change.action:<7}  {change.outcome} "
            f"{shown(change.key)} {shown(change.value)}{until}{who}{why}"
        )


def _text(value: str, what: str) -> str:
    if not value or len(value) > MAX_VALUE_LENGTH:
        raise OptionError(f"{what}: 1 to {MAX_VALUE_LENGTH} characters, got {len(value)}")
    return value
