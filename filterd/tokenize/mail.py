"""Raw RFC 822 mail → tokens: headers by name, MIME parts decoded, HTML made visible text.

Token forms (body words are unprefixed, like plain text, so mail and SMS share a vocabulary):

    subject:<token>             each token of the decoded Subject ("subject:free")
    from:… reply-to:… return-path:…   sender tokens (see addresses.py)
    to:<domain> cc:<domain>     one per recipient address
    content-type:<type>         the top part's and every part's type ("content-type:text/html")
    content-transfer-encoding:<cte>, charset:<charset>   of text parts that declare one
    <body tokens>               text/* parts; HTML as visible text plus its link targets' tokens
    hidden:<token>              each token of HTML text a reader does not see (hidden.py),
                                after "trick:hidden", once for each part that has such text
    attach:<type>               each non-text part, or a part with Content-Disposition: attachment
    attachsize:<class>          its decoded size: 1k, 10k, 100k, 1m, 10m or more (upper bounds)
    attachext:<ext>             its file name's extension ("attachext:exe")
    received:<host|ip prefix>   relays of the Received headers (see headers.py)
    <header>:<token>            tokens of Message-ID, X-Mailer, User-Agent, …
                                (headers.VALUE_HEADERS)
    header:<name>               each distinct header name of the top part ("header:x-mailer"),
                                but those of mailing lists and delivery (headers.IGNORED_NAMES)

Parsing gives the stdlib's tree with `policy=compat32`: much faster than `policy.default`,
and it records defects instead of raising. `mime.split_mail` builds that same tree faster
than the stdlib's feed parser for all but unusual mails; the stdlib parses the rest. RFC 2047
encoded words are decoded here. Parser defects set the flag "mime_defect". A mail with more than
`MAX_MIME_PARTS` delimiter lines (whatever its line endings) or `MAX_MIME_BOUNDARIES`
boundaries, multiparts nested deeper than `MAX_MIME_DEPTH`, or, among the unusual mails that the
stdlib parses, more than `MAX_STDLIB_BOUNDARIES` mentions of "boundary" (its parse time grows
with lines x depth) is read as headers plus a plain-text body, flagged "max_parts".

The same parse gives what a person reads of the mail (`MailFields`: its Subject, its From and
its first text part), for the review queue: a mail is read once, within the tokenizer's limits.
"""

from __future__ import annotations

import binascii
import email
import email.parser
import email.policy
import re
from dataclasses import dataclass
from email.message import Message

from filterd.tokenize.addresses import recipient_tokens, sender_tokens
from filterd.tokenize.headers import VALUE_HEADERS, header_name_tokens, received_tokens
from filterd.tokenize.limits import (
    MAX_MIME_BOUNDARIES,
    MAX_MIME_PARTS,
    MAX_PARTS,
    MAX_STDLIB_BOUNDARIES,
    MIME_DEFECT,
    TokenizerConfig,
    cap,
)
from filterd.tokenize.links import email_tokens, url_tokens
from filterd.tokenize.markup import html_text
from filterd.tokenize.memo import memoized
from filterd.tokenize.mime import MimeTooDeep, split_mail
from filterd.tokenize.params import LinearMessage
from filterd.tokenize.text import normalize, normalized, text_tokens

_SENDERS = ("from", "reply-to", "return-path")
_RECIPIENTS = ("to", "cc")
_PART_FIELDS = frozenset(("content-type", "content-transfer-encoding", "content-disposition"))
_READ_HEADERS = frozenset(("subject", *_SENDERS, *_RECIPIENTS, "received", *VALUE_HEADERS))

