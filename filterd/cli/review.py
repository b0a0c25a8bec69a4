"""`filterd review …`: the review queue, decisions queued for an analyst's label.

`filterd review list` prints the queue of a model, most informative first (the smallest
|score − τ|), `filterd review show ID` one item with its label history from the audit trail,
and `filterd review label ID LABEL` publishes the analyst's label to the feedback topic, naming
the message by id: the learner learns it from the tokens the queue kept. Text that came from
messages (subjects, senders, excerpts, attributes) is shown escaped where it is not printable,
so that a message cannot move the cursor or recolour an analyst's terminal.
"""

from __future__ import annotations

import getpass
import json
from datetime import datetime
from typing import Any, cast

import click
import msgspec

from filterd.cli.common import OptionError, broker_override, config_option, load_config, shown
from filterd.cli.feedback import as_json_object, render
from filterd.cli.store import open_model, store_errors
from filterd.kafka.producer import PublishError
from filterd.kafka.publisher import publisher_of
from filterd.service.config import Config
from filterd.service.records import Feedback, RecordError, decode, encode
from filterd.service.review import REASONS, ReviewItem
from filterd.store.review import ORDERS, Order

LINE_TEXT = 80  # characters of subject or excerpt on a line of `review list`

db_override = click.option(
    "--db", "database__url", metavar="URL", help="Database URL (overrides database.url)."
)
model_override = click.option(
    "--model", "model__name", metavar="NAME", help="Model name (overrides model.name)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="JSON instead of text.")


@click.group(name="review")
def review() -> None:
    """The review queue: decisions near the threshold, and a random share of all, queued for an
    analyst's label."""


@review.command(name="list")
@config_option
@db_override
@model_override
@click.option("--reason", type=click.Choice(REASONS), help="Only items queued for this reason.")
@click.option(
    "--all", "include_labelled", is_flag=True, help="Labelled items too, with their label."
)
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default="closest",
    show_default=True,
    help="closest: the smallest |score − τ| first (the most informative); newest: the "
    "last queued first.",
)
@click.option(
    "--limit",
    type=click.IntRange(0),
    default=50,
    show_default=True,
    help="Show at most this many items; 0: every one.",
)
@json_option
def review_list(
    config_path: str | None,
    reason: str | None,
    include_labelled: bool,
    order: str,
    limit: int,
    as_json: bool,
    **overrides: object,
) -> None:
    """Queued items of the model: id, when queued, why, score vs τ, the decision's label, the
    label given since (with --all), and the subject or the start of the text."""
    config = load_config(config_path, **overrides)
    with store_errors():
        entries = open_model(config.database.url, config.model.name).review_items(
            limit=limit or None,
            reason=reason,
            include_labelled=include_labelled,
            order=cast(Order, order),
        )
    if not entries:
        which = f" (--reason {reason})" if reason else ""
        waiting = "" if include_labelled else " waiting for a label"
        click.echo(
            f"no items{waiting} in the review queue of model {config.model.name!r}{which}",
            err=as_json,
        )
    for entry in entries:
        click.echo(json.dumps(entry_object(entry)) if as_json else line(entry, include_labelled))


def line(entry: ReviewItem, include_labelled: bool) -> str:
    """One line of `review list`."""
    cells = [
        str(entry.id),
        f"{entry.queued_at:%Y-%m-%d %H:%M}Z",
        entry.reason.ljust(6),
        f"{entry.score:+.4f} vs τ {entry.threshold:+.4f}",
        shown(entry.label),
    ]
    if include_labelled:
        cells.append(f"labelled {shown(entry.labelled)}" if entry.labelled else "unlabelled")
    cells.append(one_line(entry.subject or entry.excerpt or "", LINE_TEXT))
    return "  ".join(cells).rstrip()


@review.command(name="show")
@config_option
@db_override
@model_override
@click.argument("item_id", metavar="ID", type=int)
@json_option
def review_show(config_path: str | None, item_id: int, as_json: bool, **overrides: object) -> None:
    """Everything the queue holds of item ID, and the labels its message was given (the audit
    trail, newest first)."""
    config = load_config(config_path, **overrides)
    with store_errors():
        model = open_model(config.database.url, config.model.name)
        entry = _found(model.review_item(item_id), item_id, config)
        events = list(model.events(message_id=entry.message_id, limit=None))
    if as_json:
        shown_object = entry_object(entry) | {"history": [as_json_object(e) for e in events]}
        click.echo(json.dumps(shown_object, indent=2))
        return
    for text in details(entry):
        click.echo(text)
    click.echo("history:" if events else "history: no label yet")
    for text in render(events):
        click.echo("  " + text)


