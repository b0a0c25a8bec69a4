"""Relay, client and header-name tokens of raw mail (filterd/tokenize/headers.py)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filterd.tokenize import headers, tokenize
from filterd.tokenize.headers import header_name_tokens, received_tokens

RELAYED = """\
Received: from mx1.mail.example.com (mx1.mail.example.com [66.35.250.206])
\tby relay.example.org (Postfix) with ESMTP id 1A2B3C; Thu, 28 Nov 2002 16:09:42 +0000
Message-ID: <20021128.ABC@mx1.mail.example.com>
X-Mailer: Microsoft Outlook Express 6.00.2600.0000
List-Unsubscribe: <mailto:leave@lists.example.org>
X-Mailman-Version: 2.0.13
Sender: list-admin@lists.example.org
Subject: hello

body words
"""


def test_received_hosts_give_parent_domains_and_addresses_their_networks() -> None:
    tokens = received_tokens("from mx1.mail.example.com ([66.35.250.206]) by relay.example.org", 40)
    assert tokens == [
        "received:example.com",
        "received:mail.example.com",
        "received:mx1.mail.example.com",
        "received:example.org",
        "received:relay.example.org",
        "received:66.35",
        "received:66.35.250",
        "received:66.35.250.206",
    ]


def test_received_words_dates_and_queue_ids_give_no_tokens() -> None:
    assert (
        received_tokens(
            "from localhost with ESMTP id gASEAQW10714; Thu, 28 Nov 2002 14:10:26 GMT", 40
        )
        == []
    )


def test_received_ignores_dotted_numbers_that_are_not_addresses() -> None:
    assert received_tokens("(8.11.6/8.11.6) version 1.2.3.4.5", 40) == []


def test_mail_reads_relays_and_client_headers() -> None:
    tokens = tokenize({"id": "m", "text": RELAYED, "format": "email"}).tokens
    assert {"received:example.com", "received:66.35.250", "received:relay.example.org"} <= set(
        tokens
    )
    assert {
        "message-id:email:mx1.mail.example.com",
        "x-mailer:outlook",
        "x-mailer:microsoft",
    } <= set(tokens)
    assert "subject:hello" in tokens and "body" in tokens


def test_list_and_delivery_header_names_are_left_out() -> None:
    tokens = tokenize({"id": "m", "text": RELAYED, "format": "email"}).tokens
    names = {t for t in tokens if t.startswith("header:")}
    assert names == {"header:received", "header:message-id", "header:x-mailer", "header:subject"}


def test_header_names_are_distinct_casefolded_and_well_formed() -> None:
    names = [
        "X-Mailer",
        "x-mailer",
        "List-Id",
        "X-Loop",
        "Bad Name",
        "Precedence",
        "X-Spam-Status",
        "Organization",
    ]
    assert header_name_tokens(names) == ["header:x-mailer", "header:organization"]


RECEIVED_TEXT = st.lists(
    st.sampled_from(
        [
            *list("aZ09_.-( )[];:\t\n\x1f\x0b"),
            "mx1.mail.example.com",
            "Example.COM",
            "66.35.250.206",
            "1.2.3.4.5",
            "1234.5.6.7",
            "01.002.3.44",
            "a-.b",
            "-a.com",
            "x" * 62,
            "y" * 25,
            "ab.",
            ".cd",
            "c0m",
            "K",
            "é",
        ]
    ),
    max_size=40,
).map("".join)


@pytest.mark.skipif(headers.c_received is None, reason="filterd._speedups not built")
@settings(max_examples=1000, deadline=None)
@given(st.one_of(RECEIVED_TEXT, st.text(st.characters(max_codepoint=127))), st.integers(1, 60))
def test_the_c_received_scan_gives_the_regex_tokens(value: str, max_length: int) -> None:
    assert headers.c_received is not None
    tokens = headers.c_received(value, max_length)
    if not value.isascii():
        assert tokens is None  # the regexes alone read non-ASCII letters
    else:
        assert tokens == headers.python_received_tokens(value, max_length)


@pytest.mark.skipif(headers.c_received is None, reason="filterd._speedups not built")
@pytest.mark.parametrize(
    "value",
    [
        "from " + "ab." * 200 + "cd",  # more labels than a host may have
        "a.com.1x b." + "c" * 24 + " d." + "e" * 25 + " f.g_h i.jk-l m.no.p",
        ("w" * 63 + ".") * 3 + "com " + "v" * 64 + ".com",
        "1.2.3.4 1.2.3.4.5 .1.2.3.4 1.2.3.4. 1.2.3 12.345.6.7.8.9 1.2.3.4x",
    ],
)
def test_the_c_received_scan_agrees_on_label_and_octet_edges(value: str) -> None:
    assert headers.c_received is not None
    for max_length in (5, 40):
        assert headers.c_received(value, max_length) == headers.python_received_tokens(
            value, max_length
        )
