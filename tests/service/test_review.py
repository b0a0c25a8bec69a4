"""The review queue's rules: which decisions are queued (the band around τ, a uniform random share
independent of the holdout), and what of a message is kept for the analyst, bounded and
storable whatever the message holds."""

import base64
import json
import math
import random
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from filterd.service.decide import message_fields
from filterd.service.records import Decision, Message
from filterd.service.review import (
    EXCERPT_SOURCE_CHARS,
    MAX_ATTRIBUTE_BYTES,
    SENDER_CHARS,
    SUBJECT_CHARS,
    Reason,
    ReviewItem,
    in_random_share,
    queued_item,
    review_reason,
    review_reasons,
)
from filterd.store.ledger import in_holdout
from filterd.tokenize import Tokenizer, Tokens
from filterd.tokenize.mail import MailFields

N = 200_000
SIGMAS = 5  # binomial tolerance: a correct implementation fails about once in 1.7 million runs


def decision(
    message_id: str = "m-1",
    score: float = 0.41,
    threshold: float = 0.4,
    label: str = "spam",
    **fields: Any,  # other fields of `Decision`, of their own types
) -> Decision:
    values: dict[str, Any] = {
        "message_id": message_id,
        "label": label,
        "score": score,
        "threshold": threshold,
        "target_recall": 0.99,
        "model_version": 7,
        "threshold_version": 2,
        "explanation": [("win", 1.5), ("cash", 0.75)],
        "source_topic": "messages",
        "scored_at": datetime(2026, 1, 1, tzinfo=UTC),
        "partition": 0,
        "offset": 1,
    }
    return Decision(**(values | fields))


def item_of(
    message: Message, excerpt_chars: int, reason: Reason = "band", decided: Decision | None = None
) -> ReviewItem:
    """The review item of `message` as the scorer builds it: from the tokenizer's result."""
    tokens = Tokenizer()(message_fields(message))
    return queued_item(message, decided or decision(), tokens, reason, excerpt_chars)


def within(hits: int, n: int, share: float) -> bool:
    """Whether `hits` of `n` draws is within SIGMAS standard deviations of n × share."""
    sd = math.sqrt(n * share * (1 - share))
    return abs(hits - n * share) <= SIGMAS * sd


# --- which decisions -----------------------------------------------------------------------------


def test_band_is_inclusive_around_tau_and_zero_means_none() -> None:
    # values exact in binary: the band's edges are in it
    assert review_reason("a", 0.25, 0.5, 0.25, 0.0) == "band"
    assert review_reason("a", 0.75, 0.5, 0.25, 0.0) == "band"
    assert review_reason("a", 0.5, 0.5, 0.25, 0.0) == "band"
    assert review_reason("a", 0.7501, 0.5, 0.25, 0.0) is None
    assert review_reason("a", 0.2499, 0.5, 0.25, 0.0) is None
    assert review_reason("a", -3.0, -2.0, 1.0, 0.0) == "band"  # log-odds scores and τ < 0
    assert review_reason("a", 0.5, 0.5, 0.0, 0.0) is None


def test_band_wins_over_random_and_share_one_takes_every_other_id() -> None:
    assert review_reason("a", 0.5, 0.5, 0.05, 1.0) == "band"
    assert review_reason("a", 5.0, 0.5, 0.05, 1.0) == "random"
    assert not any(in_random_share(f"m-{i}", 0.0) for i in range(1000))
    assert all(in_random_share(f"m-{i}", 1.0) for i in range(1000))


def test_random_share_is_deterministic_by_id() -> None:
    ids = [f"id-{i}" for i in range(2000)]
    first = [in_random_share(i, 0.3) for i in ids]
    assert first == [in_random_share(i, 0.3) for i in ids]
    assert 0 < sum(first) < len(ids)
    # nested: an id in a share is in every larger one
    assert all(in_random_share(i, 0.5) for i, hit in zip(ids, first) if hit)


def test_undecided_decisions_are_never_queued() -> None:
    batch = [decision("a", 0.0, 0.0, label="unknown"), decision("b", 0.41, 0.4)]
    assert review_reasons(batch, band=0.05, random_share=1.0) == [None, "band"]
    far = decision("c", 0.9, 0.4)
    assert review_reasons([far], 0.05, 0.0) == [None]
    assert review_reasons([far], 0.05, 1.0) == ["random"]