def details(entry: ReviewItem) -> list[str]:
    """The item as lines of `review show`: fields, the explanation, the excerpt (indented)."""
    versions = f"model version {entry.model_version}, threshold version {entry.threshold_version}"
    lines = [
        f"item        {entry.id}",
        f"message     {shown(entry.message_id)}",
        f"queued      {entry.queued_at:%Y-%m-%d %H:%M:%S}Z ({entry.reason})",
        f"decision    {shown(entry.label)}: score {entry.score:+.4f} vs τ {entry.threshold:+.4f} "
        f"({versions}){', truncated' if entry.truncated else ''}",
        f"labelled    {shown(entry.labelled) if entry.labelled else '–'}",
        f"subject     {shown(entry.subject) if entry.subject is not None else '–'}",
        f"sender      {shown(entry.sender) if entry.sender is not None else '–'}",
        f"attributes  {json.dumps(entry.attributes) if entry.attributes is not None else '–'}",
        f"tokens      {entry.token_count}",
        "explanation "
        + (
            ", ".join(f"{shown(token)} {weight:+.4f}" for token, weight in entry.explanation) or "–"
        ),
    ]
    lines.append("excerpt" + ("" if entry.excerpt else "     –"))
    lines += ["  " + shown(text) for text in (entry.excerpt or "").splitlines()]
    return lines


@review.command(name="label")
@config_option
@db_override
@model_override
@broker_override
@click.argument("item_id", metavar="ID", type=int)
@click.argument("label")
@click.option("--analyst", metavar="NAME", help="Who gives the label (default: your login name).")
@click.option("--comment", metavar="TEXT", help="A note for the audit trail.")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1),
    default=5.0,
    show_default=True,
    help="Seconds to wait for the broker's acknowledgement.",
)
def review_label(
    config_path: str | None,
    item_id: int,
    label: str,
    analyst: str | None,
    comment: str | None,
    timeout: float,
    **overrides: object,
) -> None:
    """Label item ID as LABEL: a feedback record naming its message by id, published to the
    feedback topic (the learner learns it from the tokens the queue kept)."""
    config = load_config(config_path, **overrides)
    labels = config.model.labels
    if labels and label not in labels:
        raise OptionError(f"label {label!r} is not one of {', '.join(labels)} (model.labels)")
    with store_errors():
        model = open_model(config.database.url, config.model.name)
        entry = _found(model.review_item(item_id), item_id, config)
    record = checked_feedback(entry.message_id, label, analyst or _login(), comment)
    servers = config.kafka.get("bootstrap_servers")
    publisher = publisher_of(config.kafka, timeout=timeout)
    try:
        publisher.send(config.topics.feedback, entry.message_id, encode(record))
        publisher.flush()
    except PublishError as error:
        raise click.ClickException(
            f"could not publish to the brokers {servers} (kafka.bootstrap_servers): {error}"
        ) from None
    finally:
        publisher.close()
    who = f" by {shown(record.analyst)}" if record.analyst else ""
    click.echo(
        f"sent {shown(label)}{who} for item {entry.id} (message {shown(entry.message_id)}) "
        f"to {config.topics.feedback}"
    )


def checked_feedback(
    message_id: str, label: str, analyst: str | None, comment: str | None
) -> Feedback:
    """The feedback record, validated as the learner will validate it, or an OptionError."""
    record = Feedback(
        message_id=message_id, label=label, source="analyst", analyst=analyst, comment=comment
    )
    try:
        return decode(encode(record), Feedback)
    except RecordError as error:
        raise OptionError(str(error)) from None


def _login() -> str | None:
    """The login name ($USER, $LOGNAME, else the account's), None if there is none."""
    try:
        return getpass.getuser()
    except OSError:  # no such variable, and a uid without an account
        return None


def _found(entry: ReviewItem | None, item_id: int, config: Config) -> ReviewItem:
    if entry is None:
        raise click.ClickException(
            f"no review item {item_id} in the queue of model {config.model.name!r}"
        )
    return entry


def entry_object(entry: ReviewItem) -> dict[str, Any]:
    """The item as JSON: its fields as the HTTP API gives them, times in ISO 8601, tokens only
    when read."""
    values = msgspec.structs.asdict(entry)
    if values["tokens"] is None:
        del values["tokens"]
    return {
        key: value.isoformat() if isinstance(value, datetime) else value
        for key, value in values.items()
    }


def one_line(text: str, width: int) -> str:
    """`text` on one line: whitespace runs as one space, at most `width` characters (… if cut),
    escaped if not printable."""
    flat = " ".join(text[: 4 * width].split())
    cut = flat if len(flat) <= width else flat[: width - 1] + "…"
    return shown(cut)
