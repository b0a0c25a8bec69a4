"""Plain text → tokens. The hot path: one normalization and one precompiled `findall`.

Choices (SpamBayes-like, adjusted for short messages):

- text is NFKC-normalized and casefolded, and invisible characters (Unicode's
  default-ignorable code points: zero-width spaces, soft hyphens, bidi controls, the combining
  grapheme joiner, variation selectors, tag characters) are removed: "ＦＲＥＥ" and
  "fr<U+200B>ee" read "free". A text that wrote them inside a word also gets the token
  "trick:invisible" (first): hiding a word from a filter is itself evidence. "’" reads "'".
- in a word that mixes Latin letters with look-alike letters of another script (Unicode's
  confusables: Cyrillic "а", Greek "ο"), those are read as the Latin letters ("pаypаl" reads
  "paypal"), and the text gets "trick:lookalike" (first). Words of one script stay as written.
- a word written a letter at a time — four or more single letters a-z with the same one
  separator between each two, a space, "." or "-" ("v i a g r a", "v.i.a.g.r.a") — is read
  joined ("viagra"), and the text gets "trick:split" (first): `unsplit`. Three letters ("u r
  a star") and the dotted labels of a host or address stay as written.
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
- with pairs (TokenizerConfig.bigrams, .osb), each word of one run of plain words (a URL,
  "!" run, emoji or skip marker ends the run) is also paired with each of the 1 (bigrams) or
  4 (OSB) words before it in the run, as "w1 w2" (adjacent), "w1 ~w3" (one word between),
  "w1 ~~w4", "w1 ~~~w5": one "~" per word skipped. No word holds "~", ":" or white space, so
  the forms cannot meet a word or a prefixed token. The pairs of a word come right after it,
  nearest first: each word adds at most 4 tokens.
- character n-grams (TokenizerConfig.char_ngrams; `char_ngram_tokens`) read the first N
  characters of subject and body text, normalized as words are but for Han and kana, which
  stay unspaced, with each run of white space, control characters or lone surrogates as "_".

Every regex here is linear in its input: no nested quantifiers that can backtrack, and
possessive or lookbehind-guarded starts where a failed match could be retried at each position.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence

from filterd.tokenize.confusables import LOOKALIKES
from filterd.tokenize.limits import CHAR_NGRAM, cap_all
from filterd.tokenize.links import FIND_URLS, URL_TRAILER, email_tokens, find_links, url_tokens

c_words: Callable[[str, int], list[str]] | None
c_linked_words: Callable[[str, int, int, Callable[[str, int], Sequence[str]]], list[str]] | None
c_folded: Callable[[str, Callable[[str], str]], str] | None
c_grams: Callable[[str, int, str], list[str]] | None
c_pairs: Callable[[list[str], int, int], list[str]] | None
c_split_words: Callable[[str], list[tuple[int, int]]] | None
try:  # the word and link scans and case folding in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import folded as c_folded
    from filterd._speedups import grams as c_grams
    from filterd._speedups import linked_words as c_linked_words
    from filterd._speedups import pairs as c_pairs
    from filterd._speedups import split_words as c_split_words
    from filterd._speedups import words as c_words
except ImportError:  # pragma: no cover - depends on the build
    c_words = c_linked_words = c_folded = c_grams = c_pairs = c_split_words = None

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
# Unicode's default-ignorable code points (Default_Ignorable_Code_Point, DerivedCoreProperties.txt
# of Unicode 15.1): characters a renderer shows as nothing — soft hyphen, combining grapheme
# joiner, zero-width and bidi controls, Hangul fillers, variation selectors, tag characters.
# Removed, a word written with them inside reads as the word; where they stood between two
# letters the text also gets INVISIBLE_TRICK.
_INVISIBLE_CHARS = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_UNSPACED_CHARS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002FFFF"
# runs of them (the workbench shows each as its code point: filterd.web.visible)
INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]+")
# invisible characters between two word characters: a word hidden from the filter's eyes only
# (a failed match costs one look behind per position: linear)
_HIDING = re.compile(f"(?<=\\w)[{_INVISIBLE_CHARS}]++(?=\\w)")
# The token of a text that wrote invisible characters inside a word: the trick is evidence.
INVISIBLE_TRICK = "trick:invisible"
# Letters of other scripts that look like Latin ones (Cyrillic "а", Greek "ο"), folded to them
# in a word that mixes them with Latin letters ("pаypаl" reads "paypal"), which gives the text
# LOOKALIKE_TRICK. A word of one script alone, Russian or Greek, is left as it is.
LOOKALIKE_TRICK = "trick:lookalike"
# (a superset: the look-alikes of the Basic Multilingual Plane and every letter beyond it, whose
# own list would make the scan ten times slower; folding changes the look-alikes alone)
_LOOKALIKE = re.compile(
    "[" + "".join(re.escape(c) for c in LOOKALIKES if c <= "\uffff") + "\U00010000-\U0010ffff]"
)
_UNLOOKALIKE = str.maketrans(LOOKALIKES)
# A word written a letter at a time ("v i a g r a", "v.i.a.g.r.a", "v-i-a-g-r-a"): at least
# SPLIT_MIN_LETTERS single letters a-z (no word character touches one but the separators), the
# same one separator between each two, read joined ("viagra"), which gives the text SPLIT_TRICK.
# Not a part of a link: no "/", "@", ":", "-" or "." just before it, and a run of "." or "-"
# not followed by "@", "/" or its separator and a word character ("a.b.c.d.example.com").
# Linear: a run that fails is shorter than SPLIT_MIN_LETTERS, or one of "." or "-" whose later
# letters fail at once (the separator before them); one found is passed over.
SPLIT_MIN_LETTERS = 4
_SPLIT_WORD = re.compile(
    r"(?<![\w./@:\-])[a-z]"
    rf"(?:(?: [a-z](?!\w)){{{SPLIT_MIN_LETTERS - 1},}}+"
    rf"|(?=([.\-]))(?:\1[a-z](?!\w)){{{SPLIT_MIN_LETTERS - 1},}}+(?!\1\w|[@/]))"
)
SPLIT_TRICK = "trick:split"
# The tricks a text's normalization undoes, in the order its tokens give them
TRICKS = (INVISIBLE_TRICK, LOOKALIKE_TRICK, SPLIT_TRICK)
# A word with an ASCII letter beside another letter that is not ASCII. Linear: a word is tried
# from its start alone (the look behind), and a failed try reads the word once.
_MIXED_WORD = re.compile(r"(?<!\w)\w*?(?:[a-z][^\W\x00-\x7f]|[^\W\x00-\x7f][a-z])\w*")
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]+")
# One scan decides whether any of the three fix-ups below is needed: most text needs none.
_NEEDS_FIXING = re.compile(f"[{_INVISIBLE_CHARS}{_UNSPACED_CHARS}\u2019]")
# What separates the runs of text that character n-grams read: white space, control
# characters (NUL included) and lone surrogates, none of which a token may hold.
_GRAM_BREAK_CHARS = r"\s\x00-\x1f\x7f-\x9f\ud800-\udfff"
_GRAM_RUN = re.compile(f"[^{_GRAM_BREAK_CHARS}]+")
GRAM_PREFIX = f"c{CHAR_NGRAM}:"
# The pair tokens' separators, by distance: "w1 w2", "w1 ~w3", "w1 ~~w4", "w1 ~~~w5", …
_PAIR_SEPARATORS = tuple(" " + "~" * skipped for skipped in range(16))


def normalize(text: str, spaced: bool = True) -> str:
    """NFKC, casefolded, without invisible characters, "’" as "'", look-alike letters folded
    in a word that mixes scripts, Han/kana spaced apart (unless not `spaced`)."""
    return normalized(text, spaced)[0]


def normalized(text: str, spaced: bool = True) -> tuple[str, tuple[str, ...]]:
    """`normalize(text, spaced)`, and the tricks it undid: INVISIBLE_TRICK where invisible
    characters stood inside a word, LOOKALIKE_TRICK where a word mixed scripts.

    >>> normalized("Fr\u034fee m\U000e0041oney \u2764\ufe0f")
    ('free money \u2764', ('trick:invisible',))
    >>> normalized("P\u0430yp\u0430l \u043f\u0440\u0438\u0432\u0435\u0442 caf\u00e9")
    ('paypal \u043f\u0440\u0438\u0432\u0435\u0442 caf\u00e9', ('trick:lookalike',))
    >>> normalized("Free \u2764\ufe0f \u200b")
    ('free \u2764 ', ())
    """
    if text.isascii():  # NFKC is the identity on ASCII, and casefold is lower
        return text.lower(), ()
    # Fix-ups come after NFKC, which maps some compatibility characters into Han and kana.
    # filterd._speedups, where built, normalizes only the non-ASCII runs of the text (bodies
    # hold a few among thousands of ASCII characters): the same text.
    text = nfkc_casefold(text) if c_folded is None else c_folded(text, nfkc_casefold)
    tricks: tuple[str, ...] = ()
    if _NEEDS_FIXING.search(text) is not None:
        if _HIDING.search(text) is not None:
            tricks += (INVISIBLE_TRICK,)
        text = INVISIBLE.sub("", text).replace("\u2019", "'")
        if spaced:
            text = _UNSPACED.sub(_spaced, text)
    if _LOOKALIKE.search(text) is not None:
        folded = _MIXED_WORD.sub(_unlookalike, text)
        if folded != text:
            text, tricks = folded, (*tricks, LOOKALIKE_TRICK)
    return text, tricks


def unsplit(text: str) -> tuple[str, bool]:
    """(`text` with each word written a letter at a time joined, whether there was one): the
    runs of `split_words`, normalized text's.

    >>> unsplit("buy v i a g r a or c.i.a.l.i.s, u r a star")
    ('buy viagra or cialis, u r a star', True)
    """
    spans = split_words(text)
    if not spans:
        return text, False
    pieces: list[str] = []
    end = 0
    for start, stop in spans:
        pieces += (text[end:start], text[start:stop:2])  # the letters, without the separators
        end = stop
    pieces.append(text[end:])
    return "".join(pieces), True


def split_words(text: str) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` written a letter at a time (`_SPLIT_WORD`): by
    filterd._speedups where built (a scan of every text, which a regex would make slower by
    half), else `python_split_words`."""
    return (python_split_words if c_split_words is None else c_split_words)(text)