_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,64})\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_ENCODED_WORDS = re.compile(r"(?<=\?=)\s+(?==\?)")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CTYPE = re.compile(r"[a-z0-9][\w.+-]{0,63}/[\w.+-]{1,64}")
HIDDEN_PREFIX = "hidden:"  # the namespace of HTML text a reader does not see
HIDDEN_TRICK = "trick:hidden"  # a part that has such text
_LABEL = re.compile(r"[a-z0-9][\w.:-]{0,39}")  # charset, transfer encoding
_CHARSET = re.compile(r"""\bcharset\s*=\s*["']?([^\s"';]+)""", re.IGNORECASE)
_EXTENSION = re.compile(r"\.([^\W_]{1,10})\Z")
_URL_START = re.compile(r"(?:https?:|ftp:)?//|www\.")
_MAILTO = re.compile(r"mailto:([\w.+-]++)@([\w-]++(?:\.[\w-]++)*+)")

# Below both bounds on delimiter lines, a mail is not too complex (_too_complex)
_FEWEST_DELIMITERS = min(MAX_MIME_PARTS, MAX_MIME_BOUNDARIES)
# Codecs that are not charsets: mail must not choose one (punycode decoding is quadratic).
_NOT_CHARSETS = frozenset({"punycode", "idna", "undefined", "unicode_escape", "raw_unicode_escape"})
_SIZE_CLASSES = (
    (1 << 10, "1k"),
    (10 << 10, "10k"),
    (100 << 10, "100k"),
    (1 << 20, "1m"),
    (10 << 20, "10m"),
)


@dataclass(frozen=True, slots=True)
class MailFields:
    """What a person reads of a raw mail, as the tokenizer's parse found it: the first Subject
    and the first From, decoded (RFC 2047), and the first part that is text/plain, else the
    first that is text/html, and not an attachment, decoded (a mail read headers-only is its
    own part). Whole: whoever keeps them bounds them."""

    subject: str | None = None
    sender: str | None = None
    text: str = ""
    html: bool = False  # `text` is the markup of a text/html part


class _Found:
    """The fields of `MailFields` as the parse finds them: the first of each is kept."""

    __slots__ = ("html", "plain", "sender", "subject")

    def __init__(self) -> None:
        self.subject: str | None = None
        self.sender: str | None = None
        self.plain: str | None = None
        self.html: str | None = None

    def fields(self) -> MailFields:
        if self.plain is None and self.html is not None:
            return MailFields(self.subject, self.sender, self.html, html=True)
        return MailFields(self.subject, self.sender, self.plain or "")


def mail_tokens(
    raw: str, config: TokenizerConfig, flags: set[str], bodies: list[str] | None = None
) -> tuple[list[str], MailFields]:
    """Tokens of one raw mail, in order: headers, parts, header names; and what a person reads
    of it. Adds flags to `flags`, and to `bodies`, if given, the decoded Subject and the body
    texts it reads as words (decoded, HTML as visible text), in order, up to where it stops
    reading them (see _part_tokens)."""
    message = _parse(without_surrogates(raw), flags)
    if message is None:
        flags.add(MIME_DEFECT)
        if bodies is not None:
            bodies.append(raw)
        tokens = text_tokens(raw, config.max_token_length, config.pairs, config.max_tokens)
        return tokens, MailFields()
    found = _Found()
    out = _header_tokens(message, config.max_token_length, found, bodies)
    out += _part_tokens(message, config, flags, config.max_tokens - len(out), found, bodies)
    out += header_name_tokens(message.keys())
    return out, found.fields()


def without_surrogates(raw: str) -> str:
    """`raw` with lone surrogates as U+FFFD (compat32 wraps headers holding them in Header
    objects, whose str() raises; PostgreSQL text cannot hold them)."""
    if raw.isascii():
        return raw
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", raw)
    return raw


