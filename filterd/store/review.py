"""The review queue in the store: decisions queued for an analyst's label (`review_items`).

The scorer queues items in its batch's transaction (`queue_items`) and keeps the queue within
`review.max_items` per model (`trim`: labelled items leave first, then the oldest); `filterd db
prune` deletes those older than `review.retention_days` (`prune_items`). Analysts read the queue
(`list_items`, `get_item`: `filterd review`), and their labels come back through the feedback
topic naming the message by id, which the learner resolves with the tokens kept here
(`tokens_of`). An item is labelled once its message id has a label in the ledger or the holdout.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypedDict, Unpack

from sqlalchemy import (
    Connection,
    Engine,
    Row,
    Select,
    and_,
    delete,
    exists,
    func,
    or_,
    select,
)

from filterd.service.review import ReviewItem, distance_to_tau
from filterd.store.bulk import insert_columns
from filterd.store.entities import entity_message_ids
from filterd.store.expiry import delete_older
from filterd.store.schema import FeedbackLedger, Holdout
from filterd.store.schema import ReviewItem as ReviewRow  # the table; ReviewItem: its items
from filterd.store.sql import among, as_utc, id_chunks, pack_tokens, packed_count, unpack_tokens

Order = Literal["closest", "newest"]
ORDERS: tuple[Order, ...] = ("closest", "newest")
CHUNK = 10_000  # items per transaction of `prune_items`


def queue_items(
    conn: Connection, model_id: int, items: Sequence[ReviewItem], now: datetime
) -> None:
    """Queue `items` for the model with id `model_id`, queued at `now`, in the caller's
    transaction: one statement for the batch. The items are the scorer's (`queued_item`), with
    their tokens (ValueError without); their `id`, `queued_at` and `labelled` are the store's
    to give when they are read back, and are not read here."""
    if not items:
        return
    queued = as_utc(now)
    columns: dict[str, list[Any]] = {
        "model_id": [model_id] * len(items),
        "message_id": [i.message_id for i in items],
        "reason": [i.reason for i in items],
        "label": [i.label for i in items],
        "score": [i.score for i in items],
        "threshold": [i.threshold for i in items],
        "model_version": [i.model_version for i in items],
        "threshold_version": [i.threshold_version for i in items],
        "subject": [i.subject for i in items],
        "excerpt": [i.excerpt for i in items],
        "sender": [i.sender for i in items],
        "attributes": [i.attributes for i in items],
        "explanation": [[list(pair) for pair in i.explanation] for i in items],
        "truncated": [i.truncated for i in items],
        "tokens": [_packed(i) for i in items],
        "queued_at": [queued] * len(items),
    }
    insert_columns(conn, ReviewRow.__table__, columns)


def _packed(item: ReviewItem) -> bytes:
    if item.tokens is None:  # an item read back without them: queueing it would lose them
        raise ValueError(f"review item of message {item.message_id!r} is queued without tokens")
    return pack_tokens(item.tokens)


def _labelled(model_id: int) -> Any:
    """Whether an item's message has a label in the ledger or the holdout of its model."""
    in_ledger = exists().where(
        FeedbackLedger.model_id == model_id, FeedbackLedger.message_id == ReviewRow.message_id
    )
    in_holdout = exists().where(
        Holdout.model_id == model_id, Holdout.message_id == ReviewRow.message_id
    )
    return or_(in_ledger, in_holdout)


def trim(engine: Engine, model_id: int, max_items: int) -> int:
    """Keep at most `max_items` items of the model with id `model_id`: labelled items leave
    first, then the oldest. Returns how many were deleted (a count alone when there is nothing
    to trim)."""
    if max_items < 0:
        raise ValueError("review max_items must not be negative")
    with engine.begin() as conn:
        count = conn.execute(
            select(func.count()).select_from(ReviewRow).where(ReviewRow.model_id == model_id)
        ).scalar_one()
        excess = count - max_items
        if excess <= 0:
            return 0
        mine = ReviewRow.model_id == model_id
        oldest = (ReviewRow.queued_at, ReviewRow.id)
        labelled = select(ReviewRow.id).where(mine, _labelled(model_id)).order_by(*oldest)
        deleted = _delete_ids(conn, labelled.limit(excess))
        if deleted < excess:
            rest = select(ReviewRow.id).where(mine).order_by(*oldest).limit(excess - deleted)
            deleted += _delete_ids(conn, rest)
    return deleted


def _delete_ids(conn: Connection, ids: Select[int]) -> int:
    # materialised first: a DELETE … WHERE id IN (SELECT … LIMIT) reads the table it deletes from
    found = conn.execute(ids).scalars().all()
    deleted = 0
    for start in range(0, len(found), 500):
        chunk = found[start : start + 500]
        deleted += conn.execute(delete(ReviewRow).where(ReviewRow.id.in_(chunk))).rowcount
    return deleted


def prune_items(
    engine: Engine,
    model_id: int,
    days: int,
    now: datetime | None = None,
    *,
    pause: float = 0.0,
    dry_run: bool = False,
) -> int:
    """Delete the items of the model with id `model_id` queued more than `days` days ago (0:
    none), CHUNK per transaction (`filterd.store.expiry.delete_older`)."""
    return delete_older(
        engine, model_id, ReviewRow.queued_at, [ReviewRow.id], days, CHUNK, now, pause, dry_run
    )


_COLUMNS = [c for c in ReviewRow.__table__.c if c.name not in ("model_id", "tokens", "queued_at")]


