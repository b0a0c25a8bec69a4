"""URLs and e-mail addresses → host, path and address tokens.

Inputs are normalized text (see `text.normalize`). A URL gives:

    proto:<scheme>              when it has one ("proto:https")
    url:<host>                  the full host ("url:login.example.com")
    url:<suffix>                up to 4 parent domains, the TLD last ("url:example.com", "url:com")
    url:ip                      besides "url:<host>", when the host is an IPv4 or decimal address
    urlport:<port>              when a port is given
    urlpath:<word>              up to 10 words (2+ letters/digits) of the path and query

An address `local@domain` gives "email:<local>" and "email:<domain>". Every part longer than
the length limit becomes a skip marker after its prefix ("urlpath:skip:a:60").
"""

from __future__ import annotations

import re
from itertools import islice

from filterd.tokenize.limits import cap

# A URL in running text: a scheme or "www." start, then everything up to whitespace or a
# character that cannot appear unquoted in one; possessive, so a failing match never backtracks.
# The starts are plain literals, which lets the regex engine skip ahead to candidates: a word
# boundary assertion in front made the scan 4x slower.
_URL = r"(?P<url>(?:https?://|ftp://|www\.)[^\s<>\"'`{}|\\^\x00-\x1f\x7f]++)"
# An address's local part may not start inside a longer run of its characters (lookbehind):
# that keeps "aaaa…a @" linear instead of retrying the match from every "a".
_ADDRESS = r"(?<![\w.+-])(?P<local>[\w.+-]++)@(?P<domain>[\w-]++(?:\.[\w-]++)+)"
FIND_URLS = re.compile(_URL)
FIND_LINKS = re.compile(_URL + "|" + _ADDRESS)  # slower: use only when the text has an "@"

# Trailing characters that end a sentence rather than a URL.
URL_TRAILER = ".,;:!?)]}'\""

_URL_PARTS = re.compile(
    r"(?:(?P<scheme>[a-z][a-z0-9+.-]{0,15}):(?=//))?(?://)?"
    r"(?:[^/?#@\s]*+@)?"  # user info, dropped
    r"(?P<host>[\w.-]*)(?::(?P<port>\d{1,5}))?"
)
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_PATH_WORD = re.compile(r"[^\W_]{2,}")
_MAX_SUFFIXES = 4
_MAX_PATH_WORDS = 10


def url_tokens(url: str, max_token_length: int) -> list[str]:
    """Tokens of one normalized URL ("https://…", "//host/…" or "www.…")."""
    m = _URL_PARTS.match(url)
    out: list[str] = []
    if m is None:  # cannot happen (every group is optional); kept for the never-raise contract
        return out
    scheme, host, port = m.group("scheme", "host", "port")
    if scheme:
        out.append("proto:" + cap(scheme, max_token_length))
    host = host.strip(".")
    if host:
        out.append("url:" + cap(host, max_token_length))
        if _IPV4.fullmatch(host) or host.isdigit():
            out.append("url:ip")
        else:
            labels = host.split(".")
            for i in range(max(1, len(labels) - _MAX_SUFFIXES), len(labels)):
                suffix = ".".join(labels[i:])
                if suffix:
                    out.append("url:" + cap(suffix, max_token_length))
    if port:
        out.append("urlport:" + port)
    rest = url[m.end() :]
    for word in islice(_PATH_WORD.finditer(rest), _MAX_PATH_WORDS):
        out.append("urlpath:" + cap(word.group(), max_token_length))
    return out


def email_tokens(local: str, domain: str, max_token_length: int) -> list[str]:
    """Tokens of one normalized address `local@domain`."""
    return ["email:" + cap(local, max_token_length), "email:" + cap(domain, max_token_length)]
