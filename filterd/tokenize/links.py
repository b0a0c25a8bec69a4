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
from collections.abc import Callable, Iterator
from itertools import islice

from filterd.tokenize.limits import cap
from filterd.tokenize.memo import memoized

c_url_tokens: Callable[[str, int], tuple[str, ...]] | None
try:  # the URL reading in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import url_tokens as c_url_tokens
except ImportError:  # pragma: no cover - depends on the build
    c_url_tokens = None

# A URL in running text: a scheme or "www." start, then everything up to whitespace or a
# character that cannot appear unquoted in one; possessive, so a failing match never backtracks.
# The starts are plain literals, which lets the regex engine skip ahead to candidates: a word
# boundary assertion in front makes the scan much slower.
_URL_CHAR = r"[^\s<>\"'`{}|\\^\x00-\x1f\x7f]"
_URL = rf"(?P<url>(?:https?://|ftp://|www\.){_URL_CHAR}++)"
# An address's local part may not start inside a longer run of its characters (lookbehind):
# that keeps "aaaa…a @" linear instead of retrying the match from every "a". The domain's labels
# repeat possessively (nothing follows them to give any back for): a backtracking repeat keeps a
# mark per label, memory in proportion to a domain of a million labels.
_ADDRESS = r"(?<![\w.+-])(?P<local>[\w.+-]++)@(?P<domain>[\w-]++(?:\.[\w-]++)++)"
FIND_URLS = re.compile(_URL)
# Where FIND_URLS matches, without reading the URL's run: see find_links.
_URL_START = re.compile(rf"(?:https?://|ftp://|www\.)(?={_URL_CHAR})")
FIND_LINKS = re.compile(_URL + "|" + _ADDRESS)  # slow to scan: see find_links
_LOCAL_RUN = re.compile(r"[\w.+-]*+")

# Trailing characters that end a sentence rather than a URL.
URL_TRAILER = ".,;:!?)]}'\""


def find_links(text: str) -> Iterator[re.Match[str]]:
    """The matches of `FIND_LINKS.finditer(text)`, found faster than by that scan.

    Scanning for FIND_LINKS tries the address branch, lookbehind first, at every position.
    Instead, URLs come from FIND_URLS, which skips to its literal starts, and addresses from
    the "@"s: the address branch can only match at the start of the run of local-part
    characters that ends just before an "@" (its lookbehind bars any later start in the run,
    and its possessive run must end at the "@"). FIND_LINKS itself is matched there, so each
    match is the one finditer gives; of a URL and an address, the first in the text is taken,
    the URL on a tie, as in FIND_LINKS's alternation. Only where a URL starts is looked for
    until it is taken: a URL that an address before it outruns is looked for again, and its
    run, which may reach the end of the text, read each time would cost the square of the
    text's length ("q@b.cwww./" repeated).
    """
    pos = 0
    reverse = text[::-1]  # the run before an "@" is the run after it in the reversed text
    url = _next_url(text, 0)
    address = _next_address(text, reverse, 0)
    while True:
        if url is not None and url < pos:
            url = _next_url(text, pos)
        if address is not None and address.start() < pos:
            # Looked for from `pos` on, not by walking the "@"s in between: FIND_LINKS matched at
            # each of them may run to the end of the text ("@www." repeated), a quadratic cost.
            address = _next_address(text, reverse, pos)
        match: re.Match[str] | None
        if address is not None and (url is None or address.start() < url):
            match = address
        elif url is not None:
            match = FIND_URLS.match(text, url)
            assert match is not None  # _URL_START matched there
        else:
            return
        yield match
        pos = match.end()


def _next_url(text: str, pos: int) -> int | None:
    """Where the first match of FIND_URLS at or after `pos` starts, if any."""
    start = _URL_START.search(text, pos)
    return None if start is None else start.start()


def _next_address(text: str, reverse: str, pos: int) -> re.Match[str] | None:
    """FIND_LINKS matched at the first start ≥ `pos` of a local-part run that ends just before
    an "@" (`reverse` is `text` reversed)."""
    n = len(text)
    at = text.find("@", pos)
    while at != -1:
        run = _LOCAL_RUN.match(reverse, n - at)
        assert run is not None  # zero or more characters: matches at any position
        start = at - (run.end() - (n - at))
        if pos <= start < at:
            match = FIND_LINKS.match(text, start)
            if match is not None:
                return match
        at = text.find("@", at + 1)
    return None


_URL_PARTS = re.compile(
    r"(?:(?P<scheme>[a-z][a-z0-9+.-]{0,15}):(?=//))?(?://)?"
    r"(?:[^/?#@\s]*+@)?"  # user info, dropped
    r"(?P<host>[\w.-]*)(?::(?P<port>\d{1,5}))?"
)
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_PATH_WORD = re.compile(r"[^\W_]{2,}")
_MAX_SUFFIXES = 4
_MAX_PATH_WORDS = 10
_FINDALL_MAX = 1000


def python_url_tokens(url: str, max_token_length: int) -> tuple[str, ...]:
    """Tokens of one normalized URL ("https://…", "//host/…" or "www.…"): `url_tokens` in
    Python, and the reference of `c_url_tokens`."""
    m = _URL_PARTS.match(url)
    out: list[str] = []
    if m is None:  # cannot happen (every group is optional); kept for the never-raise contract
        return ()
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
    out += ["urlpath:" + cap(word, max_token_length) for word in _path_words(url, m.end())]
    return tuple(out)


# The C reading takes less time than a memo lookup (URLs repeat, so the Python one is memoized)
url_tokens: Callable[[str, int], tuple[str, ...]] = (
    c_url_tokens if c_url_tokens is not None else memoized(python_url_tokens)
)


def _path_words(url: str, start: int) -> list[str]:
    """The first path words of `url` from `start` on. findall is faster than finditer (the
    path words are most of url_tokens' time), but on a long URL would collect every word."""
    if len(url) - start <= _FINDALL_MAX:
        return _PATH_WORD.findall(url, start)[:_MAX_PATH_WORDS]
    return [word.group() for word in islice(_PATH_WORD.finditer(url, start), _MAX_PATH_WORDS)]


def email_tokens(local: str, domain: str, max_token_length: int) -> list[str]:
    """Tokens of one normalized address `local@domain`."""
    return ["email:" + cap(local, max_token_length), "email:" + cap(domain, max_token_length)]
