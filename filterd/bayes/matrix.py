"""Where the per-(class, token) statistics live: dense arrays, or (token, class) pairs.

Both keep `STATISTICS` int64 values per (class c, token id w): N[c,w], DF[c,w], T[c,w] and
W[c,w] in fixed point, and answer the same few questions. Dense storage is C × V arrays:
fastest, and right for a few classes. Sparse storage keeps only the pairs that occur (≈56
bytes each), so that many classes with mostly disjoint vocabularies (Zhang's 1,000-class
setting) fit in memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from filterd.bayes.arrays import Int64Array
from filterd.bayes.vocab import Vocabulary, next_capacity

_CLASS_BITS = 20  # a pair key is token_id · 2²⁰ + class; at most 2²⁰ classes
STATISTICS = 4  # N, DF, T, W (`filterd.bayes.statistics`)


class DenseMatrix:
    """(STATISTICS, C, capacity) values: N, DF, T, W."""

    sparse = False

    def __init__(self) -> None:
        self.values: Int64Array = np.zeros((STATISTICS, 0, 0), dtype=np.int64)

    def add_class(self) -> None:
        self.values = np.concatenate(
            [self.values, np.zeros((STATISTICS, 1, self.values.shape[2]), np.int64)], axis=1
        )

    def reserve(self, n_tokens: int) -> None:
        capacity = self.values.shape[2]
        if n_tokens > capacity:
            new = next_capacity(n_tokens, capacity)
            self.values = np.pad(self.values, ((0, 0), (0, 0), (0, new - capacity)))

    def add(
        self, rows: Int64Array, ids: Int64Array, increments: Int64Array | Sequence[Int64Array]
    ) -> None:
        """values[k, rows[i], ids[i]] += increments[k][i] (repeated pairs add up); `increments`
        is (STATISTICS, n), or that many (n,) arrays."""
        # np.add.at with a flat index into the (contiguous) values: faster than with a (rows, ids)
        # pair
        flat = self.values.reshape(STATISTICS, -1)
        index = rows * self.values.shape[2]
        index += ids
        for k in range(STATISTICS):
            np.add.at(flat[k], index, increments[k])

    def columns(self, ids: Int64Array | slice) -> Int64Array:
        """(STATISTICS, C, m) values of the given token ids."""
        if isinstance(ids, slice):
            return self.values[:, :, ids]
        # np.take, not values[:, :, ids]: indexing lays the copy out token-major, and the per-class
        # sums over it are much slower
        return np.take(self.values, ids, axis=2)

    def set_columns(self, rows: Int64Array, ids: Int64Array, values: Int64Array) -> None:
        """values[:, rows × ids] = values (STATISTICS, len(rows), len(ids))."""
        self.values[:, rows[:, None], ids[None, :]] = values

    def entries(self, n_tokens: int) -> tuple[Int64Array, Int64Array, Int64Array]:
        """Every (class, token) with DF > 0, as rows, ids and (STATISTICS, nnz) values."""
        rows, ids = np.nonzero(self.values[1, :, :n_tokens])
        return rows, ids, self.values[:, rows, ids]


class SparseMatrix:
    """Values of the (token, class) pairs that occur, found through a pair-key vocabulary."""

    sparse = True

    def __init__(self) -> None:
        self.n_classes = 0
        self._pairs = Vocabulary()
        self._values: Int64Array = np.zeros((STATISTICS, 0), dtype=np.int64)

    def add_class(self) -> None:
        if self.n_classes + 1 >= 1 << _CLASS_BITS:
            raise ValueError(f"sparse statistics hold at most {(1 << _CLASS_BITS) - 1} classes")
        self.n_classes += 1

    def reserve(self, n_tokens: int) -> None:
        pass  # pairs are allocated as they occur

    def _slots(self, rows: Int64Array, ids: Int64Array) -> Int64Array:
        slots = self._pairs.add((ids << _CLASS_BITS) | rows)
        if len(self._pairs) > self._values.shape[1]:
            grown = next_capacity(len(self._pairs), self._values.shape[1])
            self._values = np.pad(self._values, ((0, 0), (0, grown - self._values.shape[1])))
        return slots

    def add(
        self, rows: Int64Array, ids: Int64Array, increments: Int64Array | Sequence[Int64Array]
    ) -> None:
        slots = self._slots(rows, ids)
        for k in range(STATISTICS):
            np.add.at(self._values[k], slots, increments[k])

    def columns(self, ids: Int64Array | slice) -> Int64Array:
        if isinstance(ids, slice):
            ids = np.arange(ids.start or 0, ids.stop)
        out = np.zeros((STATISTICS, self.n_classes, len(ids)), dtype=np.int64)
        which, keys, slots = self._pairs.in_ranges(ids << _CLASS_BITS, (ids + 1) << _CLASS_BITS)
        out[:, keys & ((1 << _CLASS_BITS) - 1), which] = self._values[:, slots]
        return out

    def set_columns(self, rows: Int64Array, ids: Int64Array, values: Int64Array) -> None:
        r = np.repeat(rows, len(ids))
        w = np.tile(ids, len(rows))
        flat = values.reshape(STATISTICS, -1)
        present = self._pairs.lookup((w << _CLASS_BITS) | r) >= 0
        write = present | (flat[1] != 0)  # never create a pair just to store zeros
        slots = self._slots(r[write], w[write])
        self._values[:, slots] = flat[:, write]

    def entries(self, n_tokens: int) -> tuple[Int64Array, Int64Array, Int64Array]:
        n = len(self._pairs)
        keys, values = self._pairs.keys, self._values[:, :n]
        live = values[1] > 0
        return keys[live] & ((1 << _CLASS_BITS) - 1), keys[live] >> _CLASS_BITS, values[:, live]

    @property
    def n_pairs(self) -> int:
        return len(self._pairs)
