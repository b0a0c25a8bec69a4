"""Who is calling: the analyst an `Authorization` header names, checked against the hashes of
`[http] tokens` and `[http] users` (`filterd.service.passwords`).

    Authorization: Bearer NAME.SECRET          an API token (`filterd http new-token NAME`)
    Authorization: Basic base64(NAME:PASSWORD) a password (`filterd http hash-password`)

The name is the analyst identity the API puts on labels; a token carries its name before its
last ".", so a request costs one slow hash, not one per analyst. A slow hash per request would
cost ~50 ms of CPU, so a verified header is remembered (`CACHE_SIZE` of them), keyed by a keyed
hash with a per-process random key: the cache holds no secret, and a header that fails is never
remembered. A failure says nothing of which part was wrong.

Guessing costs the server a slow hash per try, so a name that has failed `FAILURES` times
within `FAILURE_WINDOW` seconds is refused without hashing until the window has passed
(`throttled`). A header already verified is remembered, so an analyst at work is not locked out
by someone guessing at the same name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Mapping

from filterd.service.passwords import Hashed, parse_hash, verify

CACHE_SIZE = 1024
FAILURES = 10  # failed checks of one name within FAILURE_WINDOW before it is throttled
FAILURE_WINDOW = 60.0
REALM = 'Basic realm="filterd", charset="UTF-8"'


class Authenticator:
    """Checks `Authorization` headers against configured hashes (name → `scheme$…` string)."""

    def __init__(self, tokens: Mapping[str, str], users: Mapping[str, str],
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._tokens: dict[str, Hashed] = {name: parse_hash(h) for name, h in tokens.items()}
        self._users: dict[str, Hashed] = {name: parse_hash(h) for name, h in users.items()}
        self._key = secrets.token_bytes(32)
        self._verified: dict[bytes, str] = {}
        self._failed: dict[str, list[float]] = {}  # name → times of its recent failed checks
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        """Whether any credential is configured (else every request is refused)."""
        return bool(self._tokens or self._users)

    def identify(self, authorization: str | None) -> str | None:
        """The analyst the header authenticates, None if it does not (absent, malformed, an
        unknown name or a wrong secret)."""
        if not authorization:
            return None
        digest = self._digest(authorization)
        with self._lock:
            known = self._verified.get(digest)
        if known is not None:
            return known
        analyst = self._check(authorization)
        if analyst is not None:
            with self._lock:
                if len(self._verified) >= CACHE_SIZE:
                    self._verified.clear()  # simple and bounded: the next requests verify again
                self._verified[digest] = analyst
        return analyst

    def remembered(self, authorization: str | None) -> str | None:
        """The analyst of a header `identify` has verified and still remembers, else None (a
        header not verified, or one the bounded cache let go: `identify` decides). No slow hash:
        cheap enough to answer on the event loop."""
        if not authorization:
            return None
        digest = self._digest(authorization)
        with self._lock:
            return self._verified.get(digest)

    def _digest(self, authorization: str) -> bytes:
        """The cache's key of a header: keyed, so the cache holds nothing a secret is read from."""
        return hashlib.blake2b(
            authorization.encode("utf-8", "surrogatepass"), key=self._key
        ).digest()

    def login(self, name: str, secret: str) -> str | None:
        """The analyst `name` if `secret` is their password, or else their API token (the
        workbench's login form takes either); None otherwise. Failures count towards
        `throttled` as the API's do; nothing is remembered (a login is one check)."""
        analyst = self._verify(name, secret, self._users.get(name))
        if analyst is None and secret.startswith(f"{name}."):
            analyst = self._verify(name, secret, self._tokens.get(name))
        return analyst

    def throttled(self, name: str) -> bool:
        """Whether checks of `name` are refused for now (too many recent failures)."""
        with self._lock:
            return self._recent_failures(name) >= FAILURES

    def _recent_failures(self, name: str) -> int:
        since = self._clock() - FAILURE_WINDOW
        recent = [t for t in self._failed.get(name, ()) if t > since]
        if recent:
            self._failed[name] = recent
        else:
            self._failed.pop(name, None)
        return len(recent)

    def _verify(self, name: str, secret: str, hashed: Hashed | None) -> str | None:
        """`name` if `secret` matches `hashed`; a failure counts against a configured name."""
        if hashed is None or self.throttled(name):
            return None
        if verify(secret, hashed):
            return name
        with self._lock:
            self._recent_failures(name)  # drop the old ones: the list stays within FAILURES
            self._failed.setdefault(name, []).append(self._clock())
        return None

    def _check(self, authorization: str) -> str | None:
        scheme, _, credential = authorization.strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() == "bearer":
            name, dot, _ = credential.rpartition(".")
            return self._verify(name, credential, self._tokens.get(name) if dot else None)
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credential, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return None
            name, colon, password = decoded.partition(":")
            return self._verify(name, password, self._users.get(name) if colon else None)
        return None


def new_token(name: str) -> str:
    """A new API token for analyst `name`: NAME.SECRET, 32 random bytes in URL-safe base64
    (which has no ".", so the name is what comes before the last one).

    >>> token = new_token("dana")
    >>> token.startswith("dana.") and len(token) == len("dana.") + 43
    True
    """
    return f"{name}.{secrets.token_urlsafe(32)}"
