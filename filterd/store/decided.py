"""Where decided messages can be read back: one compact row per decision (`DecidedMessage`).

The scorer writes the rows of a batch before its decisions are published, so that feedback
naming one of its messages by id, read by any learner of any process, finds where the message
is: its partition and offset in the messages topic, from which the learner reads it back while
Kafka retains it (`filterd.daemon.resolver`). A row is keyed by `id_hash`, 8 bytes of the id's
BLAKE2b rather than the id itself (up to 256 characters): the learner checks the id of the
record it reads, so a collision costs a lookup, never a wrong label. A message decided again (a
batch read again after a crash, the same id sent twice) keeps its latest coordinates.

A message whose tokens are small (`feedback.keep_tokens_bytes`: a card payment's) keeps them
in its row, compressed (`decided_tokens`): its label, however late within
`feedback.resolve_ttl`, learns it without the messages topic.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, select
from sqlalchemy.orm import InstrumentedAttribute

from filterd.service.records import id_digest
from filterd.store.bulk import insert_columns
from filterd.store.expiry import delete_in_chunks
from filterd.store.schema import DecidedMessage
from filterd.store.sql import CHUNK, as_utc, pack_tokens, unpack_tokens

Coordinates = tuple[int, int]  # (partition, offset)
PRUNE_CHUNK = 50_000  # rows deleted per transaction


# The scorer's entity state and its recorder hash each message's id three or four times a
# batch (its decided row, each entity event): recent ids are looked up instead.
@functools.lru_cache(maxsize=1 << 14)
def id_hash(message_id: str) -> int:
    """The row key of a message id: its 8-byte BLAKE2b digest as a signed 64-bit integer.

    >>> id_hash("m1") == id_hash("m1") != id_hash("m2")
    True
    >>> -(2**63) <= id_hash("m1") < 2**63
    True
    """
    return id_digest(message_id, signed=True)


def record_decided(
    conn: Connection,
    model_id: int,
    decided: Sequence[tuple[str, int, int]],
    now: datetime,
    entities: Mapping[str, str] | None = None,
    tokens: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Upsert the coordinates of decided messages, (message id, partition, offset) each, in the
    caller's transaction, with the entity record of those in `entities` and the tokens of those
    in `tokens` (by message id); of one id decided twice in `decided`, the last counts."""
    latest = {id_hash(m): (m, partition, offset) for m, partition, offset in decided}
    records, kept = entities or {}, tokens or {}
    insert_columns(
        conn,
        DecidedMessage.__table__,
        {
            "model_id": [model_id] * len(latest),
            "id_hash": list(latest),
            "partition": [p for _, p, _ in latest.values()],
            "offset": [o for _, _, o in latest.values()],
            "decided_at": [now] * len(latest),
            "entities": [records.get(m) for m, _, _ in latest.values()],
            # the id first: a message whose id shares another's hash is told apart
            "tokens": [
                pack_tokens([m, *kept[m]]) if m in kept else None for m, _, _ in latest.values()
            ],
        },
        conflict=("model_id", "id_hash"),
        update=("partition", "offset", "decided_at", "entities", "tokens"),
    )


def where_decided(
    conn: Connection, model_id: int, message_ids: Sequence[str]
) -> dict[str, Coordinates]:
    """The coordinates of the messages of `message_ids` that were decided (and not pruned)."""
    columns = (DecidedMessage.partition, DecidedMessage.offset)
    return {m: (p, o) for m, (p, o) in _rows_of(conn, model_id, message_ids, columns)}


def decided_tokens(
    conn: Connection, model_id: int, message_ids: Sequence[str]
) -> dict[str, list[str]]:
    """The tokens kept of the messages of `message_ids` decided with them (`record_decided`),
    each checked against its id (a row of another message whose id shares the hash is none)."""
    found: dict[str, list[str]] = {}
    for wanted, (packed,) in _rows_of(conn, model_id, message_ids, (DecidedMessage.tokens,)):
        if packed is not None:
            message_id, *tokens = unpack_tokens(packed)
            if message_id == wanted:
                found[message_id] = tokens
    return found


def decided_entities(conn: Connection, model_id: int, message_ids: Sequence[str]) -> dict[str, str]:
    """The entity record (`EntityRecord.dumps`) of each message of `message_ids` decided with
    one."""
    rows = _rows_of(conn, model_id, message_ids, (DecidedMessage.entities,))
    return {m: text for m, (text,) in rows if text is not None}


def _rows_of(
    conn: Connection,
    model_id: int,
    message_ids: Sequence[str],
    columns: Sequence[InstrumentedAttribute[Any]],
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(message id, its row's `columns`) of each message of `message_ids` decided, CHUNK ids a
    query (by the ids' hashes)."""
    by_hash = {id_hash(m): m for m in message_ids}
    hashes = list(by_hash)
    for start in range(0, len(hashes), CHUNK):
        rows = conn.execute(
            select(DecidedMessage.id_hash, *columns).where(
                DecidedMessage.model_id == model_id,
                DecidedMessage.id_hash.in_(hashes[start : start + CHUNK]),
            )
        )
        for h, *values in rows:
            yield by_hash[h], tuple(values)


def prune_decided(
    engine: Engine, model_id: int, before: datetime, pause: float = 0.0, dry_run: bool = False
) -> int:
    """Delete the rows of messages decided before `before`, PRUNE_CHUNK per transaction so that
    scorers writing beside it wait little; returns how many went (with `dry_run`, would go)."""
    old = (DecidedMessage.model_id == model_id, DecidedMessage.decided_at < as_utc(before))
    return delete_in_chunks(
        engine, [DecidedMessage.model_id, DecidedMessage.id_hash], old, PRUNE_CHUNK, pause, dry_run
    )
