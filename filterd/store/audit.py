"""The audit trail of label events: every label filterd receives, one append-only row each.

An event says which message was labelled what, what label it had before, who gave the label
(source, analyst, the analyst's comment), when the feedback was received and applied, where it
was read (the Kafka topic, partition and offset of the feedback record; none for `filterd
learn`), and what the label did (`OUTCOMES`). Nothing updates or deletes events but
`filterd.store.expiry.prune_events`, by age, and the deletion of their model.

`apply_feedback` (filterd.store.learning) writes the events of a batch in the batch's own
transaction, so that the trail and the statistics never disagree; `record_events` writes
events that learned nothing (feedback parked until its message is known, or expired).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from sqlalchemy import Connection, Engine, select

from filterd.store.bulk import insert_columns
from filterd.store.schema import LabelEvent

if TYPE_CHECKING:  # not at run time: learning imports this module
    from filterd.store.learning import LabelledTokens

Outcome = Literal[
    "learned", "relabelled", "duplicate", "held_out", "kept_analyst_label", "parked", "expired"
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where a label came from, as the audit trail records it: who gave it and why, when filterd
    received it (None: when it is applied), and where the feedback record was read (None: not
    from Kafka). Keyword-only, so that the classes built on it keep their positional fields."""

    analyst: str | None = None
    comment: str | None = None
    received_at: datetime | None = None
    kafka_topic: str | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None


@dataclass(frozen=True)
class Event(Origin):
    """One label event. `applied_at` is the time it was written: read back, never taken from
    the caller."""

    message_id: str
    label: str
    outcome: Outcome
    previous_label: str | None = None
    source: str = "analyst"
    applied_at: datetime | None = None


def record_events(
    target: Engine | Connection, model: str, events: Sequence[Event], now: datetime | None = None
) -> None:
    """Append `events` to model `model`'s trail: in the caller's transaction when given a
    Connection, else in a transaction of their own. UnknownModel if there is no such model."""
    if isinstance(target, Engine):
        with target.begin() as conn:
            record_events(conn, model, events, now)
        return
    outcomes, previous = [e.outcome for e in events], [e.previous_label for e in events]
    insert_events(
        target, _model_id(target, model), events, outcomes, previous, now or datetime.now(UTC)
    )


def _model_id(conn: Connection, model: str) -> int:
    """The id of model `model`, or UnknownModel."""
    # imported here: learning writes its events through this module
    from filterd.store.learning import find_model_id

    return find_model_id(conn, model)


# the columns whose values are the labels' own, as they are
COPIED = (
    "message_id",
    "label",
    "source",
    "analyst",
    "kafka_topic",
    "kafka_partition",
    "kafka_offset",
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
    and previous label, in one statement (built column by column: `apply_feedback` calls this
    for every batch)."""
    unknown = set(outcomes) - set(OUTCOMES)
    if unknown:  # checked here, not by a CHECK constraint: a new outcome needs no migration
        raise ValueError(f"unknown label event outcome {min(unknown)!r}")
    applied = _utc(now)
    columns: dict[str, list[Any]] = {name: [getattr(x, name) for x in labels] for name in COPIED}
    columns |= {
        "model_id": [model_id] * len(labels),
        "outcome": list(outcomes),
        "previous_label": list(previous),
        "comment": [_storable(x.comment) for x in labels],
        "received_at": [applied if x.received_at is None else _utc(x.received_at) for x in labels],
        "applied_at": [applied] * len(labels),
    }
    insert_columns(conn, LabelEvent.__table__, columns)


def _storable(comment: str | None) -> str | None:
    """The comment as text every database can hold: PostgreSQL text cannot hold NUL, and a
    comment that could never be written would hold up its whole batch of feedback forever."""
    return None if comment is None else comment.replace("\x00", "\N{REPLACEMENT CHARACTER}")


def read_events(
    engine: Engine,
    model: str,
    *,
    message_id: str | None = None,
    analyst: str | None = None,
    since: datetime | None = None,
    limit: int | None = 100,
) -> Iterator[Event]:
    """Model `model`'s events, newest first (the order they were applied in), at most `limit`
    (None: all), only those of `message_id`, by `analyst`, applied at or after `since`, where
    given. They are read as they are iterated, a thousand at a time."""
    columns = [LabelEvent.__table__.c[name] for name in Event.__dataclass_fields__]
    with engine.connect() as conn:
        query = select(*columns).where(LabelEvent.model_id == _model_id(conn, model))
        if message_id is not None:
            query = query.where(LabelEvent.message_id == message_id)
        if analyst is not None:
            query = query.where(LabelEvent.analyst == analyst)
        if since is not None:
            query = query.where(LabelEvent.applied_at >= _utc(since))
        query = query.order_by(LabelEvent.applied_at.desc(), LabelEvent.id.desc()).limit(limit)
        for row in conn.execution_options(yield_per=1000).execute(query):
            values = row._asdict()
            yield Event(
                **{
                    **values,
                    "received_at": _utc(values["received_at"]),
                    "applied_at": _utc(values["applied_at"]),
                }
            )


def _utc(moment: datetime) -> datetime:
    """`moment` in UTC, naive taken as UTC: SQLite keeps times without their offset, so they are
    written in UTC (and come back naive) for comparisons to hold on every database."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
