"""Salted, slow hashes of the HTTP API's secrets (analysts' passwords and API tokens), as the
configuration keeps them: `scheme$params$salt$hash`, salt and hash in unpadded base64.

    scrypt$n=16384,r=8,p=1$<salt>$<hash>        hashlib.scrypt, 32-byte hash (the default)
    pbkdf2_sha256$i=600000$<salt>$<hash>        hashlib.pbkdf2_hmac("sha256", …), 32-byte hash

Only hashes are configured, never secrets: a configuration file or environment that leaks gives
an attacker a slow guessing job per analyst, not a credential. The parameters are bounded
(`parse_hash`), so that a configured hash cannot make one verification take seconds or gigabytes.

>>> hashed = hash_secret("correct horse", "pbkdf2_sha256", rounds=1000)
>>> verify("correct horse", parse_hash(hashed)), verify("wrong horse", parse_hash(hashed))
(True, False)
>>> parse_hash("md5$x$y$z")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
ValueError: unknown hash scheme 'md5' (scrypt, pbkdf2_sha256): make one with
`filterd http hash-password`
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

SCHEMES = ("scrypt", "pbkdf2_sha256")
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1  # about 16 MB and 50 ms per verification
PBKDF2_ROUNDS = 600_000  # OWASP's 2023 figure for PBKDF2-HMAC-SHA256
SALT_BYTES, HASH_BYTES = 16, 32
# Upper bounds on a configured hash's parameters: a verification stays under a second and 128 MB.
MAX_SCRYPT_N, MAX_SCRYPT_R, MAX_SCRYPT_P, MAX_ROUNDS = 2**17, 16, 4, 10_000_000
HINT = "make one with `filterd http hash-password`"


@dataclass(frozen=True)
class Hashed:
    """A parsed hash: its scheme, cost parameters, salt and digest."""

    scheme: str
    params: dict[str, int]
    salt: bytes
    digest: bytes


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def hash_secret(secret: str, scheme: str = "scrypt", *, rounds: int = PBKDF2_ROUNDS) -> str:
    """`secret` hashed with a fresh random salt, as `scheme$params$salt$hash`."""
    salt = secrets.token_bytes(SALT_BYTES)
    if scheme == "scrypt":
        params = {"n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P}
    elif scheme == "pbkdf2_sha256":
        params = {"i": rounds}
    else:
        raise ValueError(f"unknown hash scheme {scheme!r} ({', '.join(SCHEMES)})")
    digest = _derive(secret, Hashed(scheme, params, salt, b""), HASH_BYTES)
    shown = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{scheme}${shown}${_b64(salt)}${_b64(digest)}"


def parse_hash(text: str) -> Hashed:
    """The hash `text` names, or ValueError saying what is wrong with it (never quoting it)."""
    parts = text.split("$")
    if len(parts) != 4:
        raise ValueError(f"not a hash of the form scheme$params$salt$hash: {HINT}")
    scheme, shown, salt_text, digest_text = parts
    if scheme not in SCHEMES:
        raise ValueError(f"unknown hash scheme {scheme!r} ({', '.join(SCHEMES)}): {HINT}")
    try:
        params = {k: int(v) for k, _, v in (p.partition("=") for p in shown.split(","))}
        salt, digest = _unb64(salt_text), _unb64(digest_text)
    except (ValueError, binascii.Error):
        raise ValueError(
            f"{scheme} hash with unreadable parameters, salt or hash: {HINT}"
        ) from None
    if scheme == "scrypt":
        n, r, p = params.get("n", 0), params.get("r", 0), params.get("p", 0)
        if set(params) != {"n", "r", "p"} or not (
            2 <= n <= MAX_SCRYPT_N
            and n & (n - 1) == 0
            and 1 <= r <= MAX_SCRYPT_R
            and 1 <= p <= MAX_SCRYPT_P
        ):
            raise ValueError(
                f"scrypt parameters must be n (a power of 2 up to {MAX_SCRYPT_N}), r (1–"
                f"{MAX_SCRYPT_R}) and p (1–{MAX_SCRYPT_P}): {HINT}"
            )
    elif set(params) != {"i"} or not 1 <= params["i"] <= MAX_ROUNDS:
        raise ValueError(f"pbkdf2_sha256 takes i, the rounds (1–{MAX_ROUNDS}): {HINT}")
    if len(salt) < 8 or len(digest) < 16:
        raise ValueError(f"salt or hash too short (at least 8 and 16 bytes): {HINT}")
    return Hashed(scheme, params, salt, digest)


def verify(secret: str, hashed: Hashed) -> bool:
    """Whether `secret` is the one `hashed` was made from (compared in constant time)."""
    return hmac.compare_digest(_derive(secret, hashed, len(hashed.digest)), hashed.digest)


def _derive(secret: str, hashed: Hashed, length: int) -> bytes:
    data = secret.encode("utf-8", "surrogatepass")
    p = hashed.params
    if hashed.scheme == "scrypt":
        # maxmem: OpenSSL's default (32 MB) is below what the largest allowed n and r need
        return hashlib.scrypt(
            data,
            salt=hashed.salt,
            n=p["n"],
            r=p["r"],
            p=p["p"],
            maxmem=256 * 1024 * 1024,
            dklen=length,
        )
    return hashlib.pbkdf2_hmac("sha256", data, hashed.salt, p["i"], dklen=length)
