"""The entity memory's rows (`filterd.entities`): what every scorer's memory is rebuilt from and
kept in step with.

- `entity_events`: one row per (message, entity) a scorer decided, with the decision, written
  in bulk with the batch's decided messages (`record_events`, by the scorer's recorder). Another
  scorer reads the rows written since it last looked (`events_written_since`), so that a
  velocity counts every scorer's messages within seconds; a scorer starting reads the longest
  window back (`events_since`). Keyed by message and entity key: a message decided again (a
  batch read again after a crash, a rebalance) is one row, its latest.
- `entity_labels`: one row per (message, entity) labelled the target class, written by the
  learner in its batch's transaction (`record_labels`); a relabel out of the target class
  deletes the message's rows (`unlabel`). Read like the events.
- `decided_messages.entities`: the `EntityRecord` of each decided message, for its learner
  (`filterd.store.decided.decided_entities`).

Times: `at` is the stream's clock of the memory (seconds since the epoch: the messages' `ts`),
`written_at` the writer's wall clock; readers by `written_at` look back `SYNC_OVERLAP` before
their last read, so that a row committed late, or by a machine whose clock is a little behind,
is not missed. A scorer's events name it (`writer`, a random number per process) and a scorer
in step with the others passes its `ReadMarks`: its own rows are left out, and of every other
writer only the rows after the newest it read, so that each row is read once, not once per
read within the overlap (rows read twice otherwise, the caller's to skip). `prune` deletes what
has left its window, by `at` against the newest `at` of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    and_,
    delete,
    func,
    or_,
    select,
)

from filterd.entities.memory import EntityEvent
from filterd.store.bulk import insert_columns
from filterd.store.decided import id_hash
from filterd.store.expiry import delete_in_chunks
from filterd.store.schema import EntityEvent as EventRow
from filterd.store.schema import EntityLabel as LabelRow
from filterd.store.sql import CHUNK, as_utc

SYNC_OVERLAP = timedelta(seconds=10)
PRUNE_CHUNK = 50_000


@dataclass(frozen=True)
class EntityLabelled:
    """A target label of a message (`id_hash`) of the entity (key, value) sent at `at`."""

    id_hash: int
    key: str
    value: str
    at: float


class DecidedEvent(NamedTuple):
    """An entity event of a decided message, with the decision (None: not told)."""

    message_id: str
    event: EntityEvent
    label: str | None = None
    score: float | None = None
    decided_by: str | None = None


@dataclass
class ReadMarks:
    """What a scorer (`writer`) has read of the other scorers' entity events: per writer, the
    newest `written_at` read (`events_written_since` advances them). Exact because a writer's
    transactions commit in the order of their `written_at`: one recorder thread writes them one
    after another, each at a time after the last (`Recorder`)."""

    writer: int
    newest: dict[int, datetime] = field(default_factory=dict)


def record_events(
    conn: Connection,
    model_id: int,
    events: Sequence[DecidedEvent],
    now: datetime,
    writer: int | None = None,
) -> None:
    """Upsert entity events written at `now` by `writer` (`ReadMarks`); of one message and key
    given twice, the last counts."""
    latest = {(e.message_id, e.event.key): e for e in events}
    rows = list(latest.values())
    insert_columns(
        conn,
        EventRow.__table__,
        {
            "model_id": [model_id] * len(rows),
            "id_hash": [id_hash(r.message_id) for r in rows],
            "message_id": [r.message_id for r in rows],
            "key": [r.event.key for r in rows],
            "value": [r.event.value for r in rows],
            "at": [r.event.at for r in rows],
            "amount": [r.event.amount for r in rows],
            "party": [r.event.party for r in rows],
            "written_at": [now] * len(rows),
            "label": [r.label for r in rows],
            "score": [r.score for r in rows],
            "decided_by": [r.decided_by for r in rows],
            "writer": [writer] * len(rows),
        },
        conflict=("model_id", "id_hash", "key"),
        update=(
            "message_id",
            "value",
            "at",
            "amount",
            "party",
            "written_at",
            "label",
            "score",
            "decided_by",
            "writer",
        ),
    )


@dataclass(frozen=True)
class EntityMessage:
    """A message of an entity, as the memory recorded it: its id, the stream's time, its amount
    and counterparty; and its decision (None: not told, or decided before revision 0016)."""

    message_id: str
    at: float
    amount: float | None
    party: str | None
    label: str | None = None
    score: float | None = None
    decided_by: str | None = None


def entity_messages(
    conn: Connection, model_id: int, key: str, value: str, limit: int
) -> list[EntityMessage]:
    """The newest `limit` messages of the entity (key, value) whose events keep their id
    (revision 0015 on), newest first, with their decisions (revision 0016 on)."""
    query = (
        select(
            EventRow.message_id,
            EventRow.at,
            EventRow.amount,
            EventRow.party,
            EventRow.label,
            EventRow.score,
            EventRow.decided_by,
        )
        .where(_of_entity(model_id, key, value), EventRow.message_id.is_not(None))
        .order_by(EventRow.at.desc())
        .limit(limit)
    )
    return [EntityMessage(str(row[0]), *row[1:]) for row in conn.execute(query)]


def entity_message_ids(model_id: int, key: str, value: str) -> Select[str | None]:
    """The ids of the entity's messages, as a subquery."""
    return select(EventRow.message_id).where(_of_entity(model_id, key, value))


