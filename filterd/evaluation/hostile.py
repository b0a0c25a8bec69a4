"""Hostile message records, for the hardening tests and `bench/hostile.py` (pure: no I/O).

Each family writes one raw record (the bytes a producer would put on the messages topic) of
about `size` bytes, built to be expensive or odd for one part of the path: the JSON decoder, the
tokenizer's text, URL, HTML and attribute scans, the MIME parser, the limits. Whatever the
family, the daemon must decide the record or dead-letter it with a reason, within a bounded cost
per byte, and decide the next normal message.

>>> sorted(FAMILIES)[:3]
['address_many_labels', 'address_url_overlap', 'attributes_big_numbers']
>>> len(record("tokens_many", 10_000)) >= 10_000
True
"""

from __future__ import annotations

import json
from collections.abc import Callable

from filterd.entities.lists import outcome_of
from filterd.entities.memory import EntitySpec
from filterd.entities.rules import Rule

Family = Callable[[int], bytes]


def _message(text: str, fmt: str = "text", **fields: object) -> bytes:
    record = {"id": "hostile", "text": text, "format": fmt, **fields}
    return json.dumps(record, ensure_ascii=False).encode()


def _mail(headers: str, body: str = "the body\n") -> bytes:
    return _message(f"From: a@example.com\nSubject: hostile\n{headers}\n\n{body}", "email")


def _nested_mime(levels: int, eol: str, body_lines: int) -> bytes:
    opening = "".join(
        f'Content-Type: multipart/mixed; boundary="b{i}"{eol}{eol}--b{i}{eol}'
        for i in range(levels)
    )
    body = ("x y z" + eol) * body_lines
    closing = "".join(f"--b{i}--{eol}" for i in reversed(range(levels)))
    return _message(
        f"From: a@example.com{eol}Subject: nested{eol}{opening}Content-Type: text/plain"
        f"{eol}{eol}{body}{closing}",
        "email",
    )


def _nested_json(depth: int) -> bytes:
    return b'{"id": "hostile", "attributes": ' + b'{"a": ' * depth + b"1" + b"}" * (depth + 1)


def _parts(n: int) -> bytes:
    parts = "".join(f"--b\nContent-Type: text/plain\n\npart {i}\n" for i in range(n))
    return _message(
        f'From: a@example.com\nSubject: parts\nContent-Type: multipart/mixed; boundary="b"\n\n'
        f"{parts}--b--\n",
        "email",
    )


