"""Token lists → per-document token counts `f_dw`, a batch at a time.

A `DocBatch` holds n documents in CSR form: document i owns entries
`indptr[i]:indptr[i+1]` of `keys` (token keys, unique and sorted within a document) and
`counts` (occurrences `f_dw`). It is the one input format of learning and scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Protocol

import numpy as np

from filterd.bayes.arrays import BoolArray, Int64Array
from filterd.bayes.vocab import BUCKET_MASKS, P1, P2, VIEWS, TokenHasher, views_of


class _Speedups(Protocol):
    """What `encode` uses of filterd._speedups (see filterd/_speedups.pyi)."""

    P1: int
    P2: int

    def count_keys(
        self,
        docs: list[Sequence[str]],
        base1: int,
        base2: int,
        mask0: int,
        mask1: int,
        mask2: int,
        /,
    ) -> tuple[bytearray, bytearray, bytearray, bytearray] | None: ...


class SpeedupsMismatch(RuntimeError):
    """filterd._speedups hashes tokens with other primes than `filterd.bayes.vocab`: its keys
    would not be the model's."""


def _load_speedups() -> _Speedups | None:
    """The C loop of `encode`, built where a compiler was at hand (setup.py), or None."""
    try:
        from filterd import _speedups as module
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return checked_speedups(module)


def checked_speedups(module: _Speedups) -> _Speedups:
    """`module` if it hashes with `filterd.bayes.vocab`'s primes; SpeedupsMismatch otherwise
    (a build of another filterd: its token keys would not match the model's)."""
    if (module.P1, module.P2) != (P1, P2):
        raise SpeedupsMismatch(
            f"filterd._speedups was built with the primes ({module.P1}, {module.P2}), "
            f"filterd.bayes.vocab uses ({P1}, {P2}): rebuild it (pip install -e .)"
        )
    return module


_speedups = _load_speedups()


