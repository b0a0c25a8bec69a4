"""Learning from labelled feedback through the store: idempotent, relabel-aware, batched.

`apply_feedback` runs one transaction per batch:
- it takes the model row's lock and the next change sequence number first, so concurrent
  learners of one model queue instead of deadlocking, and sequence order is commit order
  (which makes `sync(since_seq)` exact);
- a message id already learned with the same label changes nothing; with a different label
  the old contribution is unlearned and the new one learned, except that an automatic label
  never overrides an analyst's; a new id is learned, unless it falls in the holdout fraction
  (deterministic by id), in which case it is kept for calibration and not learned;
- all contributions of the batch are summed per (token, class) first and written as additive
  upserts sorted by key; CHECK constraints keep every count ≥ 0;
- every item becomes one event of the audit trail (`filterd.store.audit`) with what was decided
  for it and the label it had before, in the same transaction.

`delete_model` removes a model with every row of it (`model_tables`) under the same row lock,
and only if nothing was learned since the caller counted them (`model_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt
from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Connection,
    Engine,
    String,
    Table,
    any_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import QueryableAttribute

from filterd.bayes.features import DocBatch, encode
from filterd.bayes.model import ModelSpec
from filterd.bayes.selection import Selection
from filterd.bayes.statistics import fixed_point_log_tf
from filterd.bayes.vocab import TokenHasher
from filterd.service.records import id_digest
from filterd.store.audit import Origin, Outcome, insert_events
from filterd.store.bulk import driver_cursor, insert_rows
from filterd.store.schema import (
    Base,
    ClassStats,
    FeedbackLedger,
    Holdout,
    ModelRow,
    ParkedFeedback,
    TokenStats,
)

Source = Literal["analyst", "auto"]
SOURCES = ("analyst", "auto")
CHUNK = 500  # ids per IN (...) query

IntArray = npt.NDArray[np.int64]
# What one message adds to the statistics: its label, token keys and counts, and the sign
# (+1 learned, -1 unlearned).
Contribution = tuple[str, IntArray, IntArray, int]


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


@dataclass
class Applied:
    """What a batch did."""

    learned: int = 0
    relabelled: int = 0
    duplicates: int = 0
    held_out: int = 0
    kept_analyst_label: int = 0  # automatic labels that did not override an analyst's
    seq: int = 0
    model_id: int = 0  # of the model it was applied to (0: nothing was)

    def count(self, outcome: Outcome) -> None:
        field = "duplicates" if outcome == "duplicate" else outcome
        setattr(self, field, getattr(self, field) + 1)


class UnknownModel(LookupError):
    """No model of that name in the store."""

    @classmethod
    def among(cls, name: str, names: Sequence[str]) -> UnknownModel:
        """The error for `name`, listing the models the store holds (`names`), so that a
        mistyped name shows the right one."""
        if not names:
            return cls(
                f"no model named {name!r} in the store, which holds none yet: "
                f"`filterd model create {name}` creates it"
            )
        return cls(
            f"no model named {name!r} in the store (its models: "
            f"{', '.join(map(repr, names))}); `filterd model create NAME` adds one"
        )


class ModelChanged(RuntimeError):
    """The model changed (a learner wrote to it) since the caller looked: nothing was done."""


def find_model_id(conn: Connection, model: str) -> int:
    """The id of the model named `model`, or UnknownModel."""
    found = conn.execute(select(ModelRow.id).where(ModelRow.name == model)).scalar_one_or_none()
    if found is None:
        raise UnknownModel(f"no model named {model!r} in the store")
    return found


def lock_model(conn: Connection, model: str) -> int:
    """The id of model `model`, its row locked until the transaction ends (the lock
    `apply_feedback` takes first), or UnknownModel."""
    found = conn.execute(
        update(ModelRow)
        .where(ModelRow.name == model)
        .values(seq=ModelRow.seq)
        .returning(ModelRow.id)
    ).scalar_one_or_none()
    if found is None:
        raise UnknownModel(f"no model named {model!r} in the store")
    return found


def id_chunks(conn: Connection, ids: list[str]) -> list[list[str]]:
    """`ids` in pieces for `among`: one piece on PostgreSQL (an array parameter), else CHUNK ids."""
    if conn.dialect.name == "postgresql":
        return [ids] if ids else []
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


def among(column: QueryableAttribute[str], ids: list[str]) -> ColumnElement[bool]:
    """`column IN ids` (SQLite), or `column = ANY(:ids)` with one array parameter (PostgreSQL),
    which plans and binds far faster than thousands of parameters."""
    return (
        column.in_(ids)
        if len(ids) <= CHUNK
        else column == any_(bindparam(None, ids, type_=ARRAY(String)))
    )


# --- models -------------------------------------------------------------------------------------


def model_names(engine: Engine) -> list[str]:
    """The names of the store's models, in alphabetical order."""
    with engine.connect() as conn:
        return list(conn.execute(select(ModelRow.name).order_by(ModelRow.name)).scalars())


