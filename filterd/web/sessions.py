"""The workbench's login sessions and their CSRF tokens: signed cookies, no server-side state.

A session is the cookie `SESSION_COOKIE` = base64url(JSON {a: analyst, e: expiry, n: nonce}) "."
HMAC-SHA256(key, that text), HttpOnly and SameSite=Strict. Its CSRF token is
HMAC-SHA256(key, "csrf:" + nonce): the pages put it in every form (a hidden `csrf` field) and in
the `X-CSRF-Token` header of htmx requests, and a state-changing request is refused unless it
carries its session's token. The login form, which comes before any session, uses a
double-submitted random token instead (the cookie `LOGIN_COOKIE` and the form's field must
match). Nothing of a credential is in a cookie: the analyst's name only.

    >>> sessions = Sessions(b"k" * 32, hours=1.0, clock=lambda: 1000.0)
    >>> cookie = sessions.issue("dana")
    >>> session = sessions.read(cookie)
    >>> session.analyst, sessions.csrf_ok(session, session.csrf), sessions.csrf_ok(session, "x")
    ('dana', True, False)
    >>> sessions.read(cookie[:-1] + ("A" if cookie[-1] != "A" else "B")) is None  # tampered
    True
    >>> Sessions(b"k" * 32, hours=1.0, clock=lambda: 1000.0 + 3601).read(cookie) is None  # expired
    True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

SESSION_COOKIE = "filterd_session"
LOGIN_COOKIE = "filterd_login"
MAX_COOKIE = 4096  # a longer cookie is not one of ours: refused before it is decoded


@dataclass(frozen=True)
class Session:
    analyst: str
    expires: float  # seconds since the epoch
    csrf: str


class Sessions:
    """Issues and reads signed session cookies (`key`: the signing key, ≥ 32 bytes)."""

    def __init__(self, key: bytes, hours: float,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        if len(key) < 32:
            raise ValueError("a session key has at least 32 bytes")
        self._key, self.seconds, self._clock = key, hours * 3600.0, clock

    @classmethod
    def configured(cls, secret: str, hours: float) -> Sessions:
        """From `[http] session_secret` (text; empty: a random key for this process)."""
        key = secret.encode("utf-8") if secret else secrets.token_bytes(32)
        return cls(key, hours)

    def issue(self, analyst: str) -> str:
        """A new session cookie's value for `analyst`."""
        body = json.dumps({"a": analyst, "e": self._clock() + self.seconds,
                           "n": secrets.token_urlsafe(16)}, separators=(",", ":"))  # fmt: skip
        text = base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii").rstrip("=")
        return f"{text}.{self._sign(text)}"

    def read(self, cookie: str | None) -> Session | None:
        """The session of a cookie's value; None if absent, forged, malformed or expired."""
        if not cookie or len(cookie) > MAX_COOKIE:
            return None
        text, _, signature = cookie.rpartition(".")
        if not same(signature, self._sign(text)):
            return None
        try:
            body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            analyst, expires, nonce = str(body["a"]), float(body["e"]), str(body["n"])
        except (binascii.Error, ValueError, KeyError, TypeError):
            return None
        if expires <= self._clock():
            return None
        return Session(analyst, expires, self._sign("csrf:" + nonce))

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        """Whether `token` is `session`'s CSRF token."""
        return token is not None and same(token, session.csrf)

    def _sign(self, text: str) -> str:
        digest = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).decode("ascii").rstrip("=")


def same(given: str, expected: str) -> bool:
    """`given == expected` in a time that does not tell how much of them agrees (any text:
    `hmac.compare_digest` refuses non-ASCII str, so the bytes are compared)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                               expected.encode("utf-8", "surrogatepass"))  # fmt: skip
