"""mime.split_mail builds the stdlib's compat32 tree, or refuses (None): never another tree."""

import email
import email.policy
from email.message import Message
from typing import TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from filterd.tokenize import Tokenizer
from filterd.tokenize.limits import MAX_MIME_DEPTH, MAX_PARTS
from filterd.tokenize.mime import MimeTooDeep, content_type_of, split_mail


def tree(message: Message) -> tuple[object, ...]:
    """Everything the feed parser sets on a message, its parts' included."""
    payload = vars(message)["_payload"]
    if isinstance(payload, list):
        payload = [tree(part) for part in payload]
    return (
        vars(message)["_headers"],
        message.get_unixfrom(),
        payload,
        message.preamble,
        message.epilogue,
        [type(defect).__name__ for defect in message.defects],
        message.get_default_type(),
    )


def stdlib(raw: str) -> Message:
    return email.message_from_string(raw, policy=email.policy.compat32)


def agrees(raw: str) -> bool:
    """split_mail(raw) refuses or equals the stdlib's tree; True when it did not refuse."""
    message = split_mail(raw)
    if message is not None:
        assert tree(message) == tree(stdlib(raw)), raw
    return message is not None


# Mails built as trees, then rendered with any line ending and optional damage.
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
WORDS = st.sampled_from(["hello", "x", "", " ", "\t", "a:b", "--", "From me", "=?utf-8?q?a?="])
VALUE = st.lists(WORDS, max_size=4).map(" ".join)
HEADER = st.tuples(
    st.sampled_from(["Subject", "From", "To", "X-A", "Received", "content-type", "MIME-Version"]),
    VALUE,
    st.lists(VALUE.map(lambda v: "\t" + v), max_size=2),  # continuation lines
)
BODY_LINE = st.one_of(
    VALUE,
    st.sampled_from(["--b", "--b--", "--b  ", "--bx", "--a", "--a--", "--", "From x", ".", ""]),
)
LEAF_TYPES = st.sampled_from(
    [None, "text/plain", "text/html; charset=utf-8", "image/gif", "message/delivery-status"]
)
MULTIPART_TYPES = st.sampled_from(["mixed", "alternative", "digest", "related"])


class Part(TypedDict, total=False):
    """A drawn MIME part, as `render` writes it: a leaf (body), a message (inner) or a
    multipart (the rest)."""

    headers: list[tuple[str, str, list[str]]]  # (name, value, continuation lines)
    type: str | None
    cte: str | None
    separator: bool
    body: list[str]
    inner: "Part"
    boundary: str
    preamble: list[str]
    parts: list["Part"]
    epilogue: list[str]
    repeat: bool
    close: bool
    padding: str


@st.composite
def parts(draw: st.DrawFn, depth: int = 0) -> Part:
    kinds = ["leaf", "leaf", "multipart", "message"] if depth < 3 else ["leaf"]
    kind = draw(st.sampled_from(kinds))
    headers = draw(st.lists(HEADER, max_size=3))
    part: Part = {"headers": headers}
    if kind == "leaf":
        part["type"] = draw(LEAF_TYPES)
        part["body"] = draw(st.lists(BODY_LINE, max_size=4))
    elif kind == "message":
        part["type"] = "message/rfc822"
        part["inner"] = draw(parts(depth + 1))
    else:
        part["boundary"] = draw(st.sampled_from(["b", "a", "b c", "=_x", ""]))
        quoted = draw(st.booleans())
        param = f'"{part["boundary"]}"' if quoted else part["boundary"]
        part["type"] = f"multipart/{draw(MULTIPART_TYPES)}; boundary={param}"
        if draw(st.integers(0, 9)) == 0:
            part["type"] = "multipart/mixed"  # no boundary
        part["preamble"] = draw(st.lists(BODY_LINE, max_size=2))
        part["parts"] = draw(st.lists(parts(depth + 1), max_size=3))
        part["epilogue"] = draw(st.lists(BODY_LINE, max_size=2))
        part["repeat"] = draw(st.booleans())
        part["close"] = draw(st.integers(0, 4)) > 0
        part["padding"] = draw(st.sampled_from(["", "  ", "\t"]))
    part["cte"] = draw(st.sampled_from([None, "7bit", "base64"]))
    part["separator"] = draw(st.integers(0, 9)) > 0  # a blank line after the headers
    return part