def require_model(engine: Engine, name: str) -> None:
    """Nothing if the store holds model `name`; else UnknownModel listing the models it holds."""
    names = model_names(engine)
    if name not in names:
        raise UnknownModel.among(name, names)


def create_model(engine: Engine, name: str, spec: ModelSpec, seed: int | None = None) -> int:
    """Add a model (its token-key seed is random unless given); returns its id."""
    seed = int(np.random.default_rng().integers(0, 2**62)) if seed is None else seed
    with engine.begin() as conn:
        return conn.execute(
            insert(ModelRow)
            .values(
                name=name,
                spec=spec_to_json(spec),
                hash_seed=seed,
                seq=0,
                created_at=datetime.now(UTC),
            )
            .returning(ModelRow.id)
        ).scalar_one()


# the tables of labels: the analysts' work, which nothing in the store can recompute
LABEL_TABLES = (FeedbackLedger.__tablename__, Holdout.__tablename__, ParkedFeedback.__tablename__)


def model_tables() -> list[Table]:
    """Every table whose rows belong to a model (a foreign key to models.id), read from the
    schema so that a table added later belongs too; dependents first."""
    return [
        table
        for table in reversed(Base.metadata.sorted_tables)
        if any(fk.column.table is ModelRow.__table__ for fk in table.foreign_keys)
    ]


@dataclass(frozen=True)
class ModelRows:
    """What a model holds: its change number, and its rows per table (`model_tables`)."""

    seq: int
    rows: dict[str, int]

    @property
    def labels(self) -> int:
        return sum(self.rows.get(name, 0) for name in LABEL_TABLES)


def model_rows(engine: Engine, name: str) -> ModelRows:
    """The rows model `name` holds, or UnknownModel."""
    with engine.connect() as conn:
        found = conn.execute(
            select(ModelRow.id, ModelRow.seq).where(ModelRow.name == name)
        ).one_or_none()
        if found is None:
            raise UnknownModel(f"no model named {name!r} in the store")
        rows = {
            table.name: conn.execute(
                select(func.count()).select_from(table).where(table.c.model_id == found.id)
            ).scalar_one()
            for table in model_tables()
        }
    return ModelRows(found.seq, rows)


def delete_model(engine: Engine, name: str, seq: int) -> dict[str, int]:
    """Delete model `name` and every row that belongs to it, in one transaction, if it is still
    at change `seq` (`model_rows`): else ModelChanged, and nothing is deleted, so that nothing
    learned after the caller looked (and, say, exported the model) is lost. Returns the rows
    deleted per table."""
    with engine.begin() as conn:
        # the row lock apply_feedback takes first: a learner of this model waits, then finds it gone
        found = conn.execute(
            update(ModelRow)
            .where(ModelRow.name == name)
            .values(seq=ModelRow.seq)
            .returning(ModelRow.id, ModelRow.seq)
        ).one_or_none()
        if found is None:
            raise UnknownModel(f"no model named {name!r} in the store")
        if found.seq != seq:
            raise ModelChanged(
                f"model {name!r} changed since it was looked at (a learner wrote to it): "
                "nothing deleted; stop the daemons that learn it and try again"
            )
        deleted = {
            table.name: conn.execute(delete(table).where(table.c.model_id == found.id)).rowcount
            for table in model_tables()
        }
        conn.execute(delete(ModelRow).where(ModelRow.id == found.id))
    return deleted


def spec_to_json(spec: ModelSpec) -> dict[str, Any]:
    return {
        "variant": spec.variant,
        "params": dict(spec.params),
        "selection": str(spec.selection),
        "set_of_words": spec.set_of_words,
    }


