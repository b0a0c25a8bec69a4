"""HTML → (visible text, link targets), by regex: fast, linear, and good enough for tokens.

Comments, <script> and <style> are dropped with their content (an unclosed one runs to the
end, as in a browser); text a reader does not see is told apart (`filterd.tokenize.hidden`);
every other tag becomes a space; entities are unescaped. Links are
the values of href, src and action attributes outside scripts, unescaped, in document order.
Both come out lowercased (tokens are casefolded anyway): lowercasing first lets the regexes
below skip to their literal starts, which IGNORECASE prevents (slower). `readable_text` is the
same visible text for a person to read (the review queue's excerpt): case kept.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import NamedTuple

from filterd.tokenize.hidden import split_hidden

c_markup: Callable[[str], tuple[str, list[str]]] | None
try:  # the tag and link scans in C, built where a compiler was at hand (setup.py)
    from filterd._speedups import markup as c_markup
except ImportError:  # pragma: no cover - depends on the build
    c_markup = None

# Each alternative ends in "or the end of input", so a match never fails after scanning
# ahead: an unclosed "<!--" repeated 100,000 times costs one pass, not one per occurrence.
_HIDDEN = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style)\b.*?(?:</\1\s*>|\Z)", re.DOTALL)
# A tag cannot contain "<", so a failing scan stops at the next "<": linear.
_TAG = re.compile(r"<[a-z/!?][^<>]*+>")
# For `readable_text`: the same, in any case
_HIDDEN_ANY_CASE = re.compile(_HIDDEN.pattern, re.DOTALL | re.IGNORECASE)
_TAG_ANY_CASE = re.compile(r"<[a-zA-Z/!?][^<>]*+>")
_SPACES = re.compile(r"[ \t]{2,}")
_LINK = re.compile(r"""(?:href|src|action)\s*+=\s*+(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>]++))""")


class HtmlText(NamedTuple):
    """What an HTML part says, lowercased: its text a reader sees, its link targets (of the
    whole markup), and its text a reader does not see (`filterd.tokenize.hidden`)."""

    text: str
    links: list[str]
    hidden: str


def html_text(markup: str) -> HtmlText:
    """The visible text of `markup`, its link targets and its hidden text, lowercased."""
    markup, hidden = split_hidden(_HIDDEN.sub(" ", markup.lower()))
    # Scanned by filterd._speedups where built: HTML mail is long, and the regexes of tags
    # and links, whose starts are not one literal, find them slowly.
    text, values = (python_markup if c_markup is None else c_markup)(markup)
    links = [html.unescape(value) for value in values]
    return HtmlText(html.unescape(text), [link for link in links if link], html.unescape(hidden))


def python_markup(markup: str) -> tuple[str, list[str]]:
    """(lowercased `markup` without comments, scripts and styles, with each tag as a space;
    the values of its link attributes, still escaped): the reference of `c_markup`."""
    return _TAG.sub(" ", markup), [a or b or c for a, b, c in _LINK.findall(markup)]


def readable_text(markup: str) -> str:
    """The visible text of `markup` as a person reads it: case kept, entities unescaped, each
    run of spaces and tabs one space.

    >>> readable_text("<P>Click&nbsp;<A href=x>HERE</A><SCRIPT>go()</script>  now</p>")
    ' Click\\xa0 HERE now '
    """
    text = _TAG_ANY_CASE.sub(" ", _HIDDEN_ANY_CASE.sub(" ", markup))
    return _SPACES.sub(" ", html.unescape(text))