def _entries(model_id: int) -> Select[Any]:
    """Items of the model with their label, if given (an analyst's in the ledger first)."""
    label = func.coalesce(FeedbackLedger.label, Holdout.label).label("labelled")
    return (
        select(*_COLUMNS, ReviewRow.queued_at, ReviewRow.tokens, label)
        .outerjoin(
            FeedbackLedger,
            and_(
                FeedbackLedger.model_id == model_id,
                FeedbackLedger.message_id == ReviewRow.message_id,
            ),
        )
        .outerjoin(
            Holdout, and_(Holdout.model_id == model_id, Holdout.message_id == ReviewRow.message_id)
        )
        .where(ReviewRow.model_id == model_id)
    )


def _entry(row: Row[Any], with_tokens: bool = False) -> ReviewItem:
    """An item as read back: its columns, its tokens counted (and given, `with_tokens`), and
    the label its message has been given since, if any."""
    values = row._asdict()
    tokens = values.pop("tokens")
    values["explanation"] = [(str(token), float(weight)) for token, weight in values["explanation"]]
    values["queued_at"] = as_utc(values["queued_at"])
    return ReviewItem(
        **values,
        distance=distance_to_tau(values["score"], values["threshold"]),
        token_count=packed_count(tokens),
        tokens=unpack_tokens(tokens) if with_tokens else None,
    )


class Filters(TypedDict, total=False):
    """Which queued items `list_items` gives, and in which order, each key optional: at most
    `limit` (default 50; None: all) after skipping `offset` (0); unlabelled ones unless
    `include_labelled`; only those queued for `reason`, decided as `label`, scored within
    [`min_score`, `max_score`], of message `message_id`, queued within [`since`, `until`), or
    decided by model version `model_version`, of a message of the entity `entity` (key, value)
    as the entity memory recorded it, where given; `order` "closest" (the default) first
    the smallest |score − τ| (the most informative), "newest" the last queued first."""

    limit: int | None
    offset: int
    include_labelled: bool
    order: Order
    reason: str | None
    label: str | None
    min_score: float | None
    max_score: float | None
    message_id: str | None
    since: datetime | None
    until: datetime | None
    model_version: int | None
    entity: tuple[str, str] | None


def list_items(engine: Engine, model_id: int, **filters: Unpack[Filters]) -> list[ReviewItem]:
    """The queued items of the model with id `model_id` that `filters` select, in their order."""
    order = filters.get("order", "closest")
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: {' or '.join(ORDERS)}")
    reason, label, message_id = (filters.get(k) for k in ("reason", "label", "message_id"))
    min_score, max_score = filters.get("min_score"), filters.get("max_score")
    since, until = filters.get("since"), filters.get("until")
    model_version = filters.get("model_version")
    entity = filters.get("entity")
    with engine.connect() as conn:
        # the page's ids first, ordered on narrow rows; then their columns: sorting whole rows
        # (excerpts, tokens) of a full queue would cost more than the page itself
        query = select(ReviewRow.id).where(ReviewRow.model_id == model_id)
        if reason is not None:
            query = query.where(ReviewRow.reason == reason)
        if label is not None:
            query = query.where(ReviewRow.label == label)
        if message_id is not None:
            query = query.where(ReviewRow.message_id == message_id)
        if min_score is not None:
            query = query.where(ReviewRow.score >= min_score)
        if max_score is not None:
            query = query.where(ReviewRow.score <= max_score)
        if since is not None:
            query = query.where(ReviewRow.queued_at >= as_utc(since))
        if until is not None:
            query = query.where(ReviewRow.queued_at < as_utc(until))
        if model_version is not None:
            query = query.where(ReviewRow.model_version == model_version)
        if entity is not None:
            query = query.where(ReviewRow.message_id.in_(entity_message_ids(model_id, *entity)))
        if not filters.get("include_labelled", False):
            query = query.where(~_labelled(model_id))
        ordering: tuple[Any, ...]
        if order == "closest":
            ordering = (func.abs(ReviewRow.score - ReviewRow.threshold), ReviewRow.id)
        else:
            ordering = (ReviewRow.queued_at.desc(), ReviewRow.id.desc())
        limit, offset = filters.get("limit", 50), filters.get("offset", 0)
        page = query.order_by(*ordering).limit(limit).offset(offset or None).subquery()
        rows = conn.execute(
            _entries(model_id).join(page, page.c.id == ReviewRow.id).order_by(*ordering)
        ).all()
    return [_entry(row) for row in rows]


def get_item(engine: Engine, model_id: int, item_id: int) -> ReviewItem | None:
    """Item `item_id` of the model with id `model_id`, with its tokens; None if the model has no
    such item."""
    with engine.connect() as conn:
        query = _entries(model_id).where(ReviewRow.id == item_id)
        row = conn.execute(query).one_or_none()
    return None if row is None else _entry(row, with_tokens=True)


def tokens_of(conn: Connection, model_id: int, message_ids: Sequence[str]) -> dict[str, list[str]]:
    """The tokens of the queued items of `message_ids` (of the model with id `model_id`), by
    message id: the newest item's where a message was queued more than once; ids not queued
    are left out."""
    found: dict[str, list[str]] = {}
    for chunk in id_chunks(conn, list(dict.fromkeys(message_ids))):
        rows = conn.execute(
            select(ReviewRow.message_id, ReviewRow.tokens)
            .where(ReviewRow.model_id == model_id, among(ReviewRow.message_id, chunk))
            .order_by(ReviewRow.queued_at, ReviewRow.id)
        )
        packed = {row[0]: row[1] for row in rows}  # the newest comes last: it stays
        found.update({message_id: unpack_tokens(data) for message_id, data in packed.items()})
    return found