FAMILIES: dict[str, Family] = {
    # header parameters whose stdlib parse is quadratic
    "boundary_semicolons": lambda n: _mail('Content-Type: multipart/mixed; boundary="' + ";" * n),
    "filename_semicolons": lambda n: _mail(
        'Content-Type: application/octet-stream\nContent-Disposition: attachment; filename="'
        + ";" * n
    ),
    "name_semicolons": lambda n: _mail('Content-Type: application/octet-stream; name="' + ";" * n),
    # MIME structure
    "mime_lone_cr_nesting": lambda n: _nested_mime(max(1, n // 70), "\r", 1),
    "mime_deep_long_body": lambda n: _nested_mime(99, "\n", max(1, n // 8)),
    "mime_many_parts": lambda n: _parts(max(1, n // 50)),
    "header_line_huge": lambda n: _mail("X-Long: " + "a" * n),
    # a header flood: a line per 12 bytes of the record
    "headers_many": lambda n: _mail("\n".join(["X-Flood: b"] * (n // 12))),
    # a Subject of encoded words, decoded and joined ("gagnégagné…")
    "subject_encoded_words": lambda n: _message(
        "From: a@example.com\nSubject: " + "=?utf-8?q?gagn=C3=A9?= " * (n // 23) + "\n\nthe body\n",
        "email",
    ),
    # a multipart whose only text is one long HTML part
    "mime_html_only": lambda n: _mail(
        'Content-Type: multipart/alternative; boundary="b"',
        "--b\nContent-Type: text/html\n\n" + "<p>Bonjour <b>vous</b></p>\n" * (n // 28) + "--b--\n",
    ),
    "body_huge": lambda n: _mail("Content-Type: text/plain", "spam " * (n // 5)),
    "received_dots": lambda n: _mail("Received: from " + "a." * (n // 2)),
    # one Received word of labels that fail as hosts and octets that fail as addresses, for
    # the C scan of Received headers (filterd/_speedups.c `received`)
    "received_labels_octets": lambda n: _mail(
        "Received: from " + "ab.cd-.1.22.333.4444." * (n // 21)
    ),
    # text, links, markup
    "text_huge": lambda n: _message("spam " * (n // 5)),
    "tokens_many": lambda n: _message(" ".join(f"w{i:06d}" for i in range(n // 8))),
    "regex_runs": lambda n: _message(("@.%!0123456789" * (n // 14 + 1))[:n]),
    "url_many_labels": lambda n: _message("http://" + "a." * (n // 2) + "com/"),
    "address_many_labels": lambda n: _message("x@" + "a." * (n // 2) + "com"),
    # an "@" before every "www.": each address candidate a URL to the end of the text
    "address_url_overlap": lambda n: _message("@www." * (n // 5)),
    # addresses that each end just before a URL to the end of the text starts: the URL is
    # looked for again after every address
    "url_behind_addresses": lambda n: _message("q@b.cwww./" * (n // 10)),
    "html_many_tags": lambda n: _mail("Content-Type: text/html", "<b>" * (n // 3)),
    "html_unclosed_comment": lambda n: _mail("Content-Type: text/html", "<!--" + "x" * n),
    # what `filterd.tokenize.hidden` walks: hidden elements nested far past its stack's depth,
    # closing tags of no open element under a full stack, one tag of thousands of
    # declarations, and words each in its own white-on-white font
    "html_hidden_nested": lambda n: _mail(
        "Content-Type: text/html", '<div style="display:none">x' * (n // 28)
    ),
    "html_stray_closings": lambda n: _mail(
        "Content-Type: text/html", "<div>" * 300 + "</span>" * ((n - 1500) // 7)
    ),
    "html_style_huge": lambda n: _mail(
        "Content-Type: text/html", '<p style="' + "color:#fff;" * (n // 11) + '">x</p>'
    ),
    "html_white_words": lambda n: _mail(
        "Content-Type: text/html", "<font color=#fff>ham</font> " * (n // 29)
    ),
    # link attributes whose values a "<" or ">" cuts, and tags a "<" cuts, for the C scan of
    # markup (filterd/_speedups.c `markup`)
    "html_unclosed_values": lambda n: _mail(
        "Content-Type: text/html", "<a href=\"x<src='y>action= <b" * (n // 29)
    ),
    "base64_huge": lambda n: _mail(
        "Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64",
        ("QUFB" * 19 + "\n") * (n // 77),
    ),
    # a non-ASCII character every 33: one NFKC call per run for the C scan that normalizes only
    # the non-ASCII runs (filterd/_speedups.c `folded`), the most it makes
    "nonascii_sparse_runs": lambda n: _message(("\u00e9" + "a" * 32) * (n // 34)),
    # distinct Han characters, unspaced: every character 4-gram of the text is new, for the
    # table of the C loop that finds them (filterd/_speedups.c `grams`; the fusion's tokens)
    "char_grams_distinct": lambda n: _message(
        "".join(chr(0x4E00 + i % 20_000) for i in range(n // 3))
    ),
    # a mail written in its Subject alone: every subject word is read twice
    # (TokenizerConfig.short_body)
    "subject_only_huge": lambda n: _mail("Subject: " + "w " * (n // 2), ""),
    # words written with invisible characters inside (each letter apart: `text.normalized`
    # strips them and finds the trick), and one long invisible run between two letters, where
    # the trick's search must not retry the run at every position
    "invisible_in_words": lambda n: _message(
        "v\u034fi\U000e0041a\ufe0fg\u200br\u00ada " * (n // 22)
    ),
    "invisible_run": lambda n: _message("a" + "\u034f" * (n // 2) + "b"),
    # words that mix Latin and look-alike Cyrillic letters (each folded: `text.normalized`),
    # and one such word of the whole record, which the mixed-word scan must read once
    "lookalike_words": lambda n: _message("p\u0430yp\u0430l " * (n // 14)),
    "lookalike_run": lambda n: _message("a\u0430" * (n // 3)),
    # words written a letter at a time (each joined: `text.unsplit`), runs one letter short of
    # a split word (each tried and dropped), and dotted runs of a host (each tried to its end)
    "split_words": lambda n: _message("v i a g r a " * (n // 12)),
    "split_near_runs": lambda n: _message("a b c  " * (n // 7)),
    "split_host_runs": lambda n: _message("a.b.c.d.e.f.g.h.ex " * (n // 19)),
    "nfkc_expanding": lambda n: _message(
        "\ufdfa" * (n // 3)
    ),  # 3 UTF-8 bytes, 18 characters in NFKC
    # the record itself
    "json_nested": lambda n: _nested_json(max(1, n // 7)),
    "attributes_nested": lambda n: _message("x", attributes=_deep_dict(50)),
    "attributes_many_keys": lambda n: _message(
        "x", attributes={f"k{i}": i for i in range(n // 12)}
    ),
    # numbers of thousands of digits, each given its log-scale bin (`NumberBins`)
    "attributes_big_numbers": lambda n: _message(
        "x", attributes={f"n{i}": 10**4000 - i for i in range(max(1, n // 4010))}
    ),
    # attribute values with white space, control and non-ASCII characters: each part replaced
    # piece by piece (`attributes.clean`), not passed through as printable ASCII is
    "attributes_spaced": lambda n: _message("x", attributes={"note": "a b\t\u00e9 " * (n // 8)}),
    # what the entity memory reads (entities customer, terminal, sender; the amount): a value
    # of the whole record's size, one of thousands of digits, the smallest float as an amount
    "attributes_entities": lambda n: _message(
        "x",
        sender="s" * (n // 2),
        attributes={"customer": "c" * (n // 2), "terminal": 10**4000, "amount": 5e-324},
    ),
    "id_huge": lambda n: json.dumps({"id": "i" * n, "text": "x"}).encode(),
    "nul_bytes": lambda n: _message("\x00" * (n // 6)),
    "invalid_utf8": lambda n: b'{"id": "hostile", "text": "' + b"\xff\xfe" * (n // 2) + b'"}',
}


# The entity memory the harness runs every family through: the keys `attributes_entities` writes.
ENTITY_SPEC = EntitySpec(
    keys=("customer", "terminal", "sender"), counterparties=(("customer", "terminal"),)
)
# Rules that read what the families write (their attributes, fields and entities' features),
# so that the harness runs every family through the rules' evaluation too (`rule_set`): long
# texts against texts and sets, 4,000-digit integers and the smallest float against numbers.
RULES = (
    ("amounts", "amount >= 5000 or amount < 1e-300 or customer:amount_vs_30d > 4", "review"),
    ("names", 'customer in ["c", "x"] or sender == "s" or not terminal != 1e300', "review"),
    ("velocity", "customer:count_1h >= 1000 and not (terminal:count_1d < 1)", "block"),
)


def rule_set() -> list[Rule]:
    """RULES, as the store would give them."""
    return [Rule(name, when, outcome_of(outcome)) for name, when, outcome in RULES]


def _deep_dict(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"k": value}
    return value


def record(family: str, size: int) -> bytes:
    """One raw record of `family`, of about `size` bytes (ValueError for an unknown family)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r} (families: {', '.join(sorted(FAMILIES))})")
    return FAMILIES[family](size)