def entity_counts(
    conn: Connection, model_id: int, key: str, value: str, now: float, windows: Sequence[int]
) -> list[int]:
    """The entity's messages within each window back from `now` (the stream's time)."""
    counts = [func.count().filter(EventRow.at > now - window) for window in windows]
    row = conn.execute(select(*counts).where(_of_entity(model_id, key, value))).one()
    return [int(n) for n in row]


def labelled_count(conn: Connection, model_id: int, key: str, value: str) -> int:
    """The entity's messages labelled the target class (within the label window: older rows
    are pruned)."""
    query = select(func.count()).where(
        LabelRow.model_id == model_id, LabelRow.key == key, LabelRow.value == value
    )
    return int(conn.execute(query).scalar_one())


def _of_entity(model_id: int, key: str, value: str) -> ColumnElement[bool]:
    return and_(EventRow.model_id == model_id, EventRow.key == key, EventRow.value == value)


def events_written_since(
    conn: Connection, model_id: int, since: datetime, marks: ReadMarks | None = None
) -> list[tuple[int, EntityEvent]]:
    """The events written from `since` − SYNC_OVERLAP on, in the order of their time; with
    `marks`, none of `marks.writer`'s and none that `marks` says were read (then advanced)."""
    start = as_utc(since - SYNC_OVERLAP)
    if marks is None:
        return _events(conn, model_id, EventRow.written_at >= start)
    # a writer whose newest row read is older than the start can have no row read again
    marks.newest = {w: t for w, t in marks.newest.items() if t >= start}
    return _events(
        conn,
        model_id,
        EventRow.written_at >= start,
        EventRow.writer.is_distinct_from(marks.writer),  # a null writer is not this one
        *(
            or_(EventRow.writer.is_distinct_from(w), EventRow.written_at > t)
            for w, t in marks.newest.items()
        ),
        marks=marks,
    )


def events_since(conn: Connection, model_id: int, at: float) -> list[tuple[int, EntityEvent]]:
    """The events of the stream's time `at` on, in the order of their time."""
    return _events(conn, model_id, EventRow.at >= at)


