"""Types of the optional C loops in _speedups.c (filterd.bayes.features, filterd.tokenize)."""

from collections.abc import Callable, Sequence

P1: int
P2: int

def count_keys(
    docs: list[Sequence[str]], base1: int, base2: int, /
) -> tuple[bytearray, bytearray, bytearray, bytearray] | None:
    """(indptr, keys, counts, token_index) as int64 bytearrays, or None for input only the
    pure-Python encode handles."""

def words(text: str, max_length: int, /) -> list[str]:
    """The words of `filterd.tokenize.text.plain_tokens`."""

def linked_words(
    text: str,
    max_length: int,
    enough: int,
    url_tokens: Callable[[str, int], Sequence[str]],
    /,
) -> list[str]:
    """The tokens of `filterd.tokenize.text.linked_tokens` (no word pairs)."""

def url_tokens(url: str, max_length: int, /) -> tuple[str, ...]:
    """The tokens of `filterd.tokenize.links.python_url_tokens`."""

def received(value: str, max_length: int, /) -> list[str] | None:
    """The tokens of `filterd.tokenize.headers.python_received_tokens`; None if not ASCII."""

def markup(text: str, /) -> tuple[str, list[str]]:
    """(text with tags as spaces, link values): `filterd.tokenize.markup.python_markup`."""

def folded(text: str, fold: Callable[[str], str], /) -> str:
    """`fold(text)` for `fold` = `filterd.tokenize.text.nfkc_casefold`, in pieces."""

def grams(text: str, n: int, prefix: str, /) -> list[str]:
    """`filterd.tokenize.text.python_grams(text, n, prefix)`."""