def render(part: Part, ending: str, envelope: bool) -> list[str]:
    lines = ["From someone@example.com Mon Jan 1"] if envelope else []
    for name, value, continuations in part["headers"]:
        lines += [f"{name}: {value}", *continuations]
    if part["type"]:
        lines.append(f"Content-Type: {part['type']}")
    if part["cte"]:
        lines.append(f"Content-Transfer-Encoding: {part['cte']}")
    if part["separator"]:
        lines.append("")
    if "body" in part:
        return lines + part["body"]
    if "inner" in part:
        return lines + render(part["inner"], ending, False)
    delimiter = "--" + part["boundary"]
    lines += part["preamble"]
    for sub in part["parts"]:
        lines += [delimiter + part["padding"]] * (2 if part["repeat"] else 1)
        lines += render(sub, ending, False)
    if part["close"]:
        lines += [delimiter + "--" + part["padding"], *part["epilogue"]]
    return lines


@st.composite
def mails(draw: st.DrawFn) -> str:
    ending = draw(ENDINGS)
    lines = render(draw(parts()), ending, draw(st.booleans()))
    text = ending.join(lines)
    if draw(st.booleans()):
        text += ending
    if draw(st.integers(0, 9)) == 0:  # a few mixed line endings
        text = text.replace("\n", draw(ENDINGS), 1)
    return text


# Fragment soup, dense in what the parser reacts to.
SOUP = st.lists(
    st.sampled_from(
        [
            "\n",
            "\r\n",
            "\r",
            "\n\n",
            " ",
            "\t",
            ":",
            "x",
            "From ",
            "Subject: hi",
            "Content-Type: multipart/mixed; boundary=b",
            "Content-Type: message/rfc822",
            "Content-Type: multipart/digest; boundary=a",
            "Content-Transfer-Encoding: base64",
            "--b",
            "--b--",
            "--a",
            "--a--",
            "é",
        ]
    ),
    max_size=40,
).map("".join)

SETTINGS = settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(mails())
def test_structured_mails_agree_with_the_stdlib(raw: str) -> None:
    agrees(raw)


@SETTINGS
@given(SOUP)
def test_fragment_soup_agrees_with_the_stdlib(raw: str) -> None:
    agrees(raw)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_agrees_with_the_stdlib(raw: str) -> None:
    agrees(raw)


def test_common_mails_are_not_refused() -> None:
    crlf = "From: a@example.com\r\nSubject: hi\r\n\r\nbody\r\n"
    assert agrees(crlf)
    nested = (
        'From x@y Mon Jan 1\nFrom: a@example.com\nContent-Type: multipart/mixed; boundary="o"\n'
        "\npreamble\n--o\nContent-Type: multipart/alternative; boundary=i\n\n--i\n\nplain\n"
        "--i\nContent-Type: text/html\n\n<p>html</p>\n--i--\n\n--o\n"
        "Content-Type: message/rfc822\n\nSubject: inner\n\ninner body\n--o--\nepilogue\n"
    )
    assert agrees(nested)
    unclosed = "Content-Type: multipart/mixed; boundary=b\n\n--b\n\ntext\n"
    assert agrees(unclosed)
    split = split_mail(unclosed)
    assert split is not None and split.defects
    no_separator = "not: a header\nbody line\n"
    assert agrees(no_separator)


def test_unusual_mails_are_refused() -> None:
    assert split_mail("Content-Type: multipart/mixed\n\nno boundary\n") is None
    assert split_mail("Content-Type: message/delivery-status\n\nA: b\n\nC: d\n") is None
    assert split_mail("Subject: a\nFrom someone\nX: y\n\nbody\n") is None


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_nesting_deeper_than_the_limit_is_read_as_headers_and_text(eol: str) -> None:
    deep = f"Content-Type: message/rfc822{eol}{eol}" * (MAX_MIME_DEPTH + 1) + f"body{eol}"
    with pytest.raises(MimeTooDeep):
        split_mail(deep)
    multiparts = "".join(
        f'Content-Type: multipart/mixed; boundary="b{i}"{eol}{eol}--b{i}{eol}'
        for i in range(MAX_MIME_DEPTH + 1)
    )
    for raw in (deep, "Subject: deep" + eol + multiparts + eol + "the body" + eol):
        result = Tokenizer()({"id": "m", "format": "email", "text": raw})
        assert MAX_PARTS in result.flags and "body" in result.tokens


CONTENT_TYPE = st.lists(
    st.sampled_from(
        [
            "text/plain",
            "Multipart/Mixed",
            "/",
            "a/b/c",
            " ",
            ";",
            "; charset=x",
            "\t",
            "é",
        ]
    ),
    max_size=6,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["Content-Type", "content-TYPE", "X-Other"]), CONTENT_TYPE),
        max_size=3,
    ),
    st.booleans(),
)
def test_content_type_of_is_the_stdlib_content_type(
    headers: list[tuple[str, str]], digest_part: bool
) -> None:
    message = Message()
    if digest_part:
        message.set_default_type("message/rfc822")
    vars(message)["_headers"] = headers
    assert content_type_of(message) == message.get_content_type()