def _parse(raw: str, flags: set[str]) -> Message | None:
    """The parsed mail, only its headers when it is too complex, None when unparseable."""
    if _too_complex(raw):
        flags.add(MAX_PARTS)
    else:
        try:
            message = split_mail(raw)  # the stdlib's tree, built faster; None if unusual
        except MimeTooDeep:
            flags.add(MAX_PARTS)
        else:
            if message is not None:
                return message
            if _boundaries(raw) > MAX_STDLIB_BOUNDARIES:
                flags.add(MAX_PARTS)
            else:
                try:
                    return email.message_from_string(
                        raw, LinearMessage, policy=email.policy.compat32
                    )
                except Exception:  # noqa: BLE001 - RecursionError on deep nesting, or a parser bug
                    flags.add(MIME_DEFECT)
    try:
        return email.parser.Parser(LinearMessage, policy=email.policy.compat32).parsestr(
            raw, headersonly=True
        )
    except Exception:  # noqa: BLE001 - the last resort: a message nothing can parse has no headers
        return None


def _too_complex(raw: str) -> bool:
    """Whether `raw` has more MIME delimiter lines, or mentions of "boundary", than we parse."""
    # str.count is C-speed; a regex scan here costs as much as tokenizing the body. Lines may
    # end at "\r" alone: "\r\n--" counts once, in "\n--". The "--" of those never overlap,
    # so fewer "--" than MAX_MIME_BOUNDARIES settle most mails in one scan instead of two.
    if raw.count("--") < _FEWEST_DELIMITERS:
        return False
    delimiters = raw.count("\n--") + raw.count("\r--")
    if delimiters >= MAX_MIME_PARTS:
        return True
    # Each level of nesting needs a delimiter line: few of them bound the depth already.
    return delimiters >= MAX_MIME_BOUNDARIES and _boundaries(raw) >= MAX_MIME_BOUNDARIES


def _boundaries(raw: str) -> int:
    """Mentions of "boundary", any case: a copy of the whole mail, so counted only when needed."""
    return raw.lower().count("boundary")


def decode_header(value: str) -> str:
    """A header value with its RFC 2047 encoded words decoded (undecodable bytes replaced)."""
    if "=?" not in value:
        return value
    return _ENCODED_WORD.sub(_decode_word, _BETWEEN_ENCODED_WORDS.sub("", value))


def _decode_word(m: re.Match[str]) -> str:
    charset, encoding, data = m.groups()
    ascii_data = data.encode("ascii", "ignore")
    try:
        if encoding in "bB":
            raw = binascii.a2b_base64(ascii_data + b"=" * (-len(ascii_data) % 4))
        else:
            raw = binascii.a2b_qp(ascii_data, header=True)
    except (binascii.Error, ValueError):
        return data
    return decode_bytes(raw, charset.partition("*")[0])  # "*" starts an RFC 2231 language


def decode_bytes(data: bytes, charset: str | None) -> str:
    """`data` as text in `charset`; unknown or missing charsets read as UTF-8, else cp1252."""
    name = (charset or "").strip().lower()
    if name and name not in ("us-ascii", "ascii") and name.replace("-", "_") not in _NOT_CHARSETS:
        try:
            return data.decode(name, "replace")
        except Exception:  # noqa: BLE001 - LookupError, or a codec that is no text encoding
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def _header_tokens(
    message: Message, max_length: int, found: _Found, bodies: list[str] | None = None
) -> list[str]:
    """Tokens of the headers read; the decoded Subject and From go to `found`, the Subject to
    `bodies`, if given."""
    values = _header_values(message)
    out: list[str] = []
    subjects = values.get("subject")
    if subjects:
        subject = found.subject = decode_header(subjects[0])
        out += ["subject:" + t for t in text_tokens(subject, max_length)]
        if bodies is not None:
            bodies.append(subject)
    for name in _SENDERS:
        for value in values.get(name, ()):
            sender = decode_header(value)
            if name == "from" and found.sender is None:
                found.sender = sender
            out += sender_tokens(sender, name + ":", max_length)
    for name in _RECIPIENTS:
        for value in values.get(name, ()):
            out += recipient_tokens(value, name + ":", max_length)
    for value in values.get("received", ()):
        out += received_tokens(value, max_length)
    for name in VALUE_HEADERS:
        for value in values.get(name, ()):
            prefix = name + ":"
            out += [prefix + t for t in text_tokens(decode_header(value), max_length)]
    return out


