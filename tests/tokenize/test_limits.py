"""Limits (bytes, tokens) are applied and reported; hostile inputs finish in linear time.

The hostile inputs are ~1 MB: a quadratic pass over one of them would take minutes, so a
regression hangs the suite instead of passing quietly.
"""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import Tokenizer, TokenizerConfig, tokenize
from filterd.tokenize.limits import truncate_utf8


def test_max_bytes_cuts_the_text_and_flags_it() -> None:
    result = tokenize({"text": "word " * 1000}, TokenizerConfig(max_bytes=100))
    assert result.tokens == ["word"] * 20
    assert result.truncated and result.flags == {"max_bytes"}


def test_max_bytes_counts_utf8_bytes_and_cuts_at_a_character_boundary() -> None:
    assert truncate_utf8("é" * 10, 5) == ("éé", True)
    assert truncate_utf8("€" * 3, 9) == ("€€€", False)
    assert truncate_utf8("a\ud800b", 4) == ("a\ud800", True)  # a lone surrogate counts 3 bytes
    result = tokenize({"text": "日本" * 100}, TokenizerConfig(max_bytes=10))
    assert result.tokens == ["日", "本", "日"] and result.flags == {"max_bytes"}


def test_max_tokens_cuts_the_list_and_flags_it() -> None:
    result = tokenize({"text": "spam " * 50, "subject": "hi"}, TokenizerConfig(max_tokens=10))
    assert result.tokens == ["subject:hi"] + ["spam"] * 9
    assert result.truncated and result.flags == {"max_tokens"}


