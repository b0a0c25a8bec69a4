"""Feedback parked until its message can be resolved (`ParkedFeedback`).

Feedback that names a message by id, when no learner can find the message yet (not decided
yet, or decided before the last restart and no longer readable), is parked here with the
feedback record as received. Learners claim the rows that are due (`claim_due`), try them
again, and delete them once applied or dead-lettered (`release`). A newer label for the same
message replaces the parked one (`park`), and feedback applied with the message's content
deletes it (`unpark`): the parked label is older, and must not override the newer one later.

Every write here takes the model's row lock first, as learning does, so that learners
of one model queue rather than deadlock over the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, and_, delete, func, or_, select, update

from filterd.store.bulk import insert_columns
from filterd.store.models import ModelRef, lock_model
from filterd.store.schema import ParkedFeedback
from filterd.store.sql import among, as_utc, id_chunks


@dataclass(frozen=True)
class Parked:
    """A feedback record waiting for its message: its value and where it was read.
    `parked_at` and `attempts` are the store's (set when read back)."""

    message_id: str
    payload: bytes
    kafka_topic: str | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    received_at: datetime | None = None
    parked_at: datetime | None = None
    attempts: int = 0


def park(
    conn: Connection, model_id: int, parked: Sequence[Parked], now: datetime, next_try_at: datetime
) -> None:
    """Park `parked` in the caller's transaction (which holds the model's lock); a message parked
    already gets the new record, its clock restarted. Of one id twice in `parked`, the last
    counts."""
    latest = list({p.message_id: p for p in parked}.values())
    now, due = as_utc(now), as_utc(next_try_at)
    insert_columns(
        conn,
        ParkedFeedback.__table__,
        {
            "model_id": [model_id] * len(latest),
            "message_id": [p.message_id for p in latest],
            "payload": [p.payload for p in latest],
            "kafka_topic": [p.kafka_topic for p in latest],
            "kafka_partition": [p.kafka_partition for p in latest],
            "kafka_offset": [p.kafka_offset for p in latest],
            "received_at": [as_utc(p.received_at) for p in latest],
            "parked_at": [now] * len(latest),
            "next_try_at": [due] * len(latest),
            "attempts": [0] * len(latest),
        },
        conflict=("model_id", "message_id"),
        update=(
            "payload",
            "kafka_topic",
            "kafka_partition",
            "kafka_offset",
            "received_at",
            "parked_at",
            "next_try_at",
            "attempts",
        ),
    )


def unpark(conn: Connection, model_id: int, message_ids: Sequence[str]) -> int:
    """Delete what is parked for `message_ids` (their newer feedback was applied); returns how
    many rows. Costs one indexed probe when nothing of the model is parked, the usual case."""
    if not message_ids:
        return 0
    anything = conn.execute(
        select(ParkedFeedback.message_id).where(ParkedFeedback.model_id == model_id).limit(1)
    ).first()
    if anything is None:
        return 0
    deleted = 0
    for chunk in id_chunks(conn, list(dict.fromkeys(message_ids))):
        deleted += conn.execute(
            delete(ParkedFeedback).where(
                ParkedFeedback.model_id == model_id, among(ParkedFeedback.message_id, chunk)
            )
        ).rowcount
    return deleted


def claim_due(
    engine: Engine, model: ModelRef, now: datetime, next_try_at: datetime, limit: int
) -> list[Parked]:
    """Up to `limit` parked records due by `now` (oldest first), each rescheduled to
    `next_try_at` with one more attempt in the same transaction: another learner that looks
    before that time does not take them too."""
    with engine.begin() as conn:
        lock_model(conn, model)
        model_id = model.id
        rows = conn.execute(
            select(ParkedFeedback)
            .where(ParkedFeedback.model_id == model_id, ParkedFeedback.next_try_at <= as_utc(now))
            .order_by(ParkedFeedback.next_try_at)
            .limit(limit)
        ).all()
        claimed = [
            Parked(
                r.message_id,
                r.payload,
                r.kafka_topic,
                r.kafka_partition,
                r.kafka_offset,
                r.received_at,
                r.parked_at,
                r.attempts + 1,
            )
            for r in rows
        ]
        for chunk in id_chunks(conn, [p.message_id for p in claimed]):
            conn.execute(
                update(ParkedFeedback)
                .where(ParkedFeedback.model_id == model_id, among(ParkedFeedback.message_id, chunk))
                .values(next_try_at=as_utc(next_try_at), attempts=ParkedFeedback.attempts + 1)
            )
    return claimed


def release(conn: Connection, model_id: int, claimed: Sequence[Parked]) -> list[str]:
    """Delete claimed records (to be applied or dead-lettered) in the caller's transaction,
    unless a newer label replaced one since it was claimed (that one stays parked) or feedback
    with the message was applied meanwhile (nothing is left to release). Returns the message
    ids of the rows deleted: those the caller may act on."""
    released: list[str] = []
    for start in range(0, len(claimed), 200):
        chunk = claimed[start : start + 200]
        released += (
            conn.execute(
                delete(ParkedFeedback)
                .where(
                    ParkedFeedback.model_id == model_id,
                    or_(
                        *(
                            and_(
                                ParkedFeedback.message_id == p.message_id,
                                ParkedFeedback.parked_at == p.parked_at,
                            )
                            for p in chunk
                        )
                    ),
                )
                .returning(ParkedFeedback.message_id)
            )
            .scalars()
            .all()
        )
    return released


def count_parked(engine: Engine, model_id: int) -> int:
    """How many feedback records the model with id `model_id` has parked."""
    with engine.connect() as conn:
        return conn.execute(
            select(func.count())
            .select_from(ParkedFeedback)
            .where(ParkedFeedback.model_id == model_id)
        ).scalar_one()