@pytest.mark.parametrize("share", [0.002, 0.05])
def test_band_is_exact_and_the_random_share_uniform_and_independent_of_the_holdout(
    share: float,
) -> None:
    rng = random.Random(share)
    tau, band, holdout = 0.3, 0.05, 0.1
    ids = [f"msg-{rng.getrandbits(64):016x}" for _ in range(N)]
    scores = [rng.uniform(-1.0, 1.0) for _ in range(N)]
    reasons = [review_reason(i, s, tau, band, share) for i, s in zip(ids, scores)]
    inside = [abs(s - tau) <= band for s in scores]
    # every id in the band is queued for it, and no other
    assert all((r == "band") == b for r, b in zip(reasons, inside))
    outside = [r for r, b in zip(reasons, inside) if not b]
    hits = sum(r == "random" for r in outside)
    assert None in outside and within(hits, len(outside), share), (hits, len(outside))
    # the random share among held-out ids is the same share: the two hashes are independent
    held = [in_random_share(i, share) for i in ids if in_holdout(i, holdout)]
    assert within(len(held), N, holdout)
    assert within(sum(held), len(held), share), (sum(held), len(held))
    # and the holdout among the random share is the holdout's fraction
    chosen = [i for i in ids if in_random_share(i, share)]
    assert within(sum(in_holdout(i, holdout) for i in chosen), len(chosen), holdout)


# --- what is kept --------------------------------------------------------------------------------


def test_text_message_keeps_its_first_characters_and_its_own_fields() -> None:
    text = "Dear customer, your parcel is waiting: " + "x" * 1000
    message = Message(
        id="m-1",
        text=text,
        subject="Parcel",
        sender="+44 7700 900123",
        attributes={"channel": "sms"},
    )
    item = item_of(message, excerpt_chars=20)
    assert item.excerpt == text[:20]
    assert (item.subject, item.sender, item.attributes) == (
        "Parcel",
        "+44 7700 900123",
        {"channel": "sms"},
    )
    assert (item.message_id, item.reason, item.label, item.score, item.threshold) == (
        "m-1",
        "band",
        "spam",
        0.41,
        0.4,
    )
    assert (item.model_version, item.threshold_version, item.truncated) == (7, 2, False)
    assert item.explanation == [("win", 1.5), ("cash", 0.75)]
    tokens = Tokenizer()(message_fields(message)).tokens
    assert item.tokens == tokens
    assert tokens[:2] == ["subject:parcel", "from:id:+447700900123"]
    assert item_of(Message(id="e", text=""), 20, "random").excerpt is None


def test_raw_mail_gives_subject_sender_and_the_first_text_part() -> None:
    body = base64.b64encode("Bonjour, réclamez votre prix dès maintenant.".encode()).decode()
    raw = (
        "Received: from relay.example\r\n"
        "From: =?utf-8?b?w4l2ZQ==?= <eve@example.com>\r\n"
        "Subject: =?iso-8859-1?q?Prix_=E0_gagner?=\r\n"
        'Content-Type: multipart/mixed; boundary="b1"\r\n\r\n'
        "preamble\r\n--b1\r\n"
        'Content-Type: multipart/alternative; boundary="b2"\r\n\r\n'
        "--b2\r\nContent-Type: text/html\r\n\r\n<p>HTML version</p>\r\n"
        "--b2\r\nContent-Type: text/plain; charset=utf-8\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
        f"{body}\r\n--b2--\r\n"
        "--b1\r\nContent-Type: application/pdf\r\n"
        "Content-Disposition: attachment\r\n\r\nJVBERi0=\r\n"
        "--b1--\r\n"
    )
    message = Message(id="m", text=raw, format="email", subject="ignored", sender="ignored")
    item = item_of(message, excerpt_chars=25)
    assert item.subject == "Prix à gagner"
    assert item.sender == "Éve <eve@example.com>"
    assert item.excerpt == "Bonjour, réclamez votre p"


def test_raw_mail_html_only_and_fallbacks() -> None:
    html = "Content-Type: text/html\n\n<html><style>p{}</style><p>Click&nbsp;<a href=x>HERE</a></p>"
    item = item_of(
        Message(id="m", text=html, format="email", subject="own subject", sender="own@example.com"),
        100,
    )
    assert item.excerpt == "Click\xa0 HERE"  # visible text, case kept
    assert (item.subject, item.sender) == ("own subject", "own@example.com")  # none in the mail
    empty = item_of(Message(id="m", text=None, format="email"), 100)
    assert (empty.subject, empty.sender, empty.excerpt) == (None, None, None)


def test_raw_mail_is_read_by_the_tokenizer_alone() -> None:
    # the item keeps what the tokenizer read (Tokens.mail): the mail is not parsed again
    message = Message(id="m", text="Subject: in the text\n\nbody", format="email")
    read = MailFields("read subject", "read@example.com", "<p>read <b>text</b></p>", html=True)
    item = queued_item(message, decision(), Tokens(["t"], False, frozenset(), read), "band", 100)
    assert (item.subject, item.sender, item.excerpt, item.tokens) == (
        "read subject",
        "read@example.com",
        "read text",
        ["t"],
    )


def test_raw_mail_in_8bit_keeps_its_characters() -> None:
    raw = "Subject: Prix\nContent-Type: text/plain; charset=utf-8\n\nréclamez 100 € dès maintenant"
    item = item_of(Message(id="m", text=raw, format="email"), 100)
    assert item.excerpt == "réclamez 100 € dès maintenant"


