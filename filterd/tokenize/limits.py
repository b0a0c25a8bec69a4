"""Bounds on what one message may cost: the tokenizer's limits (`TokenizerConfig`), byte
truncation, long-token markers, and flag names.

Every limit that drops input is reported through a flag (see `LIMIT_FLAGS`); a flagged
result has `Tokens.truncated` set.
"""

from __future__ import annotations

from dataclasses import dataclass

# Flags naming a limit that dropped part of the input.
MAX_BYTES = "max_bytes"  # a string field was cut at TokenizerConfig.max_bytes
MAX_TOKENS = "max_tokens"  # the token list was cut at TokenizerConfig.max_tokens
# a mail had more MIME parts than MAX_MIME_PARTS, or nested deeper than MAX_MIME_DEPTH
MAX_PARTS = "max_parts"
MAX_DEPTH = "max_depth"  # attributes nested deeper than MAX_ATTRIBUTE_DEPTH
INTERNAL_ERROR = "internal_error"  # a tokenizer bug; nothing was tokenized
LIMIT_FLAGS = frozenset({MAX_BYTES, MAX_TOKENS, MAX_PARTS, MAX_DEPTH, INTERNAL_ERROR})

# Flags naming an input problem that did not drop anything.
MIME_DEFECT = "mime_defect"  # the mail parser reported defects or failed
BAD_MESSAGE = "bad_message"  # the message is not a mapping
BAD_ATTRIBUTES = "bad_attributes"  # `attributes` is present but not a mapping
UNKNOWN_FORMAT = "unknown_format"  # `format` is neither "text" nor "email"; read as text

# Fixed bounds that are not configuration: real mail stays far below them, and beyond them
# the cost of parsing grows with parts x nesting depth. A mail past them is read as headers
# and a plain-text body.
MAX_MIME_PARTS = 1000  # delimiter lines, whatever the line ending
MAX_MIME_BOUNDARIES = 100
MAX_MIME_DEPTH = 10  # nested multiparts (real mail: a few)
# The stdlib's parser checks every enclosing boundary on every line: it reads only mails that
# mention "boundary" at most this often (filterd's own parser reads the common ones).
MAX_STDLIB_BOUNDARIES = 10
MAX_ATTRIBUTE_DEPTH = 8

# Word pairs and character n-grams (TokenizerConfig.osb, .char_ngrams)
OSB_WINDOW = 5  # a word and the 4 after it, as CRM114's OSB and Siefkes et al. (2004)
CHAR_NGRAM = 4  # characters per n-gram (Sculley & Cormack's TREC 2007 filter)


# Fewer plain words than this, and the body says too little to be read alone: a sentence.
SHORT_BODY_WORDS = 10
# Log-scale bins per doubling of a numeric attribute (`NumberBins`): 2, a bin spanning a factor
# of √2 ≈ 1.41. On card-transactions 4 ranked a little better and 1 a little worse; finer bins
# each see fewer payments, so the middle is kept (docs/benchmarks.md, "Numbers as evidence").
BINS_PER_DOUBLING = 2


@dataclass(frozen=True)
class NumberBins:
    """How a numeric attribute becomes evidence besides its exact value ("amount=57.16"):
    its bin on a log scale, `per_doubling` bins per factor of 2 ("amount~2^5.5": 2^5.5 ≤ x <
    2^6), `per_doubling_of` overriding it per attribute key (dotted: "geo.distance"; 0: no
    bins for that key), and, with `decade`, its power of ten ("amount~1e1"): off by default, the
    bin saying it more finely (the two together count one fact twice, and ranked worse).
    """

    per_doubling: int = BINS_PER_DOUBLING
    per_doubling_of: tuple[tuple[str, int], ...] = ()
    decade: bool = False

    def __post_init__(self) -> None:
        for key, steps in (("", self.per_doubling), *self.per_doubling_of):
            if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= 64:
                where = f" of {key!r}" if key else ""
                raise ValueError(f"bins per doubling{where} must be an int in 0..64, got {steps!r}")

    def steps(self, key: str) -> int:
        """The bins per doubling of attribute `key`."""
        for name, steps in self.per_doubling_of:
            if name == key:
                return steps
        return self.per_doubling


