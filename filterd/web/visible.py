"""What senders wrote, shown as written: invisible characters made visible.

A bidi control reorders the text after it (`support@\\u202emoc.knab-ruoy` shows as
`support@your-bank.com`), a zero-width or format character hides a difference, a control
character or a line break hides where a field ends. The workbench renders every field a sender
or a record's writer controls through `visible` (the Jinja filter of the same name): each such
character becomes a marker naming its code point, `⟨U+202E⟩` in a `<span class="ctl">` whose
title is the character's name, and the rest is escaped as autoescaping would.

Made visible: format characters (Unicode category Cf, which holds every bidi control: U+061C,
U+200E/F, U+202A–202E, U+2066–2069), control characters (Cc; tab, line feed and carriage return
stay in `multiline` text such as an excerpt), line and paragraph separators (Zl, Zp), lone
surrogates (Cs, which cannot be encoded in a page), and the other characters the tokenizer
removes as invisible (`filterd.tokenize.text.INVISIBLE`, Unicode's default-ignorable code
points: the combining grapheme joiner, variation selectors, Hangul fillers, tag characters).
"""

from __future__ import annotations

import unicodedata

from markupsafe import Markup, escape

from filterd.tokenize.text import INVISIBLE

HIDDEN = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})
LINE_BREAKS = frozenset("\t\n\r")


def marker(ch: str) -> str:
    """The visible stand-in of `ch`.

    >>> marker("\\u202e"), marker("\\x00")
    ('⟨U+202E⟩', '⟨U+0000⟩')
    """
    return f"⟨U+{ord(ch):04X}⟩"


def hidden(ch: str, multiline: bool) -> bool:
    if multiline and ch in LINE_BREAKS:
        return False
    return unicodedata.category(ch) in HIDDEN or INVISIBLE.match(ch) is not None


def _shown_as_is(value: str) -> bool:
    """No character of `value` is hidden: printable (letters, marks, numbers, punctuation,
    symbols, " ") and none of them invisible."""
    return value.isprintable() and INVISIBLE.search(value) is None


def visible(text: object, multiline: bool = False) -> Markup:
    """`text` as HTML, escaped, with each invisible character as a marked-up `marker`; None
    is empty.

    >>> visible("support@\\u202emoc.knab-ruoy <b>")  # doctest: +NORMALIZE_WHITESPACE
    Markup('support@<span class="ctl"
            title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>moc.knab-ruoy &lt;b&gt;')
    >>> visible("v\\u034fiagra")  # doctest: +NORMALIZE_WHITESPACE
    Markup('v<span class="ctl" title="COMBINING GRAPHEME JOINER">⟨U+034F⟩</span>iagra')
    >>> visible("a\\nb", multiline=True), visible(None)
    (Markup('a\\nb'), Markup(''))
    """
    if text is None:
        return Markup("")
    value = str(text)
    if _shown_as_is(value):
        return escape(value)
    out: list[str] = []
    start = 0  # of the run of shown characters not yet escaped
    for i, ch in enumerate(value):
        if hidden(ch, multiline):
            name = unicodedata.name(ch, "")
            title = f' title="{name}"' if name else ""
            out += [escape(value[start:i]), f'<span class="ctl"{title}>{marker(ch)}</span>']
            start = i + 1
    out.append(escape(value[start:]))
    return Markup("".join(out))


def shown(text: object) -> str:
    """`text` with each invisible character as its `marker`, as plain text (for a page's
    title, where no markup is read), escaped by the template.

    >>> shown("a\\u2066b"), shown(None)
    ('a⟨U+2066⟩b', '')
    """
    if text is None:
        return ""
    value = str(text)
    if _shown_as_is(value):
        return value
    return "".join(marker(ch) if hidden(ch, False) else ch for ch in value)
