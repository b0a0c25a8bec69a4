"""What a spammer does to the words of a message to slip past a Bayesian filter (pure: no I/O).

Each attack rewrites the words of a message as the documented evasions do (Lowd & Meek's good
words aside, which need the filter's vocabulary: `with_good_words`): letters joined by an
invisible character, by spaces, look-alike letters from other scripts, leetspeak. `attacked`
applies one to a message's text: every word of plain text; in an e-mail, every word of each
text part outside HTML tags and entities, the headers and MIME structure left as they were.

>>> ATTACKS["cgj"]("free cash")
'f\\u034fr\\u034fe\\u034fe c\\u034fa\\u034fs\\u034fh'
>>> attacked("Win <b>cash</b> now", "text", ATTACKS["spaced"])
'W i n <b>c a s h</b> n o w'
"""

from __future__ import annotations

import email
import re
from collections.abc import Callable, Sequence
from email.charset import QP, Charset
from email.policy import compat32
from html import escape

Attack = Callable[[str], str]

# a word an attacker rewrites: three letters or more (shorter ones carry little); a tag skipped
_WORD_OR_TAG = re.compile(r"(<[^<>]*+>|&#?\w{1,10};)|([^\W\d_]{3,})")
_UTF8_QP = Charset("utf-8")
_UTF8_QP.body_encoding = QP
_LEET = str.maketrans("aeiostAEIOST", "4310574310$7")
# Latin letters and a look-alike of each from Cyrillic or Greek (Unicode's confusables)
_HOMOGLYPHS = str.maketrans("aceopxyABCEHKMOPTXi", "асеорхуАВСЕНКМОРТХі")


def _joined(separator: str) -> Attack:
    return lambda text: _words(text, separator.join)


def _words(text: str, rewrite: Callable[[str], str]) -> str:
    return _WORD_OR_TAG.sub(lambda m: m.group(1) or rewrite(m.group(2)), text)


ATTACKS: dict[str, Attack] = {
    "cgj": _joined("\u034f"),  # combining grapheme joiner between letters
    "tags": _joined("\U000e0041"),  # a Unicode tag character between letters
    "zwsp": _joined("\u200b"),  # zero-width space between letters
    "variation": _joined("\ufe0f"),  # a variation selector between letters
    "spaced": _joined(" "),  # v i a g r a
    "dotted": _joined("."),  # v.i.a.g.r.a
    "leet": lambda text: _words(text, lambda w: w.translate(_LEET)),
    "homoglyphs": lambda text: _words(text, lambda w: w.translate(_HOMOGLYPHS)),
}


def attacked(text: str, fmt: str, attack: Attack) -> str:
    """`text` with `attack` applied to its words: all of plain text; of an e-mail, the decoded
    text of each text part, written back as UTF-8 quoted-printable (`as_sent`), its headers,
    MIME structure and other parts as they were."""
    if fmt != "email":
        return attack(text)
    return as_sent(text, attack)


def as_sent(mail: str, rewrite: Attack = str, html: bool = False) -> str:
    """The e-mail `mail` with the decoded text of each text part through `rewrite` and written
    back as UTF-8 quoted-printable; with `html`, each text/plain part first made text/html
    (its text escaped in a <pre>). An attack is measured against the mail `as_sent` without
    one, so that the new encoding's own tokens (charset, transfer encoding, type) weigh on
    both."""
    message = email.message_from_string(mail, policy=compat32)
    for part in message.walk():
        if part.is_multipart() or part.get_content_maintype() != "text":
            continue
        raw = part.get_payload(decode=True)
        if not isinstance(raw, bytes):
            continue
        try:
            body = raw.decode(part.get_content_charset() or "us-ascii", errors="replace")
        except LookupError:  # a charset Python does not know
            body = raw.decode("latin-1")
        if html and part.get_content_subtype() == "plain":
            body = f"<html><body><pre>{escape(body)}</pre></body></html>"
            part.set_type("text/html")
        del part["Content-Transfer-Encoding"]
        part.set_payload(rewrite(body), _UTF8_QP)
    return message.as_string()


# How a spammer hides words in HTML (`with_hidden_words`): an element's opening and closing
HIDINGS = {
    "display:none": ('<div style="display:none">', "</div>"),
    "font-size:0": ('<span style="font-size:0px">', "</span>"),
    "white on white": ('<font color="#ffffff">', "</font>"),
}


def with_hidden_words(mail: str, words: Sequence[str], hiding: str) -> str:
    """The e-mail `mail` as HTML (`as_sent` with `html`) with `words` in an element that
    `HIDINGS[hiding]` hides, at the end of each text part's body."""
    opening, closing = HIDINGS[hiding]
    hidden = f"{opening}{' '.join(words)}{closing}"

    def hide(body: str) -> str:
        end = body.rfind("</body>")
        return f"{body}{hidden}" if end < 0 else f"{body[:end]}{hidden}{body[end:]}"

    return as_sent(mail, hide, html=True)


def with_good_words(text: str, fmt: str, words: Sequence[str]) -> str:
    """`text` with `words` added at its end, visible (Lowd & Meek's good-word attack: words
    the filter has seen in ham); an e-mail's at the end of each of its text parts."""
    added = " ".join(words)
    if fmt != "email":
        return f"{text} {added}"
    return as_sent(text, lambda body: f"{body}\n{added}\n")