def python_split_words(text: str) -> list[tuple[int, int]]:
    """`split_words` by the regex: the reference of `c_split_words`."""
    return [m.span() for m in _SPLIT_WORD.finditer(text)]


def _unlookalike(word: re.Match[str]) -> str:
    return word.group().translate(_UNLOOKALIKE)


def nfkc_casefold(text: str) -> str:
    """NFKC, then casefolded: the reference of `c_folded`."""
    return unicodedata.normalize("NFKC", text).casefold()


def _spaced(run: re.Match[str]) -> str:
    return " " + " ".join(run.group()) + " "  # faster than a per-character substitution


def text_tokens(
    text: str, max_token_length: int = 40, pairs: int = 0, enough: int = sys.maxsize
) -> list[str]:
    """Tokens of plain text, in order, with repeats. Never raises on any str.

    `pairs`: how many following words each word is paired with (`with_pairs`): 0 none, 1
    bigrams, 4 orthogonal sparse bigrams (`TokenizerConfig.pairs`). The list may end early,
    but only once it holds more than `enough` tokens: a caller that keeps at most `enough` of
    them gets the same ones (and knows some were left out).
    """
    if enough < 0:
        return []
    if len(text) > CHUNK and not pairs:
        # Piece by piece, cut at white space, which no token, link or normalization spans: the
        # same tokens, and a text whose NFKC form is many times longer (U+FDFA is 18
        # characters) is normalized only as far as the tokens it can give are wanted.
        out: list[str] = []
        found: set[str] = set()
        for piece in _pieces(text, CHUNK):
            tokens, tricks = _tokens(piece, max_token_length, False, enough - len(out))
            out += tokens
            found.update(tricks)
            if len(out) > enough:
                break
        return [*(t for t in TRICKS if t in found), *out]
    tokens, tricks = _tokens(text, max_token_length, pairs, enough)
    # first, so that a caller keeping the first `enough` tokens keeps them
    return [*tricks, *tokens] if tricks else tokens


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