def test_an_html_excerpt_is_read_from_a_bounded_start_without_a_tag_cut_in_two() -> None:
    head = "Content-Type: text/html\n\n"
    filler = "<b>" * (EXCERPT_SOURCE_CHARS // 3 + 1)
    late = item_of(Message(id="m", text=head + filler + "late words", format="email"), 100)
    assert late.excerpt is None  # past the bound
    for extra in ("", "<", "<i"):  # the bound falls after a tag, or inside one
        early = "<b>" * 10 + "early words"
        early += " " * ((EXCERPT_SOURCE_CHARS - len(early) - len(extra)) % 3)
        start = early + "<i>" * ((EXCERPT_SOURCE_CHARS - len(early) - len(extra)) // 3) + extra
        assert len(start) == EXCERPT_SOURCE_CHARS
        raw = head + start + ">" + "<i>" * 10
        item = item_of(Message(id="m", text=raw, format="email"), 100)
        assert item.excerpt == "early words", extra


def test_nul_and_lone_surrogates_are_not_kept() -> None:
    raw = "Subject: a\x00b\nFrom: x\x00@y\n\nbo\x00dy"
    item = item_of(Message(id="m", text=raw, format="email"), 100)
    assert (item.subject, item.sender, item.excerpt) == ("ab", "x@y", "body")
    text = Message(
        id="m", text="a\x00\ud800b", subject="s\x00\udfff", attributes={"k\x00": "v\x00"}
    )
    item = item_of(text, 100, decided=decision(explanation=[("t\x00", 1.0)]))
    assert (item.excerpt, item.subject) == ("a\ufffdb", "s\ufffd")
    assert item.attributes == {"k\ufffd": "v\ufffd"}
    assert item.explanation == [("t", 1.0)]
    assert item.excerpt is not None and item.subject is not None
    for value in (item.excerpt, item.subject, json.dumps(item.attributes)):
        assert "\x00" not in value
        value.encode("utf-8")  # no lone surrogate left


def test_subject_sender_and_excerpt_are_bounded_and_on_one_line() -> None:
    long = "word " * 10_000
    message = Message(id="m", text=long, subject="a\n\tb " + long, sender="c\r\nd " + long)
    item = item_of(message, excerpt_chars=500)
    assert item.subject is not None and item.sender is not None and item.excerpt is not None
    assert len(item.subject) == SUBJECT_CHARS and item.subject.startswith("a b word")
    assert len(item.sender) == SENDER_CHARS and item.sender.startswith("c d word")
    assert len(item.excerpt) == 500


def test_attributes_larger_than_the_bound_in_encoded_bytes_are_dropped() -> None:
    def kept(attributes: dict[str, Any] | None) -> dict[str, Any] | None:
        return item_of(Message(id="m", text="t", attributes=attributes), 10).attributes

    ascii_fits = {"k": "a" * (MAX_ATTRIBUTE_BYTES - 20)}
    assert kept(ascii_fits) == ascii_fits
    # as many characters, but three bytes each in UTF-8: an attacker's count, not len()
    assert kept({"k": "€" * (MAX_ATTRIBUTE_BYTES - 20)}) is None
    assert kept({"k": "a" * MAX_ATTRIBUTE_BYTES}) is None
    assert kept(None) is None
    nested = {"a": [{"b": [1, 2.5, None, True]}]}
    assert kept(nested) == nested
    # a backslash before "u0000" is text, not a NUL escape
    assert kept({"k": "\\u0000"}) == {"k": "\\u0000"}


@pytest.mark.parametrize(
    "raw",
    [
        "Subject: " + "=?utf-8?q?" * 400_000 + "\n\nbody",  # one huge header of encoded-word starts
        "X-A: b\n" * 500_000 + "Subject: late\n\nbody",  # half a million headers
        "Subject: x\n" + " folded\n" * 500_000 + "\nbody",  # a header folded half a million times
        'Content-Type: multipart/mixed; boundary="b"\n\n' + "--b\n" * 500_000,  # delimiters
        "Content-Type: multipart/mixed; boundary=b\n\n"
        + "--b\nContent-Type: multipart/mixed; boundary=b\n\n" * 100_000,  # nesting
        "Content-Type: text/html\n\n" + "<!--<script>" * 400_000,  # unclosed markup
        "Content-Type: multipart/mixed; boundary=" + ";" * 3_000_000 + "\n\nbody",
    ],
    ids=["encoded-words", "many-headers", "folded", "delimiters", "nesting", "markup", "params"],
)
def test_hostile_mails_of_megabytes_stay_cheap(raw: str) -> None:
    assert len(raw) > 2_000_000
    started = time.perf_counter()
    # read by the tokenizer (the first limits.max_bytes of it), then kept
    item = item_of(Message(id="m", text=raw, format="email"), 500)
    elapsed = time.perf_counter() - started
    assert len(item.excerpt or "") <= 500 and len(item.subject or "") <= SUBJECT_CHARS
    assert elapsed < 10, elapsed  # a generous bound
