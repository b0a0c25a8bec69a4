"""Learning from labelled feedback through the store: idempotent, relabel-aware, batched.

`apply` runs in the caller's transaction (one per batch):
- it takes the model row's lock and the next change sequence number first, so concurrent
  learners of one model queue instead of deadlocking, and sequence order is commit order
  (which makes `filterd.store.sync` exact);
- each message is learned as `filterd.bayes.features.learned` bounds it (at most
  LEARNED_PER_VIEW distinct tokens of each view), which the ledger then holds;
- each item is decided against the ledger and the holdout (`filterd.store.ledger.Plan`): learned,
  relabelled, a duplicate, held out, or an automatic label that keeps an analyst's;
- for a fusion model with a target class, each learned item takes its logistic step in the
  batch's order on the weights as committed before it (`filterd.bayes.logistic`: under the row
  lock, the order of learning is the commit order), recorded in the ledger with its label;
- all contributions of the batch are summed per (token, class) first and written as additive
  upserts sorted by key; CHECK constraints keep every count ≥ 0;
- every item becomes one event of the audit trail (`filterd.store.audit`) with what was decided
  for it and the label it had before, in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, func, insert, select, update

from filterd.bayes.features import DocBatch, encode, learned
from filterd.bayes.logistic import by_position, sequential_steps
from filterd.bayes.model import FUSION
from filterd.bayes.statistics import fixed_point_log_tf
from filterd.bayes.vocab import TokenHasher
from filterd.store.audit import insert_events
from filterd.store.bulk import driver_cursor, execute_rows
from filterd.store.labels import SOURCES, LabelledTokens, Outcome
from filterd.store.ledger import Contribution, IntArray, Plan, write_ledger
from filterd.store.models import ModelRef
from filterd.store.schema import ClassStats, ModelRow, TokenStats
from filterd.store.sql import CHUNK


@dataclass
class Applied:
    """What a batch did."""

    learned: int = 0
    relabelled: int = 0
    duplicates: int = 0
    held_out: int = 0
    kept_analyst_label: int = 0  # automatic labels that did not override an analyst's
    seq: int = 0

    def count(self, outcome: Outcome) -> None:
        field = "duplicates" if outcome == "duplicate" else outcome
        setattr(self, field, getattr(self, field) + 1)


def apply(
    conn: Connection,
    model: ModelRef,
    items: Sequence[LabelledTokens],
    holdout_fraction: float = 0.1,
    now: datetime | None = None,
    target: str | None = None,
) -> Applied:
    """Apply a batch of feedback to `model` in the caller's transaction (see the module
    docstring); `target`: the class the logistic steps are about (a fusion model's decision
    target; None: no steps)."""
    for item in items:
        if item.source not in SOURCES:
            raise ValueError(f"feedback source must be analyst or auto, not {item.source!r}")
    now = now or datetime.now(UTC)
    seq = next_seq(conn, model)
    result = Applied(seq=seq)
    # each message as learning adds it: at most LEARNED_PER_VIEW tokens of each view
    batch = learned(encode([item.tokens for item in items], TokenHasher(model.hash_seed)))
    plan = Plan(conn, model.id, [item.message_id for item in items])
    outcomes: list[Outcome] = []
    previous: list[str | None] = []  # the label each message had before
    for i, item in enumerate(items):
        outcome, before = plan.decide(i, item, batch, holdout_fraction)
        result.count(outcome)
        outcomes.append(outcome)
        previous.append(before)
    if plan.contributions:
        steps = write_contributions(conn, model, seq, now, plan.contributions, target)
        if steps is not None:
            plan.record_steps(steps)
    write_ledger(conn, model.id, now, plan)
    insert_events(conn, model.id, items, outcomes, previous, now)
    return result


def next_seq(conn: Connection, model: ModelRef) -> int:
    """The model's next change sequence number, its row locked until the transaction ends
    (concurrent writers of one model queue here)."""
    seq = conn.execute(
        update(ModelRow).where(model.row()).values(seq=ModelRow.seq + 1).returning(ModelRow.seq)
    ).scalar_one_or_none()
    if seq is None:
        raise model.gone()
    return int(seq)


def write_contributions(
    conn: Connection,
    model: ModelRef,
    seq: int,
    now: datetime,
    contributions: list[Contribution],
    target: str | None,
) -> IntArray | None:
    """Add (or take back) `contributions` to the statistics with change number `seq`; for a
    fusion model with a `target`, with their logistic steps (`_logistic_steps`), returned."""
    class_ids = _class_ids(conn, model.id, {c.label for c in contributions})
    contributed = _batch_of(contributions)
    steps = None
    if target is not None and model.spec.variant == FUSION:
        steps = _logistic_steps(conn, model.id, contributions, contributed, target)
    _write_statistics(conn, model.id, seq, now, contributions, contributed, class_ids, steps)
    return steps


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


def _batch_of(contributions: list[Contribution]) -> DocBatch:
    """The token keys and counts of the contributions, one document each, in order."""
    lengths = np.array([len(c.keys) for c in contributions], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    keys = np.concatenate([c.keys for c in contributions]).astype(np.int64)
    counts = np.concatenate([c.counts for c in contributions]).astype(np.int64)
    return DocBatch(indptr, keys, counts)


def _logistic_steps(
    conn: Connection,
    model_id: int,
    contributions: list[Contribution],
    batch: DocBatch,
    target: str,
) -> IntArray:
    """The logistic step of each contribution (`batch`: theirs, `_batch_of`), in order, from
    the weights the store holds (`sequential_steps`; an unlearned one's is the step it
    recorded)."""
    keys, at = by_position(batch)
    bias = conn.execute(
        select(func.coalesce(func.sum(ClassStats.weight), 0)).where(ClassStats.model_id == model_id)
    ).scalar_one()
    is_target = np.array([c.label == target for c in contributions], dtype=bool)
    recorded = [None if c.sign > 0 else (c.step or 0) for c in contributions]
    weights = _token_weights(conn, model_id, keys)
    return sequential_steps(at, is_target, weights, int(bias), recorded)


# The weights of a batch's tokens in one statement (an array on PostgreSQL, a JSON array on
# SQLite), not one per CHUNK keys: a batch of e-mails holds some 300,000 distinct tokens.
_WEIGHTS_PG = (
    "SELECT token_key, sum(weight)::bigint FROM token_stats "
    "WHERE model_id = %s AND token_key = ANY(%s::bigint[]) AND weight <> 0 GROUP BY token_key"
)
_WEIGHTS_SQLITE = (
    "SELECT group_concat(token_key || ',' || w, ',') FROM (SELECT token_key, sum(weight) AS w "
    "FROM token_stats WHERE model_id = ? AND token_key IN (SELECT value FROM json_each(?)) "
    "AND weight <> 0 GROUP BY token_key)"
)


def _token_weights(conn: Connection, model_id: int, keys: IntArray) -> IntArray:
    """(len(keys),) w = Σ_c W[c,w] of each of `keys` (sorted, distinct) as committed (0 for a
    token not in the store)."""
    cursor = driver_cursor(conn)
    if conn.dialect.name == "postgresql":
        cursor.execute(_WEIGHTS_PG, (model_id, "{" + ",".join(map(str, keys.tolist())) + "}"))
        found = np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, 2)
    else:
        cursor.execute(_WEIGHTS_SQLITE, (model_id, json.dumps(keys.tolist())))
        row = cursor.fetchone()
        text = None if row is None else row[0]
        found = np.fromstring(text or "", dtype=np.int64, sep=",").reshape(-1, 2)
    weights = np.zeros(len(keys), dtype=np.int64)
    weights[np.searchsorted(keys, found[:, 0])] = found[:, 1]
    return weights


def _write_statistics(
    conn: Connection,
    model_id: int,
    seq: int,
    now: datetime,
    contributions: list[Contribution],
    batch: DocBatch,
    class_ids: dict[str, int],
    steps: IntArray | None = None,
) -> None:
    keys, counts, indptr = batch.keys, batch.counts, batch.indptr
    lengths = np.diff(indptr)
    sign = np.array([c.sign for c in contributions], dtype=np.int64)
    cls = np.array([class_ids[c.label] for c in contributions], dtype=np.int64)
    t = fixed_point_log_tf(batch)
    step = np.zeros(len(contributions), dtype=np.int64) if steps is None else steps
    w = np.repeat(step, lengths)
    entry_sign, entry_cls = np.repeat(sign, lengths), np.repeat(cls, lengths)
    # one row per (token, class), sorted by key so that concurrent writers lock in one order
    order = np.lexsort((entry_cls, keys))
    k, c = keys[order], entry_cls[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (k[1:] != k[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(first)
    sums = [
        np.add.reduceat((entry_sign * v)[order], starts)
        for v in (counts, np.ones_like(counts), t, w)
    ]
    key, cid = k[starts], c[starts]
    n, df, tf, wt = sums
    live = (n != 0) | (df != 0) | (tf != 0) | (wt != 0)
    # CHECK constraints apply to the row an INSERT proposes, before ON CONFLICT turns it into an
    # update: net removals are plain UPDATEs of existing rows. (A weight may have either sign.)
    growing = live & (n >= 0) & (df >= 0) & (tf >= 0)
    shrinking = np.flatnonzero(live & ~growing)
    day = int(now.timestamp() // 86400)
    columns = (key, cid, n, df, tf, wt)
    _write_rows(conn, model_id, seq, day, *(a[growing] for a in columns), insert=True)
    # float: bincount with weights gives float64, but int64 for no rows (a batch that only
    # takes back, such as forgetting)
    applied_tokens = np.bincount(
        cid[growing], weights=n[growing], minlength=len(class_ids) + 1
    ).astype(np.float64)
    if len(shrinking):
        # Tokens expired by `prune` may be gone, or re-learned from fewer documents since:
        # remove at most what is there, so that class totals stay the sums of the rows.
        present, current = _current_values(conn, model_id, key[shrinking], cid[shrinking])
        rows = shrinking[present]
        applied = [np.maximum(v[rows], -current[i][present]) for i, v in enumerate((n, df, tf))]
        n_at, df_at, tf_at = applied
        at = (key[rows], cid[rows], n_at, df_at, tf_at, wt[rows])
        _write_rows(conn, model_id, seq, day, *at, insert=False)
        applied_tokens += np.bincount(cid[rows], weights=applied[0], minlength=len(class_ids) + 1)
    docs = np.bincount(cls, weights=sign, minlength=len(class_ids) + 1)
    bias = np.zeros(len(class_ids) + 1, dtype=np.int64)
    np.add.at(bias, cls, sign * step)
    for class_id in class_ids.values():
        if docs[class_id] or applied_tokens[class_id] or bias[class_id]:
            conn.execute(
                update(ClassStats)
                .where(ClassStats.model_id == model_id, ClassStats.class_id == class_id)
                .values(
                    docs=ClassStats.docs + int(docs[class_id]),
                    tokens=ClassStats.tokens + int(applied_tokens[class_id]),
                    weight=ClassStats.weight + int(bias[class_id]),
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
    "tfn = token_stats.tfn + excluded.tfn, weight = token_stats.weight + excluded.weight, "
    "seq = excluded.seq, last_seen = excluded.last_seen"
)
_SHRINK_SET = (
    "count = count + u.n, doc_freq = doc_freq + u.df, tfn = tfn + u.tf, weight = weight + u.w, "
    "seq = {p}"
)
# The rows u(k, c, n, df, tf, w) of a statement: on PostgreSQL one array per column, unnested;
# on SQLite VALUES lists (`filterd.store.bulk.execute_rows`, which says why not executemany).
_UNNESTED = (
    "unnest(%s::bigint[], %s::int[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[]) "
    "AS u(k, c, n, df, tf, w)"
)


def _write_rows(
    conn: Connection,
    model_id: int,
    seq: int,
    day: int,
    key: IntArray,
    cid: IntArray,
    n: IntArray,
    df: IntArray,
    tf: IntArray,
    w: IntArray,
    *,
    insert: bool,
) -> int:
    """Additive upsert (insert=True) or update of existing rows, rows in key order, in one
    statement (PostgreSQL) or a few (SQLite); returns the number of rows written."""
    if not len(key):
        return 0
    postgresql = conn.dialect.name == "postgresql"
    p = "%s" if postgresql else "?"
    if insert:
        sql = (
            "INSERT INTO token_stats "
            "(model_id, token_key, class_id, count, doc_freq, tfn, weight, seq, last_seen) "
            f"SELECT {p}, k, c, n, df, tf, w, {p}, {p} FROM {{rows}} WHERE true "
            f"ON CONFLICT (model_id, token_key, class_id) DO UPDATE SET {_UPSERT_SET}"
        )
        before: tuple[int, ...] = (model_id, seq, day)
        after: tuple[int, ...] = ()
    else:
        sql = (
            f"UPDATE token_stats SET {_SHRINK_SET.format(p=p)} "
            f"FROM {{rows}} WHERE model_id = {p} AND token_key = u.k AND class_id = u.c"
        )
        before, after = (seq,), (model_id,)
    arrays = (key, cid, n, df, tf, w)
    cursor = driver_cursor(conn)
    if not postgresql:
        flat = np.column_stack(arrays).ravel().tolist()
        return execute_rows(cursor, sql, ("k", "c", "n", "df", "tf", "w"), flat, before, after)
    # as array literals: psycopg would dump a list element by element in Python, slower
    columns = tuple("{" + ",".join(map(str, a.tolist())) + "}" for a in arrays)
    cursor.execute(sql.format(rows=_UNNESTED), before + columns + after)
    return int(cursor.rowcount)
