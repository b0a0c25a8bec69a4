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
_DOMAIN = re.compile(r"[\w-]++(?:\.[\w-]++)++")


def sender_selector(sender: str, prefix: str, max_token_length: int) -> tuple[str, ...]:
    """The tokens that every message from `sender` has (`sender_tokens`): for an address, its
    domain's and its local part's; for a domain (a dot, no "@"), the domain's; for anything
    else (a phone number), its `id:`. ValueError for a value that gives none.

    >>> sender_selector("John.Doe@Example.com", "from:", 40)
    ('from:example.com', 'from:local:john.doe')
    >>> sender_selector("example.com", "from:", 40), sender_selector("+44 7700", "from:", 40)
    (('from:example.com',), ('from:id:+447700',))
    """
    text = normalize(sender.strip())
    address = _ADDRESS.fullmatch(text)
    if address is not None:
        local, domain = address.groups()
        domain_token = prefix + cap(domain, max_token_length)
        return domain_token, f"{prefix}local:" + cap(local, max_token_length)
    if "@" not in text and _DOMAIN.fullmatch(text) is not None:
        return (prefix + cap(text, max_token_length),)
    compact = _NOT_ID.sub("", text)
    if "@" in text or not compact:
        raise ValueError(f"not an address, a domain or a sender id: {sender!r}")
    return (f"{prefix}id:" + cap(compact, max_token_length),)


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