# Text dense in links, parts and headers: what the tokenizer may stop reading at max_tokens.
MANY_TOKENS = st.lists(
    st.sampled_from(
        [
            "word ",
            "a@b.com ",
            "http://x.com/p ",
            "www.y.org ",
            "!! ",
            "\n",
            "\n\n",
            "Subject: s\n",
            "Content-Type: multipart/mixed; boundary=b\n",
            "--b\n",
            "--b--\n",
            "Received: a.b.c\n",
            "Content-Type: text/html\n",
            '<a href="http://z.net/q">z</a> ',
            "=ZZ",
            "bad base64 ",
            "Content-Transfer-Encoding: base64\n",
            "From: me@x.com\n",
        ]
    ),
    max_size=80,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(
    MANY_TOKENS,
    st.sampled_from(["email", "text"]),
    st.integers(1, 30),
    st.booleans(),
    st.sampled_from([None, "hello there"]),
)
def test_max_tokens_keeps_the_first_tokens_of_the_whole_list(
    text: str, format_: str, limit: int, bigrams: bool, subject: str | None
) -> None:
    # The tokenizer stops reading text once past max_tokens; what it keeps and flags must be
    # what cutting the whole list gives.
    message = {"text": text, "format": format_, "subject": subject}
    whole = Tokenizer(TokenizerConfig(max_tokens=1_000_000, bigrams=bigrams))(message)
    cut = Tokenizer(TokenizerConfig(max_tokens=limit, bigrams=bigrams))(message)
    assert cut.tokens == whole.tokens[:limit]
    over = len(whole.tokens) > limit
    assert cut.flags == whole.flags | ({"max_tokens"} if over else set())
    assert Tokenizer(TokenizerConfig(max_tokens=limit)).text(text) == Tokenizer().text(text)[:limit]


def test_parts_past_max_tokens_are_still_checked_for_defects() -> None:
    raw = (
        "Content-Type: multipart/mixed; boundary=b\n\n--b\n\n" + "word " * 50 + "\n--b\n"
        "Content-Transfer-Encoding: base64\n\nQUJD=\n--b--\n"  # bad base64 padding
    )
    result = Tokenizer(TokenizerConfig(max_tokens=10))({"text": raw, "format": "email"})
    assert {"max_tokens", "mime_defect"} <= result.flags


def test_limits_apply_to_the_text_fast_path_without_a_report() -> None:
    tokenizer = Tokenizer(TokenizerConfig(max_tokens=3, max_bytes=1000))
    assert tokenizer.text("ab bc cd de ef") == ["ab", "bc", "cd"]
    assert len(Tokenizer(TokenizerConfig(max_bytes=10)).text("abcd " * 100)) == 2


def test_within_limits_nothing_is_flagged() -> None:
    result = tokenize({"text": "word " * 100}, TokenizerConfig(max_tokens=100, max_bytes=500))
    assert len(result.tokens) == 100 and not result.truncated and result.flags == frozenset()


def test_config_rejects_nonsense() -> None:
    for bad in ({"max_tokens": 0}, {"max_bytes": -1}, {"max_token_length": "40"}, {"bigrams": 1}):
        with pytest.raises(ValueError):
            TokenizerConfig(**bad)


HOSTILE_TEXT = {
    "one long word": "a" * 1_000_000,
    "at signs": "@" * 100_000,
    "schemes": "http://" * 50_000,
    "dots": "." * 1_000_000,
    "dashes": "-" * 1_000_000,
    "hyphenated": "a-" * 500_000,
    "dotted number": "1." * 500_000,
    "word then address": "a" * 999_000 + " @x.com",
    "dotted locals": "a.b@c." * 150_000,
    "www": "www." * 250_000,
    "bangs": "!" * 1_000_000,
    "currency": "$1" * 500_000,
    "apostrophes": "a'" * 500_000,
    "zero width": "a\u200b" * 300_000,
    "han": "你好" * 150_000,
    "10 MB": "word " * 2_000_000,
}

HOSTILE_MAIL = {
    "unclosed comments": "Content-Type: text/html\n\n" + "<!--" * 250_000,
    "unclosed scripts": "Content-Type: text/html\n\n" + "<script" * 140_000,
    "open angles": "Content-Type: text/html\n\n" + "<" * 1_000_000,
    "open tags": "Content-Type: text/html\n\n" + "<a" * 500_000,
    "unclosed hrefs": "Content-Type: text/html\n\n" + '<a href="' * 100_000,
    "entities": "Content-Type: text/html\n\n" + "&#" * 500_000,
    "encoded-word starts": "Subject: " + "=?a?q?" * 160_000 + "\n\nx",
    "many parts": 'Content-Type: multipart/mixed; boundary="b"\n\n' + "--b\n\nx\n" * 150_000,
    "many headers": "".join(f"X-H{i}: v\n" for i in range(60_000)) + "\nbody",
    "many senders": "From: " + "a@b.c, " * 140_000 + "\n\nx",
    "at-sign sender": "From: " + "@" * 1_000_000 + "\n\nx",
    "punycode charset": 'Content-Type: text/plain; charset="punycode"\n'
    "Content-Transfer-Encoding: base64\n\n" + "QUFB" * 200_000,
    "soft line breaks": "Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n"
    + "=\n" * 500_000,
    "headerless long word": HOSTILE_TEXT["one long word"],
    "headerless at signs": HOSTILE_TEXT["at signs"],
    "scheme header": HOSTILE_TEXT["schemes"],
}


@pytest.mark.parametrize("text", HOSTILE_TEXT.values(), ids=HOSTILE_TEXT.keys())
def test_hostile_text_completes(text: str) -> None:
    result = tokenize({"text": text})
    assert len(result.tokens) <= 10_000
    assert all(result.tokens)


@pytest.mark.parametrize("raw", HOSTILE_MAIL.values(), ids=HOSTILE_MAIL.keys())
def test_hostile_mail_completes(raw: str) -> None:
    result = tokenize({"text": raw, "format": "email"})
    assert len(result.tokens) <= 10_000
    assert "internal_error" not in result.flags


def test_hostile_attributes_complete() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(100_000):
        node["k"] = {}
        node = node["k"]
    wide = {"v": list(range(1_000_000)), "e": [[]] * 1_000_000}
    result = tokenize({"attributes": {"deep": deep, "wide": wide}})
    assert "deep" + ".k" * 7 + "=nested" in result.tokens  # MAX_ATTRIBUTE_DEPTH = 8 keys
    assert result.truncated and {"max_depth", "max_tokens"} <= result.flags
