"""Message attributes ({key: JSON value}) → "key=value" tokens.

    {"country": "US"}                   → country=us
    {"geo": {"city": "New York"}}       → geo.city=new_york      (nested keys joined by ".")
    {"tags": ["a", "b"]}                → tags=a, tags=b         (list items share the key)
    {"ok": True, "x": None}             → ok=true, x=null        (JSON spelling)
    {"amount": 250.5}                   → amount=250.5, amount~2^7.5
                                          (numbers add their log-scale bin, and their decade
                                          amount~1e2 if asked: `filterd.tokenize.limits.NumberBins`)

Keys and string values are normalized like text (NFKC, casefold); whitespace and control
characters become "_"; a key or value longer than the length limit becomes its skip marker.
A free-text value is one token: free text belongs in the message's `text`.
Nesting deeper than `MAX_ATTRIBUTE_DEPTH` gives "key=nested" and the flag "max_depth";
the walk is iterative, and stops after `max_tokens` values (flag "max_tokens").
Values of other types are stringified; sets are sorted first, so the tokens are deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from filterd.tokenize.limits import (
    MAX_ATTRIBUTE_DEPTH,
    MAX_DEPTH,
    MAX_TOKENS,
    NumberBins,
    cap,
)
from filterd.tokenize.text import normalize

_SEPARATORS = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
_SURROGATES = re.compile(r"[\ud800-\udfff]+")


def attribute_tokens(
    attributes: Mapping[Any, Any],
    max_token_length: int,
    max_tokens: int,
    flags: set[str],
    numbers: NumberBins,
) -> list[str]:
    """Tokens of an attribute mapping, in its order. Adds "max_depth"/"max_tokens" to `flags`.

    >>> attribute_tokens({"amount": 57.16, "n": 0}, 40, 100, set(), NumberBins())
    ['amount=57.16', 'amount~2^5.5', 'n=0', 'n~0']
    >>> attribute_tokens({"amount": -3}, 40, 100, set(), NumberBins(4, decade=True))
    ['amount=-3', 'amount~-1e0', 'amount~-2^1.5']
    """
    out: list[str] = []
    visited = 0  # values, containers included: bounds the work on [[], [], …] too
    stack: list[tuple[Iterator[tuple[str, Any]], int]] = [
        (_children("", attributes, max_token_length), 1)
    ]
    while stack:
        children, depth = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        visited += 1
        if visited > max_tokens:
            flags.add(MAX_TOKENS)
            break
        key, value = child
        if isinstance(value, (Mapping, list, tuple, set, frozenset)):
            if depth < MAX_ATTRIBUTE_DEPTH:
                stack.append((_children(key, value, max_token_length), depth + 1))
            else:
                flags.add(MAX_DEPTH)
                out.append(key + "=nested")
            continue
        out += _scalar_tokens(key, value, max_token_length, numbers)
    return out


def _children(key: str, value: Any, max_length: int) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) pairs one level below `value`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            name = clean(k, max_length)
            yield (f"{key}.{name}" if key else name), v
    elif isinstance(value, (set, frozenset)):
        for v in sorted(value, key=repr):
            yield key, v
    else:
        for v in value:
            yield key, v


def _scalar_tokens(key: str, value: Any, max_length: int, numbers: NumberBins) -> list[str]:
    if value is None:
        return [key + "=null"]
    if isinstance(value, bool):
        return [key + ("=true" if value else "=false")]
    if isinstance(value, int):
        try:
            digits = str(value)
        except ValueError:  # more digits than sys.get_int_max_str_digits() allows
            digits = "bigint"
        return [key + "=" + cap(digits, max_length), *_magnitudes(key, value, numbers)]
    if isinstance(value, float):
        if math.isfinite(value):
            return [key + "=" + cap(repr(value), max_length), *_magnitudes(key, value, numbers)]
        return [key + "=" + repr(value)]  # nan, inf, -inf
    return [key + "=" + clean(value, max_length)]


def _magnitudes(key: str, x: float, numbers: NumberBins) -> list[str]:
    """The scale tokens of a finite number: "key~0" for 0; else its decade (250.5 → "1e2",
    -0.03 → "-1e-2") and its bin of `steps` per doubling, ⌊steps · log2 |x|⌋ / steps (250.5 with
    2 → "2^7.5"). A key longer than the token limit makes long tokens: the caller caps the key."""
    if x == 0:
        return [key + "~0"]
    sign = "-" if x < 0 else ""
    out = [f"{key}~{sign}1e{math.floor(math.log10(abs(x)))}"] if numbers.decade else []
    steps = numbers.steps(key)
    if steps:
        out.append(f"{key}~{sign}{log_bin(abs(x), steps)}")
    return out


def log_bin(x: float, steps: int, slack: float = 0.0) -> str:
    """The bin of x > 0 on a log scale, `steps` per doubling: "2^e", e = ⌊steps · log2 x +
    slack⌋ / steps (2^e ≤ x < 2^(e + 1/steps)); `slack`, in log2 units, lets a value computed
    with rounding that falls just short of an edge count in the bin above.

    >>> log_bin(250.5, 2), log_bin(57.16, 4), log_bin(0.2, 2), log_bin(1 - 1e-15, 2, 1e-9)
    ('2^7.5', '2^5.75', '2^-2.5', '2^0')
    """
    return f"2^{math.floor(math.log2(x) * steps + slack) / steps:g}"


def clean(value: Any, max_length: int) -> str:
    """`value` as one token part: normalized, no whitespace, control characters or surrogates."""
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).decode("utf-8", "replace")
    elif isinstance(value, str):
        text = value
    else:
        text = str(value)
    text = normalize(text)
    # printable ASCII without a space (most keys and ids) has nothing to replace
    if not (text.isascii() and text.isprintable() and " " not in text):
        text = _SEPARATORS.sub("_", _SURROGATES.sub("", text))
    return cap(text, max_length) if text else text