def _tokens(
    text: str, max_token_length: int, pairs: int, enough: int
) -> tuple[list[str], tuple[str, ...]]:
    """The tokens of `text` and the tricks its normalization undid (`normalized`), and
    SPLIT_TRICK where words written a letter at a time were joined (`unsplit`)."""
    text, tricks = normalized(text)
    text, split = unsplit(text)
    if split:
        tricks = (*tricks, SPLIT_TRICK)
    if "@" in text or "://" in text or "www." in text:
        # Scanned by filterd._speedups where built: a text with links in Python is a loop of
        # slices and calls per link (mail headers and bodies are full of addresses).
        if c_linked_words is not None and not pairs:
            tokens = c_linked_words(text, max_token_length, enough, url_tokens)
        else:
            tokens = linked_tokens(text, max_token_length, pairs, enough)
    else:
        tokens = plain_tokens(text, max_token_length, pairs, enough)
    return tokens, tricks


def linked_tokens(
    text: str, max_token_length: int, pairs: int = 0, enough: int = sys.maxsize
) -> list[str]:
    """Tokens of normalized text and of its links (URLs and addresses), in order: the
    reference of `c_linked_words` (see text_tokens for `pairs` and `enough`)."""
    links = find_links(text) if "@" in text else FIND_URLS.finditer(text)
    return _linked_tokens(text, links, max_token_length, pairs, enough)


