"""Types of the optional C loops in _speedups.c (filterd.bayes.features and .selection,
filterd.tokenize)."""

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

P1: int
P2: int

def count_keys(
    docs: list[Sequence[str]],
    base1: int,
    base2: int,
    mask0: int,
    mask1: int,
    mask2: int,
    /,
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

def hidden_spans(markup: str, /) -> list[tuple[int, int]]:
    """The text a reader does not see: `filterd.tokenize.hidden.python_hidden_spans`."""

def split_words(text: str, /) -> list[tuple[int, int]]:
    """Words written a letter at a time: `filterd.tokenize.text.python_split_words`."""

def markup(text: str, /) -> tuple[str, list[str]]:
    """(text with tags as spaces, link values): `filterd.tokenize.markup.python_markup`."""

def folded(text: str, fold: Callable[[str], str], /) -> str:
    """`fold(text)` for `fold` = `filterd.tokenize.text.nfkc_casefold`, in pieces."""

def grams(text: str, n: int, prefix: str, /) -> list[str]:
    """`filterd.tokenize.text.python_grams(text, n, prefix)`."""

def pairs(tokens: list[str], window: int, enough: int, /) -> list[str]:
    """`filterd.tokenize.text.python_with_pairs(tokens, window, enough)`."""

def local_top(
    doc: npt.NDArray[np.int64],
    strength: npt.NDArray[np.float64],
    tiebreak: npt.NDArray[np.int64],
    n: int,
    min_strength: float,
    /,
) -> bytearray | None:
    """The entries kept by selection.local_top_python, as int64 bytes; None if doc is not in
    order."""

def logistic_pass(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.bool_],
    rate: float,
    target_rate: float,
    k: int,
    /,
) -> bytearray:
    """The weights of `filterd.bayes.fusion.logistic_pass_python`, as float64 bytes."""
