"""The text of an HTML mail that a reader does not see.

A spammer hides a paragraph of ham words where the filter reads it and the reader does not:
in an element with `display:none`, `visibility:hidden`, `opacity:0`, the `hidden` attribute, a
font of two pixels or less, a box of no height with its overflow hidden, far off the screen, or
in a colour close to its background (the classic tricks SpamAssassin's HTML rules name).
`split_hidden` walks the tags once, with the stack of open elements, and tells that text apart:
the tokenizer reads it in its own namespace (`hidden:<word>`), so the model learns what hidden
words mean instead of taking them for the reader's.

A text colour set (`color`, `<font color>`, `<body text>`) is compared with the background in
force: the element's own (`bgcolor`, `background-color`, `background`), else its nearest
ancestor's, else white; not where a background is an image or a colour not understood, nor
where no colour was set (the reader's default, which a page may style). Colours are CSS hex
(#rgb, #rrggbb), `rgb(r, g, b)` and the basic colour names.

The walk is linear in the markup: each tag is matched once, its attributes once (a tag cannot
hold "<"), and each open element is pushed once and popped once; the stack is at most
`MAX_DEPTH` deep (an element deeper takes the place of the deepest, which it closes).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

c_hidden_spans: Callable[[str], list[tuple[int, int]]] | None
try:  # the walk in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import hidden_spans as c_hidden_spans
except ImportError:  # pragma: no cover - depends on the build
    c_hidden_spans = None

MAX_DEPTH = 256
# Where an element has no background of its own and none of its ancestors has one: the page's
WHITE = (255, 255, 255)
# Two colours closer than this (the sum of the three channels' differences, of 765) are one
CLOSE = 48
TINY_PX = 2.0  # a font this small or smaller is not read
OFF_SCREEN_PX = -500.0  # a position or indent this far left or up is off the screen

_TAG = re.compile(r"<(/?)([a-z][a-z0-9]*+)([^<>]*+)>")
_ATTRIBUTE = re.compile(
    r"""([a-z_:][-a-z0-9_:.]*+)(?:\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'=<>`]++)))?"""
)
# a declaration starts where a run of name characters does (a failed match is not retried
# inside the run: linear)
_DECLARATION = re.compile(r"(?<![a-z-])([a-z-]++)\s*+:\s*+([^;]*+)")
_LENGTH = re.compile(r"(-?(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++))\s*+([a-z%]*+)")
_HEX = re.compile(r"#([0-9a-f]{3}|[0-9a-f]{6})\b")
_RGB = re.compile(r"rgba?\(\s*+([0-9]{1,3})\s*+,\s*+([0-9]{1,3})\s*+,\s*+([0-9]{1,3})")
# Elements that are never closed: no content to hide
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# Only a tag with one of these can change what is seen: others are pushed as they are
_CUES = ("style", "hidden", "color", "text", "background")
_NAMED = {
    "white": WHITE,
    "black": (0, 0, 0),
    "silver": (192, 192, 192),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "red": (255, 0, 0),
    "maroon": (128, 0, 0),
    "yellow": (255, 255, 0),
    "olive": (128, 128, 0),
    "lime": (0, 255, 0),
    "green": (0, 128, 0),
    "aqua": (0, 255, 255),
    "teal": (0, 128, 128),
    "blue": (0, 0, 255),
    "navy": (0, 0, 128),
    "fuchsia": (255, 0, 255),
    "purple": (128, 0, 128),
    "snow": (255, 250, 250),
    "ivory": (255, 255, 240),
    "whitesmoke": (245, 245, 245),
    "ghostwhite": (248, 248, 255),
}

Colour = tuple[int, int, int]


@dataclass(frozen=True)
class _Seen:
    """What an open element's content looks like: hidden whatever its colour, its text
    colour, its background."""

    hidden: bool
    colour: Colour | None  # None: never set (the reader's default, which a page may style)
    background: Colour | None  # None: an image, or a colour not understood


_PAGE = _Seen(False, None, WHITE)


def colour(value: str) -> Colour | None:
    """A CSS colour, lowercase, as (r, g, b), or None for one not understood.

    >>> colour("#fff"), colour("#fefefe"), colour("rgb(0, 10, 300)"), colour("white"), colour("x")
    ((255, 255, 255), (254, 254, 254), (0, 10, 255), (255, 255, 255), None)
    """
    value = value.strip()
    m = _HEX.match(value)
    if m is not None:
        digits = m.group(1)
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16))
    m = _RGB.match(value)
    if m is not None:
        r, g, b = (min(255, int(v)) for v in m.groups())
        return (r, g, b)
    return _NAMED.get(value.split()[0] if value else value)


def _length(value: str) -> tuple[float, str] | None:
    m = _LENGTH.match(value.strip())
    return (float(m.group(1)), m.group(2)) if m is not None else None


def _number(value: str | None) -> float:
    """A length's number; 1 for none, or for a value that is not a length."""
    size = None if value is None else _length(value)
    return 1.0 if size is None else size[0]


def _tiny(value: str) -> bool:
    """A font size no one reads: 0, ≤ 2 px or pt, ≤ 0.2 em or rem, ≤ 20 %."""
    size = _length(value)
    if size is None:
        return False
    number, unit = size
    if unit in ("", "px", "pt"):
        return number <= TINY_PX
    if unit in ("em", "rem"):
        return number <= 0.2
    return unit == "%" and number <= 20


