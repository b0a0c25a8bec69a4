"""The review queue's rules: which decisions are queued for an analyst's label, and what of each
message is kept for the analyst to judge it. Pure: the store keeps the items
(`filterd.store.review`), the scorer decides which (`review_reasons`) and builds them
(`queued_item`), one type from the scorer to the HTTP API (`ReviewItem`).

A decision is queued for one of these reasons:

    band     its score lies within `review.band` of the threshold: |s − τ| ≤ band (band > 0);
             the decisions a label teaches the model most about
    random   its message id falls in the uniform `review.random_share` of all ids (deterministic
             by id, independent of the holdout's share): an unbiased sample of the traffic, for
             calibration and for measuring the filter
    list     one of its message's entities is on the review list (`filterd.entities.lists`)
    rule     a review rule holds for it (`filterd.entities.rules`)

Messages are written by adversaries: every field kept is bounded (`SUBJECT_CHARS`,
`SENDER_CHARS`, `excerpt_chars`, `MAX_ATTRIBUTE_BYTES`), and NUL and lone surrogates, which
PostgreSQL text cannot hold, are removed or replaced. A raw mail is not parsed here: its fields
are those the tokenizer read (`Tokens.mail`), within the tokenizer's limits (`limits.max_bytes`
and the MIME bounds of `filterd.tokenize.limits`), and only a bounded prefix of each is read
(`HEADER_CHARS`, `EXCERPT_SOURCE_CHARS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

import msgspec

from filterd.service.decide import UNDECIDED
from filterd.service.records import Decision, Message, id_digest
from filterd.tokenize import Tokens
from filterd.tokenize.mail import MailFields, without_surrogates
from filterd.tokenize.markup import readable_text

Reason = Literal["band", "random", "list", "rule"]
REASONS: tuple[Reason, ...] = get_args(Reason)

SUBJECT_CHARS = 200  # the columns' lengths (`filterd.store.schema.ReviewItem`)
SENDER_CHARS = 200
MAX_ATTRIBUTE_BYTES = 4000  # of the attributes' JSON, UTF-8: larger ones are not kept
# Of a raw mail's Subject and From only this much is read, and of its first text part only this
# much for the excerpt: enough for real mail, and a bound on what a hostile mail can cost.
HEADER_CHARS = 8 * SUBJECT_CHARS
EXCERPT_SOURCE_CHARS = 128 * 1024
# Personalises the hash of `in_random_share`: the holdout (`filterd.store.learning.in_holdout`)
# hashes ids unpersonalised, so that the two shares are independent of each other.
_PERSON = b"filterd.review"
_BLANK_LINES = re.compile(r"[ \t]*(?:\r?\n[ \t]*){3,}")
_JSON_ESCAPE = re.compile(r"\\u0000|\\.")


def in_random_share(message_id: str, share: float) -> bool:
    """Whether `message_id` belongs to the random share `share` of all ids: stable across
    processes and runs, and independent of the holdout's share.

    >>> in_random_share("m-1", 0.0), in_random_share("m-1", 1.0)
    (False, True)
    >>> abs(sum(in_random_share(f"m-{i}", 0.25) for i in range(10_000)) - 2_500) < 200
    True
    """
    return id_digest(message_id, _PERSON) < share * 2**64


def review_reason(
    message_id: str, score: float, tau: float, band: float, random_share: float
) -> Reason | None:
    """Why a decision is queued for review: "band" when |score − τ| ≤ band (and band > 0), else
    "random" when its id is in the random share, else None (not queued).

    >>> review_reason("m-1", 0.42, 0.4, 0.05, 0.0)
    'band'
    >>> review_reason("m-1", 0.5, 0.4, 0.05, 0.0) is None
    True
    >>> review_reason("m-1", 0.4, 0.4, 0.0, 0.0) is None  # band 0: no band
    True
    >>> review_reason("m-1", 9.0, 0.4, 0.05, 1.0)
    'random'
    """
    if band > 0 and abs(score - tau) <= band:
        return "band"
    if random_share > 0 and in_random_share(message_id, random_share):
        return "random"
    return None


def review_reasons(
    decisions: Sequence[Decision], band: float, random_share: float
) -> list[Reason | None]:
    """`review_reason` of each decision (its score and threshold), in order. Decisions taken
    before the model was ready (label "unknown", score 0) are never queued: they say nothing of
    the model, and every one of them would lie in the band."""
    return [
        None
        if d.label == UNDECIDED
        else review_reason(d.message_id, d.score, d.threshold, band, random_share)
        for d in decisions
    ]


class ReviewItem(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """A decision queued for an analyst's review: one type from the scorer, which builds it
    (`queued_item`), through the store, which keeps it (`filterd.store.review`), to
    `filterd review`, the workbench and GET /v1/review, which read it back.

    What the store adds are keys of this type, empty before: `id` and `queued_at` are null until
    the item is stored (every item read back has both), `labelled` until a label for its message
    is learned. `tokens` travel from the scorer to the store and back to `filterd review show`
    alone: elsewhere they are null, and then left out of the JSON, so the API's answers never
    hold them. `token_count` and `distance` are the same wherever the item is built.
    """

    id: Annotated[
        int | None,
        msgspec.Meta(
            description="The item's number in the queue; null only before the item is stored "
            "(never in the API's answers)."
        ),
    ]
    message_id: str
    reason: Reason
    label: str  # the decision's
    score: float
    threshold: float
    distance: float  # |score − threshold| (`distance_to_tau`): the smaller, the more it teaches
    model_version: int
    threshold_version: int | None
    subject: str | None  # at most SUBJECT_CHARS
    excerpt: str | None  # at most the queue's excerpt_chars
    sender: str | None  # at most SENDER_CHARS
    attributes: dict[str, Any] | None  # None when its JSON exceeds MAX_ATTRIBUTE_BYTES
    explanation: list[tuple[str, float]]  # [(token, contribution), …]
    truncated: bool  # the decision was taken on what a limit let through
    queued_at: Annotated[
        datetime | None,
        msgspec.Meta(
            description="When the item was queued; null only before the item is stored (never "
            "in the API's answers)."
        ),
    ]
    token_count: int
    labelled: str | None  # the label learned since, if any
    tokens: Annotated[
        list[str] | None,
        msgspec.Meta(
            description="The message's tokens, for learning a label given later: given by "
            "`filterd review show`, never in the API's answers."
        ),
    ] = None


def distance_to_tau(score: float, threshold: float) -> float:
    """|score − τ|, a review item's `distance`: the smaller, the more a label tells the model.

    >>> distance_to_tau(0.25, 0.5)
    0.25
    """
    return abs(score - threshold)


def queued_item(
    message: Message, decision: Decision, tokens: Tokens, reason: Reason, excerpt_chars: int
) -> ReviewItem:
    """The review item of `message` and its `decision`, not yet stored; `tokens` is the
    tokenizer's result for the message, whose tokens the item keeps (and counts). Raw mail gives
    what the tokenizer read of it (`Tokens.mail`): the subject and sender of its headers (else
    the message's own fields) and an excerpt of its first text part (HTML as visible text); text
    gives its first `excerpt_chars` characters.

    >>> from datetime import UTC, datetime
    >>> from filterd.tokenize import tokenize
    >>> d = Decision(message_id="m-1", label="spam", score=0.41, threshold=0.4, target_recall=0.99,
    ...              model_version=7, threshold_version=2, explanation=[("win", 1.5)],
    ...              scored_at=datetime(2026, 1, 1, tzinfo=UTC), source_topic="t", partition=0,
    ...              offset=3)
    >>> mail = "From: Eve <eve@example.com>\\nSubject: =?utf-8?q?You_won?=\\n\\nClaim\\x00 it now."
    >>> tokens = tokenize({"text": mail, "format": "email"})
    >>> item = queued_item(Message(id="m-1", text=mail, format="email"), d, tokens, "band", 8)
    >>> item.subject, item.sender, item.excerpt, item.tokens[:2]
    ('You won', 'Eve <eve@example.com>', 'Claim it', ['subject:you', 'subject:won'])
    >>> item.id, item.queued_at, item.labelled, item.token_count == len(tokens.tokens)
    (None, None, None, True)
    >>> round(item.distance, 6)
    0.01
    >>> text = Message(id="m-1", text="hello there", subject="Hi")
    >>> item = queued_item(text, d, tokenize({"text": "hello there"}), "random", 5)
    >>> item.subject, item.sender, item.excerpt, item.explanation
    ('Hi', None, 'hello', [('win', 1.5)])
    """
    subject, sender = message.subject, message.sender
    mail = tokens.mail
    if mail is not None:
        subject, sender = _header(mail.subject) or subject, _header(mail.sender) or sender
        excerpt = _mail_excerpt(mail, excerpt_chars)
    else:
        # a little more than the excerpt: cleaning may drop a few NULs
        excerpt = _clean((message.text or "")[: excerpt_chars + 64])
    return ReviewItem(
        id=None,
        message_id=decision.message_id,
        reason=reason,
        label=decision.label,
        score=decision.score,
        threshold=decision.threshold,
        distance=distance_to_tau(decision.score, decision.threshold),
        model_version=decision.model_version,
        threshold_version=decision.threshold_version,
        subject=_line(subject, SUBJECT_CHARS),
        excerpt=excerpt[:excerpt_chars] or None,
        sender=_line(sender, SENDER_CHARS),
        attributes=bounded_attributes(message.attributes),
        explanation=[(_clean(token), float(weight)) for token, weight in decision.explanation],
        truncated=decision.truncated,
        queued_at=None,
        token_count=len(tokens.tokens),
        labelled=None,
        tokens=tokens.tokens,
    )


def _header(value: str | None) -> str | None:
    """A mail header's decoded value on one line, bounded before splitting: a header may be as
    long as the mail."""
    return None if value is None else " ".join(value[:HEADER_CHARS].split())


def _mail_excerpt(mail: MailFields, excerpt_chars: int) -> str:
    """The first `excerpt_chars` characters of the mail's first text part, read from its first
    EXCERPT_SOURCE_CHARS characters (HTML as its visible text); blank runs of lines shortened.

    >>> _mail_excerpt(MailFields(text="<p>Hello <b>you</b></p><script>x()</script>", html=True), 50)
    'Hello you'
    """
    text = mail.text[:EXCERPT_SOURCE_CHARS]
    if mail.html:
        cut = text.rfind("<")
        if len(mail.text) > EXCERPT_SOURCE_CHARS and cut > text.rfind(">"):
            text = text[:cut]  # a tag the bound cut in two is no text
        text = readable_text(text)
    return _BLANK_LINES.sub("\n\n", _clean(text).strip())[:excerpt_chars]


def bounded_attributes(
    attributes: dict[str, Any] | None, max_bytes: int = MAX_ATTRIBUTE_BYTES
) -> dict[str, Any] | None:
    """`attributes` as stored: None when their JSON takes more than `max_bytes` bytes (UTF-8,
    as encoded) or cannot be encoded; NUL characters, which PostgreSQL cannot hold, become
    U+FFFD.

    >>> bounded_attributes({"channel": "sms", "n": 3})
    {'channel': 'sms', 'n': 3}
    >>> bounded_attributes({"note": "é" * 2000}) is None  # 2,000 characters, 4,000+ bytes
    True
    >>> bounded_attributes({"a\\x00": "b"})
    {'a�': 'b'}
    """
    if attributes is None:
        return None
    try:
        encoded = msgspec.json.encode(attributes)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None
    if len(encoded) > max_bytes:
        return None
    text = _JSON_ESCAPE.sub(_without_nul_escape, encoded.decode())
    try:
        cleaned: dict[str, Any] = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return cleaned


def _without_nul_escape(match: re.Match[str]) -> str:
    """A JSON escape as it is, but \\u0000 (NUL) as U+FFFD; escapes are matched whole, so an
    escaped backslash followed by "u0000" is left alone."""
    return "\ufffd" if match.group() == "\\u0000" else match.group()


def _clean(text: str) -> str:
    """`text` without NUL, lone surrogates as U+FFFD: what PostgreSQL text can hold."""
    return without_surrogates(text.replace("\x00", ""))


def _line(text: str | None, limit: int) -> str | None:
    """`text` cleaned, on one line, cut to `limit` characters; None for nothing."""
    if text is None:
        return None
    # bounded before splitting: a field may be a megabyte
    line = " ".join(_clean(text[: 4 * limit + 64]).split())[:limit]
    return line or None
