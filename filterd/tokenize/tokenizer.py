"""Message record → `Tokens`: the one entry point of the scorer and the learner.

A message is `{id, text?, subject?, sender?, format: "text"|"email", attributes?, tenant?, ts?}`.
Tokens come in this order, so that `max_tokens` keeps the most telling ones:
`subject:` tokens, `from:` tokens of `sender`, the text (plain, or the raw mail's headers,
parts and header names), with TokenizerConfig.char_ngrams the `c4:` character 4-grams of the
subject (the `subject` field, then a mail's Subject header) and body text, then the
attributes' `key=value` tokens.

Of raw mail, the result also holds what a person reads of it (`Tokens.mail`: its Subject, From
and first text part), from the same parse: the review queue keeps those, so a mail is read once.

Never raises: odd field types are coerced (bytes decoded as UTF-8, others through `str()`,
None is absent), and an unexpected error yields empty tokens flagged "internal_error",
because one exception here would stop a stream.

    from filterd.tokenize import Tokenizer, TokenizerConfig

    tokenizer = Tokenizer(TokenizerConfig(max_tokens=5_000))
    result = tokenizer({"id": "1", "text": "WIN £1000 now!! http://win.example.com/claim"})
    result.tokens   # ['win', '£1000', 'now', '!!', 'proto:http', 'url:win.example.com', …]

Token forms, by module:

    text.py        words, numbers, "$100", "50%", "!!", emoji; skip:<c>:<len> for long words;
                   optional word pairs "w1 w2" (bigrams, osb) and "w1 ~w3" "w1 ~~w4"
                   "w1 ~~~w5" (osb); optional c4:<abcd> character 4-grams (char_ngrams)
    links.py       proto:http  url:<host>  url:<parent domain>  url:ip  urlport:<n>
                   urlpath:<word>  email:<local>  email:<domain>
    addresses.py   from:<domain>  from:local:<local>  from:name:<word>  from:id:<id>  to:<domain>
    mail.py        subject:<token>  content-type:<type>  charset:<cs>  attach:<type>
                   attachsize:<class>  attachext:<ext>  header:<name>  (+ body tokens)
    attributes.py  key=value  key.sub=value  key~1e2

Limits (TokenizerConfig) and the flags reporting them are in limits.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from filterd.tokenize.addresses import sender_tokens
from filterd.tokenize.attributes import attribute_tokens
from filterd.tokenize.limits import (
    BAD_ATTRIBUTES,
    BAD_MESSAGE,
    INTERNAL_ERROR,
    LIMIT_FLAGS,
    MAX_BYTES,
    MAX_TOKENS,
    UNKNOWN_FORMAT,
    TokenizerConfig,
    truncate_utf8,
)
from filterd.tokenize.mail import MailFields, mail_tokens
from filterd.tokenize.text import char_ngram_tokens, text_tokens

SUBJECT = "subject:"
_NO_FLAGS: frozenset[str] = frozenset()
_DEFAULT_CONFIG = TokenizerConfig()


@dataclass(frozen=True)
class Tokens:
    """The tokens of one message.

    tokens: in message order, with repeats (the caller counts them); none is empty or holds
        NUL or whitespace, except the one space inside a word pair ("w1 w2", "w1 ~w3").
    truncated: a limit dropped part of the input (any of `limits.LIMIT_FLAGS` is set).
    flags: the limits hit and problems met: "max_bytes", "max_tokens", "max_parts",
        "max_depth", "mime_defect", "unknown_format", "bad_attributes", "bad_message",
        "internal_error".
    mail: of a raw mail (`format` "email"), what a person reads of it, from the parse the
        tokens come from; None for text.
    """

    tokens: list[str]
    truncated: bool
    flags: frozenset[str]
    mail: MailFields | None = None


class Tokenizer:
    """Turns message records into tokens under one `TokenizerConfig`. Pure and thread-safe."""

    def __init__(self, config: TokenizerConfig = _DEFAULT_CONFIG) -> None:
        self.config = config

    def __call__(self, message: Mapping[str, Any]) -> Tokens:
        """The tokens of one message record. Never raises."""
        try:
            return self._tokens(message)
        except Exception:  # noqa: BLE001
            # a bug must not stop the stream; the flag makes it visible
            return Tokens([], True, frozenset({INTERNAL_ERROR}))

    def text(self, text: str) -> list[str]:
        """Tokens of plain text alone: the fast path. Limits apply without being reported."""
        config = self.config
        try:
            text = self._field(text, set())
            tokens = text_tokens(text, config.max_token_length, config.pairs, config.max_tokens)
            if config.char_ngrams and len(tokens) <= config.max_tokens:
                tokens += char_ngram_tokens((text,), config.char_ngram_chars)
            del tokens[config.max_tokens :]
            return tokens
        except Exception:  # noqa: BLE001 - see __call__
            return []

    def _tokens(self, message: Mapping[str, Any]) -> Tokens:
        if not isinstance(message, (dict, Mapping)):  # dict first: the ABC check is slower
            return Tokens([], False, frozenset({BAD_MESSAGE}))
        config = self.config
        max_length = config.max_token_length
        flags: set[str] = set()

        text = self._field(message.get("text"), flags)
        format_ = message.get("format")
        # The head and attributes come around `out`, which is cut at max_tokens: text beyond
        # that need not be tokenized (text_tokens' `enough`).
        pairs = config.pairs
        bodies: list[str] | None = [] if config.char_ngrams else None
        mail: MailFields | None = None
        if format_ is None or format_ == "text":
            out = text_tokens(text, max_length, pairs, config.max_tokens)
            bodies = None if bodies is None else [text]
        elif isinstance(format_, str) and format_.strip().lower() == "email":
            out, mail = mail_tokens(text, config, flags, bodies)
        else:
            flags.add(UNKNOWN_FORMAT)
            out = text_tokens(text, max_length, pairs, config.max_tokens)
            bodies = None if bodies is None else [text]

        head: list[str] = []
        subject = message.get("subject")
        if subject is not None:
            subject = self._field(subject, flags)
            head += [SUBJECT + t for t in text_tokens(subject, max_length)]
            if bodies is not None and subject:
                bodies.insert(0, subject)
        sender = message.get("sender")
        if sender is not None:
            head += sender_tokens(self._field(sender, flags), "from:", max_length)
        if config.short_body and _fewer_words(out, config.short_body):
            out += [t[len(SUBJECT) :] for t in (*head, *out) if t.startswith(SUBJECT)]
        # after the text's tokens, which they must not crowd out; past max_tokens, all are cut
        if bodies is not None and len(out) <= config.max_tokens:
            out += char_ngram_tokens(bodies, config.char_ngram_chars)
        if head:
            out = head + out

        attributes = message.get("attributes")
        if attributes is not None:
            if isinstance(attributes, (dict, Mapping)):
                out += attribute_tokens(
                    attributes, max_length, config.max_tokens, flags, config.numbers
                )
            else:
                flags.add(BAD_ATTRIBUTES)

        if len(out) > config.max_tokens:
            del out[config.max_tokens :]
            flags.add(MAX_TOKENS)
        if not flags:
            return Tokens(out, False, _NO_FLAGS, mail)
        return Tokens(out, not flags.isdisjoint(LIMIT_FLAGS), frozenset(flags), mail)

    def _field(self, value: Any, flags: set[str]) -> str:
        """A message field as text cut to `max_bytes` (flagging the cut); None is ""."""
        if value is None:
            return ""
        if type(value) is str:
            text = value
        elif isinstance(value, str):
            text = str(value)  # a str subclass could override its methods
        elif isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("utf-8", "replace")
        else:
            text = str(value)
        text, cut = truncate_utf8(text, self.config.max_bytes)
        if cut:
            flags.add(MAX_BYTES)
        return text


def _fewer_words(tokens: list[str], n: int) -> bool:
    """Whether `tokens` hold fewer than `n` plain words (no prefix, not a pair); stops at n.

    >>> _fewer_words(["subject:win", "cash", "now", "to:example.com"], 3)
    True
    """
    words = 0
    for t in tokens:
        if ":" not in t and " " not in t:
            words += 1
            if words >= n:
                return False
    return True


def tokenize(message: Mapping[str, Any], config: TokenizerConfig = _DEFAULT_CONFIG) -> Tokens:
    """`Tokenizer(config)(message)`."""
    return Tokenizer(config)(message)
