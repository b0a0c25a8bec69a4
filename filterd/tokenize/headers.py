"""Mail headers beyond sender, recipients and subject: relays, client, threading, header names.

Token forms:

    received:<host suffix>      every suffix of two or more labels of each host name in a
                                Received header ("received:mx.mail.example.com",
                                "received:mail.example.com", "received:example.com")
    received:<ip prefix>        the first 2, 3 and 4 octets of each IPv4 address
                                ("received:66.35", "received:66.35.250", "received:66.35.250.206")
    <header>:<token>            the value tokens of the headers in `VALUE_HEADERS`
                                ("x-mailer:outlook", "message-id:email:mx.example.com")
    header:<name>               each distinct header name, except `IGNORED_NAMES`

Why these: the relays a mail came through, its client and its threading headers are what
SpamBayes and SpamAssassin's Bayes read beyond the body; generalizing hosts to their parent
domains and addresses to their networks lets a new relay of a known network count
(SpamBayes' received: tokens). The other words of a Received line (dates, "with esmtp", queue
ids) were measured to add noise.

Header names that mailing lists, delivery agents and mail stores add are left out (as in
SpamAssassin's Bayes, whose IGNORED_HDRS gives the reason): spam sent to a mailing list
carries them too, so they turn the list itself into a sign of ham.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from filterd.tokenize.limits import cap
from filterd.tokenize.memo import MAX_KEY_LENGTH, SIZE, memoized

c_received: Callable[[str, int], list[str] | None] | None
try:  # the Received scan in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import received as c_received
except ImportError:  # pragma: no cover - depends on the build
    c_received = None

VALUE_HEADERS = (
    "message-id",
    "in-reply-to",
    "references",
    "x-mailer",
    "user-agent",
    "organization",
    "x-authentication-warning",
    "x-priority",
    "x-msmail-priority",
    "mime-version",
)

IGNORED_NAMES = re.compile(
    r"(?:x-)?(?:list-|mailing-list|mailman|been-?there|loop|unsub|egroups|yahoo|mdmailing|xemacs)"
    r"|(?:errors-to|sender|x-sender|precedence|mail-followup-to|delivered-to|x-original-to"
    r"|x-virus-scanned|x-status|x-keywords|status|x-uid|x-spam|lines|content-length)"
)

_HEADER_NAME = re.compile(r"[!-9;-~]{1,40}")  # printable ASCII but ":"
# At most 126 labels before the top-level domain, as DNS allows: the regex engine keeps a mark per
# repetition of a group while it may backtrack, so an unbounded `+` over a word of a million
# "a." held memory in proportion to the word.
_HOST = re.compile(
    r"(?<![\w.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){1,126}[a-z]{2,24})(?![\w-])",
    re.IGNORECASE,
)
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])")


def received_tokens(value: str, max_length: int) -> list[str]:
    """`received:` tokens of one Received header: host suffixes, then IPv4 prefixes."""
    # Scanned by filterd._speedups where built: most mails carry several Received headers of
    # a dozen words, a loop of calls per word in Python. It declines non-ASCII values, where
    # the patterns' case-insensitive classes meet non-ASCII letters ("K", the Kelvin sign).
    if c_received is not None:
        tokens = c_received(value, max_length)
        if tokens is not None:
            return tokens
    return python_received_tokens(value, max_length)


def python_received_tokens(value: str, max_length: int) -> list[str]:
    """`received_tokens` by the regexes: every value, and the reference of `c_received`."""
    # Both patterns need a "." and treat whitespace as outside a match, before and after: the
    # words with a "." hold every match, each on its own. Relay words repeat from mail to
    # mail, so each word's tokens are memoized.
    hosts: list[str] = []
    networks: list[str] = []
    for word in value.split():
        if "." in word:
            word_hosts, word_networks = _received_word_tokens(word, max_length)
            hosts += word_hosts
            networks += word_networks
    return hosts + networks


@memoized
def _received_word_tokens(word: str, max_length: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(host suffix tokens, IPv4 prefix tokens) of one word of a Received header."""
    hosts: list[str] = []
    for host in _HOST.findall(word):
        labels = host.lower().split(".")
        suffixes = (".".join(labels[-k:]) for k in range(2, len(labels) + 1))
        hosts += ["received:" + cap(suffix, max_length) for suffix in suffixes]
    networks: list[str] = []
    for a, b, c, d in _IPV4.findall(word):
        networks += [f"received:{a}.{b}", f"received:{a}.{b}.{c}", f"received:{a}.{b}.{c}.{d}"]
    return tuple(hosts), tuple(networks)


def header_name_tokens(names: Iterable[str]) -> list[str]:
    """`header:<name>` once per distinct, well-formed name that is not in `IGNORED_NAMES`."""
    # map() and one dict at C speed: generators cost a frame switch per header. Names repeat
    # from mail to mail: their tokens are cached, where no name is long (memo.MAX_KEY_LENGTH),
    # with no per-name check in Python.
    names = list(map(str, names))
    short = max(map(len, names), default=0) <= MAX_KEY_LENGTH
    tokens = dict.fromkeys(map(_cached_name_token if short else _header_name_token, names))
    tokens.pop(None, None)
    return list(tokens)  # type: ignore[arg-type]  # None is popped


def _header_name_token(name: str) -> str | None:
    """`header:<casefolded name>`, or None for a malformed or ignored name."""
    name = name.casefold()
    if _HEADER_NAME.fullmatch(name) and not IGNORED_NAMES.match(name):
        return "header:" + name
    return None


_cached_name_token = functools.lru_cache(maxsize=SIZE)(_header_name_token)