def plain_tokens(
    text: str, max_token_length: int, pairs: int = 0, enough: int = sys.maxsize
) -> list[str]:
    """Tokens of normalized text, reading any URL or address in it as words; with `pairs`,
    the word pairs too (`with_pairs`; see text_tokens for `enough`)."""
    # Scanned by filterd._speedups where built: the same tokens as the regexes, in less time.
    if c_words is not None:
        tokens = c_words(text, max_token_length)
    else:
        tokens = regex_tokens(text, max_token_length)
    return with_pairs(tokens, pairs, enough) if pairs else tokens


def regex_tokens(text: str, max_token_length: int) -> list[str]:
    """The words of normalized text by the regexes: the reference of `c_words`."""
    pattern = _ASCII_TOKEN if text.isascii() else _TOKEN
    return cap_all(pattern.findall(text), max_token_length)


def _linked_tokens(
    text: str, links: Iterator[re.Match[str]], max_token_length: int, pairs: int, enough: int
) -> list[str]:
    """Tokens of normalized text and of `links`, its URL (and address) matches, in order; see
    text_tokens for `enough` (a list of 3,000 URLs was the slowest mail of the corpus)."""
    out: list[str] = []
    start = 0
    for m in links:
        if len(out) > enough:
            return out
        out += plain_tokens(text[start : m.start()], max_token_length, pairs, enough - len(out))
        url = m.group("url")
        if url is not None:
            url = url.rstrip(URL_TRAILER)
            out += url_tokens(url, max_token_length)
            start = m.start() + len(url)  # the stripped trailer is text again ("!!")
        else:
            out += email_tokens(m.group("local"), m.group("domain"), max_token_length)
            start = m.end()
    out += plain_tokens(text[start:], max_token_length, pairs, enough - len(out))
    return out


def with_pairs(tokens: list[str], pairs: int = 1, enough: int = sys.maxsize) -> list[str]:
    """`tokens` with, after each plain word, its pairs with each of the `pairs` plain words
    before it, nearest first: "w1 w2", "w1 ~w3", "w1 ~~w4", … (one "~" per word skipped).

    "!" runs, emoji and skip markers (the only tokens here with a ":") end a run of plain
    words: no pair spans them. At most `pairs` tokens are added per word, and the list ends
    early once it holds more than `enough` (see text_tokens).

    >>> with_pairs(["free", "cash", "now", "!!", "call"], 4)
    ['free', 'cash', 'free cash', 'now', 'cash now', 'free ~now', '!!', 'call']
    """
    if c_pairs is not None and 1 <= pairs < len(_PAIR_SEPARATORS):
        return c_pairs(tokens, pairs, enough)
    return python_with_pairs(tokens, pairs, enough)


