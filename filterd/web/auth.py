"""Who is calling: the analyst an `Authorization` header names, checked against the hashes of
`[http] tokens` and `[http] users` (`filterd.service.passwords`).

    Authorization: Bearer NAME.SECRET          an API token (`filterd http new-token NAME`)
    Authorization: Basic base64(NAME:PASSWORD) a password (`filterd http hash-password`)

The name is the analyst identity the API puts on labels; a token carries its name before its
last ".", so a request costs one slow hash, not one per analyst. A slow hash per request would
cost ~50 ms of CPU, so a verified header is remembered (`CACHE_SIZE` of them), keyed by a keyed
hash with a per-process random key: the cache holds no secret, and a header that fails is never
remembered. A failure says nothing of which part was wrong.

Guessing is slowed down, never locked out. Each client address and name may fail `FAILURES`
times, then once every `FAILURE_WINDOW / FAILURES` seconds (a token bucket), and each client
`CLIENT_FAILURES` times over all names likewise; a check beyond its budget is refused unhashed
(`Throttled`: 429 with Retry-After). The budget is spent before hashing and given back when the
secret is right, so concurrent guesses cannot overrun it. An analyst elsewhere has a budget of
her own: whoever guesses at her name from one address never refuses her from another.

At most `HASH_SLOTS` slow hashes run at once, in threads of their own; a check that finds every
slot taken is refused at once (`Busy`: 503) rather than waiting in a thread, so a burst costs
the CPU and memory of `HASH_SLOTS` hashes, not those of one per request. A name that has no
credential is hashed against a dummy hash with the configured hashes' parameters: an answer
takes as long whether the name exists or not.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import math
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from starlette.requests import Request

from filterd.service.passwords import (
    HASH_BYTES,
    SALT_BYTES,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    Hashed,
    parse_hash,
    verify,
)
from filterd.web.errors import Problem

CACHE_SIZE = 1024
# failures of one client at one name in a burst, then one per FAILURE_WINDOW / FAILURES s
FAILURES = 10
CLIENT_FAILURES = 100  # failures of one client over all names, likewise
FAILURE_WINDOW = 60.0
# slow hashes at once, each in a thread of its own (scrypt's default costs 16 MB): half the
# CPUs, so that guesses never take the CPU the event loop answers everyone else with
HASH_SLOTS = max(1, (os.cpu_count() or 2) // 2)
MAX_BUDGETS = 10_000  # (client, name) pairs and clients with failures remembered, at most
REALM = 'Bearer realm="filterd"'  # a challenge no browser answers with a login prompt


class Throttled(Problem):
    """Too many recent failures from this client (at this name): try again in `seconds`."""

    def __init__(self, seconds: float) -> None:
        wait = max(1, math.ceil(seconds))
        super().__init__(
            429,
            f"too many failed attempts from this address: try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )


class Busy(Problem):
    """Every hash slot is taken: the credential was not checked."""

    def __init__(self) -> None:
        super().__init__(
            503,
            "too many credential checks at once: try again in a second",
            headers={"Retry-After": "1"},
        )


class Budgets:
    """Token buckets by key (not thread-safe: the caller locks): `size` tries, refilled at
    `size / window` per second. A key whose bucket is full is forgotten; beyond `MAX_BUDGETS`
    keys the least recently spent is."""

    def __init__(self, size: int, window: float, clock: Callable[[], float]) -> None:
        self.size, self.rate, self._clock = size, size / window, clock
        self._left: dict[object, tuple[float, float]] = {}  # key → (tries left, as of when)

    def take(self, key: object) -> float:
        """Spend one try of `key`'s: 0.0, or the seconds until one is left (nothing spent)."""
        now = self._clock()
        left = self._refilled(key, now)
        self._left.pop(key, None)  # re-inserted last: the dict's order is recency
        if left < 1.0:
            self._left[key] = (left, now)
            return (1.0 - left) / self.rate
        self._left[key] = (left - 1.0, now)
        while len(self._left) > MAX_BUDGETS:
            del self._left[next(iter(self._left))]
        return 0.0

    def give_back(self, key: object) -> None:
        """Return a try spent by `take` (the check it paid for succeeded, or did not run)."""
        now = self._clock()
        left = self._refilled(key, now) + 1.0
        if left >= self.size:
            self._left.pop(key, None)
        else:
            self._left[key] = (left, now)

    def _refilled(self, key: object, now: float) -> float:
        left, since = self._left.get(key, (float(self.size), now))
        return min(float(self.size), left + (now - since) * self.rate)


