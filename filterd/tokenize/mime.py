"""Raw mail → the `email.message.Message` tree that the stdlib's compat32 parser would build,
without its feed parser; None for any mail outside the common cases, which the caller then
hands to the stdlib.

    message = split_mail(raw)      # None → email.message_from_string(raw, policy=compat32)

The contract is equality: for every mail it does not refuse, the tree has the same headers
(names, values, order), unix-from, payloads, preambles, epilogues, default types and defect
classes as `email.message_from_string(raw, policy=email.policy.compat32)`; its messages are
`LinearMessage`s (filterd.tokenize.params), whose parameter lookups are linear. The property test
in tests/tokenize/test_mime.py checks this on generated mails. It follows
`email.feedparser.FeedParser._parsegen` step by step, but on the whole string: a header block
is read by two regexes, a body is a slice up to the next delimiter line that `str.find`
finds, and delimiter lines are recognized with str methods instead of a regex compiled per
boundary, which makes it several times faster than the feed parser.

Refused (None), because they are rare and their stdlib handling is intricate: a
message/delivery-status part, a multipart without boundary or whose first boundary never
comes, an envelope ("From ") line after the first header line, a header line starting with
":" or a continuation line first, a header line starting with "--" inside a multipart,
delimiter lines running to the end of the input, and any
exception (the stdlib then meets it, or not, itself).
"""

from __future__ import annotations

import re
from email import errors
from email.message import Message

from filterd.tokenize.limits import MAX_MIME_DEPTH
from filterd.tokenize.params import LinearMessage


class MimeTooDeep(Exception):
    """Multiparts nested deeper than `MAX_MIME_DEPTH`: too costly to parse, by any parser."""


_NOT_CTE_OF_MULTIPART = ("7bit", "8bit", "binary")

# The header lines at the cursor are the longest run of lines that email.feedparser.headerRE
# matches (an envelope line, a field name and ":", or a continuation); a header is a name, ":"
# and its value from the first non-blank on, continuation lines included. Two versions of
# each: one for input whose lines end at "\n" or "\r\n", where "." and "^" find line ends
# (faster to find the block and to split it; a value then keeps its "\r", which
# header_source_parse strips as it does), and one where lines may end at a lone "\r" too.
_NAME = r"[\041-\071\073-\176]"
_HEADER_BLOCK_LF = re.compile(rf"(?:(?:From |{_NAME}*+:|[\t ]).*+(?:\n|\Z))*+")
_HEADER_LF = re.compile(rf"^({_NAME}++):[ \t]*+(.*+(?:\n[\t ].*+)*+)", re.MULTILINE)
_LINE_REST = r"[^\r\n]*+(?:\r\n|[\r\n]|\Z)"
_HEADER_BLOCK_CR = re.compile(rf"(?:(?:From |{_NAME}*+:|[\t ]){_LINE_REST})*+")
_HEADER_CR = re.compile(rf"({_NAME}++):[ \t]*+({_LINE_REST}(?:[\t ]{_LINE_REST})*+)")


class _Refused(Exception):
    """The mail takes a path of the feed parser that is not reproduced here."""


def split_mail(raw: str) -> Message | None:
    """The compat32 message tree of `raw`, or None when the stdlib must parse it; MimeTooDeep
    when multiparts nest deeper than `MAX_MIME_DEPTH`."""
    try:
        return _Splitter(raw).root()
    except MimeTooDeep:
        raise
    except Exception:  # noqa: BLE001
        # _Refused, or an error the stdlib parse will meet (or not) itself
        return None


class _Boundary:
    """The line predicate of one multipart boundary: the feed parser's
    `--<boundary>(--)?[ \\t]*(\\r\\n|\\r|\\n)?$` as str methods (compiling that regex per
    mail cost more than the rest of the split)."""

    __slots__ = ("delimiter", "length")

    def __init__(self, boundary: str) -> None:
        self.delimiter = "--" + boundary
        self.length = len(self.delimiter)

    def match(self, line: str) -> tuple[bool, str | None] | None:
        """(whether it is the close delimiter, its line ending) if `line` is a delimiter line."""
        if not line.startswith(self.delimiter):
            return None
        rest = line[self.length :]
        # A line holds one line ending at most, at its end ("\r" alone ends a line too).
        if rest.endswith("\r\n"):
            rest, ending = rest[:-2], "\r\n"
        elif rest.endswith(("\r", "\n")):
            rest, ending = rest[:-1], rest[-1]
        else:
            ending = None
        if rest.startswith("--") and not rest[2:].strip(" \t"):
            return True, ending
        if not rest.strip(" \t"):
            return False, ending
        return None


