"""Types of the optional C loops in _speedups.c (filterd.bayes.features, filterd.tokenize.text)."""

from collections.abc import Sequence

P1: int
P2: int

def count_keys(
    docs: list[Sequence[str]], base1: int, base2: int, /
) -> tuple[bytearray, bytearray, bytearray, bytearray] | None:
    """(indptr, keys, counts, token_index) as int64 bytearrays, or None for input only the
    pure-Python encode handles."""

def words(text: str, max_length: int, /) -> list[str]:
    """The words of `filterd.tokenize.text.plain_tokens`."""