def python_with_pairs(tokens: list[str], pairs: int = 1, enough: int = sys.maxsize) -> list[str]:
    """`with_pairs` in Python: the reference of the C loop `c_pairs`."""
    out: list[str] = []
    start = 0
    for i, token in enumerate(tokens):
        if ":" in token or not (token[0].isalnum() or token[0] in _PAIRABLE_START):
            if i > start:
                _add_run(out, tokens[start:i], pairs, enough)
                if len(out) > enough:
                    return out
            out.append(token)
            start = i + 1
    if start < len(tokens):
        _add_run(out, tokens[start:] if start else tokens, pairs, enough)
    return out


def _add_run(out: list[str], run: list[str], pairs: int, enough: int) -> None:
    """Add to `out` the plain words of `run`, each followed by its pairs; only as many words
    as it takes to pass `enough` tokens. The pairs of every word with all `pairs` words
    before it are built by distance, one C-level map each, into every (pairs + 1)-th slot."""
    # past the first `pairs` words, each word adds pairs + 1 tokens
    n = min(len(run), pairs + max(enough - len(out) + 1, 1) // (pairs + 1) + 1)
    head = min(n, pairs)
    for j in range(head):  # the first words have fewer words before them
        word = run[j]
        out.append(word)
        for d in range(1, j + 1):
            out.append(_PAIR_SEPARATORS[d - 1].join((run[j - d], word)))
    if n > pairs:
        rest = run[pairs:n]
        step = pairs + 1
        block = [""] * (len(rest) * step)
        block[::step] = rest
        for d in range(1, step):
            block[d::step] = map(_PAIR_SEPARATORS[d - 1].join, zip(run[pairs - d : n - d], rest))
        out += block


def char_ngram_tokens(texts: Sequence[str], chars: int) -> list[str]:
    """`c4:<abcd>` for each distinct character 4-gram of the first `chars` characters of
    `texts` (read one after another), in order of first appearance: at most `chars - 3`.

    The text is normalized as words are (NFKC, casefolded, without invisible characters), but
    Han and kana stay unspaced, and each run of white space, control characters or lone
    surrogates (none of which a token may hold) reads as one "_", as does the break between
    two texts; none leads or trails. Only a prefix of each text is read, each twice as long
    as the last until it holds enough characters: linear in the prefix needed, and bounded
    by `chars` unless the text is mostly breaks.
    """
    pieces: list[str] = []
    room = chars + 1  # characters still wanted, counting a " " after each piece
    for text in texts:
        piece = _first_chars(text, room)
        if piece:
            pieces.append(piece)
            room -= len(piece) + 1
            if room <= 0:
                break
    # NFKC may bring white space (U+FDFA is 18 characters, 3 of them spaces) or take some away
    text = _joined_runs(normalize(" ".join(pieces), spaced=False), "_")[:chars]
    if c_grams is not None:
        return c_grams(text, CHAR_NGRAM, GRAM_PREFIX)
    return python_grams(text, CHAR_NGRAM, GRAM_PREFIX)


def python_grams(text: str, n: int, prefix: str) -> list[str]:
    """`prefix` + each distinct `n`-character substring of `text`, in order of first appearance
    (the reference of the C loop `grams`).

    >>> python_grams("abcabc", 3, "c3:")
    ['c3:abc', 'c3:bca', 'c3:cab']
    """
    grams = dict.fromkeys(text[i : i + n] for i in range(len(text) - n + 1))
    return [prefix + gram for gram in grams]


def _first_chars(text: str, size: int) -> str:
    """The first `size` characters of `text` with each run of breaks (_GRAM_BREAK_CHARS) as
    one " ", none leading or trailing: read from prefixes of `size`, 2 × `size`, …
    characters (a prefix's runs begin the whole text's)."""
    length = size
    while True:
        piece = _joined_runs(text[:length], " ")
        if len(piece) >= size or length >= len(text):
            return piece[:size]
        length *= 2


def _joined_runs(text: str, separator: str) -> str:
    """The runs of `text` between breaks (_GRAM_BREAK_CHARS), joined by `separator`, a
    printable character."""
    joined = separator.join(text.split())  # white space at C speed
    if joined.isprintable():  # else control characters, surrogates, or Cf, Co or Cn ones
        return joined
    return separator.join(_GRAM_RUN.findall(text))
