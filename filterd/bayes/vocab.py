"""Token keys and the token → column map.

A model may hold millions of distinct tokens; a Python dict of them costs far more memory
than the whole statistics budget. Tokens are therefore
represented by 62-bit keys computed for a whole batch at once with numpy, and the
vocabulary is a pair of sorted numpy arrays (key → column id), ≈20 bytes a token.

The key is two polynomial hashes modulo 31-bit primes, with bases drawn from a seed:

    h_p(t) = Σ_i (b_i + 1) · B_p^i  mod p      (b_i the UTF-8 bytes of t)
    key(t) = v(t) · 2^62 + (h_P1(t) · 2^31 + h_P2(t)) mod 2^b_v(t)     (as a signed 64-bit integer)

v(t) is the token's view, its family, read from its form (`view_of_token`): 0 for words and
every other token, 1 for character 4-grams ("c4:…"), 2 for word pairs ("w1 w2", "w1 ~w3": a
space and no ":"). In the key's top bits, the view goes wherever the key goes (statistics,
store, deltas), so one vocabulary and one statistics table hold every family and a model can
read one of them alone (`views_of`). Keys of view 2 are negative.

b_v (`BUCKET_BITS`) bounds a view's distinct keys to 2^b_v. Words keep the whole hash (b = 62);
the 4-grams and the pairs, which outnumber a corpus's words 4 to 40 times, share 2^14 and 2^13
buckets (the hashing trick: tokens of one bucket add up), so they add at most 24,576 keys to
a model whatever it learns. Two tokens of one message in one bucket are one entry (`encode`).

For two distinct tokens of at most L bytes the chance that they collide is at most
(L/P1)·(L/P2) over the choice of bases, so a model keeps its own random seed (an attacker
who does not know it cannot aim a token at another's statistics) and persists it with
the model: keys are stable for a given seed, unlike Python's per-process `hash()`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from filterd.bayes.arrays import BoolArray, Int64Array, UInt64Array

P1 = 2_147_483_647  # 2**31 - 1
P2 = 2_147_483_629  # the largest prime below 2**31 - 1
_SEPARATOR = "\x00"
# The views (`view_of_token`), by the number in a key's top two bits
WORDS, CHARS, PAIRS = 0, 1, 2
VIEWS = ("words", "chars", "pairs")
CHAR_GRAM_PREFIX = "c4:"  # filterd.tokenize.text.GRAM_PREFIX (a test checks they agree)
_VIEW_SHIFT = 62
# b_v: the hash bits a key of each view keeps (docs/benchmarks.md, "How large is the fusion's
# model?", for the choice)
BUCKET_BITS = (62, 14, 13)
BUCKET_MASKS = tuple((1 << bits) - 1 for bits in BUCKET_BITS)  # 2^b_v − 1
_BUCKET_MASKS = np.array(BUCKET_MASKS, dtype=np.uint64)
_HASH_MASK = (1 << _VIEW_SHIFT) - 1  # a key without its view
# a view of at most 2^_DENSE_BITS buckets is looked up in a table of them (`VocabularySnapshot`)
_DENSE_BITS = 20
# lookups of this many keys in a vocabulary at least as large sort them first
_SORT_NEEDLES_FROM = 1 << 14


def next_capacity(needed: int, current: int) -> int:
    """Capacity for growing arrays: ×1.25 keeps appends amortized O(1) and wastes at most a
    fifth."""
    return max(needed, current + current // 4, 1024)


def view_of_token(token: str) -> int:
    """The view of a token: `CHARS` for a character 4-gram, `PAIRS` for a word pair (a space and
    no ":", which no word and no prefixed token of a pair's form holds), else `WORDS`.

    >>> [VIEWS[view_of_token(t)] for t in ("free", "c4:fre_", "free ~money", "subject:a b")]
    ['words', 'chars', 'pairs', 'words']
    """
    if token.startswith(CHAR_GRAM_PREFIX):
        return CHARS
    if " " in token and ":" not in token:
        return PAIRS
    return WORDS


def views_of(keys: Int64Array) -> Int64Array:
    """(n,) the view of each key (its top two bits).

    >>> hasher = TokenHasher(7)
    >>> views_of(hasher.keys(["free", "c4:free", "free money"])).tolist()
    [0, 1, 2]
    """
    views: Int64Array = (np.asarray(keys, dtype=np.int64) >> _VIEW_SHIFT) & 3
    return views


class TokenHasher:
    """Maps token strings to stable 64-bit integer keys (the view and a 62-bit hash), a batch
    at a time."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        rng = np.random.default_rng(self.seed)
        self._bases = (int(rng.integers(1 << 16, P1 - 1)), int(rng.integers(1 << 16, P2 - 1)))
        self._powers: tuple[UInt64Array, UInt64Array] = (
            np.ones(1, dtype=np.uint64),
            np.ones(1, dtype=np.uint64),
        )

    @property
    def bases(self) -> tuple[int, int]:
        """(B_P1, B_P2), the bases drawn from the seed."""
        return self._bases

    def keys(self, tokens: Sequence[str]) -> Int64Array:
        """Keys of `tokens` (int64), one per token, in order."""
        n = len(tokens)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        joined = _SEPARATOR.join(tokens)
        data = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        ends = np.flatnonzero(data == 0)
        if len(ends) != n - 1:  # a token contained NUL: hash each one on its own
            return np.concatenate([self.keys([t.replace(_SEPARATOR, "\ufffd")]) for t in tokens])
        starts = np.empty(n, dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends + 1
        lengths = np.diff(np.append(starts, len(data) + 1))  # token bytes + its separator
        position = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)[: len(data)]
        coefficient = data.astype(np.uint64) + 1
        coefficient[ends] = 0  # separators add nothing
        h1 = self._hash(coefficient, position, starts, 0)
        h2 = self._hash(coefficient, position, starts, 1)
        views = np.fromiter(map(view_of_token, tokens), dtype=np.uint64, count=n)
        hashes = ((h1 << np.uint64(31)) | h2) & _BUCKET_MASKS[views]
        return ((views << np.uint64(_VIEW_SHIFT)) | hashes).astype(np.int64)

    def key(self, token: str) -> int:
        """The key of one token."""
        return int(self.keys([token])[0])

    def _hash(
        self, coefficient: UInt64Array, position: Int64Array, starts: Int64Array, which: int
    ) -> UInt64Array:
        prime = (P1, P2)[which]
        powers = self._power_table(which, int(position.max()) + 1)
        # each term < 2**8 · 2**31 and a token has < 2**20 bytes, so the sums fit in uint64
        terms = coefficient * powers[position]
        return np.add.reduceat(terms, starts) % np.uint64(prime)

    def _power_table(self, which: int, size: int) -> UInt64Array:
        table = self._powers[which]
        if len(table) >= size:
            return table
        prime, base = (P1, P2)[which], self._bases[which]
        new = np.empty(max(size, 2 * len(table), 64), dtype=np.uint64)
        new[: len(table)] = table
        filled = len(table)
        while filled < len(new):  # doubling: new[k + i] = new[i] · B^k
            step = min(filled, len(new) - filled)
            factor = np.uint64(pow(base, filled, prime))
            new[filled : filled + step] = (new[:step] * factor) % np.uint64(prime)
            filled += step
        self._powers = (new, self._powers[1]) if which == 0 else (self._powers[0], new)
        return new


class Vocabulary:
    """Token keys ↔ column ids. Ids are assigned in order of first appearance and never reused.

    Lookups and insertions are vectorized. `add` replaces the sorted arrays rather than
    mutating them, so a `snapshot()` taken by a model stays valid while learning goes on.
    """

    def __init__(self) -> None:
        self._sorted_keys = np.empty(0, dtype=np.int64)
        self._sorted_ids = np.empty(0, dtype=np.int64)
        self._keys = np.empty(0, dtype=np.int64)  # id → key; capacity grows by doubling
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def keys(self) -> Int64Array:
        """Key of each id: `keys[id]`."""
        return self._keys[: self._size]

    def lookup(self, keys: Int64Array) -> Int64Array:
        """Ids of `keys`, −1 where a key is not in the vocabulary."""
        return _lookup(self._sorted_keys, self._sorted_ids, keys)

    def add(self, keys: Int64Array) -> Int64Array:
        """Ids of `keys`, adding the ones not yet present."""
        if self._size == 0:  # a first batch is all new: no lookup, no gather and scatter
            return self._insert(keys)
        ids = self.lookup(keys)
        new = np.flatnonzero(ids < 0)
        if len(new):
            ids[new] = self._insert(keys[new])
        return ids

    def _insert(self, keys: Int64Array) -> Int64Array:
        """Ids of `keys`, none of which is in the vocabulary yet, adding them.

        Grouped by `key_runs`, not `np.unique(return_index, return_inverse)`, which is slower.
        """
        order, ordered, starts = key_runs(keys, exact=True)
        new_keys = ordered[starts]
        appearance = np.argsort(order[starts])  # by first occurrence
        new_ids = np.empty(len(new_keys), dtype=np.int64)
        new_ids[appearance] = np.arange(self._size, self._size + len(new_keys))
        at = np.searchsorted(self._sorted_keys, new_keys)
        self._sorted_keys = np.insert(self._sorted_keys, at, new_keys)
        self._sorted_ids = np.insert(self._sorted_ids, at, new_ids)
        self._append(new_keys[appearance])
        return _spread(new_ids, order, starts)

    def in_ranges(
        self, low: Int64Array, high: Int64Array
    ) -> tuple[Int64Array, Int64Array, Int64Array]:
        """Every key k with low[i] ≤ k < high[i], as (i, key, id) arrays, in key order per range."""
        start = np.searchsorted(self._sorted_keys, low)
        lengths = np.searchsorted(self._sorted_keys, high) - start
        which = np.repeat(np.arange(len(low)), lengths)
        offsets = np.cumsum(lengths) - lengths
        positions = np.repeat(start - offsets, lengths) + np.arange(int(lengths.sum()))
        return which, self._sorted_keys[positions], self._sorted_ids[positions]

    def snapshot(self, view: int | None = None) -> VocabularySnapshot:
        """A frozen key → id map of the vocabulary as it is now; with `view`, of that view's keys
        alone, each mapped to its rank among the view's ids (the columns of
        `Statistics.counts(view=view)`, which are that view's ids in ascending order)."""
        if view is None:
            return VocabularySnapshot(self._sorted_keys, self._sorted_ids, self._size)
        in_view = views_of(self._sorted_keys) == view
        ids = self._sorted_ids[in_view]
        rank = np.empty(len(ids), dtype=np.int64)
        rank[np.argsort(ids)] = np.arange(len(ids))
        return VocabularySnapshot(self._sorted_keys[in_view], rank, len(ids), view)

    def _append(self, new_keys: Int64Array) -> None:
        end = self._size + len(new_keys)
        if end > len(self._keys):
            grown = np.empty(next_capacity(end, len(self._keys)), dtype=np.int64)
            grown[: self._size] = self._keys[: self._size]
            self._keys = grown
        self._keys[self._size : end] = new_keys
        self._size = end


class VocabularySnapshot:
    """Read-only key → id map with the ids that existed when it was taken (`size` of them).

    The snapshot of one bucketed view (`BUCKET_BITS` up to `_DENSE_BITS`) is also a table of
    its 2^b buckets, so that a lookup is one index instead of a binary search: the same ids
    (`lookup_sorted`, its reference); keys of the view past its buckets (learned by a release
    before them) are searched.
    """

    def __init__(
        self, sorted_keys: Int64Array, sorted_ids: Int64Array, size: int, view: int | None = None
    ) -> None:
        self._sorted_keys = sorted_keys
        self._sorted_ids = sorted_ids
        self.size = size
        self._view = view
        self._dense: Int64Array | None = None
        if view is not None and BUCKET_BITS[view] <= _DENSE_BITS:
            mask = BUCKET_MASKS[view]
            bucketed = (sorted_keys & _HASH_MASK) <= mask
            self._dense = np.full(mask + 1, -1, dtype=np.int64)
            self._dense[sorted_keys[bucketed] & mask] = sorted_ids[bucketed]

    def lookup(self, keys: Int64Array) -> Int64Array:
        """Ids of `keys`, −1 where a key was not in the vocabulary when the snapshot was taken."""
        if self._dense is None or self._view is None:
            return self.lookup_sorted(keys)
        mask = BUCKET_MASKS[self._view]
        hashes = keys & _HASH_MASK
        ids: Int64Array = self._dense[hashes & mask]
        ids[views_of(keys) != self._view] = -1
        past = np.flatnonzero(hashes > mask)  # none from this release's hasher
        ids[past] = self.lookup_sorted(keys[past])
        return ids

    def lookup_sorted(self, keys: Int64Array) -> Int64Array:
        """`lookup` by binary search in the sorted keys."""
        return _lookup(self._sorted_keys, self._sorted_ids, keys)


def _lookup(sorted_keys: Int64Array, sorted_ids: Int64Array, keys: Int64Array) -> Int64Array:
    if len(sorted_keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    if len(keys) < _SORT_NEEDLES_FROM or len(sorted_keys) < _SORT_NEEDLES_FROM:
        return _found(sorted_keys, sorted_ids, keys)
    # Each distinct key searched once, and in key order, where the binary searches walk the same
    # paths one after another and find them in the cache: faster for many keys, the sort included.
    order, ordered, starts = key_runs(keys)
    return _spread(_found(sorted_keys, sorted_ids, ordered[starts]), order, starts)


def _found(sorted_keys: Int64Array, sorted_ids: Int64Array, keys: Int64Array) -> Int64Array:
    at = np.searchsorted(sorted_keys, keys)
    np.minimum(at, len(sorted_keys) - 1, out=at)
    return np.where(sorted_keys[at] == keys, sorted_ids[at], -1)


def _spread(values: Int64Array, order: Int64Array, starts: Int64Array) -> Int64Array:
    """The value of each key's run (`key_runs`), for each key in its original position."""
    out = np.empty(len(order), dtype=values.dtype)
    out[order] = np.repeat(values, np.diff(starts, append=len(order)))
    return out


def key_runs(keys: Int64Array, exact: bool = False) -> tuple[Int64Array, Int64Array, Int64Array]:
    """`keys` grouped: an order of them, the keys in that order, and where each run of equal keys
    starts. Equal keys are in position order; `exact`: sorted, so that each key has one run
    (the order is then `np.argsort(keys, kind="stable")`).

    Sorted by `prefix_order`, then (if `exact` asks and keys differ in the low bits only) stably
    by the whole key: the first is nearly sorted, timsort's best case.
    """
    order = prefix_order(keys)
    ordered = keys[order]
    if exact and (ordered[1:] < ordered[:-1]).any():
        fix = np.argsort(ordered, kind="stable")
        order, ordered = order[fix], ordered[fix]
    starts: BoolArray = np.empty(len(keys), dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    return order, ordered, np.flatnonzero(starts)


def prefix_order(keys: Int64Array) -> Int64Array:
    """An order of `keys` that sorts them by all but their lowest b bits (2^b ≥ len(keys)),
    equal prefixes in position order: sorted, when no two keys differ in the low bits only
    (rare for token keys).

    One `np.sort` of (prefix, position) packed in an int64: faster than `np.argsort` of the keys.
    """
    b = max(int(len(keys) - 1).bit_length(), 1)
    # keys < 0 too: the arithmetic shift keeps the order
    packed = keys.astype(np.int64, copy=False) >> b
    packed <<= b
    packed |= np.arange(len(keys), dtype=np.int64)
    packed.sort()
    packed &= (1 << b) - 1
    return packed
