"""Tokenizer settings: the limits that keep one hostile message from stalling a stream."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TokenizerConfig:
    """Limits and options of a `Tokenizer`; every field has a default.

    max_token_length: a word longer than this becomes `skip:<first char>:<len // 10 * 10>`
        (for a prefixed token, the part after the prefix: `subject:skip:x:50`).
    max_tokens: tokens kept per message; the rest is dropped and flagged `max_tokens`.
    max_bytes: UTF-8 bytes of each message string field read (the raw mail included);
        the rest is dropped, at a character boundary, and flagged `max_bytes`.
    bigrams: also emit `"w1 w2"` for adjacent plain words of body text.
    """

    max_token_length: int = 40
    max_tokens: int = 10_000
    max_bytes: int = 1_000_000
    bigrams: bool = False

    def __post_init__(self) -> None:
        for name in ("max_token_length", "max_tokens", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TokenizerConfig.{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.bigrams, bool):
            raise ValueError(f"TokenizerConfig.bigrams must be a bool, got {self.bigrams!r}")
