"""MIME header parameters (boundary, filename, name, charset) in time linear in the header.

The standard library's `Message.get_param` splits a header at the semicolons outside quoted
strings by counting the quotes from the start of the rest of the header again for every
semicolon (`email.message._parseparam`): its cost grows with the square of the header's length,
and one `Content-Type: multipart/mixed; boundary="` followed by a few hundred kilobytes of
semicolons holds a parser for minutes. `split_params` gives the same pieces in one pass;
`LinearMessage` is the stdlib's `Message` with its parameter lookups on top of it, so that
`get_boundary`, `get_filename` and `get_content_charset` are linear wherever the parsers call
them. The rest (RFC 2231 continuations, unquoting) is the stdlib's own linear code.
"""

from __future__ import annotations

import re
from email import utils
from email.message import Message
from typing import Any

ParamValue = str | tuple[str | None, str | None, str]  # RFC 2231: (charset, language, value)
# RFC 2046 allows 70 characters. A parser compiles a regex of each boundary, at a cost per
# character far above reading it: a longer one is no boundary (the multipart is then read as
# text, with a defect), so that a header cannot make that cost large.
MAX_BOUNDARY_LENGTH = 200
# Real headers carry a few parameters in a few hundred characters; what lies beyond these
# bounds is not read, so that no header costs more than a bounded scan.
MAX_PARAMS = 64
MAX_PARAMS_LENGTH = 8192
_UNESCAPED_QUOTE = re.compile(r'(?<!\\)"')
_MISSING = object()


def split_params(value: str) -> list[str]:
    """The `;`-separated pieces of a header value, semicolons inside quotes kept, each stripped
    and its name lowercased: what `email.message._parseparam(value)` returns, for headers of at
    most `MAX_PARAMS` pieces and `MAX_PARAMS_LENGTH` characters; of longer ones, the pieces of
    their beginning.

    >>> split_params('multipart/mixed; Boundary="a;b" ;charset = "x\\\\";y"')
    ['multipart/mixed', 'boundary="a;b"', 'charset="x\\\\";y"']
    """
    s = ";" + value[:MAX_PARAMS_LENGTH]
    n = len(s)
    pieces: list[str] = []
    pos = 0
    while pos < n and s[pos] == ";" and len(pieces) < MAX_PARAMS:
        start = pos + 1
        end = s.find(";", start)
        # A semicolon ends the piece when the quotes before it that follow no backslash are
        # even. Between a semicolon where they are odd and the next such quote no semicolon can
        # end it: the scan jumps there, so that every character is looked at once.
        counted = start
        while end > start:
            quotes = s.count('"', counted, end) - s.count('\\"', counted, end)
            if quotes % 2 == 0:
                break
            quote = _UNESCAPED_QUOTE.search(s, end)
            if quote is None:
                end = -1
                break
            counted, end = quote.end(), s.find(";", quote.end())
        if end < 0:
            end = n
        piece = s[start:end]
        if "=" in piece:
            i = piece.index("=")
            piece = piece[:i].strip().lower() + "=" + piece[i + 1 :].strip()
        pieces.append(piece.strip())
        pos = end
    return pieces


def header_params(value: str) -> list[tuple[str, ParamValue]]:
    """(name, value) of every parameter of a header value, RFC 2231 continuations joined, values
    still quoted (the stdlib's `Message._get_params_preserve`); the first is the value itself."""
    params: list[tuple[str, str]] = []
    for piece in split_params(value):
        name, sep, rest = piece.partition("=")
        params.append((name.strip(), rest.strip()) if sep else (piece.strip(), ""))
    decoded: list[tuple[str, ParamValue]] = utils.decode_params(params)
    return decoded


def _unquoted(value: ParamValue) -> ParamValue:
    if isinstance(value, tuple):
        return value[0], value[1], utils.unquote(value[2])
    return utils.unquote(value)


class LinearMessage(Message):
    """`email.message.Message` whose parameter lookups (`get_params`, `get_param`, and through
    them `get_boundary`, `get_filename`, `get_content_charset`) cost time linear in the header's
    length; same results, but for a boundary longer than `MAX_BOUNDARY_LENGTH`, which is none."""

    def get_boundary(self, failobj: Any = None) -> Any:
        boundary: object = super().get_boundary(_MISSING)
        if not isinstance(boundary, str) or len(boundary) > MAX_BOUNDARY_LENGTH:
            return failobj
        return boundary

    def get_params(
        self, failobj: Any = None, header: str = "content-type", unquote: bool = True
    ) -> Any:
        value = self.get(header)
        if value is None:
            return failobj
        params = header_params(str(value))
        return [(k, _unquoted(v)) for k, v in params] if unquote else params

    def get_param(
        self, param: str, failobj: Any = None, header: str = "content-type", unquote: bool = True
    ) -> Any:
        value = self.get(header)
        if value is None:
            return failobj
        wanted = param.lower()
        for k, v in header_params(str(value)):
            if k.lower() == wanted:
                return _unquoted(v) if unquote else v
        return failobj