@dataclass(frozen=True)
class TokenizerConfig:
    """Limits and options of a `Tokenizer`; every field has a default.

    max_token_length: a word longer than this becomes `skip:<first char>:<len // 10 * 10>`
        (for a prefixed token, the part after the prefix: `subject:skip:x:50`).
    max_tokens: tokens kept per message; the rest is dropped and flagged `max_tokens`.
    max_bytes: UTF-8 bytes of each message string field read (the raw mail included);
        the rest is dropped, at a character boundary, and flagged `max_bytes`.
    bigrams: also emit `"w1 w2"` for adjacent plain words of body text.
    osb: also emit orthogonal sparse bigrams (CRM114, Siefkes et al. 2004) of the plain words
        of body text: each word paired with each of the next `OSB_WINDOW - 1` words as
        `"w1 w2"`, `"w1 ~w3"`, `"w1 ~~w4"`, `"w1 ~~~w5"` (one "~" per word skipped); at most
        4 tokens per word. The distance-1 pairs are the bigrams: `osb` includes `bigrams`.
    char_ngrams: also emit `c4:<abcd>` for each distinct character 4-gram of the first
        `char_ngram_chars` characters of the subject and body text, decoded as words read
        them (Sculley & Cormack, TREC 2007, read the raw mail): at most
        `char_ngram_chars - 3` tokens per message, after the text's other tokens.
    char_ngram_chars: how many characters of subject and body text the 4-grams read (>= 4).
    short_body: when the body gives fewer plain words than this, the subject's words count as
        body words too (unprefixed, after the body's): a message written in its subject line
        is read as one (Enron-Spam's hams whose whole text is the Subject; docs/benchmarks.md,
        "A message written in its subject line"). 0: never.
    numbers: the tokens of a numeric attribute besides its exact value (`NumberBins`).
    """

    max_token_length: int = 40
    max_tokens: int = 10_000
    max_bytes: int = 1_000_000
    bigrams: bool = False
    osb: bool = False
    char_ngrams: bool = False
    char_ngram_chars: int = 3_000
    short_body: int = SHORT_BODY_WORDS
    numbers: NumberBins = NumberBins()

    def __post_init__(self) -> None:
        for name in ("max_token_length", "max_tokens", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TokenizerConfig.{name} must be an int >= 1, got {value!r}")
        if (
            isinstance(self.short_body, bool)
            or not isinstance(self.short_body, int)
            or self.short_body < 0
        ):
            raise ValueError(
                f"TokenizerConfig.short_body must be an int >= 0, got {self.short_body!r}"
            )
        for name in ("bigrams", "osb", "char_ngrams"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"TokenizerConfig.{name} must be a bool, got {value!r}")
        chars = self.char_ngram_chars
        if isinstance(chars, bool) or not isinstance(chars, int) or chars < CHAR_NGRAM:
            raise ValueError(
                f"TokenizerConfig.char_ngram_chars must be an int >= {CHAR_NGRAM} (one "
                f"{CHAR_NGRAM}-gram), got {chars!r}"
            )

    @property
    def pairs(self) -> int:
        """How many following words each plain word of body text is paired with: 0 (no
        pairs), 1 (bigrams) or `OSB_WINDOW - 1` (orthogonal sparse bigrams)."""
        return OSB_WINDOW - 1 if self.osb else 1 if self.bigrams else 0


def skip_marker(token: str) -> str:
    """SpamBayes' length class of a long token: `skip:<first char>:<len // 10 * 10>`."""
    return f"skip:{token[0]}:{len(token) // 10 * 10}"


def cap(token: str, max_length: int) -> str:
    """`token`, or its skip marker when longer than `max_length`. `token` must not be empty."""
    return token if len(token) <= max_length else skip_marker(token)


def cap_all(tokens: list[str], max_length: int) -> list[str]:
    """`tokens` with each over-long token replaced by its skip marker (the same list if none)."""
    if tokens and max(map(len, tokens)) > max_length:
        return [t if len(t) <= max_length else skip_marker(t) for t in tokens]
    return tokens


def truncate_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """(`text` cut to at most `max_bytes` UTF-8 bytes at a character boundary, whether it was cut).

    Lone surrogates count as the 3 bytes `surrogatepass` gives them, so any str is accepted.
    """
    if len(text) <= max_bytes // 4 or (text.isascii() and len(text) <= max_bytes):
        return text, False
    if text.isascii():
        return text[:max_bytes], True
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text, False
    end = max_bytes
    while end > 0 and data[end] & 0xC0 == 0x80:  # step back off a continuation byte
        end -= 1
    return data[:end].decode("utf-8", "surrogatepass"), True
