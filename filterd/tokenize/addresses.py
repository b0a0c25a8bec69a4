"""Sender and recipient fields (mail headers, the message's `sender`) → prefixed tokens.

A sender ("From", "Reply-To", "Return-Path", the message's `sender`) gives, with its prefix:

    <prefix><domain>            "from:example.com"
    <prefix>local:<local part>  "from:local:john.doe"
    <prefix>name:<word>         each word of the display name: "from:name:paypal"
    <prefix>id:<compact>        only when there is no address: the value without spaces or
                                punctuation other than ".+-" ("from:id:+447700900123")

Recipients ("To", "Cc") give `<prefix><domain>` per address.
"""

from __future__ import annotations

import re

from filterd.tokenize.limits import cap
from filterd.tokenize.text import normalize, normalized, plain_tokens

# A local part is RFC 5322 atext and dots ("owner+a/b=c@…" is one address); it may not start
# inside a longer run of its characters (see links.FIND_LINKS), which keeps the scan linear.
_LOCAL = r"[\w.!#$%&'*+/=?^`{|}~-]"
_ADDRESS = re.compile(rf"(?<!{_LOCAL})({_LOCAL}++)@([\w-]++(?:\.[\w-]++)*+)")
_NOT_ID = re.compile(r"[^\w.+-]+")


def sender_tokens(value: str, prefix: str, max_token_length: int) -> list[str]:
    """Tokens of one sender value, e.g. `'"John" <john@example.com>'` with prefix "from:";
    first the tricks its normalization undid (`text.normalized`: a look-alike domain
    reads as the domain it imitates, and says so).

    >>> sender_tokens("PayPal <service@p\u0430ypal.com>", "from:", 40)[:2]
    ['trick:lookalike', 'from:paypal.com']
    """
    text, tricks = normalized(value)
    addresses = _ADDRESS.findall(text)
    out: list[str] = list(tricks)
    for local, domain in addresses:
        out.append(prefix + cap(domain, max_token_length))
        out.append(prefix + "local:" + cap(local, max_token_length))
    if addresses:
        text = _ADDRESS.sub(" ", text)
    else:
        compact = _NOT_ID.sub("", text)
        if compact:
            out.append(prefix + "id:" + cap(compact, max_token_length))
    name = prefix + "name:"
    out += [name + word for word in plain_tokens(text, max_token_length)]
    return out


def recipient_tokens(value: str, prefix: str, max_token_length: int) -> list[str]:
    """`<prefix><domain>` for each address in one recipient value ("To", "Cc")."""
    return [
        prefix + cap(domain, max_token_length) for _, domain in _ADDRESS.findall(normalize(value))
    ]