def _events(
    conn: Connection, model_id: int, *where: ColumnElement[bool], marks: ReadMarks | None = None
) -> list[tuple[int, EntityEvent]]:
    """The events of `where`, in the order of their time; with `marks`, each writer's newest
    `written_at` among them becomes its mark (`where` left out its rows at or before the last).
    """
    event = (EventRow.key, EventRow.value, EventRow.at, EventRow.amount, EventRow.party)
    read_by = (EventRow.writer, EventRow.written_at) if marks is not None else ()
    query = select(EventRow.id_hash, *event, *read_by).where(EventRow.model_id == model_id, *where)
    rows = conn.execute(query.order_by(EventRow.at)).all()
    if marks is not None:
        newest: dict[int, datetime] = {}
        for *_, writer, written_at in rows:
            if writer is not None and (writer not in newest or written_at > newest[writer]):
                newest[writer] = written_at
        marks.newest.update({w: as_utc(t) for w, t in newest.items()})  # SQLite's are naive
    return [(row[0], EntityEvent(*row[1:6])) for row in rows]


def latest_at(conn: Connection, model_id: int) -> float | None:
    """The newest time of the model's events (None: it has none)."""
    return conn.execute(
        select(func.max(EventRow.at)).where(EventRow.model_id == model_id)
    ).scalar_one()


def record_labels(
    conn: Connection, model_id: int, labels: Sequence[EntityLabelled], now: datetime
) -> None:
    """Upsert target labels of messages of entities, written at `now`."""
    latest = {(x.id_hash, x.key): x for x in labels}
    insert_columns(
        conn,
        LabelRow.__table__,
        {
            "model_id": [model_id] * len(latest),
            "id_hash": [h for h, _ in latest],
            "key": [k for _, k in latest],
            "value": [x.value for x in latest.values()],
            "at": [x.at for x in latest.values()],
            "written_at": [now] * len(latest),
        },
        conflict=("model_id", "id_hash", "key"),
        update=("value", "at", "written_at"),
    )


def unlabel(conn: Connection, model_id: int, id_hashes: Sequence[int]) -> None:
    """Delete the target labels of the messages `id_hashes` (relabelled out of the target)."""
    for start in range(0, len(id_hashes), CHUNK):
        conn.execute(
            delete(LabelRow).where(
                LabelRow.model_id == model_id,
                LabelRow.id_hash.in_(id_hashes[start : start + CHUNK]),
            )
        )


def labels_written_since(conn: Connection, model_id: int, since: datetime) -> list[EntityLabelled]:
    """The target labels written from `since` − SYNC_OVERLAP on."""
    return _labels(conn, model_id, LabelRow.written_at >= as_utc(since - SYNC_OVERLAP))


def labels_since(conn: Connection, model_id: int, at: float) -> list[EntityLabelled]:
    """The target labels of messages sent from the stream's time `at` on."""
    return _labels(conn, model_id, LabelRow.at >= at)


def _labels(conn: Connection, model_id: int, where: ColumnElement[bool]) -> list[EntityLabelled]:
    columns = (LabelRow.id_hash, LabelRow.key, LabelRow.value, LabelRow.at)
    rows = conn.execute(select(*columns).where(LabelRow.model_id == model_id, where))
    return [EntityLabelled(*row) for row in rows]


def prune(
    engine: Engine,
    model_id: int,
    events_window: float,
    labels_window: float,
    pause: float = 0.0,
    dry_run: bool = False,
) -> tuple[int, int]:
    """Delete the events older than `events_window` seconds and the labels older than
    `labels_window` before the newest event's time; returns how many of each went (with
    `dry_run`, would go)."""
    with engine.connect() as conn:
        newest = latest_at(conn, model_id)
    if newest is None:
        return 0, 0
    events = delete_in_chunks(
        engine,
        [EventRow.model_id, EventRow.id_hash, EventRow.key],
        [EventRow.model_id == model_id, EventRow.at < newest - events_window],
        PRUNE_CHUNK,
        pause,
        dry_run,
    )
    labels = delete_in_chunks(
        engine,
        [LabelRow.model_id, LabelRow.id_hash, LabelRow.key],
        [LabelRow.model_id == model_id, LabelRow.at < newest - labels_window],
        PRUNE_CHUNK,
        pause,
        dry_run,
    )
    return events, labels
