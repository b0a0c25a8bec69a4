"""The audit trail of label events: every label filterd receives, one append-only row each.

An event (`filterd.store.labels.Event`) says which message was labelled what, what label it had
before, who gave the label (source, analyst, the analyst's comment), when the feedback was
received and applied, where it was read (the Kafka topic, partition and offset of the feedback
record; none for `filterd learn`), and what the label did (`OUTCOMES`). Nothing updates or
deletes events but `filterd.store.expiry.prune_events`, by age, and the deletion of their model.

Learning (`filterd.store.learning`) writes the events of a batch in the batch's own transaction,
so that the trail and the statistics never disagree; `record_events` writes events that learned
nothing (feedback parked until its message is known, or expired).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, select

from filterd.store.bulk import insert_columns
from filterd.store.labels import OUTCOMES, Event, LabelledTokens, Outcome
from filterd.store.schema import LabelEvent
from filterd.store.sql import among, as_utc, id_chunks


def record_events(
    conn: Connection, model_id: int, events: Sequence[Event], now: datetime | None = None
) -> None:
    """Append `events` to the trail of the model with id `model_id`, in the caller's
    transaction."""
    outcomes, previous = [e.outcome for e in events], [e.previous_label for e in events]
    insert_events(conn, model_id, events, outcomes, previous, now or datetime.now(UTC))


# the columns whose values are the labels' own, as they are
COPIED = (
    "message_id",
    "label",
    "source",
    "analyst",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
    "stage",
)


def insert_events(
    conn: Connection,
    model_id: int,
    labels: Sequence[Event | LabelledTokens],
    outcomes: Sequence[Outcome],
    previous: Sequence[str | None],
    now: datetime,
) -> None:
    """Append one event per label to the trail of the model with id `model_id`, with its outcome
    and previous label, in one statement (built column by column: learning calls this for every
    batch)."""
    unknown = set(outcomes) - set(OUTCOMES)
    if unknown:  # checked here, not by a CHECK constraint: a new outcome needs no migration
        raise ValueError(f"unknown label event outcome {min(unknown)!r}")
    applied = as_utc(now)
    columns: dict[str, list[Any]] = {name: [getattr(x, name) for x in labels] for name in COPIED}
    columns |= {
        "model_id": [model_id] * len(labels),
        "outcome": list(outcomes),
        "previous_label": list(previous),
        "comment": [_storable(x.comment) for x in labels],
        "received_at": [
            applied if x.received_at is None else as_utc(x.received_at) for x in labels
        ],
        "applied_at": [applied] * len(labels),
    }
    insert_columns(conn, LabelEvent.__table__, columns)


def _storable(comment: str | None) -> str | None:
    """The comment as text every database can hold: PostgreSQL text cannot hold NUL, and a
    comment that could never be written would hold up its whole batch of feedback forever."""
    return None if comment is None else comment.replace("\x00", "\N{REPLACEMENT CHARACTER}")


def latest_labels(conn: Connection, model_id: int, message_ids: Sequence[str]) -> dict[str, str]:
    """The label last received for each of `message_ids` that has one (by message id)."""
    out: dict[str, tuple[int, str]] = {}
    for chunk in id_chunks(conn, list(message_ids)):
        query = select(LabelEvent.id, LabelEvent.message_id, LabelEvent.label).where(
            LabelEvent.model_id == model_id, among(LabelEvent.message_id, chunk)
        )
        for event_id, message_id, label in conn.execute(query):
            if message_id not in out or out[message_id][0] < event_id:
                out[message_id] = (event_id, label)
    return {m: label for m, (_, label) in out.items()}


def read_events(
    engine: Engine,
    model_id: int,
    *,
    message_id: str | None = None,
    analyst: str | None = None,
    since: datetime | None = None,
    limit: int | None = 100,
) -> Iterator[Event]:
    """The events of the model with id `model_id`, newest first (the order they were applied
    in), at most `limit` (None: all), only those of `message_id`, by `analyst`, applied at or
    after `since`, where given. They are read as they are iterated, a thousand at a time."""
    columns = [LabelEvent.__table__.c[name] for name in Event.__dataclass_fields__]
    with engine.connect() as conn:
        query = select(*columns).where(LabelEvent.model_id == model_id)
        if message_id is not None:
            query = query.where(LabelEvent.message_id == message_id)
        if analyst is not None:
            query = query.where(LabelEvent.analyst == analyst)
        if since is not None:
            query = query.where(LabelEvent.applied_at >= as_utc(since))
        query = query.order_by(LabelEvent.applied_at.desc(), LabelEvent.id.desc()).limit(limit)
        for row in conn.execution_options(yield_per=1000).execute(query):
            values = row._asdict()
            yield Event(
                **{
                    **values,
                    "received_at": as_utc(values["received_at"]),
                    "applied_at": as_utc(values["applied_at"]),
                }
            )