def spec_from_json(data: Mapping[str, Any]) -> ModelSpec:
    return ModelSpec(
        data["variant"],
        data.get("params", {}),
        Selection.parse(data.get("selection", "none")),
        data.get("set_of_words", False),
    )


# --- feedback ---------------------------------------------------------------------------------


def in_holdout(message_id: str, fraction: float) -> bool:
    """Whether a message id belongs to the holdout share (stable across processes and runs)."""
    return id_digest(message_id) < fraction * 2**64


def pack(keys: IntArray, counts: IntArray) -> bytes:
    """Keys then counts as little-endian int64 (`unpack` reverses it)."""
    # two tobytes() instead of np.stack, which would copy both arrays once more for every message
    return keys.astype("<i8", copy=False).tobytes() + counts.astype("<i8", copy=False).tobytes()


def unpack(data: bytes) -> tuple[IntArray, IntArray]:
    keys, counts = np.frombuffer(data, dtype="<i8").reshape(2, -1)
    return keys.astype(np.int64), counts.astype(np.int64)


def apply_feedback(
    engine: Engine,
    model: str,
    items: Sequence[LabelledTokens],
    holdout_fraction: float = 0.1,
    now: datetime | None = None,
) -> Applied:
    """Apply a batch of feedback to `model` in one transaction (see the module docstring)."""
    with engine.begin() as conn:
        return apply_in(conn, model, items, holdout_fraction, now)


def apply_in(
    conn: Connection,
    model: str,
    items: Sequence[LabelledTokens],
    holdout_fraction: float = 0.1,
    now: datetime | None = None,
) -> Applied:
    """`apply_feedback` in the caller's transaction, for a caller that writes more in it (the
    learner parks feedback in the same transaction)."""
    for item in items:
        if item.source not in SOURCES:
            raise ValueError(f"feedback source must be analyst or auto, not {item.source!r}")
    now = now or datetime.now(UTC)
    found = conn.execute(
        update(ModelRow)
        .where(ModelRow.name == model)
        .values(seq=ModelRow.seq + 1)
        .returning(ModelRow.id, ModelRow.seq, ModelRow.hash_seed)
    ).one_or_none()
    if found is None:
        raise UnknownModel(f"no model named {model!r} in the store")
    model_id, seq, seed = found
    result = Applied(seq=seq, model_id=model_id)
    batch = encode([item.tokens for item in items], TokenHasher(seed))
    plan = _Plan(conn, model_id, [item.message_id for item in items])
    outcomes: list[Outcome] = []
    previous: list[str | None] = []  # the label each message had before
    for i, item in enumerate(items):
        outcome, before = plan.decide(i, item, batch, holdout_fraction)
        result.count(outcome)
        outcomes.append(outcome)
        previous.append(before)
    class_ids = _class_ids(conn, model_id, {label for label, *_ in plan.contributions})
    _write_statistics(conn, model_id, seq, now, plan.contributions, class_ids)
    _write_ledger(conn, model_id, now, plan)
    insert_events(conn, model_id, items, outcomes, previous, now)
    return result