def _header_values(message: Message) -> dict[str, list[str]]:
    """The values of the headers read here, by lowercased name, in order, as `get_all` gives
    them (the raw mail holds no surrogates, so no value is a Header): one pass over the
    headers instead of one per name (get_all scans them all for each name)."""
    values: dict[str, list[str]] = {}
    for name, value in _raw_headers(message):
        name = name.lower()
        if name in _READ_HEADERS:
            values.setdefault(name, []).append(str(value))
    return values


def _raw_headers(message: Message) -> list[tuple[str, str]]:
    """What `message.raw_items()` gives, without its copy and generator (read once a part)."""
    # compat32's private attribute, not in typeshed
    headers: list[tuple[str, str]] = message._headers  # type: ignore[attr-defined]
    return headers


def _part_tokens(
    message: Message,
    config: TokenizerConfig,
    flags: set[str],
    enough: int,
    found: _Found,
    bodies: list[str] | None = None,
) -> list[str]:
    """Tokens of every part, depth first in message order; iterative, so depth costs no stack.

    Once more than `enough` tokens are out, text is no longer tokenized (the caller keeps at
    most `enough`), but every part is still walked and decoded for its flags and for `found`.
    """
    out: list[str] = []
    stack = [message]
    seen = 0
    while stack:
        part = stack.pop()
        seen += 1
        if seen > MAX_MIME_PARTS:
            flags.add(MAX_PARTS)
            break
        try:
            fields = _part_fields(part)
            # What get_payload() returns (the raw mail holds no surrogates), without its
            # second scan of the headers
            # compat32's private attribute, not in typeshed
            payload: object = part._payload  # type: ignore[attr-defined]
            if isinstance(payload, list):
                out.append("content-type:" + _content_type(part, fields))
                stack.extend(p for p in reversed(payload) if isinstance(p, Message))
            else:
                payload = "" if payload is None else str(payload)
                out += _leaf_tokens(part, fields, payload, config, enough - len(out), found, bodies)
        except Exception:  # noqa: BLE001 - a part the stdlib cannot decode must not lose the others
            flags.add(MIME_DEFECT)
        if part.defects:  # after decoding, which adds base64 padding defects
            flags.add(MIME_DEFECT)
    return out


def _part_fields(part: Message) -> dict[str, str]:
    """The first value of each of `_PART_FIELDS` that `part` has, as `part.get` gives it, in
    one pass over its headers (each Message.get scans and lowercases every header name, a
    noticeable share of the tokenizer's time)."""
    fields: dict[str, str] = {}
    for name, value in _raw_headers(part):
        name = name.lower()
        if name in _PART_FIELDS and name not in fields:
            fields[name] = str(value)
    return fields


def _content_type(part: Message, fields: dict[str, str]) -> str:
    """`part.get_content_type()` from its fields, "invalid" if it is not a plain type/subtype."""
    value = fields.get("content-type")
    if value is None:
        ctype = part.get_default_type()
    else:
        ctype = value.partition(";")[0].strip().lower()
        if ctype.count("/") != 1:  # RFC 2045 §5.2, as the stdlib
            ctype = "text/plain"
    return ctype if _CTYPE.fullmatch(ctype) else "invalid"


