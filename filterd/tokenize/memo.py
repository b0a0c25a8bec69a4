"""A bounded memo for the pure token functions whose inputs repeat from mail to mail.

    @memoized
    def url_tokens(url: str, max_token_length: int) -> tuple[str, ...]: ...

URLs (tracking pixels, list footers), relay host names and header names recur across a
mail stream: many HTML link targets and URLs in text, and most Received words and header
names, are cache hits (a larger memo hardly raises their share). The memo is an LRU cache per
function of `SIZE` entries, and only for a first argument of at most `MAX_KEY_LENGTH`
characters, so a hostile stream of long unique inputs costs neither memory nor more than a
failed lookup. The function must be pure and return an immutable value (a tuple): every caller
shares it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar, overload

SIZE = 4096
MAX_KEY_LENGTH = 200

R = TypeVar("R")


@overload
def memoized(function: Callable[[str], R]) -> Callable[[str], R]: ...
@overload
def memoized(function: Callable[[str, int], R]) -> Callable[[str, int], R]: ...
def memoized(function: Callable[..., R]) -> Callable[..., R]:
    """`function(key)` or `function(key, n)`, cached for keys of at most MAX_KEY_LENGTH
    characters. The wrapper has the function's arity: one with `*args` costs more per call,
    as much as a cache hit saves on a small function."""
    cached = functools.lru_cache(maxsize=SIZE)(function)
    if function.__code__.co_argcount == 1:

        def call(key: str) -> R:
            return cached(key) if len(key) <= MAX_KEY_LENGTH else function(key)

        return functools.wraps(function)(call)

    def call_n(key: str, n: int) -> R:
        return cached(key, n) if len(key) <= MAX_KEY_LENGTH else function(key, n)

    return functools.wraps(function)(call_n)
