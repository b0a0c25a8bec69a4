"""`filterd feedback …`: the labels analysts gave, read back from the audit trail.

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

from filterd.cli.common import OptionError, parse_time, quoted, shown
from filterd.cli.store import db_option, model_option, open_model, store_errors
from filterd.service.config import parse_duration
from filterd.store.labels import Event


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
    did (learned, relabelled, duplicate, held_out, kept_analyst_label, parked, expired), source,
    analyst and comment."""
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
