"""What senders wrote, shown as written: invisible characters made visible.

A bidi control reorders the text after it (`support@\\u202emoc.knab-ruoy` shows as
`support@your-bank.com`), a zero-width or format character hides a difference, a control
character or a line break hides where a field ends. The workbench renders every field a sender
or a record's writer controls through `visible` (the Jinja filter of the same name): each such
character becomes a marker naming its code point, `⟨U+202E⟩` in a `<span class="ctl">` whose
title is the character's name, and the rest is escaped as autoescaping would.

Made visible: format characters (Unicode category Cf, which holds every bidi control: U+061C,
U+200E/F, U+202A–202E, U+2066–2069), control characters (Cc; tab, line feed and carriage return
stay in `multiline` text such as an excerpt), line and paragraph separators (Zl, Zp) and lone
surrogates (Cs, which cannot be encoded in a page).
"""

from __future__ import annotations

import unicodedata

from markupsafe import Markup, escape

HIDDEN = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})
LINE_BREAKS = frozenset("\t\n\r")


def marker(ch: str) -> str:
    """The visible stand-in of `ch`.

    >>> marker("\\u202e"), marker("\\x00")
    ('⟨U+202E⟩', '⟨U+0000⟩')
    """
    return f"⟨U+{ord(ch):04X}⟩"


def hidden(ch: str, multiline: bool) -> bool:
    return unicodedata.category(ch) in HIDDEN and not (multiline and ch in LINE_BREAKS)


def visible(text: object, multiline: bool = False) -> Markup:
    """`text` as HTML, escaped, with each invisible character as a marked-up `marker`; None
    is empty.

    >>> visible("support@\\u202emoc.knab-ruoy <b>")  # doctest: +NORMALIZE_WHITESPACE
    Markup('support@<span class="ctl"
            title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>moc.knab-ruoy &lt;b&gt;')
    >>> visible("a\\nb", multiline=True), visible(None)
    (Markup('a\\nb'), Markup(''))
    """
    if text is None:
        return Markup("")
    value = str(text)
    if value.isprintable():  # no category but letters, marks, numbers, punctuation, symbols, " "
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
    if value.isprintable():
        return value
    return "".join(marker(ch) if hidden(ch, False) else ch for ch in value)
