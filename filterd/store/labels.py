"""Labels as the store takes and records them: a label with its message's tokens to learn
(`LabelledTokens`), where a label came from (`Origin`), what it did (`Outcome`), and one event
of the audit trail (`Event`). Shared by learning (`filterd.store.learning`), which writes an event
per label it applies, and the audit trail (`filterd.store.audit`), which writes and reads them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

Source = Literal["analyst", "auto"]
SOURCES = ("analyst", "auto")

Outcome = Literal[
    "learned",
    "relabelled",
    "duplicate",
    "held_out",
    "kept_analyst_label",
    "parked",
    "expired",
    "forgotten",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where a label came from, as the audit trail records it: who gave it and why, when filterd
    received it (None: when it is applied), where the feedback record was read (None: not
    from Kafka), and its stage (early or final, if it said). Keyword-only, so that the classes
    built on it keep their positional fields."""

    analyst: str | None = None
    comment: str | None = None
    received_at: datetime | None = None
    kafka_topic: str | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    stage: str | None = None  # the feedback's stage (early, final), as it said


@dataclass(frozen=True)
class LabelledTokens(Origin):
    """A label for a message, with the message's tokens; `ts` is the feedback's own time (the
    holdout's window). The keyword-only fields of `Origin` (analyst, comment, received_at,
    kafka_topic, kafka_partition, kafka_offset) are for the audit trail."""

    message_id: str
    label: str
    tokens: Sequence[str]
    source: Source = "analyst"
    ts: datetime | None = None


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
