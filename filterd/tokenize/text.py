"""Plain text → tokens. The hot path: one normalization and one precompiled `findall`.

Choices (SpamBayes-like, adjusted for short messages):

- text is NFKC-normalized and casefolded, and invisible characters (zero-width spaces,
  soft hyphens, bidi controls) are removed: "ＦＲＥＥ" and "fr<U+200B>ee" read "free".
  "’" reads "'".
- a word is a run of letters, digits and "_", with inner "'" or "-" ("don't", "x-ray",
  "0800-123-456"). Single-character words are kept: in SMS and chat "u", "2" and "4" carry
  signal. Han and kana characters are one token each, as those scripts do not space words.
- numbers keep inner "." and ",", a trailing "%" or currency sign, and a leading currency
  sign: "3.14", "1,000", "50%", "100€", "$100", "£5.99", "$100k", "100k".
- "!" runs are kept as "!", "!!" or "!!!" (three or more); emoji are one token each; other
  punctuation is dropped.
- URLs ("http(s)://", "ftp://", "www.") and e-mail addresses become the tokens of
  `links.py`; bare domains without "www." are read as words ("example", "com").
- words longer than the length limit become `skip:<first char>:<len // 10 * 10>`.
- with bigrams, each pair of adjacent words of one run of text (not across a URL, "!" run
  or skip marker) also gives "w1 w2", placed after the pair's second word.

Every regex here is linear in its input: no nested quantifiers that can backtrack, and
possessive or lookbehind-guarded starts where a failed match could be retried at each position.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterator

from filterd.tokenize.limits import cap_all
from filterd.tokenize.links import FIND_URLS, URL_TRAILER, email_tokens, find_links, url_tokens

c_words: Callable[[str, int], list[str]] | None
try:  # the word scan in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import words as c_words
except ImportError:  # pragma: no cover - depends on the build
    c_words = None

# Text longer than this is tokenized piece by piece (`text_tokens`)
CHUNK = 1 << 16
_CURRENCY = "$£€¥₹₩₽¢"
_PAIRABLE_START = "_" + _CURRENCY

# A word, then a number's tail ("3.14", "50%", "100€") or a word's inner "'"/"-"; a currency
# sign before a number ("$100"); a "!" run; an emoji. In plain form (tests/tokenize/test_text.py
# checks that these patterns give its matches):
#     \w+TAIL|[cur](?=\d)\w+TAIL|!{1,3}(?!!)|[emoji]
# written so that Python's engine runs it fast:
# - one character class comes first and lookbehinds pick the branch: the engine then skips
#   to the next possible start instead of trying every branch at every position (a faster
#   findall);
# - quantifiers are possessive where nothing after them can fail, so backtracking into them
#   could never change a match (faster again);
# - a tail starts with one character class, so a word that ends at a space fails it at once.
_TAIL = r"(?:[-'.,%{cur}](?:(?<=[-'])\w++|(?<=\d[.,])\d\w*+|(?<=\d[%{cur}])))*+"
_WORD = (
    r"[\w{cur}!{emoji}](?:(?<=\w)\w*+{tail}|(?<=[{cur}])(?=\d)\w++{tail}|(?<=!)!{{0,2}}(?!!){more})"
)
_EMOJI = r"\u2600-\u27bf\U0001F000-\U0001F3FA\U0001F400-\U0001FAFF"
# ASCII text (most of it) takes a leaner pattern: ASCII-only classes are faster to test.
_ASCII_TOKEN = re.compile(
    _WORD.format(tail=_TAIL.format(cur=r"\$"), cur=r"\$", emoji="", more=""), re.ASCII
)
_TOKEN = re.compile(
    _WORD.format(
        tail=_TAIL.format(cur=_CURRENCY), cur=_CURRENCY, emoji=_EMOJI, more=f"|(?<=[{_EMOJI}])"
    )
)
_INVISIBLE_CHARS = r"\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_UNSPACED_CHARS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002FFFF"
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]+")
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]+")
# One scan decides whether any of the three fix-ups below is needed: most text needs none.
_NEEDS_FIXING = re.compile(f"[{_INVISIBLE_CHARS}{_UNSPACED_CHARS}\u2019]")


def normalize(text: str) -> str:
    """NFKC, casefolded, without invisible characters, "’" as "'", Han/kana spaced apart."""
    if text.isascii():  # NFKC is the identity on ASCII, and casefold is lower
        return text.lower()
    # Fix-ups come after NFKC, which maps some compatibility characters into Han and kana.
    text = unicodedata.normalize("NFKC", text).casefold()
    if _NEEDS_FIXING.search(text) is not None:
        text = _INVISIBLE.sub("", text).replace("\u2019", "'")
        text = _UNSPACED.sub(_spaced, text)
    return text


def _spaced(run: re.Match[str]) -> str:
    return " " + " ".join(run.group()) + " "  # faster than a per-character substitution


def text_tokens(
    text: str, max_token_length: int = 40, bigrams: bool = False, enough: int = sys.maxsize
) -> list[str]:
    """Tokens of plain text, in order, with repeats. Never raises on any str.

    The list may end early, but only once it holds more than `enough` tokens: a caller that
    keeps at most `enough` of them gets the same ones (and knows some were left out).
    """
    if enough < 0:
        return []
    if len(text) > CHUNK and not bigrams:
        # Piece by piece, cut at white space, which no token, link or normalization spans: the
        # same tokens, and a text whose NFKC form is many times longer (U+FDFA is 18
        # characters) is normalized only as far as the tokens it can give are wanted.
        out: list[str] = []
        for piece in _pieces(text, CHUNK):
            out += _tokens(piece, max_token_length, False, enough - len(out))
            if len(out) > enough:
                break
        return out
    return _tokens(text, max_token_length, bigrams, enough)


def _pieces(text: str, size: int) -> Iterator[str]:
    """`text` in pieces of at most `size` characters, each cut after a white-space character
    in its second half where there is one (else at `size`: a run that long is no word)."""
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(c, start + size // 2, end) for c in " \n\t\r")
        end = cut + 1 if cut >= 0 else end
        yield text[start:end]
        start = end
    yield text[start:]


def _tokens(text: str, max_token_length: int, bigrams: bool, enough: int) -> list[str]:
    text = normalize(text)
    if "@" in text:
        return _linked_tokens(text, find_links(text), max_token_length, bigrams, enough)
    if "://" in text or "www." in text:
        return _linked_tokens(text, FIND_URLS.finditer(text), max_token_length, bigrams, enough)
    return plain_tokens(text, max_token_length, bigrams)


def plain_tokens(text: str, max_token_length: int, bigrams: bool = False) -> list[str]:
    """Tokens of normalized text, reading any URL or address in it as words."""
    # Scanned by filterd._speedups where built: the same tokens as the regexes, in less time.
    if c_words is not None:
        tokens = c_words(text, max_token_length)
    else:
        tokens = regex_tokens(text, max_token_length)
    return with_bigrams(tokens) if bigrams else tokens


def regex_tokens(text: str, max_token_length: int) -> list[str]:
    """The words of normalized text by the regexes: the reference of `c_words`."""
    pattern = _ASCII_TOKEN if text.isascii() else _TOKEN
    return cap_all(pattern.findall(text), max_token_length)


def _linked_tokens(
    text: str, links: Iterator[re.Match[str]], max_token_length: int, bigrams: bool, enough: int
) -> list[str]:
    """Tokens of normalized text and of `links`, its URL (and address) matches, in order; see
    text_tokens for `enough` (a list of 3,000 URLs was the slowest mail of the corpus)."""
    out: list[str] = []
    start = 0
    for m in links:
        if len(out) > enough:
            return out
        out += plain_tokens(text[start : m.start()], max_token_length, bigrams)
        url = m.group("url")
        if url is not None:
            url = url.rstrip(URL_TRAILER)
            out += url_tokens(url, max_token_length)
            start = m.start() + len(url)  # the stripped trailer is text again ("!!")
        else:
            out += email_tokens(m.group("local"), m.group("domain"), max_token_length)
            start = m.end()
    out += plain_tokens(text[start:], max_token_length, bigrams)
    return out


def with_bigrams(tokens: list[str]) -> list[str]:
    """`tokens` with "w1 w2" after each adjacent pair of plain words."""
    out: list[str] = []
    previous = None
    for token in tokens:
        out.append(token)
        # "!" runs, emoji and skip markers (the only tokens here with a ":") break a pair
        if ":" in token or not (token[0].isalnum() or token[0] in _PAIRABLE_START):
            previous = None
            continue
        if previous is not None:
            out.append(previous + " " + token)
        previous = token
    return out