class Authenticator:
    """Checks `Authorization` headers against configured hashes (name → `scheme$…` string)."""

    def __init__(
        self,
        tokens: Mapping[str, str],
        users: Mapping[str, str],
        clock: Callable[[], float] = time.monotonic,
        slots: int = HASH_SLOTS,
    ) -> None:
        self._tokens: dict[str, Hashed] = {name: parse_hash(h) for name, h in tokens.items()}
        self._users: dict[str, Hashed] = {name: parse_hash(h) for name, h in users.items()}
        # what a name without a credential of a kind is hashed against: a hash as costly as
        # the kind's first one (or the other kind's), of random bytes
        by_user, by_token = [*self._users.values()], [*self._tokens.values()]
        self._dummy_user = dummy(next(iter(by_user + by_token), None))
        self._dummy_token = dummy(next(iter(by_token + by_user), None))
        # a digest of each analyst's configured hashes: sessions are bound to it (`binding`)
        self._bindings = {
            name: hashlib.sha256(f"{users.get(name, '')}\0{tokens.get(name, '')}".encode()).digest()
            for name in {*tokens, *users}
        }
        self._key = secrets.token_bytes(32)
        self._verified: dict[bytes, str] = {}
        self._pairs = Budgets(FAILURES, FAILURE_WINDOW, clock)
        self._clients = Budgets(CLIENT_FAILURES, FAILURE_WINDOW, clock)
        self._slots = threading.BoundedSemaphore(slots)
        # the hashes run in these threads alone: the allocator keeps what a thread has used, so
        # hashes spread over the server's whole thread pool would keep 16 MB in each thread
        self._hasher = ThreadPoolExecutor(slots, thread_name_prefix="filterd-hash")
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        """Whether any credential is configured (else every request is refused)."""
        return bool(self._tokens or self._users)

    def binding(self, name: str) -> bytes | None:
        """A digest of `name`'s configured credentials, None if it has none: it changes when
        they do (a new password, a new token, the name removed)."""
        return self._bindings.get(name)

    def identify(self, authorization: str | None, client: str) -> str | None:
        """The analyst the header authenticates, None if it does not (absent, malformed, an
        unknown name or a wrong secret); `Throttled` or `Busy` when it was not checked.
        `client`: the caller's address, whose failures are counted."""
        if not authorization:
            return None
        digest = self._digest(authorization)
        with self._lock:
            known = self._verified.get(digest)
        if known is not None:
            return known
        analyst = self._check(authorization, client)
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

    def login(self, name: str, secret: str, client: str) -> str | None:
        """The analyst `name` if `secret` is their password, or else their API token (the
        workbench's login form takes either); None otherwise, `Throttled` or `Busy` as
        `identify`. One try of the budget, as the API's; nothing is remembered."""
        checks = [(self._users.get(name), self._dummy_user)]
        if secret.startswith(f"{name}."):
            checks.append((self._tokens.get(name), self._dummy_token))
        return self._attempt(client, name, secret, checks)

    def _check(self, authorization: str, client: str) -> str | None:
        scheme, _, credential = authorization.strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() == "bearer":
            name, dot, _ = credential.rpartition(".")
            if not dot:
                return None  # names no one: nothing to hash
            return self._attempt(
                client, name, credential, [(self._tokens.get(name), self._dummy_token)]
            )
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credential, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return None
            name, colon, password = decoded.partition(":")
            if not colon:
                return None
            return self._attempt(
                client, name, password, [(self._users.get(name), self._dummy_user)]
            )
        return None

    def _attempt(
        self, client: str, name: str, secret: str, checks: list[tuple[Hashed | None, Hashed]]
    ) -> str | None:
        """`name` if `secret` matches one of `checks`' hashes (a missing one: its dummy, which
        matches nothing), paid for with one try of the client's and of the (client, name)
        budgets, given back on success."""
        # keyed on digests: a name is up to a form's size, and the budgets hold thousands
        pair = hashlib.blake2b(
            f"{client}\0{name}".encode("utf-8", "surrogatepass"), digest_size=16
        ).digest()
        with self._lock:
            wait = self._pairs.take(pair)
            if wait:
                raise Throttled(wait)
            wait = self._clients.take(client)
            if wait:
                self._pairs.give_back(pair)
                raise Throttled(wait)
        if not self._slots.acquire(blocking=False):
            self._give_back(pair, client)  # nothing was checked
            raise Busy()
        try:
            ok = self._hasher.submit(matches, secret, checks).result()
        finally:
            self._slots.release()
        if not ok:
            return None
        self._give_back(pair, client)
        return name

    def close(self) -> None:
        """End the hashing threads (a check after this fails)."""
        self._hasher.shutdown(wait=False)

    def _give_back(self, pair: bytes, client: str) -> None:
        with self._lock:
            self._pairs.give_back(pair)
            self._clients.give_back(client)


def matches(secret: str, checks: list[tuple[Hashed | None, Hashed]]) -> bool:
    """Whether `secret` matches one of the configured hashes of `checks`; a missing one's dummy
    matches nothing, but costs the time a configured hash does."""
    return any(verify(secret, hashed or fake) and hashed is not None for hashed, fake in checks)


def dummy(template: Hashed | None) -> Hashed:
    """A hash nothing matches, as costly to check as `template` (None: the default scheme's)."""
    if template is None:
        default = {"n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P}
        template = Hashed("scrypt", default, bytes(SALT_BYTES), bytes(HASH_BYTES))
    salt, digest = (
        secrets.token_bytes(len(template.salt)),
        secrets.token_bytes(len(template.digest)),
    )
    return Hashed(template.scheme, template.params, salt, digest)


def client_address(request: Request) -> str:
    """The key a request's failures are counted under: its client's address (behind a proxy
    uvicorn trusts, the forwarded one), an IPv6 client's /64 network (one host has them all)."""
    host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def new_token(name: str) -> str:
    """A new API token for analyst `name`: NAME.SECRET, 32 random bytes in URL-safe base64
    (which has no ".", so the name is what comes before the last one).

    >>> token = new_token("dana")
    >>> token.startswith("dana.") and len(token) == len("dana.") + 43
    True
    """
    return f"{name}.{secrets.token_urlsafe(32)}"