def _leaf_tokens(
    part: Message,
    fields: dict[str, str],
    payload: str,
    config: TokenizerConfig,
    enough: int,
    found: _Found,
    bodies: list[str] | None = None,
) -> list[str]:
    """Tokens of one part that is not a multipart; see _part_tokens for `enough` and `found`,
    and mail_tokens for `bodies`."""
    max_length = config.max_token_length
    ctype = _content_type(part, fields)
    out = ["content-type:" + ctype]
    cte = fields.get("content-transfer-encoding", "").strip().lower()
    disposition = fields.get("content-disposition", "").strip().lower()
    # A mail read headers-only keeps its multipart body as one string: read it as text.
    is_text = ctype.startswith(("text/", "multipart/", "message/")) or ctype == "invalid"
    if is_text:
        if cte and _LABEL.fullmatch(cte):
            out.append("content-transfer-encoding:" + cte)
        charset = _charset(fields.get("content-type", ""))
        if charset and _LABEL.fullmatch(charset):
            out.append("charset:" + charset)
        text = _decoded_text(part, payload, cte, charset)  # decoding may add defects: always
        if not disposition.startswith("attachment"):
            if ctype == "text/plain" and found.plain is None:
                found.plain = text
            elif ctype == "text/html" and found.html is None:
                found.html = text
        if len(out) > enough:
            pass  # past what the caller keeps
        elif ctype == "text/html":
            visible, links, hidden = html_text(text)
            if bodies is not None:
                bodies.append(visible)
            out += text_tokens(visible, max_length, config.pairs, enough - len(out))
            if hidden and len(out) <= enough:
                out += hidden_tokens(hidden, max_length, enough - len(out))
            for link in links:
                if len(out) > enough:
                    break
                out += _link_tokens(link, max_length)
        else:
            if bodies is not None:
                bodies.append(text)
            out += text_tokens(text, max_length, config.pairs, enough - len(out))
    if not is_text or disposition.startswith("attachment"):
        out += _attachment_tokens(part, ctype, payload, cte, max_length)
    return out


def _charset(content_type: str) -> str | None:
    # A regex on the header: a third of the cost of Message.get_content_charset().
    m = _CHARSET.search(content_type)
    return m.group(1).lower() if m else None


def _decoded_text(part: Message, payload: str, cte: str, charset: str | None) -> str:
    if cte not in ("base64", "quoted-printable"):
        return payload  # 7bit/8bit text is already text: the mail arrived as a str
    data = part.get_payload(decode=True)
    return decode_bytes(data, charset) if isinstance(data, bytes) else payload


def hidden_tokens(text: str, max_length: int, enough: int) -> list[str]:
    """The tokens of HTML text a reader does not see: HIDDEN_TRICK (hiding text is evidence in
    itself), then each token as `hidden:<token>`, words of their own, which the model learns
    apart from the reader's (see text_tokens for `enough`); none for text of no token (a
    spacer's dots).

    >>> hidden_tokens("meeting at noon", 40, 100)
    ['trick:hidden', 'hidden:meeting', 'hidden:at', 'hidden:noon']
    >>> hidden_tokens(". , .", 40, 100)
    []
    """
    tokens = text_tokens(text, max_length, 0, enough)
    return [HIDDEN_TRICK, *(HIDDEN_PREFIX + t for t in tokens)] if tokens else []


@memoized
def _link_tokens(link: str, max_length: int) -> tuple[str, ...]:
    """The tokens of one link target of HTML, after the tricks its normalization undid (a
    look-alike host reads as the host it imitates, and says so)."""
    link, tricks = normalized(link.strip())
    m = _MAILTO.match(link)
    if m is not None:
        return (*tricks, *email_tokens(m.group(1), m.group(2), max_length))
    if _URL_START.match(link):
        return (*tricks, *url_tokens(link, max_length))
    return ()  # relative, cid:, javascript: …


def _attachment_tokens(
    part: Message, ctype: str, payload: str, cte: str, max_length: int
) -> list[str]:
    size = len(payload) * 3 // 4 if cte == "base64" else len(payload)
    size_class = next((name for limit, name in _SIZE_CLASSES if size <= limit), "more")
    out = ["attach:" + ctype, "attachsize:" + size_class]
    filename = part.get_filename()
    if filename:
        m = _EXTENSION.search(normalize(decode_header(str(filename))).strip())
        if m:
            out.append("attachext:" + cap(m.group(1), max_length))
    return out
