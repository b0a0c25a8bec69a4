"""From the store to in-memory statistics: a full load, then incremental syncs.

After token expiry (`filterd.store.expiry`) a sync from before it is a full resync, which
also zeroes the tokens the store no longer has.

`sync(engine, model, stats, since)` brings `stats` up to date with every token row changed
after sequence number `since` and returns the sequence number to pass next time. A delta
carries the current values of every class of each changed token (not increments), so
applying one twice, or a row newer than the returned number, is harmless.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, Result, select, text
from sqlalchemy.engine.interfaces import DBAPICursor

from filterd.bayes.statistics import Delta, Statistics
from filterd.store.bulk import driver_cursor
from filterd.store.models import ModelRef
from filterd.store.schema import ClassStats, ModelRow

# PostgreSQL: changed keys by the (model_id, seq) index, then their rows by primary key, a plan
# that does not depend on table statistics (on a fresh, unanalyzed table the planner chose a far
# slower semi-join)
_CHANGED_KEYS = text(
    "SELECT DISTINCT token_key FROM token_stats WHERE model_id = :model AND seq > :since"
)
_ROWS_OF_KEYS = text(
    "SELECT token_key, class_id, count, doc_freq, tfn, weight FROM token_stats "
    "WHERE model_id = :model AND token_key = ANY(:keys)"
)
_ALL_ROWS = text(
    "SELECT token_key, class_id, count, doc_freq, tfn, weight FROM token_stats "
    "WHERE model_id = :model"
)
ROW = 6  # the values of a token row: token_key, class_id, count, doc_freq, tfn, weight


def load(
    engine: Engine,
    model: ModelRef,
    sparse: bool = False,
    on_rows: Callable[[int], None] | None = None,
) -> tuple[Statistics, int]:
    """The model's statistics, and the sequence number they reflect; `on_rows` hears the number
    of token rows read so far, after each chunk (a large model takes a while)."""
    stats = Statistics(seed=model.hash_seed, sparse=sparse)
    return stats, sync(engine, model, stats, since=None, on_rows=on_rows)


def sync(
    engine: Engine,
    model: ModelRef,
    stats: Statistics,
    since: int | None,
    on_rows: Callable[[int], None] | None = None,
) -> int:
    """Apply every change after `since` (None: everything) to `stats`; returns the new `since`.
    `on_rows` as for `load`."""
    with engine.connect() as conn:
        found = conn.execute(
            select(ModelRow.seq, ModelRow.pruned_seq).where(model.row())
        ).one_or_none()
        if found is None:
            raise model.gone()
        model_id, (seq, pruned_seq) = model.id, found
        expired_since = since is not None and since < pruned_seq  # deleted rows: resync in full
        classes = conn.execute(
            select(ClassStats.class_id, ClassStats.label, ClassStats.docs, ClassStats.weight)
            .where(ClassStats.model_id == model_id)
            .order_by(ClassStats.class_id)
        ).all()
        if conn.dialect.name == "postgresql":
            streamed = conn.execution_options(stream_results=True)  # a server-side cursor
            if since is None or expired_since:
                rows: Rows | None = _ResultRows(streamed.execute(_ALL_ROWS, {"model": model_id}))
            else:
                keys = conn.execute(_CHANGED_KEYS, {"model": model_id, "since": since})
                listed = keys.scalars().all()
                rows = (
                    _ResultRows(
                        streamed.execute(_ROWS_OF_KEYS, {"model": model_id, "keys": listed})
                    )
                    if listed
                    else None
                )
        else:
            rows = _SQLiteRows(
                driver_cursor(conn), model_id, None if since is None or expired_since else since
            )
        values = _values(rows, on_rows)
    delta = _delta(seq, classes, values)
    del values  # before the statistics grow: on a full load it holds 40 bytes per token row
    if expired_since:
        delta = _with_zeros_for(delta, np.setdiff1d(stats.vocab.keys, delta.keys))
    stats.apply_delta(delta)
    return seq


def _with_zeros_for(delta: Delta, keys: npt.NDArray[np.int64]) -> Delta:
    """`delta` that also sets `keys` (tokens the store no longer has) to zero."""

    def pad(a: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return np.concatenate([a, np.zeros((a.shape[0], len(keys)), dtype=a.dtype)], axis=1)

    return Delta(
        delta.version,
        delta.labels,
        delta.D,
        np.concatenate([delta.keys, keys]),
        pad(delta.N),
        pad(delta.DF),
        pad(delta.T),
        pad(delta.W),
        delta.B,
    )


class Rows(Protocol):
    """What `_values` reads: up to `size` token rows at a time, as (rows, ROW) int64 of
    (token_key, class_id, count, doc_freq, tfn, weight); none left once it gives none."""

    def fetchmany(self, size: int, /) -> npt.NDArray[np.int64]: ...


class _ResultRows:
    """`Rows` of a SQLAlchemy result (PostgreSQL's server-side cursor)."""

    def __init__(self, result: Result[Any]) -> None:
        self._result = result

    def fetchmany(self, size: int, /) -> npt.NDArray[np.int64]:
        rows = self._result.fetchmany(size)
        # fromiter over the flattened rows: np.array() probes every Row for the array protocol
        # (slow)
        flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=ROW * len(rows))
        return flat.reshape(-1, ROW)