class _Plan:
    """Per-message decisions of one batch, against the ledger and the holdout table."""

    def __init__(self, conn: Connection, model_id: int, message_ids: list[str]) -> None:
        unique = list(dict.fromkeys(message_ids))
        self.ledger: dict[str, tuple[str, str, bytes]] = {}
        self.holdout: dict[str, tuple[str, str]] = {}
        for chunk in id_chunks(conn, unique):
            ledger_rows = conn.execute(
                select(
                    FeedbackLedger.message_id,
                    FeedbackLedger.label,
                    FeedbackLedger.source,
                    FeedbackLedger.tokens,
                ).where(
                    FeedbackLedger.model_id == model_id, among(FeedbackLedger.message_id, chunk)
                )
            )
            self.ledger.update(
                {m: (label, source, tokens) for m, label, source, tokens in ledger_rows}
            )
            holdout_rows = conn.execute(
                select(Holdout.message_id, Holdout.label, Holdout.source).where(
                    Holdout.model_id == model_id, among(Holdout.message_id, chunk)
                )
            )
            self.holdout.update({m: (label, source) for m, label, source in holdout_rows})
        self.existing = set(self.ledger)
        self.existing_holdout = set(self.holdout)
        self.ledger_writes: dict[str, tuple[str, str, bytes]] = {}
        self.holdout_writes: dict[str, tuple[str, str, bytes, datetime | None]] = {}
        self.contributions: list[Contribution] = []

    def decide(
        self, i: int, item: LabelledTokens, batch: DocBatch, fraction: float
    ) -> tuple[Outcome, str | None]:
        """What item `i` (of `batch`) does, and the label its message had before (None: new)."""
        keys = batch.keys[batch.indptr[i] : batch.indptr[i + 1]]
        counts = batch.counts[batch.indptr[i] : batch.indptr[i + 1]]
        known = self.ledger.get(item.message_id) or self.holdout.get(item.message_id)
        outcome: Outcome = "learned"
        previous = None if known is None else known[0]
        if known is not None:
            label, source = known[0], known[1]
            if label == item.label:
                if (
                    source == "auto" and item.source == "analyst"
                ):  # confirmed: now an analyst's label
                    self._set_source(item.message_id, "analyst")
                return "duplicate", previous
            if source == "analyst" and item.source == "auto":
                return "kept_analyst_label", previous
            outcome = "relabelled"
            if item.message_id in self.holdout:
                self._hold(item, keys, counts)
                return outcome, previous
            old_keys, old_counts = unpack(self.ledger[item.message_id][2])
            self.contributions.append((label, old_keys, old_counts, -1))
        elif in_holdout(item.message_id, fraction):
            self._hold(item, keys, counts)
            return "held_out", previous
        packed = pack(keys, counts)
        self.contributions.append((item.label, keys, counts, +1))
        self.ledger[item.message_id] = (item.label, item.source, packed)
        self.ledger_writes[item.message_id] = (item.label, item.source, packed)
        return outcome, previous

    def _hold(self, item: LabelledTokens, keys: IntArray, counts: IntArray) -> None:
        """Keep `item` in the holdout (for calibration) instead of learning it."""
        self.holdout[item.message_id] = (item.label, item.source)
        packed = pack(keys, counts)
        self.holdout_writes[item.message_id] = (item.label, item.source, packed, item.ts)

    def _set_source(self, message_id: str, source: str) -> None:
        if message_id in self.ledger:
            label, _, packed = self.ledger[message_id]
            self.ledger[message_id] = self.ledger_writes[message_id] = (label, source, packed)
        else:
            label, _ = self.holdout[message_id]
            self.holdout[message_id] = (label, source)
            _, _, packed, ts = self.holdout_writes.get(message_id, (label, source, b"", None))
            self.holdout_writes[message_id] = (label, source, packed, ts)


def _class_ids(conn: Connection, model_id: int, labels: set[str]) -> dict[str, int]:
    """Class ids of `labels`, adding classes never seen (the model row lock is held)."""
    rows = conn.execute(
        select(ClassStats.label, ClassStats.class_id).where(ClassStats.model_id == model_id)
    )
    ids = dict(rows.all())
    for label in sorted(labels - set(ids)):
        ids[label] = max(ids.values(), default=-1) + 1
        conn.execute(
            insert(ClassStats).values(
                model_id=model_id, class_id=ids[label], label=label, docs=0, tokens=0, seq=0
            )
        )
    return ids