def content_type_of(message: Message) -> str:
    """`message.get_content_type()`, read from its headers directly: Message.get lowercases
    every header name and passes the value through the policy, several times the cost. A
    value that is not ASCII may hold surrogates, which the policy wraps: the stdlib reads it."""
    # compat32's private attribute, not in typeshed
    headers: list[tuple[str, str]] = message._headers  # type: ignore[attr-defined]
    for name, value in headers:
        if len(name) == 12 and name.lower() == "content-type":  # most names: no lower() copy
            if not (type(value) is str and value.isascii()):
                return message.get_content_type()
            ctype = value.partition(";")[0].strip().lower()
            return ctype if ctype.count("/") == 1 else "text/plain"  # RFC 2045 §5.2
    return message.get_default_type()


def _without_line_ending(text: str) -> str:
    """`text` less one final "\\r\\n", "\\r" or "\\n" (the feed parser's NLCRE_eol)."""
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith(("\r", "\n")):
        return text[:-1]
    return text


class _Splitter:
    """One parse: the input, a cursor at a line start, and the enclosing boundaries."""

    def __init__(self, raw: str) -> None:
        self.text = raw
        self.pos = 0
        # Lines end at "\n", "\r\n" or a lone "\r", as in the feed parser's StringIO(newline="").
        self.has_cr = "\r" in raw
        self.lone_cr = self.has_cr and raw.count("\r") != raw.count("\r\n")
        self.boundaries: list[_Boundary] = []  # of the enclosing multiparts: a false end of input
        self.last: Message | None = None  # the feed parser's `_last`
        self.last_type = ""  # its content type, once its headers are read
        self.root_type = ""

    def root(self) -> Message:
        message = self.message(None, "", 0)
        if self.root_type.startswith("multipart/") and not message.is_multipart():
            raise _Refused  # MultipartInvariantViolationDefect: not reached by the paths kept
        return message

    def line_end(self, pos: int) -> int:
        """The index after the line that starts at `pos`, its line ending included."""
        text = self.text
        end = text.find("\n", pos)
        if end == -1:
            end = len(text)
        else:
            end += 1
        if self.has_cr:
            cr = text.find("\r", pos, end)
            if cr != -1:
                return cr + 2 if text.startswith("\n", cr + 1) else cr + 1
        return end

    def readline(self) -> str:
        """The next line, or "" at the end of input or at an enclosing boundary line."""
        pos = self.pos
        if pos >= len(self.text):
            return ""
        end = self.line_end(pos)
        line = self.text[pos:end]
        if self.boundaries and line.startswith("--"):
            for boundary in self.boundaries:
                if boundary.match(line) is not None:
                    return ""
        self.pos = end
        return line

    def find(self, boundary: _Boundary, start: int) -> int:
        """The start of the first delimiter line of `boundary` from line start `start` on,
        or the end of input."""
        text = self.text
        delimiter = boundary.delimiter
        at = start if text.startswith(delimiter, start) else self._after_line_end(delimiter, start)
        while at < len(text):
            if boundary.match(text[at : self.line_end(at)]) is not None:
                return at
            at = self._after_line_end(delimiter, at + 1)
        return len(text)

    def _after_line_end(self, delimiter: str, start: int) -> int:
        """The first index >= `start` where `delimiter` starts a line, or the end of input."""
        text = self.text
        found = text.find("\n" + delimiter, start - 1)
        at = len(text) if found == -1 else found + 1
        if self.has_cr:  # "\r" before "-" is a lone "\r": a line ending
            found = text.find("\r" + delimiter, start - 1, at)
            if found != -1:
                at = found + 1
        return at

    def rest(self) -> str:
        """The lines up to the end of input or the next enclosing boundary line, joined."""
        start = self.pos
        if self.boundaries:
            end = min(self.find(b, start) for b in self.boundaries)
        else:  # a mail of one part (most): the rest of it
            end = len(self.text)
        self.pos = end
        return self.text[start:end]

    def message(self, parent: Message | None, parent_type: str, depth: int) -> Message:
        """One message from the cursor on, attached to `parent` (FeedParser._parsegen)."""
        if depth > MAX_MIME_DEPTH:
            raise MimeTooDeep
        message = LinearMessage()
        if parent_type == "multipart/digest":
            message.set_default_type("message/rfc822")
        if parent is not None:
            parent.attach(message)
        self.last = message
        self.headers(message)

        content_type = self.last_type = content_type_of(message)
        if parent is None:
            self.root_type = content_type
        if content_type == "message/delivery-status":
            raise _Refused
        maintype = content_type.split("/")[0]
        if maintype == "message":
            self.message(message, content_type, depth + 1)
        elif maintype == "multipart":
            self.multipart(message, content_type, depth)
        else:
            message.set_payload(self.rest())
        return message

    def headers(self, message: Message) -> None:
        """The header lines from the cursor on onto `message`, and the blank line after them
        (FeedParser._parsegen's header loop and _parse_headers, on the whole block at once:
        line by line, headers cost several times more)."""
        text = self.text
        start = self.pos
        lone_cr = self.lone_cr
        block_match = (_HEADER_BLOCK_CR if lone_cr else _HEADER_BLOCK_LF).match(text, start)
        assert block_match is not None  # a run of zero or more lines: matches at any position
        end = block_match.end()
        block = text[start:end]
        if self.boundaries and ("\n--" in block or "\r--" in block or block.startswith("--")):
            raise _Refused  # a header line that may be an enclosing delimiter: rare
        if block.startswith("From "):
            first_end = self.line_end(start) - start
            message.set_unixfrom(_without_line_ending(block[:first_end]))
            block = block[first_end:]
        if (
            block.startswith((" ", "\t", ":", "From "))  # a continuation or no name first
            or "\nFrom " in block  # an envelope line after the first line
            or "\n:" in block
            or (lone_cr and ("\rFrom " in block or "\r:" in block))
        ):
            raise _Refused
        # Set as Message.set_raw(*compat32.header_source_parse(lines)) would, one by one.
        headers = (_HEADER_CR if lone_cr else _HEADER_LF).findall(block)
        if self.has_cr:  # the value less its last line ending, as header_source_parse
            headers = [(name, value.rstrip("\r\n")) for name, value in headers]
        # _HEADER_LF leaves the last "\n" out already
        # compat32's private attribute, not in typeshed
        message._headers = headers  # type: ignore[attr-defined]
        self.pos = end
        if end < len(text) and text[end] in "\r\n":
            self.pos = self.line_end(end)  # the blank line after the headers: consumed
        elif end < len(text):
            line = text[end : self.line_end(end)]
            if not (self.boundaries and any(b.match(line) is not None for b in self.boundaries)):
                message.defects.append(errors.MissingHeaderBodySeparatorDefect())

    def multipart(self, message: Message, content_type: str, depth: int) -> None:
        """The parts, preamble and epilogue of a multipart whose headers are read."""
        boundary_param = message.get_boundary()
        if boundary_param is None:
            raise _Refused  # NoBoundaryInMultipartDefect
        cte = str(message.get("content-transfer-encoding", "8bit")).lower()
        if cte not in _NOT_CTE_OF_MULTIPART:
            message.defects.append(errors.InvalidMultipartContentTransferEncodingDefect())
        boundary = _Boundary(boundary_param)

        # The preamble: the lines before the first delimiter line.
        start = self.pos
        first = self.find(boundary, start)
        if any(self.find(b, start) <= first for b in self.boundaries) or first == len(self.text):
            raise _Refused  # StartBoundaryNotFoundDefect: the input ends first
        end = self.line_end(first)
        delimiter = boundary.match(self.text[first:end])
        assert delimiter is not None
        if delimiter[0]:
            raise _Refused  # StartBoundaryNotFoundDefect: the close delimiter comes first
        if first > start:
            message.preamble = _without_line_ending(self.text[start:first])
        self.pos = end

        while True:
            # Repeated delimiter lines open no empty parts.
            while True:
                line = self.readline()
                if not line:
                    raise _Refused  # the feed parser would push "" back as a line
                if boundary.match(line) is None:
                    self.pos -= len(line)
                    break
            self.boundaries.append(boundary)
            self.message(message, content_type, depth + 1)
            self._strip_last_line_ending()
            self.boundaries.pop()
            self.last, self.last_type = message, content_type
            line = self.readline()
            if not line:
                message.defects.append(errors.CloseBoundaryNotFoundDefect())
                return
            delimiter = boundary.match(line)
            if delimiter is None:
                raise _Refused  # the feed parser asserts this away
            if delimiter[0]:
                break
        # After the close delimiter's line ending, the rest is the epilogue (a close
        # delimiter without one ends the input, and the epilogue is "").
        message.epilogue = self.rest()

    def _strip_last_line_ending(self) -> None:
        """The line ending before a delimiter belongs to the delimiter (RFC 2046), not to the
        payload or epilogue of the last message read."""
        last = self.last
        assert last is not None
        if self.last_type.partition("/")[0] == "multipart":
            if last.epilogue == "":
                last.epilogue = None
            elif last.epilogue is not None:
                last.epilogue = _without_line_ending(last.epilogue)
        else:  # as the feed parser: get_payload() may decode
            # compat32's private attribute, not in typeshed
            payload: object = last._payload  # type: ignore[attr-defined]
            if isinstance(payload, str):
                # compat32's private attribute, as above
                last._payload = _without_line_ending(payload)  # type: ignore[attr-defined]