@dataclass(frozen=True)
class DocBatch:
    indptr: Int64Array  # (n + 1,)
    keys: Int64Array  # (nnz,)
    counts: Int64Array  # (nnz,) f_dw ≥ 1
    tokens: Sequence[str] = ()  # the flat token list the batch was made from, for explanations
    # (nnz,) position in `tokens` of each entry's first occurrence
    token_index: Int64Array | None = None

    def __len__(self) -> int:
        return len(self.indptr) - 1

    @property
    def doc_of_entry(self) -> Int64Array:
        """(nnz,) the document each entry belongs to."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    def token(self, entry: int) -> str:
        """The token string of one entry (needs the batch to have been made from tokens)."""
        if self.token_index is None:
            raise ValueError("this batch carries no token strings")
        return self.tokens[int(self.token_index[entry])]


def encode(
    docs: Sequence[Sequence[str]], hasher: TokenHasher, with_tokens: bool = True
) -> DocBatch:
    """Count the tokens of each document of `docs` by key; `with_tokens=False` leaves the
    token strings out of the batch (for counting alone, as evaluation does).

    With filterd._speedups, one C loop over the tokens (faster than numpy and Python). Otherwise,
    and for the input it declines, `encode_python`, its reference."""
    if _speedups is not None and type(docs) is list:
        arrays = _speedups.count_keys(docs, *hasher.bases, *BUCKET_MASKS)
        if arrays is not None:
            indptr, keys, counts, token_index = (np.frombuffer(a, dtype=np.int64) for a in arrays)
            if not with_tokens:
                return DocBatch(indptr, keys, counts)
            return DocBatch(indptr, keys, counts, list(chain.from_iterable(docs)), token_index)
    batch = encode_python(docs, hasher)
    return batch if with_tokens else DocBatch(batch.indptr, batch.keys, batch.counts)


def encode_python(docs: Sequence[Sequence[str]], hasher: TokenHasher) -> DocBatch:
    """`encode` in numpy and Python: every input, and the reference of the C loop."""
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    flat = list(chain.from_iterable(docs))
    # Tokens repeat (Zipf): hashing each distinct string once takes less time than hashing every
    # occurrence.
    first_seen: dict[str, int] = {}
    index = np.fromiter(
        (first_seen.setdefault(t, len(first_seen)) for t in flat), dtype=np.int64, count=len(flat)
    )
    distinct_keys = hasher.keys(list(first_seen))
    _, rank = np.unique(distinct_keys, return_inverse=True)  # tokens with one key are one entry
    doc = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
    order = np.argsort(doc * (len(distinct_keys) + 1) + rank[index], kind="stable")  # doc, key
    sorted_keys, sorted_doc = distinct_keys[index[order]], doc[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (sorted_keys[1:] != sorted_keys[:-1]) | (sorted_doc[1:] != sorted_doc[:-1])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(order)))
    indptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(np.bincount(sorted_doc[starts], minlength=len(docs)), out=indptr[1:])
    return DocBatch(indptr, sorted_keys[starts], counts.astype(np.int64), flat, order[starts])


def concat(batches: Sequence[DocBatch]) -> DocBatch:
    """The documents of `batches`, one batch after another, as one batch."""
    if len(batches) == 1:
        return batches[0]
    starts = np.cumsum([0] + [b.indptr[-1] for b in batches])  # entry offset of each batch
    indptr = np.concatenate([[0]] + [b.indptr[1:] + start for b, start in zip(batches, starts)])
    keys = np.concatenate([np.empty(0, dtype=np.int64)] + [b.keys for b in batches])
    counts = np.concatenate([np.empty(0, dtype=np.int64)] + [b.counts for b in batches])
    token_indexes = [b.token_index for b in batches if b.token_index is not None]
    if len(token_indexes) < len(batches):
        return DocBatch(indptr, keys, counts)
    offsets = np.cumsum([0] + [len(b.tokens) for b in batches])
    token_index = np.concatenate([t + offset for t, offset in zip(token_indexes, offsets)])
    return DocBatch(
        indptr, keys, counts, list(chain.from_iterable(b.tokens for b in batches)), token_index
    )


# The distinct tokens of each view that learning one document adds, at most: a message of 9,000
# words teaches what a long message does (the longest of the shared corpora have 3,100 distinct
# words and 4,900 word pairs), not what thousands of messages would. Chosen so that one poisoned
# label cannot move every token of the vocabulary: docs/benchmarks.md, "What do poisoned labels
# cost?".
LEARNED_PER_VIEW = 2000


def learned_entries(batch: DocBatch, limit: int | None = None) -> BoolArray | None:
    """(nnz,) the entries that learning each document of `batch` adds: of each document, its
    `limit` (default `LEARNED_PER_VIEW`) smallest keys of each view — a sample no sender can
    choose, as the keys are the model's seeded hashes; None when that is every entry.

    >>> batch = DocBatch(np.array([0, 3, 4]), np.array([5, 6, 7, 5]), np.ones(4, np.int64))
    >>> learned_entries(batch, 2).tolist(), learned_entries(batch, 3)
    ([True, True, False, True], None)
    """
    limit = LEARNED_PER_VIEW if limit is None else limit
    lengths = np.diff(batch.indptr)
    if len(lengths) == 0 or int(lengths.max()) <= limit:
        return None
    doc = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    view = views_of(batch.keys)
    order = np.lexsort((batch.keys, view, doc))  # by document, view, key
    run = (doc * len(VIEWS) + view)[order]
    first = np.ones(len(run), dtype=bool)
    first[1:] = run[1:] != run[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(len(run)), 0))
    keep = np.zeros(len(run), dtype=bool)
    keep[order] = np.arange(len(run)) - start < limit
    return None if keep.all() else keep


def learned(batch: DocBatch, limit: int | None = None) -> DocBatch:
    """The batch as learning adds it (`learned_entries`): `batch` itself when that is all."""
    keep = learned_entries(batch, limit)
    return batch if keep is None else select_entries(batch, keep)


def select_entries(batch: DocBatch, keep: BoolArray) -> DocBatch:
    """The batch of the same documents with the entries where `keep` (nnz,) alone; `batch`
    itself when every entry is kept."""
    if keep.all():
        return batch
    kept_before = np.zeros(len(keep) + 1, dtype=np.int64)  # entries kept before each entry
    np.cumsum(keep, out=kept_before[1:])
    indptr = kept_before[batch.indptr]
    token_index = None if batch.token_index is None else batch.token_index[keep]
    return DocBatch(indptr, batch.keys[keep], batch.counts[keep], batch.tokens, token_index)


def only_view(batch: DocBatch, view: int | None) -> DocBatch:
    """The batch with the tokens of `view` (`filterd.bayes.vocab.VIEWS`) alone; `batch` itself
    for None (every token)."""
    return batch if view is None else select_entries(batch, views_of(batch.keys) == view)


def select_docs(batch: DocBatch, docs: Int64Array) -> DocBatch:
    """The sub-batch of the documents at positions `docs`, in that order."""
    docs = np.asarray(docs, dtype=np.int64)
    lengths = batch.indptr[docs + 1] - batch.indptr[docs]
    indptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    entries = np.repeat(batch.indptr[docs] - indptr[:-1], lengths) + np.arange(indptr[-1])
    token_index = None if batch.token_index is None else batch.token_index[entries]
    return DocBatch(indptr, batch.keys[entries], batch.counts[entries], batch.tokens, token_index)
