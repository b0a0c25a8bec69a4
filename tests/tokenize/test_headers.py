"""Relay, client and header-name tokens of raw mail (filterd/tokenize/headers.py)."""

from filterd.tokenize import tokenize
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


def test_received_hosts_give_parent_domains_and_addresses_their_networks():
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


def test_received_words_dates_and_queue_ids_give_no_tokens():
    assert (
        received_tokens(
            "from localhost with ESMTP id gASEAQW10714; Thu, 28 Nov 2002 14:10:26 GMT", 40
        )
        == []
    )


def test_received_ignores_dotted_numbers_that_are_not_addresses():
    assert received_tokens("(8.11.6/8.11.6) version 1.2.3.4.5", 40) == []


def test_mail_reads_relays_and_client_headers():
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


def test_list_and_delivery_header_names_are_left_out():
    tokens = tokenize({"id": "m", "text": RELAYED, "format": "email"}).tokens
    names = {t for t in tokens if t.startswith("header:")}
    assert names == {"header:received", "header:message-id", "header:x-mailer", "header:subject"}


def test_header_names_are_distinct_casefolded_and_well_formed():
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