# SQLite: rows as one text of comma-separated numbers, aggregated by SQLite: one statement step
# for many rows (sqlite3 releases the GIL around each step, and in the daemon one step per row
# let a busy thread take the GIL once per row, for up to a switch interval each time)
_AS_TEXT = (
    "group_concat(token_key || ',' || class_id || ',' || count || ',' || doc_freq || ',' || tfn "
    "|| ',' || weight, ',')"
)
_PAGE_AS_TEXT = (
    f"SELECT {_AS_TEXT} FROM (SELECT token_key, class_id, count, doc_freq, tfn, weight "
    "FROM token_stats "
    "WHERE model_id = :model "
    "AND (token_key, class_id) > (:key, :class) ORDER BY token_key, class_id LIMIT :chunk)"
)
_CHANGED_AS_TEXT = (
    f"SELECT {_AS_TEXT} FROM token_stats WHERE model_id = :model AND token_key IN "
    "(SELECT token_key FROM token_stats WHERE model_id = :model AND seq > :since)"
)


class _SQLiteRows:
    """`Rows` of a SQLite store, as arrays parsed from SQLite's aggregated text: every row of the
    model a page at a time in key order (`since` None), or the rows of the tokens changed after
    `since` all at once."""

    def __init__(self, cursor: DBAPICursor, model_id: int, since: int | None) -> None:
        self._cursor, self._model, self._since = cursor, model_id, since
        self._after: tuple[int, int] | None = (-(2**63), -1)  # None: all read

    def fetchmany(self, size: int, /) -> npt.NDArray[np.int64]:
        if self._after is None:
            return np.zeros((0, ROW), dtype=np.int64)
        if self._since is not None:
            self._cursor.execute(_CHANGED_AS_TEXT, {"model": self._model, "since": self._since})
        else:
            key, class_id = self._after
            page = {"model": self._model, "key": key, "class": class_id, "chunk": size}
            self._cursor.execute(_PAGE_AS_TEXT, page)
        row = self._cursor.fetchone()
        text = None if row is None else row[0]
        values = np.fromstring(text or "", dtype=np.int64, sep=",").reshape(-1, ROW)
        self._after = None
        if self._since is None and len(values) == size:  # a full page: there may be more
            last = values[np.lexsort((values[:, 1], values[:, 0]))[-1]]
            self._after = (int(last[0]), int(last[1]))
        return values


def _values(
    result: Rows | None,
    on_rows: Callable[[int], None] | None = None,
    chunk: int = 50_000,
) -> npt.NDArray[np.int64]:
    """(rows, ROW) int64 of (token_key, class_id, count, doc_freq, tfn, weight), read a chunk at
    a time so that a full load never holds millions of rows as Python objects at once."""
    values = np.zeros((0, ROW), dtype=np.int64)
    filled = 0
    while result is not None and len(rows := result.fetchmany(chunk)):
        if filled + len(rows) > len(values):  # grow by half: no copy of the whole per chunk
            values = np.resize(values, (max(filled + len(rows), len(values) * 3 // 2), ROW))
        values[filled : filled + len(rows)] = rows
        filled += len(rows)
        if on_rows is not None:
            on_rows(filled)
    return values[:filled]


def _delta(
    seq: int, classes: Sequence[tuple[int, str, int, int]], values: npt.NDArray[np.int64]
) -> Delta:
    """The change of `values` (token rows) over `classes`, as of change `seq`. A row of a class
    that `classes` lacks is left out: the sync read the classes before the rows, one statement
    after the other, and a learner that committed in between (its first label of a class) wrote
    it with a change number above `seq`, so that the next sync reads it again."""
    class_ids = np.array([class_id for class_id, *_ in classes], dtype=np.int64)
    position = np.full(
        max(int(class_ids.max(initial=-1)), int(values[:, 1].max(initial=-1))) + 1,
        -1,
        dtype=np.int64,
    )
    position[class_ids] = np.arange(len(class_ids))
    values = values[position[values[:, 1]] >= 0]
    keys, column = np.unique(values[:, 0], return_inverse=True)
    arrays = np.zeros((ROW - 2, len(classes), len(keys)), dtype=np.int64)
    row = position[values[:, 1]]
    arrays[:, row, column] = values[:, 2:].T
    labels = tuple(label for _, label, _, _ in classes)
    docs = np.array([d for _, _, d, _ in classes], dtype=np.int64)
    bias = np.array([b for *_, b in classes], dtype=np.int64)
    N, DF, T, W = arrays
    return Delta(seq, labels, docs, keys, N, DF, T, W, bias)
