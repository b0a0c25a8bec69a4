"""Record batches a consumer group could not decode, and the operators' skips of them: the
audit trail of every record filterd passed over without reading.

A daemon whose consumer cannot decode a partition's next batch reports it (`report`) and holds
the partition there. Only an operator moves it on: `request_skip` (`filterd topics skip`)
records who asked, when and why, for a batch a daemon reported; the daemon holding the
partition sees the request (`skip_requested`), seeks past the batch and marks it skipped
(`mark_skipped`). Rows are never deleted: they are what tells a lost record from a skipped one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Engine, and_, insert, select, update
from sqlalchemy.exc import IntegrityError

from filterd.store.schema import UndecodableBatch


@dataclass(frozen=True)
class Undecodable:
    """One batch a consumer group could not decode, and what became of it."""

    consumer_group: str
    topic: str
    kafka_partition: int
    kafka_offset: int  # where the group stands: the first offset a skip passes over
    next_offset: int  # the first offset past the batch: where a skip moves the group
    records: int  # the records a skip passes over
    codec: str
    problem: str
    found_by: str
    found_at: datetime
    skip_requested_by: str | None = None
    skip_requested_at: datetime | None = None
    skip_reason: str | None = None
    skipped_at: datetime | None = None


class NotReported(ValueError):
    """No daemon reported an undecodable batch where a skip was asked for."""


COLUMNS = [field.name for field in fields(Undecodable)]


def _row(values: object) -> Undecodable:
    found = {name: getattr(values, name) for name in COLUMNS}
    for name in ("found_at", "skip_requested_at", "skipped_at"):
        if found[name] is not None and found[name].tzinfo is None:  # SQLite keeps UTC, naive
            found[name] = found[name].replace(tzinfo=UTC)
    return Undecodable(**found)


def _at(group: str, topic: str, partition: int, offset: int) -> ColumnElement[bool]:
    t = UndecodableBatch
    return and_(
        t.consumer_group == group,
        t.topic == topic,
        t.kafka_partition == partition,
        t.kafka_offset == offset,
    )


def find(engine: Engine, group: str, topic: str, partition: int, offset: int) -> Undecodable | None:
    """The batch reported where `group` stands at `offset` of `topic`[`partition`], if any."""
    query = select(*(UndecodableBatch.__table__.c[name] for name in COLUMNS))
    with engine.connect() as conn:
        row = conn.execute(query.where(_at(group, topic, partition, offset))).first()
    return None if row is None else _row(row)


def report(engine: Engine, batch: Undecodable) -> Undecodable:
    """Record `batch` unless it is recorded already (by this daemon earlier, or another member
    of the group); returns the row as stored, with any skip requested for it."""
    try:
        with engine.begin() as conn:
            conn.execute(
                insert(UndecodableBatch).values({name: getattr(batch, name) for name in COLUMNS})
            )
    except IntegrityError:
        pass  # reported before
    stored = find(
        engine, batch.consumer_group, batch.topic, batch.kafka_partition, batch.kafka_offset
    )
    return stored or batch


def request_skip(
    engine: Engine,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    by: str,
    reason: str,
    now: datetime | None = None,
) -> Undecodable:
    """Record that `by` asks, for `reason`, to skip the batch reported at `offset`; returns its
    row. NotReported (naming the batches reported on that partition) when there is none there;
    ValueError when a skip of it was requested already."""
    found = find(engine, group, topic, partition, offset)
    if found is None:
        reported = [
            b
            for b in list_batches(engine, group)
            if (b.topic, b.kafka_partition) == (topic, partition)
        ]
        known = ", ".join(
            f"offset {b.kafka_offset}" + (" (skipped)" if b.skipped_at else "") for b in reported
        )
        raise NotReported(
            f"no undecodable batch was reported at {topic}[{partition}] offset {offset} for group "
            f"{group!r}" + (f"; reported there: {known}" if known else "")
        )
    if found.skip_requested_at is not None:
        raise ValueError(
            f"a skip of {topic}[{partition}] offset {offset} was requested already, by "
            f"{found.skip_requested_by} at {found.skip_requested_at:%Y-%m-%d %H:%M:%S} UTC"
        )
    values = {
        "skip_requested_by": by,
        "skip_requested_at": now or datetime.now(UTC),
        "skip_reason": reason,
    }
    with engine.begin() as conn:
        conn.execute(
            update(UndecodableBatch)
            .where(
                _at(group, topic, partition, offset), UndecodableBatch.skip_requested_at.is_(None)
            )
            .values(values)
        )
    return find(engine, group, topic, partition, offset) or found


def skip_requested(
    engine: Engine, group: str, topic: str, partition: int, offset: int
) -> Undecodable | None:
    """The batch at `offset` if an operator asked to skip it (whether or not a daemon did)."""
    found = find(engine, group, topic, partition, offset)
    return found if found is not None and found.skip_requested_at is not None else None


def mark_skipped(engine: Engine, batch: Undecodable, now: datetime | None = None) -> None:
    """Record that a daemon moved its group past `batch` (the first time only: a daemon that
    restarted before committing skips it again)."""
    where = _at(batch.consumer_group, batch.topic, batch.kafka_partition, batch.kafka_offset)
    with engine.begin() as conn:
        conn.execute(
            update(UndecodableBatch)
            .where(where, UndecodableBatch.skipped_at.is_(None))
            .values(skipped_at=now or datetime.now(UTC))
        )


def list_batches(engine: Engine, group: str | None = None) -> list[Undecodable]:
    """The batches reported (of `group`, if given), newest first."""
    query = select(*(UndecodableBatch.__table__.c[name] for name in COLUMNS))
    if group is not None:
        query = query.where(UndecodableBatch.consumer_group == group)
    query = query.order_by(UndecodableBatch.found_at.desc(), UndecodableBatch.id.desc())
    with engine.connect() as conn:
        return [_row(row) for row in conn.execute(query)]
