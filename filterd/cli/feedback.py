"""`filterd feedback …`: the labels analysts gave, read back from the audit trail, and
forgotten by selector.

`filterd feedback log` prints a model's label events (`filterd.store.audit`), newest first: one
line each, or one JSON object per line with --json. Text that came from feedback records (ids,
labels, names, comments) is shown escaped where it is not printable, so that a comment cannot
move the cursor or recolour an operator's terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime

import click

from filterd.cli.common import (
    OptionError,
    config_option,
    confirmed,
    load_config,
    parse_time,
    quoted,
    shown,
)
from filterd.cli.store import bounded, db_option, model_option, open_model, store_errors
from filterd.service.config import parse_duration
from filterd.store.forgetting import Selector
from filterd.store.labels import Event, Source


class Since(click.ParamType[datetime, str | datetime]):
    """A duration back from now (14d, 12h, 30m) or an ISO 8601 time (UTC unless it says)."""

    name = "DURATION|ISO-TIME"

    def convert(
        self, value: str | datetime, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return datetime.now(UTC) - parse_duration(value)
        except ValueError:
            pass  # not a duration: a time, then
        try:
            return parse_time(value)
        except ValueError:
            raise OptionError(
                f"--since {value!r} is neither a duration (e.g. 14d, 12h, 30m) nor "
                "an ISO time (e.g. 2026-11-21 or 2026-11-21T12:00+01:00)"
            ) from None


@click.group(name="feedback")
def feedback() -> None:
    """The labels given to messages: the audit trail of label events."""


@feedback.command(name="log")
@db_option
@model_option
@click.option("--message", "message_id", metavar="ID", help="Only the events of this message.")
@click.option("--analyst", metavar="NAME", help="Only the labels this analyst gave.")
@click.option(
    "--since",
    type=Since(),
    help="Only events applied since then: 14d, 12h, 30m back "
    "from now, or a time such as 2026-11-21T12:00 (UTC).",
)
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=100,
    show_default=True,
    help="Show at most this many events (the newest); 0: every one.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
def feedback_log(
    url: str | None,
    name: str,
    message_id: str | None,
    analyst: str | None,
    since: datetime | None,
    limit: int,
    as_json: bool,
) -> None:
    """Label events of the model, newest first: when, message, previous label → label, what it
    did (learned, relabelled, duplicate, held_out, kept_analyst_label, parked, expired,
    forgotten), source, analyst and comment."""
    with store_errors():
        events = open_model(url, name).events(
            message_id=message_id,
            analyst=analyst,
            since=since,
            limit=limit or None,
        )
        if as_json:  # streamed: --limit 0 --json may be the whole trail
            for event in events:
                click.echo(json.dumps(as_json_object(event)))
            return
        lines = render(list(events))  # aligned: every line is needed first
    for line in lines:
        click.echo(line)


class Until(Since):
    """A duration back from now or an ISO 8601 time, as --until."""

    def convert(
        self, value: str | datetime, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        try:
            return super().convert(value, param, ctx)
        except OptionError as error:
            raise OptionError(str(error).replace("--since", "--until", 1)) from None


@feedback.command(name="forget")
@db_option
@model_option
@config_option  # for decision.target_class: the database is --db's
@click.option("--analyst", metavar="NAME", help="The labels this analyst gave.")
@click.option("--source", type=click.Choice(["analyst", "auto"]), help="The labels of this source.")
@click.option(
    "--sender",
    metavar="ADDRESS|DOMAIN|ID",
    help="The labels of the messages from this address, domain or phone number.",
)
@click.option(
    "--since",
    type=Since(),
    help="The labels learned (held out: labelled) since then: 14d, 12h, 30m back from now, "
    "or a time such as 2026-11-21T12:00 (UTC).",
)
@click.option("--until", type=Until(), help="… and before then (a duration back or a time).")
@click.option(
    "--message", "message_ids", metavar="ID", multiple=True, help="The label of this message."
)
@click.option(
    "--operator",
    metavar="NAME",
    help="Who forgets, for the audit trail.",
    callback=lambda _ctx, _param, value: bounded(value, "--operator", 200),
)
@click.option("--dry-run", is_flag=True, help="Say what would be forgotten, and forget nothing.")
@click.option("--yes", is_flag=True, help="Forget without asking.")
def feedback_forget(
    url: str | None,
    name: str,
    config_path: str | None,
    analyst: str | None,
    source: Source | None,
    sender: str | None,
    since: datetime | None,
    until: datetime | None,
    message_ids: tuple[str, ...],
    operator: str | None,
    dry_run: bool,
    yes: bool,
) -> None:
    """Unlearn every label the options select (all of them together: an analyst's, a source's,
    a sender's, within a time range, or of given messages), as if it had never been given: its
    contribution to the statistics taken back through the ledger, a held-out label dropped, each
    recorded on the audit trail (outcome forgotten). A message forgotten that is labelled again
    is learned anew."""
    if sender is not None:
        try:
            Selector(sender=sender)
        except ValueError as error:
            raise OptionError(f"--sender: {error}") from None
    try:
        selector = Selector(analyst, source, since, until, message_ids, sender)
    except ValueError:
        raise OptionError(
            "say which labels to forget: --analyst, --source, --sender, --since, --until or "
            "--message"
        ) from None
    config = load_config(config_path)
    target = config.decision.target_class
    length = config.limits.max_token_length
    with store_errors():
        model = open_model(url, name, writes=not dry_run)
        found = model.forget(selector, target, dry_run=True, max_token_length=length)
        what = f"{len(found.learned)} learned and {len(found.held_out)} held-out labels"
        if dry_run or not (found.learned or found.held_out):
            click.echo(f"would forget {what} of model {name!r}" if dry_run else "nothing to forget")
            return
        confirmed(f"Forget {what} of model {name!r} ({selector.describe()})", yes)
        done = model.forget(selector, target, operator=operator, max_token_length=length)
    click.echo(f"forgot {len(done.learned)} learned and {len(done.held_out)} held-out labels")


JSON_FIELDS = (
    "applied_at",
    "message_id",
    "previous_label",
    "label",
    "outcome",
    "stage",
    "source",
    "analyst",
    "comment",
    "received_at",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
)


def as_json_object(event: Event) -> dict[str, object]:
    """The event's fields, in the order of the text line; times in ISO 8601."""
    values = asdict(event)
    return {key: _iso(values[key]) for key in JSON_FIELDS}


def _iso(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def render(events: Sequence[Event]) -> list[str]:
    """One line per event, in aligned columns: time (UTC), message id, previous label → label
    (– for none), outcome (and the label's stage, if it said), source and analyst, comment."""
    before = [shown(event.previous_label) if event.previous_label else "–" for event in events]
    width = max(map(len, before), default=0)
    rows = [
        (
            f"{event.applied_at:%Y-%m-%d %H:%M:%SZ}",
            shown(event.message_id),
            f"{previous.rjust(width)} → {shown(event.label)}",
            event.outcome + (f" ({event.stage})" if event.stage else ""),
            event.source + (f" {shown(event.analyst)}" if event.analyst else ""),
            quoted(event.comment) if event.comment else "",
        )
        for event, previous in zip(events, before)
    ]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(5)]
    return [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[5]]).rstrip()
        for row in rows
    ]
