"""Forgetting labels by selector: every label an analyst gave, a source gave, of the messages of
a sender or domain, or that was learned within a time range, unlearned through the ledger, in one
transaction.

A label that poisoned the model is taken back exactly as it was learned: each selected message's
contribution to the statistics (its token counts from the ledger, and for a fusion model the
logistic step it recorded) is subtracted, as a relabel subtracts it, under the model row's lock
and with the next change sequence number (`filterd.store.learning`), so that every scorer's
sync sees it. Its ledger row is deleted, and so is a held-out label's holdout row (calibration
would otherwise keep reading it). Each forgotten label becomes an event of the audit trail
(outcome "forgotten", with who forgot it and the selector in its comment). A message forgotten
can be labelled again later, and is then learned as new.

A label is an analyst's when the latest event that learned, relabelled or held it out names the
analyst: an audit trail pruned of that event (`filterd db prune --audit-days`) leaves the label
selectable by source, sender, time and id only. A label is a sender's when its message's learned
tokens hold the sender's (`filterd.tokenize.addresses.sender_selector`: an address's domain and
local part, a domain's, a phone number's id), found by their keys in the ledger's and the
holdout's token counts — by the database in the bytes of each row the other criteria leave, as
no index holds them, and then here among the keys alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVarTuple

import numpy as np
from sqlalchemy import ColumnElement, Connection, Row, Select, and_, delete, func, select
from sqlalchemy.orm import InstrumentedAttribute

from filterd.bayes.arrays import Int64Array
from filterd.bayes.vocab import TokenHasher
from filterd.store.audit import record_events
from filterd.store.labels import Event, Source
from filterd.store.learning import next_seq, write_contributions
from filterd.store.ledger import Contribution, pack, unpack
from filterd.store.models import ModelRef
from filterd.store.schema import FeedbackLedger, Holdout, LabelEvent
from filterd.store.sql import HoldsBytes, among, as_utc, bytes_param, id_chunks
from filterd.tokenize.addresses import sender_selector
from filterd.tokenize.limits import TokenizerConfig

# the events whose analyst gave a message its current label
_GIVING = ("learned", "relabelled", "held_out")


@dataclass(frozen=True)
class Selector:
    """Which labels to forget: those matching every criterion given (at least one must be)."""

    analyst: str | None = None  # given by this analyst
    source: Source | None = None  # analyst | auto
    since: datetime | None = None  # learned (held out: labelled) at or after
    until: datetime | None = None  # … and before
    message_ids: tuple[str, ...] = field(default=())
    sender: str | None = None  # of messages from this address, domain or phone number

    def __post_init__(self) -> None:
        given = (self.analyst, self.source, self.since, self.until, self.sender)
        if all(value is None for value in given) and not self.message_ids:
            raise ValueError(
                "forgetting needs a selector: an analyst, a source, a sender, a time or ids"
            )
        if self.sender is not None:
            self.sender_tokens(TokenizerConfig.max_token_length)  # ValueError: no sender

    def sender_tokens(self, max_token_length: int) -> tuple[str, ...]:
        """The tokens a message of the sender has (`sender_selector`), none without one.

        >>> Selector(sender="Mallory@Example.com").sender_tokens(40)
        ('from:example.com', 'from:local:mallory')
        """
        if self.sender is None:
            return ()
        return sender_selector(self.sender, "from:", max_token_length)

    def describe(self) -> str:
        """The selector in words, for the audit trail's comment.

        >>> Selector(analyst="mallory", source="analyst").describe()
        'forgotten by selector: analyst=mallory source=analyst'
        """
        parts = [
            f"{name}={value.isoformat() if isinstance(value, datetime) else value}"
            for name, value in (
                ("analyst", self.analyst),
                ("source", self.source),
                ("sender", self.sender),
                ("since", self.since),
                ("until", self.until),
            )
            if value is not None
        ]
        if self.message_ids:
            parts.append(f"ids={len(self.message_ids)}")
        return "forgotten by selector: " + " ".join(parts)


@dataclass(frozen=True)
class Forgotten:
    """What forgetting did (or, for a dry run, would do): the learned labels unlearned and the
    held-out labels dropped, with their message ids."""

    learned: tuple[str, ...]
    held_out: tuple[str, ...]


def forget(
    conn: Connection,
    model: ModelRef,
    selector: Selector,
    now: datetime,
    target: str | None = None,
    operator: str | None = None,
    dry_run: bool = False,
    max_token_length: int = TokenizerConfig.max_token_length,
) -> Forgotten:
    """Forget the labels `selector` selects, in the caller's transaction (the module
    docstring); `target`: a fusion model's decision target, whose logistic steps are taken back
    too (as `filterd.store.learning.apply` takes them); `operator`: who forgets, for the trail;
    `max_token_length`: the tokenizer's (`limits.max_token_length`), which a sender's tokens
    were cut at. With `dry_run`, only what would be forgotten."""
    sender = selector.sender_tokens(max_token_length)
    keys = TokenHasher(model.hash_seed).keys(list(sender)) if sender else None
    held = _sent_by(conn, _selected_holdout(model.id, selector), Holdout.tokens, keys)
    held_ids = tuple(r.message_id for r in held)
    if dry_run and keys is None:  # the ids alone: the ledger's token counts are read to take
        # them back, or to find a sender's
        ids = select(FeedbackLedger.message_id).where(_matching_ledger(model.id, selector))
        return Forgotten(tuple(conn.execute(ids.order_by("message_id")).scalars()), held_ids)
    learned = _sent_by(conn, _selected_ledger(model.id, selector), FeedbackLedger.tokens, keys)
    forgotten = Forgotten(tuple(r.message_id for r in learned), held_ids)
    if dry_run:
        return forgotten
    if not (learned or held):
        return forgotten
    seq = next_seq(conn, model)
    if learned:
        contributions = [
            Contribution(r.message_id, r.label, *unpack(r.tokens), sign=-1, step=r.step)
            for r in learned
        ]
        write_contributions(conn, model, seq, now, contributions, target)
    _delete(conn, FeedbackLedger, model.id, forgotten.learned)
    _delete(conn, Holdout, model.id, forgotten.held_out)
    comment = selector.describe()
    events = [
        Event(
            r.message_id, r.label, "forgotten", r.label, r.source, analyst=operator, comment=comment
        )
        for r in (*learned, *held)
    ]
    record_events(conn, model.id, events, now)
    return forgotten


# rows of the ledger or the holdout read at a time when a sender's are searched for
_SEARCHED_ROWS = 1000
_Columns = TypeVarTuple("_Columns")


def _sent_by(
    conn: Connection,
    query: Select[*_Columns],
    tokens: InstrumentedAttribute[bytes],
    keys: Int64Array | None,
) -> list[Row[*_Columns]]:
    """The rows of `query` (with their `tokens`, the column `tokens`), in message id order,
    whose tokens hold every one of `keys` (every row for None): the database keeps the rows
    whose bytes hold each key's (`HoldsBytes`), read a chunk at a time, and of those the ones
    that hold it as a key (not across two keys, nor among the counts)."""
    if keys is not None:
        query = query.where(
            *(HoldsBytes(tokens, bytes_param(pack(k, k[:0]))) for k in keys[:, None])
        )
    rows = conn.execute(query.order_by("message_id").execution_options(yield_per=_SEARCHED_ROWS))
    if keys is None:
        return list(rows)
    return [r for r in rows if np.isin(keys, unpack(r.tokens)[0]).all()]


def _given_by(model_id: int, analyst: str) -> Select[str]:
    """The ids of the messages whose current label the analyst gave (the module docstring)."""
    latest = (
        select(func.max(LabelEvent.id))
        .where(LabelEvent.model_id == model_id, LabelEvent.outcome.in_(_GIVING))
        .group_by(LabelEvent.message_id)
    )
    return select(LabelEvent.message_id).where(
        LabelEvent.id.in_(latest), LabelEvent.analyst == analyst
    )


def _selected_ledger(model_id: int, selector: Selector) -> Select[str, str, str, bytes, int]:
    table = FeedbackLedger
    query = select(table.message_id, table.label, table.source, table.tokens, table.step)
    return query.where(_matching_ledger(model_id, selector))


def _matching_ledger(model_id: int, selector: Selector) -> ColumnElement[bool]:
    return _matching(FeedbackLedger, FeedbackLedger.learned_at, model_id, selector)


def _selected_holdout(model_id: int, selector: Selector) -> Select[str, str, str, bytes]:
    query = select(Holdout.message_id, Holdout.label, Holdout.source, Holdout.tokens)
    return query.where(_matching(Holdout, Holdout.ts, model_id, selector))


def _matching(
    table: type[FeedbackLedger] | type[Holdout],
    time: InstrumentedAttribute[datetime],
    model_id: int,
    selector: Selector,
) -> ColumnElement[bool]:
    """The rows of `table` (its time column `time`) that `selector` selects."""
    where = [table.model_id == model_id]
    if selector.source is not None:
        where.append(table.source == selector.source)
    if selector.since is not None:
        where.append(time >= as_utc(selector.since))
    if selector.until is not None:
        where.append(time < as_utc(selector.until))
    if selector.message_ids:
        where.append(among(table.message_id, list(selector.message_ids)))
    if selector.analyst is not None:
        where.append(table.message_id.in_(_given_by(model_id, selector.analyst)))
    return and_(*where)


def _delete(
    conn: Connection, table: type[FeedbackLedger] | type[Holdout], model_id: int, ids: Sequence[str]
) -> None:
    for chunk in id_chunks(conn, list(ids)):
        conn.execute(
            delete(table).where(table.model_id == model_id, among(table.message_id, chunk))
        )
