"""Kafka's default partition of keyed records, a batch of keys at once.

The Java client and kafka-python's `DefaultPartitioner` put a record with key k on

    partitions[(murmur2(k) & 0x7fffffff) mod len(partitions)]      (partitions sorted)

with Kafka's 32-bit MurmurHash2 (seed 0x9747b28c). kafka-python computes it in pure Python for
every `send()`, which with its partition lookups was a large part of the scorer's cost per send.
Here it is vectorized over a batch with numpy, giving the same partitions, so that the decisions
of a message id land where any Kafka client would put them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

SEED = 0x9747B28C
M = np.uint64(0x5BD1E995)
MASK32 = np.uint64(0xFFFFFFFF)


def murmur2(keys: Sequence[bytes]) -> npt.NDArray[np.uint64]:
    """Kafka's murmur2 of each key, as uint64 values below 2**32."""
    n = len(keys)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = (int(lengths.max()) // 4 + 1) * 4  # room for every key and a 4-byte tail read
    padded = np.zeros((n, width), dtype=np.uint8)
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    rows = np.repeat(np.arange(n), lengths)
    padded[rows, np.arange(len(data)) - np.repeat(starts, lengths)] = data
    words = padded.view("<u4").astype(np.uint64)  # (n, width / 4) little-endian blocks
    blocks = lengths // 4
    h = (np.uint64(SEED) ^ lengths.astype(np.uint64)) & MASK32
    for j in range(int(blocks.max())):
        k = (words[:, j] * M) & MASK32
        k ^= k >> np.uint64(24)
        k = (k * M) & MASK32
        h = np.where(j < blocks, ((h * M) & MASK32) ^ k, h)
    tail = padded[np.arange(n)[:, None], (blocks * 4)[:, None] + np.arange(3)].astype(np.uint64)
    extra = lengths % 4
    h ^= np.where(extra >= 3, tail[:, 2] << np.uint64(16), 0).astype(np.uint64)
    h ^= np.where(extra >= 2, tail[:, 1] << np.uint64(8), 0).astype(np.uint64)
    h = np.where(extra >= 1, ((h ^ tail[:, 0]) * M) & MASK32, h)
    h ^= h >> np.uint64(13)
    h = (h * M) & MASK32
    h ^= h >> np.uint64(15)
    return h


def partitions_of(keys: Sequence[bytes], partitions: Collection[int]) -> list[int]:
    """The partition of each key among a topic's `partitions`, as Kafka's default partitioner
    chooses it."""
    ordered = np.array(sorted(partitions), dtype=np.int64)
    index = (murmur2(keys) & np.uint64(0x7FFFFFFF)) % np.uint64(len(ordered))
    chosen: list[int] = ordered[index.astype(np.int64)].tolist()
    return chosen
