"""The workbench's login sessions and their CSRF tokens: signed cookies, revocable.

A session is the cookie `cookie_name(SESSION_COOKIE, https)` = base64url(JSON {a: analyst,
e: expiry, n: nonce, b: binding}) "." HMAC-SHA256(key, that text), HttpOnly and SameSite=Strict;
over HTTPS it is Secure and named with the `__Host-` prefix, which a browser accepts only from
this origin, for path /, so no other host of the site can set or shadow it. Its CSRF token is
HMAC-SHA256(key, "csrf:" + nonce): the pages put it in every form (a hidden `csrf` field) and in
the `X-CSRF-Token` header of htmx requests, and a state-changing request is refused unless it
carries its session's token. The login form, which comes before any session, uses a
double-submitted random token instead (the cookie `LOGIN_COOKIE` and the form's field must
match). Nothing of a credential is in a cookie: the analyst's name only.

A session ends before its expiry when it is revoked (logging out: this process refuses its
nonce from then on) or when the analyst's credentials change: `b` is a MAC of a digest of the
analyst's configured hashes (`Authenticator.binding`), so a new password or token, or the name
removed from `[http] users` and `tokens`, ends every session of hers, in every process and
after a restart.

    >>> sessions = Sessions(b"k" * 32, hours=1.0, clock=lambda: 1000.0)
    >>> cookie = sessions.issue("dana")
    >>> session = sessions.read(cookie)
    >>> session.analyst, sessions.csrf_ok(session, session.csrf), sessions.csrf_ok(session, "x")
    ('dana', True, False)
    >>> sessions.read(cookie[:-1] + ("A" if cookie[-1] != "A" else "B")) is None  # tampered
    True
    >>> Sessions(b"k" * 32, hours=1.0, clock=lambda: 1000.0 + 3601).read(cookie) is None  # expired
    True
    >>> sessions.revoke(session); sessions.read(cookie) is None  # logged out
    True
    >>> bound = Sessions(b"k" * 32, 1.0, binding={"dana": b"v1"}.get).issue("dana")
    >>> Sessions(b"k" * 32, 1.0, binding={"dana": b"v2"}.get).read(bound) is None  # new password
    True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

SESSION_COOKIE = "filterd_session"
LOGIN_COOKIE = "filterd_login"
SECURE_PREFIX = "__Host-"  # the cookies' names over HTTPS
MAX_COOKIE = 4096  # a longer cookie is not one of ours: refused before it is decoded
MAX_REVOKED = 100_000  # logged-out sessions remembered until they expire; beyond, the oldest go


@dataclass(frozen=True)
class Session:
    analyst: str
    expires: float  # seconds since the epoch
    csrf: str
    nonce: str


class Sessions:
    """Issues, reads and revokes signed session cookies (`key`: the signing key, ≥ 32 bytes;
    `binding`: an analyst's credential digest, None for a name without credentials, or None
    for sessions bound to nothing but the key)."""

    def __init__(
        self,
        key: bytes,
        hours: float,
        clock: Callable[[], float] = time.time,
        binding: Callable[[str], bytes | None] | None = None,
    ) -> None:
        if len(key) < 32:
            raise ValueError("a session key has at least 32 bytes")
        self._key, self.seconds, self._clock, self._binding = key, hours * 3600.0, clock, binding
        self._revoked: dict[str, float] = {}  # nonce → the session's expiry, oldest first
        self._lock = threading.Lock()

    @classmethod
    def configured(
        cls, secret: str, hours: float, binding: Callable[[str], bytes | None] | None = None
    ) -> Sessions:
        """From `[http] session_secret` (text; empty: a random key for this process)."""
        key = secret.encode("utf-8") if secret else secrets.token_bytes(32)
        return cls(key, hours, binding=binding)

    def issue(self, analyst: str) -> str:
        """A new session cookie's value for `analyst`."""
        bound = self._bound(analyst)  # None: no credentials, and a "-" that never reads back
        expires, nonce = self._clock() + self.seconds, secrets.token_urlsafe(16)
        fields = {"a": analyst, "e": expires, "n": nonce, "b": "-" if bound is None else bound}
        body = json.dumps(fields, separators=(",", ":"))
        text = base64.urlsafe_b64encode(body.encode("utf-8")).decode("ascii").rstrip("=")
        return f"{text}.{self._sign(text)}"

    def read(self, cookie: str | None) -> Session | None:
        """The session of a cookie's value; None if absent, forged, malformed, expired, revoked
        or issued under credentials the analyst no longer has."""
        if not cookie or len(cookie) > MAX_COOKIE:
            return None
        text, _, signature = cookie.rpartition(".")
        if not same(signature, self._sign(text)):
            return None
        try:
            body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            analyst, expires, nonce = str(body["a"]), float(body["e"]), str(body["n"])
            bound = str(body["b"])
        except (binascii.Error, ValueError, KeyError, TypeError):
            return None
        expected = self._bound(analyst)
        if expires <= self._clock() or expected is None or not same(bound, expected):
            return None
        with self._lock:
            if nonce in self._revoked:
                return None
        return Session(analyst, expires, self._sign("csrf:" + nonce), nonce)

    def revoke(self, session: Session) -> None:
        """End `session` in this process: its cookie is refused from now on (logging out)."""
        now = self._clock()
        with self._lock:
            self._revoked[session.nonce] = session.expires
            while self._revoked:  # the oldest first, until one is live and the set in bounds
                nonce, expires = next(iter(self._revoked.items()))
                if expires > now and len(self._revoked) <= MAX_REVOKED:
                    break
                del self._revoked[nonce]

    def _bound(self, analyst: str) -> str | None:
        """What a session of `analyst` is bound to: a MAC of her credentials' digest ("" when
        sessions are bound to nothing), None when she has no credentials (no session is hers)."""
        if self._binding is None:
            return ""
        digest = self._binding(analyst)
        return None if digest is None else self._sign("bind:" + digest.hex())

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        """Whether `token` is `session`'s CSRF token."""
        return token is not None and same(token, session.csrf)

    def _sign(self, text: str) -> str:
        digest = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).decode("ascii").rstrip("=")


def same(given: str, expected: str) -> bool:
    """`given == expected` in a time that does not tell how much of them agrees (any text:
    `hmac.compare_digest` refuses non-ASCII str, so the bytes are compared)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def cookie_name(name: str, https: bool) -> str:
    """A cookie's name as served: with the `__Host-` prefix over HTTPS (where the cookie is
    Secure, for path / and this host only), as it is over plain HTTP, where a browser refuses
    the prefix.

    >>> cookie_name(SESSION_COOKIE, True), cookie_name(SESSION_COOKIE, False)
    ('__Host-filterd_session', 'filterd_session')
    """
    return SECURE_PREFIX + name if https else name
