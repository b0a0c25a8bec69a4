"""Expiry, so that a model does not grow without bound: rare tokens (`prune`) and old label
events (`prune_events`); `delete_in_chunks` for every deletion by age (review items, decided
messages' coordinates).

Token expiry is in the spirit of SpamAssassin's bayes_expiry and bogoutil: drop rare tokens
that have not been seen for a while.

A token is expired when it was last seen more than `unseen_days` ago and its count over all
classes is at most `max_count`. Its rows are deleted and their counts leave the class totals,
so the statistics stay consistent. The job works in chunks of tokens, each its own short
transaction, with an optional pause between chunks, and never runs inside scoring. Each chunk
records its change number as the model's `pruned_seq`: a scorer whose last sync is older
resyncs in full (deletions leave no rows to sync from).

The audit trail (`filterd.store.audit`) keeps each label event for a retention period in days;
older events are deleted in chunks, each its own short transaction. Nothing depends on them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Engine, Select, delete, func, select, tuple_, update
from sqlalchemy.orm import QueryableAttribute

from filterd.store.models import ModelRef
from filterd.store.schema import ClassStats, LabelEvent, ModelRow, TokenStats

CHUNK = 500  # tokens per transaction (and per IN (...) list)
EVENT_CHUNK = 10_000  # label events per transaction: small rows, and no totals to adjust


@dataclass
class Pruned:
    tokens: int = 0
    rows: int = 0
    counts_removed: int = 0


def prune(
    engine: Engine,
    model: ModelRef,
    unseen_days: int,
    max_count: int,
    now: datetime | None = None,
    pause: float = 0.0,
    dry_run: bool = False,
) -> Pruned:
    """Expire the tokens of `model` unseen for `unseen_days` days with total count ≤ `max_count`."""
    if unseen_days < 0 or max_count < 0:
        raise ValueError("unseen_days and max_count must not be negative")
    cutoff = int((now or datetime.now(UTC)).timestamp() // 86400) - unseen_days
    model_id = model.id
    with engine.connect() as conn:
        candidates = conn.execute(_expired(model_id, cutoff, max_count)).scalars().all()
    result = Pruned()
    for start in range(0, len(candidates), CHUNK):
        with engine.begin() as conn:
            seq = conn.execute(
                update(ModelRow)
                .where(model.row())
                .values(seq=ModelRow.seq + 1, pruned_seq=ModelRow.seq + 1)
                .returning(ModelRow.seq)
            ).scalar_one_or_none()
            if seq is None:
                raise model.gone()
            # checked again under the lock: a candidate may have been learned meanwhile
            keys = (
                conn.execute(
                    _expired(model_id, cutoff, max_count, candidates[start : start + CHUNK])
                )
                .scalars()
                .all()
            )
            rows = conn.execute(
                select(TokenStats.class_id, func.sum(TokenStats.count), func.count())
                .where(TokenStats.model_id == model_id, TokenStats.token_key.in_(keys))
                .group_by(TokenStats.class_id)
            ).all()
            result.tokens += len(keys)
            result.rows += sum(r[2] for r in rows)
            result.counts_removed += sum(r[1] or 0 for r in rows)
            if dry_run:
                conn.rollback()
                continue
            for class_id, removed, _ in rows:
                conn.execute(
                    update(ClassStats)
                    .where(ClassStats.model_id == model_id, ClassStats.class_id == class_id)
                    .values(tokens=ClassStats.tokens - int(removed or 0), seq=seq)
                )
            conn.execute(
                delete(TokenStats).where(
                    TokenStats.model_id == model_id, TokenStats.token_key.in_(keys)
                )
            )
        if pause:
            time.sleep(pause)
    return result


def _expired(
    model_id: int, cutoff: int, max_count: int, among: Sequence[int] | None = None
) -> Select[int]:
    """The keys of the model's tokens last seen before day `cutoff` with total count ≤
    `max_count` (among `among`, if given)."""
    query = select(TokenStats.token_key).where(TokenStats.model_id == model_id)
    if among is not None:
        query = query.where(TokenStats.token_key.in_(among))
    return query.group_by(TokenStats.token_key).having(
        func.max(TokenStats.last_seen) < cutoff, func.sum(TokenStats.count) <= max_count
    )


def prune_events(
    engine: Engine,
    model_id: int,
    days: int,
    now: datetime | None = None,
    pause: float = 0.0,
    dry_run: bool = False,
) -> int:
    """Delete the label events of the model with id `model_id` applied more than `days` days ago
    (0: none), EVENT_CHUNK per transaction (`delete_older`)."""
    return delete_older(
        engine,
        model_id,
        LabelEvent.applied_at,
        [LabelEvent.id],
        days,
        EVENT_CHUNK,
        now,
        pause,
        dry_run,
    )


def delete_older(
    engine: Engine,
    model_id: int,
    stamp: QueryableAttribute[datetime],
    key: Sequence[QueryableAttribute[Any]],
    days: int,
    chunk: int,
    now: datetime | None = None,
    pause: float = 0.0,
    dry_run: bool = False,
) -> int:
    """Delete the rows of the model with id `model_id` in the table of `stamp` whose `stamp` is
    more than `days` days before `now`; `days` = 0 keeps every row. Returns how many went (with
    `dry_run`, would go)."""
    if days < 0:
        raise ValueError("days must not be negative (0 keeps every row)")
    if days == 0:
        return 0
    cutoff = (now or datetime.now(UTC)).astimezone(UTC) - timedelta(days=days)  # stored in UTC
    old = (stamp.class_.__table__.c.model_id == model_id, stamp < cutoff)
    return delete_in_chunks(engine, key, old, chunk, pause, dry_run)


def delete_in_chunks(
    engine: Engine,
    key: Sequence[QueryableAttribute[Any]],
    where: Sequence[ColumnElement[bool]],
    chunk: int,
    pause: float = 0.0,
    dry_run: bool = False,
) -> int:
    """Delete the rows `where` selects, `chunk` per transaction (found by their primary `key`), so
    that writers beside it wait little, with `pause` seconds between chunks; returns how many
    went (with `dry_run`, how many would go)."""
    table = key[0].class_.__table__
    if dry_run:
        with engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one()
    deleted = 0
    while True:
        found = select(*key).where(*where).limit(chunk)
        match = key[0].in_(found.scalar_subquery()) if len(key) == 1 else tuple_(*key).in_(found)
        with engine.begin() as conn:
            count = conn.execute(delete(table).where(match)).rowcount
        deleted += count
        if count < chunk:
            return deleted
        if pause:
            time.sleep(pause)