def _write_statistics(
    conn: Connection,
    model_id: int,
    seq: int,
    now: datetime,
    contributions: list[Contribution],
    class_ids: dict[str, int],
) -> None:
    if not contributions:
        return
    lengths = np.array([len(keys) for _, keys, _, _ in contributions], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    keys = np.concatenate([k for _, k, _, _ in contributions]).astype(np.int64)
    counts = np.concatenate([c for _, _, c, _ in contributions]).astype(np.int64)
    sign = np.array([s for *_, s in contributions], dtype=np.int64)
    cls = np.array([class_ids[label] for label, *_ in contributions], dtype=np.int64)
    t = fixed_point_log_tf(DocBatch(indptr, keys, counts))
    entry_sign, entry_cls = np.repeat(sign, lengths), np.repeat(cls, lengths)
    # one row per (token, class), sorted by key so that concurrent writers lock in one order
    order = np.lexsort((entry_cls, keys))
    k, c = keys[order], entry_cls[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(first)
    sums = [
        np.add.reduceat((entry_sign * v)[order], starts) for v in (counts, np.ones_like(counts), t)
    ]
    key, cid = k[starts], c[starts]
    n, df, tf = sums
    live = (n != 0) | (df != 0) | (tf != 0)
    # CHECK constraints apply to the row an INSERT proposes, before ON CONFLICT turns it into an
    # update: net removals are plain UPDATEs of existing rows.
    growing = live & (n >= 0) & (df >= 0) & (tf >= 0)
    shrinking = np.flatnonzero(live & ~growing)
    day = int(now.timestamp() // 86400)
    write = _write_postgresql if conn.dialect.name == "postgresql" else _write_sqlite
    write(conn, model_id, seq, day, *(a[growing] for a in (key, cid, n, df, tf)), insert=True)
    applied_tokens = np.bincount(cid[growing], weights=n[growing], minlength=len(class_ids) + 1)
    if len(shrinking):
        # Tokens expired by `prune` may be gone, or re-learned from fewer documents since:
        # remove at most what is there, so that class totals stay the sums of the rows.
        present, current = _current_values(conn, model_id, key[shrinking], cid[shrinking])
        rows = shrinking[present]
        applied = [np.maximum(v[rows], -current[i][present]) for i, v in enumerate((n, df, tf))]
        write(conn, model_id, seq, day, key[rows], cid[rows], *applied, insert=False)
        applied_tokens += np.bincount(cid[rows], weights=applied[0], minlength=len(class_ids) + 1)
    docs = np.bincount(cls, weights=sign, minlength=len(class_ids) + 1)
    for class_id in class_ids.values():
        if docs[class_id] or applied_tokens[class_id]:
            conn.execute(
                update(ClassStats)
                .where(ClassStats.model_id == model_id, ClassStats.class_id == class_id)
                .values(
                    docs=ClassStats.docs + int(docs[class_id]),
                    tokens=ClassStats.tokens + int(applied_tokens[class_id]),
                    seq=seq,
                )
            )


def _current_values(
    conn: Connection, model_id: int, keys: IntArray, classes: IntArray
) -> tuple[npt.NDArray[np.bool_], list[IntArray]]:
    """Which (key, class) rows exist, and their current count, doc_freq and tfn (0 where absent)."""
    found: dict[tuple[int, int], tuple[int, int, int]] = {}
    unique_keys = sorted(set(keys.tolist()))
    for start in range(0, len(unique_keys), CHUNK):
        rows = conn.execute(
            select(
                TokenStats.token_key,
                TokenStats.class_id,
                TokenStats.count,
                TokenStats.doc_freq,
                TokenStats.tfn,
            ).where(
                TokenStats.model_id == model_id,
                TokenStats.token_key.in_(unique_keys[start : start + CHUNK]),
            )
        )
        found.update({(k, c): (n, df, tf) for k, c, n, df, tf in rows})
    values = [found.get(pair) for pair in zip(keys.tolist(), classes.tolist())]
    present = np.array([v is not None for v in values], dtype=bool)
    columns = np.array([v or (0, 0, 0) for v in values], dtype=np.int64).reshape(-1, 3).T
    return present, [columns[0], columns[1], columns[2]]


_UPSERT_SET = (
    "count = token_stats.count + excluded.count, "
    "doc_freq = token_stats.doc_freq + excluded.doc_freq, "
    "tfn = token_stats.tfn + excluded.tfn, seq = excluded.seq, last_seen = excluded.last_seen"
)
_SHRINK_SET = "count = count + {n}, doc_freq = doc_freq + {df}, tfn = tfn + {tf}, seq = {seq}"


def _write_sqlite(
    conn: Connection,
    model_id: int,
    seq: int,
    day: int,
    key: IntArray,
    cid: IntArray,
    n: IntArray,
    df: IntArray,
    tf: IntArray,
    *,
    insert: bool,
) -> int:
    """Additive upsert (insert=True) or update of existing rows, one executemany of tuples."""
    rows: list[tuple[int, ...]]  # the statement's parameters, one tuple per row
    if insert:
        sql = (
            "INSERT INTO token_stats "
            "(model_id, token_key, class_id, count, doc_freq, tfn, seq, last_seen) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT (model_id, token_key, class_id) DO UPDATE SET {_UPSERT_SET}"
        )
        rows = [
            (model_id, *r, seq, day)
            for r in zip(key.tolist(), cid.tolist(), n.tolist(), df.tolist(), tf.tolist())
        ]
    else:
        sql = (
            f"UPDATE token_stats SET {_SHRINK_SET.format(n='?', df='?', tf='?', seq=seq)} "
            "WHERE model_id = ? AND token_key = ? AND class_id = ?"
        )
        rows = [
            (*r[2:], model_id, r[0], r[1])
            for r in zip(key.tolist(), cid.tolist(), n.tolist(), df.tolist(), tf.tolist())
        ]
    if not rows:
        return 0
    cursor = driver_cursor(conn)
    cursor.executemany(sql, rows)
    return cursor.rowcount


def _write_postgresql(
    conn: Connection,
    model_id: int,
    seq: int,
    day: int,
    key: IntArray,
    cid: IntArray,
    n: IntArray,
    df: IntArray,
    tf: IntArray,
    *,
    insert: bool,
) -> int:
    """The same as one statement over arrays (INSERT … SELECT FROM unnest), rows in key order."""
    if not len(key):
        return 0
    arrays = (
        "unnest(%s::bigint[], %s::int[], %s::bigint[], %s::bigint[], %s::bigint[]) "
        "AS u(k, c, n, df, tf)"
    )
    params: tuple[int, ...]  # those before the arrays
    if insert:
        sql = (
            "INSERT INTO token_stats "
            "(model_id, token_key, class_id, count, doc_freq, tfn, seq, last_seen) "
            f"SELECT %s, k, c, n, df, tf, %s, %s FROM {arrays} "
            f"ON CONFLICT (model_id, token_key, class_id) DO UPDATE SET {_UPSERT_SET}"
        )
        params = (model_id, seq, day)
    else:
        sql = (
            f"UPDATE token_stats SET {_SHRINK_SET.format(n='u.n', df='u.df', tf='u.tf', seq='%s')} "
            f"FROM {arrays} WHERE model_id = %s AND token_key = u.k AND class_id = u.c"
        )
        params = (seq,)
    # as array literals: psycopg would dump a list element by element in Python, which is slower
    columns = tuple("{" + ",".join(map(str, a.tolist())) + "}" for a in (key, cid, n, df, tf))
    cursor = driver_cursor(conn)
    cursor.execute(sql, params + columns if insert else params + columns + (model_id,))
    return cursor.rowcount


@overload
def as_utc(moment: datetime) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
@overload
def as_utc(moment: datetime | None) -> datetime | None: ...
def as_utc(moment: datetime | None) -> datetime | None:
    """`moment` in UTC; naive times are taken as UTC (SQLite gives back naive datetimes written as
    UTC), so that time windows compare alike on every database."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _write_ledger(conn: Connection, model_id: int, now: datetime, plan: _Plan) -> None:
    fresh = [
        {
            "model_id": model_id,
            "message_id": m,
            "label": label,
            "source": source,
            "tokens": tokens,
            "learned_at": now,
        }
        for m, (label, source, tokens) in plan.ledger_writes.items()
        if m not in plan.existing
    ]
    insert_rows(conn, FeedbackLedger.__table__, fresh)
    for m, (label, source, tokens) in plan.ledger_writes.items():
        if m in plan.existing:
            conn.execute(
                update(FeedbackLedger)
                .where(FeedbackLedger.model_id == model_id, FeedbackLedger.message_id == m)
                .values(label=label, source=source, tokens=tokens, learned_at=now)
            )
    new_holdout = [
        {
            "model_id": model_id,
            "message_id": m,
            "label": label,
            "source": source,
            "tokens": tokens,
            "ts": as_utc(ts) or now,
        }
        for m, (label, source, tokens, ts) in plan.holdout_writes.items()
        if m not in plan.existing_holdout
    ]
    insert_rows(conn, Holdout.__table__, new_holdout)
    for m, (label, source, _, _) in plan.holdout_writes.items():
        if m in plan.existing_holdout:
            conn.execute(
                update(Holdout)
                .where(Holdout.model_id == model_id, Holdout.message_id == m)
                .values(label=label, source=source)
            )