def _off_screen(value: str) -> bool:
    size = _length(value)
    return size is not None and size[1] in ("px", "pt", "") and size[0] <= OFF_SCREEN_PX


@lru_cache(maxsize=4096)  # a mail repeats its tags: each (tag, parent) read once
def _seen(attributes: str, parent: _Seen) -> _Seen:
    """What an element with `attributes` (its tag's text after the name) shows of its content,
    inside `parent`."""
    values: dict[str, str] = {}
    for m in _ATTRIBUTE.finditer(attributes):
        values.setdefault(m.group(1), m.group(2) or m.group(3) or m.group(4) or "")
    hidden = parent.hidden or "hidden" in values
    text, background = parent.colour, parent.background
    for name in ("color", "text"):  # <font color=…>, <body text=…>
        if name in values:
            text = colour(values[name]) or text
    if "background" in values:  # an image: the text may show on it, whatever its colour
        background = None
    if "bgcolor" in values:
        background = colour(values["bgcolor"])
    style = {m.group(1): m.group(2).strip() for m in _DECLARATION.finditer(values.get("style", ""))}
    if style:
        hidden = hidden or (
            style.get("display", "").startswith("none")
            or style.get("visibility", "").startswith(("hidden", "collapse"))
            or _number(style.get("opacity")) <= 0.1
            or _tiny(style.get("font-size", "1em"))
            or any(_off_screen(style.get(p, "0")) for p in ("left", "top", "text-indent"))
            or (
                style.get("overflow", "").startswith("hidden")
                and any(_number(style.get(p)) <= 0 for p in ("height", "max-height", "width"))
            )
        )
        if "color" in style:
            text = colour(style["color"]) or text
        for name in ("background-color", "background"):
            if name in style:
                background = colour(style[name])
                break
    return _Seen(hidden, text, background)


def _unseen(seen: _Seen) -> bool:
    """Hidden, or written in a colour set close to a background known (a text colour never set
    is the reader's, which the page may style: not compared)."""
    if seen.hidden:
        return True
    if seen.colour is None or seen.background is None:
        return False
    return _close(seen.colour, seen.background)


def _close(a: Colour, b: Colour) -> bool:
    return sum(abs(x - y) for x, y in zip(a, b)) < CLOSE


def split_hidden(markup: str) -> tuple[str, str]:
    """(`markup` with the text a reader does not see replaced by spaces, its tags kept; that
    text, the pieces joined by spaces). `markup` lowercased, without comments, scripts and
    styles (as `filterd.tokenize.markup.html_text` gives it).

    >>> split_hidden('<p>buy now</p><div style="display: none">meeting lunch</div> ok')
    ('<p>buy now</p><div style="display: none">             </div> ok', 'meeting lunch')
    >>> split_hidden('<body bgcolor=#ffffff><font color="#fefefe">thanks</font>cheap</body>')[1]
    'thanks'
    >>> split_hidden('<p>nothing hidden</p>')
    ('<p>nothing hidden</p>', '')
    """
    spans = hidden_spans(markup)
    if not spans:
        return markup, ""
    pieces, hidden, start = [], [], 0
    for begin, end in spans:
        pieces += [markup[start:begin], " " * (end - begin)]
        hidden.append(markup[begin:end])
        start = end
    pieces.append(markup[start:])
    return "".join(pieces), " ".join(h.strip() for h in hidden if h.strip())


def hidden_spans(markup: str) -> list[tuple[int, int]]:
    """The (start, end) of each run of text between tags that a reader does not see, in order.
    Walked by filterd._speedups where built (HTML mail is long, and a walk in Python costs a
    few microseconds a tag)."""
    return (python_hidden_spans if c_hidden_spans is None else c_hidden_spans)(markup)


def python_hidden_spans(markup: str) -> list[tuple[int, int]]:
    """`hidden_spans` in Python: the reference of `c_hidden_spans`."""
    stack: list[tuple[str, _Seen]] = []
    open_by_name: Counter[str] = Counter()  # a closing tag of no open element costs no search
    spans: list[tuple[int, int]] = []
    position = 0  # where the text before the next tag starts
    current = _PAGE
    for m in _TAG.finditer(markup):
        if m.start() > position and _unseen(current):
            spans.append((position, m.start()))
        position = m.end()
        closing, name, attributes = m.groups()
        if closing:
            if open_by_name[name]:  # closed with every element opened after it (each once)
                while True:
                    popped, _ = stack.pop()
                    open_by_name[popped] -= 1
                    if popped == name:
                        break
                current = stack[-1][1] if stack else _PAGE
        elif name not in _VOID and not attributes.endswith("/"):
            if any(cue in attributes for cue in _CUES):
                current = _seen(attributes, current)
            if len(stack) == MAX_DEPTH:  # it takes the place of the deepest
                popped, _ = stack.pop()
                open_by_name[popped] -= 1
            stack.append((name, current))
            open_by_name[name] += 1
    if len(markup) > position and _unseen(current):
        spans.append((position, len(markup)))
    return spans
