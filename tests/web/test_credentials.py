"""[http] credentials: hashes only, checked at load, never shown; the hashing command."""

import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypedDict, TypeVar

import pytest
from click.testing import CliRunner

from filterd.cli import main
from filterd.service import passwords
from filterd.service.config import ConfigError, load
from filterd.service.passwords import Hashed, hash_secret, parse_hash, verify
from filterd.web.auth import (
    CLIENT_FAILURES,
    FAILURE_WINDOW,
    FAILURES,
    HASH_SLOTS,
    Authenticator,
    Busy,
    Throttled,
)
from filterd.web.errors import Problem
from tests.web.conftest import PASSWORD, ROUNDS, basic

T = TypeVar("T")

HERE, THERE = "127.0.0.1", "192.0.2.66"  # the analyst's address, a guesser's


def test_a_hash_verifies_its_secret_only() -> None:
    for scheme in ("scrypt", "pbkdf2_sha256"):
        hashed = parse_hash(hash_secret(PASSWORD, scheme, rounds=ROUNDS))
        assert verify(PASSWORD, hashed) and not verify(PASSWORD + " ", hashed)
    # salted: the same secret hashes differently each time
    assert hash_secret("x", "pbkdf2_sha256", rounds=ROUNDS) != hash_secret(
        "x", "pbkdf2_sha256", rounds=ROUNDS
    )


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('"hunter2"', "http.users.dana: not a hash"),
        ('"md5$a$b$c"', "http.users.dana: unknown hash scheme 'md5'"),
        (
            '"scrypt$n=3,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"',
            "http.users.dana: scrypt parameters",
        ),
        (
            '"pbkdf2_sha256$i=99999999999$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"',
            "http.users.dana: pbkdf2_sha256 takes i",
        ),
    ],
)
def test_a_bad_hash_is_one_line_naming_the_key_and_never_quoting_it(value: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(None, {"FILTERD_HTTP_USERS": "{dana = %s}" % value})
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_a_bad_http_setting_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "f.toml"
    path.write_text("[http]\nport = 70000\n")
    with pytest.raises(ConfigError, match=r"http.port: must be a port number"):
        load(path, {})
    path.write_text('[http]\nenabled = "yes"\n')
    with pytest.raises(ConfigError, match=r"http.enabled: expected bool"):
        load(path, {})
    hashed = hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    path.write_text(f'[http]\ntokens = {{"a:b" = "{hashed}"}}\n')
    with pytest.raises(ConfigError, match=r"http.tokens.a:b: an analyst name"):
        load(path, {})
    path.write_text('[http]\nallowed_hosts = ["filterd.example.net", "a b:80"]\n')
    with pytest.raises(ConfigError, match=r"http.allowed_hosts: 'a b:80' is not a host name"):
        load(path, {})
    with pytest.raises(ConfigError, match=r"http.allowed_hosts: must be a list of host names"):
        load(None, {"FILTERD_HTTP_ALLOWED_HOSTS": "[1]"})
    listed = '["filterd.example.net", "[::1]:8108"]'
    assert load(None, {"FILTERD_HTTP_ALLOWED_HOSTS": listed}).http.allowed_hosts == [
        "filterd.example.net",
        "[::1]:8108",
    ]


def test_credentials_come_from_the_environment_and_never_show() -> None:
    hashed = hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    config = load(
        None, {"FILTERD_HTTP_USERS": '{dana = "%s"}' % hashed, "FILTERD_HTTP_ENABLED": "true"}
    )
    assert config.http.enabled and config.http.users == {"dana": hashed}
    shown = config.public()["http"]
    assert shown["users"] == {"dana": "***"} and hashed not in str(config.public())


def test_a_token_names_its_analyst_and_a_wrong_one_names_nobody() -> None:
    token = "dana.s3cr3t-token"
    auth = Authenticator(
        {"dana": hash_secret(token, "pbkdf2_sha256", rounds=ROUNDS)},
        {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)},
    )
    assert auth.identify(f"Bearer {token}", HERE) == "dana"
    assert auth.identify(f"Bearer {token}", HERE) == "dana"  # remembered, still right
    assert auth.identify(basic("lee", PASSWORD), HERE) == "lee"
    for wrong in (
        None,
        "",
        "Bearer dana.wrong",
        "Bearer s3cr3t-token",
        f"Bearer lee.{token}",
        basic("lee", "wrong"),
        basic("dana", token),
        "Basic !!!",
        "Digest x",
    ):
        assert auth.identify(wrong, HERE) is None, wrong


def test_only_a_verified_header_is_remembered_and_never_in_clear() -> None:
    token = "dana.s3cr3t-token"
    auth = Authenticator({"dana": hash_secret(token, "pbkdf2_sha256", rounds=ROUNDS)}, {})
    assert auth.remembered(f"Bearer {token}") is None  # not verified yet: identify hashes it
    assert (
        auth.identify("Bearer dana.wrong", HERE) is None
        and auth.remembered("Bearer dana.wrong") is None
    )
    assert auth.identify(f"Bearer {token}", HERE) == "dana"
    assert auth.remembered(f"Bearer {token}") == "dana"
    assert auth.remembered(None) is None and auth.remembered("") is None
    assert not any(token.encode() in key or "s3cr3t" in str(key) for key in auth._verified)


def test_guessing_at_a_name_slows_that_address_down_and_never_locks_her_out() -> None:
    now = [0.0]
    auth = Authenticator(
        {}, {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}, clock=lambda: now[0]
    )
    for i in range(FAILURES):
        assert auth.identify(basic("lee", f"guess-{i}"), THERE) is None
    with pytest.raises(Throttled) as throttled:  # refused unhashed, right or wrong
        auth.identify(basic("lee", PASSWORD), THERE)
    assert throttled.value.status == 429
    assert throttled.value.headers is not None
    wait = int(throttled.value.headers["Retry-After"])
    assert 0 < wait <= FAILURE_WINDOW / FAILURES + 1
    # lee at her own desk, never verified before, is not refused
    assert auth.identify(basic("lee", PASSWORD), HERE) == "lee"
    assert auth.login("lee", PASSWORD, "10.9.9.9") == "lee"
    # slowed down, not locked out: one more try per FAILURE_WINDOW / FAILURES seconds
    now[0] += FAILURE_WINDOW / FAILURES
    assert auth.identify(basic("lee", "guess-again"), THERE) is None
    with pytest.raises(Throttled):
        auth.identify(basic("lee", "guess-more"), THERE)
    now[0] += FAILURE_WINDOW / FAILURES
    assert auth.login("lee", PASSWORD, THERE) == "lee"  # the right password, in its turn
    # a success gives its try back: an analyst who types right is never slowed by herself
    for k in range(3 * FAILURES):  # headers of their own: each one checked, none remembered
        assert auth.identify(basic("lee", PASSWORD) + " " * k, HERE) == "lee"


def test_one_address_guessing_at_many_names_is_slowed_down_too() -> None:
    now = [0.0]
    auth = Authenticator(
        {}, {"lee": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}, clock=lambda: now[0]
    )
    for i in range(CLIENT_FAILURES):
        assert auth.login(f"name-{i % 50}-{i}", "guess", THERE) is None
    with pytest.raises(Throttled):
        auth.login("lee", "guess", THERE)
    assert auth.login("lee", PASSWORD, HERE) == "lee"


class Seen(TypedDict):
    """What `counting` saw: hashes run, running now, the most at once, the threads."""

    runs: int
    now: int
    most: int
    threads: set[str]


def counting(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Counts the slow hashes `filterd.web.auth` runs, the most at once, and the threads that
    ran them."""
    import filterd.web.auth as module

    real, lock = passwords.verify, threading.Lock()
    seen: Seen = {"runs": 0, "now": 0, "most": 0, "threads": set()}

    def verify(secret: str, hashed: Hashed) -> bool:
        with lock:
            seen["runs"] += 1
            seen["threads"].add(threading.current_thread().name)
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
        try:
            return real(secret, hashed)
        finally:
            with lock:
                seen["now"] -= 1

    monkeypatch.setattr(module, "verify", verify)
    return seen


def at_once(n: int, check: Callable[[int], T]) -> list[T | Problem]:
    """`check(i)` in n threads started together: each one's result or exception."""
    barrier = threading.Barrier(n)

    def run(i: int) -> T | Problem:
        barrier.wait()
        try:
            return check(i)
        except Problem as refused:  # Throttled, Busy: the outcomes under test
            return refused

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def test_concurrent_guesses_cannot_overrun_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = counting(monkeypatch)
    token = hash_secret("dana.right", "pbkdf2_sha256", rounds=50_000)  # ~25 ms a check
    auth = Authenticator({"dana": token}, {}, slots=100)  # the budget alone bounds them here
    outcomes = at_once(60, lambda i: auth.identify(f"Bearer dana.wrong-{i}", THERE))
    assert seen["runs"] <= FAILURES  # spent before hashing: not 60 hashes, not 31
    assert sum(o is None for o in outcomes) == seen["runs"]
    assert all(isinstance(o, Throttled) for o in outcomes if o is not None)


def test_at_most_hash_slots_hashes_run_at_once_and_the_rest_are_refused_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = counting(monkeypatch)
    users = {f"u{i}": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=200_000) for i in range(3)}
    auth = Authenticator({}, users)

    def timed(i: int) -> tuple[str, float]:
        started = time.perf_counter()
        try:
            auth.identify(basic(f"u{i % 3}", f"wrong-{i}"), f"10.0.0.{i}")  # one budget each
        except Busy:
            return "busy", time.perf_counter() - started
        return "checked", time.perf_counter() - started

    outcomes = at_once(40, timed)
    timings = [o for o in outcomes if not isinstance(o, Problem)]
    assert len(timings) == len(outcomes)  # `timed` answers its refusals itself
    assert seen["most"] <= HASH_SLOTS
    # in threads of their own, whichever thread asked: the memory a hash leaves in its thread's
    # allocator stays within HASH_SLOTS threads, however many ask over time
    assert len(seen["threads"]) <= HASH_SLOTS
    assert all(name.startswith("filterd-hash") for name in seen["threads"])
    checked = [t for what, t in timings if what == "checked"]
    busy = [t for what, t in timings if what == "busy"]
    assert busy and checked and len(checked) + len(busy) == 40
    # refused without waiting for a slot: well within one hash's time
    assert statistics.median(busy) < 0.5 * statistics.median(checked)


def test_an_unknown_name_costs_as_long_as_a_known_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # The work is counted, not timed: every key derivation with its scheme and parameters
    # (what a hash costs), so that a busy machine cannot make the answer wrong either way.
    hashed = hash_secret(PASSWORD, "pbkdf2_sha256", rounds=100_000)
    token = hash_secret("erin.right", "pbkdf2_sha256", rounds=100_000)
    auth = Authenticator({"erin": token}, {"dana": hashed}, slots=100)
    derive = passwords._derive
    derived: list[tuple[str, tuple[tuple[str, int], ...]]] = []

    def counted(secret: str, hashed: Hashed, length: int) -> bytes:
        derived.append((hashed.scheme, tuple(sorted(hashed.params.items()))))
        return derive(secret, hashed, length)

    monkeypatch.setattr(passwords, "_derive", counted)

    def work(check: Callable[[int], object]) -> list[tuple[str, tuple[tuple[str, int], ...]]]:
        derived.clear()
        for i in range(3):
            assert check(i) is None
        return list(derived)

    cases = [
        (
            lambda i: auth.identify(basic("dana", f"wrong-{i}"), f"10.0.1.{i}"),
            lambda i: auth.identify(basic("mallory", f"wrong-{i}"), f"10.0.2.{i}"),
        ),
        (
            lambda i: auth.identify(f"Bearer erin.wrong-{i}", f"10.0.3.{i}"),
            lambda i: auth.identify(f"Bearer mallory.wrong-{i}", f"10.0.4.{i}"),
        ),
        (
            lambda i: auth.login("dana", f"wrong-{i}", f"10.0.5.{i}"),
            lambda i: auth.login("mallory", f"wrong-{i}", f"10.0.6.{i}"),
        ),
    ]
    for known, unknown in cases:
        spent = work(known)
        assert spent and all(params == (("i", 100_000),) for _, params in spent), spent
        assert work(unknown) == spent


def test_hash_password_reads_stdin_and_prints_a_hash_that_loads() -> None:
    result = CliRunner().invoke(
        main, ["http", "hash-password", "--scheme", "pbkdf2_sha256"], input=PASSWORD + "\n"
    )
    assert result.exit_code == 0, result.output
    hashed = result.output.strip()
    assert PASSWORD not in result.output and verify(PASSWORD, parse_hash(hashed))
    assert load(None, {"FILTERD_HTTP_USERS": '{dana = "%s"}' % hashed}).http.users["dana"] == hashed


def test_new_token_prints_a_token_and_the_hash_that_admits_it() -> None:
    result = CliRunner().invoke(main, ["http", "new-token", "dana"])
    assert result.exit_code == 0, result.output
    token = result.output.splitlines()[0].removeprefix("token: ")
    hashed = result.output.splitlines()[1].split(" = ")[1].strip('"')
    assert Authenticator({"dana": hashed}, {}).identify(f"Bearer {token}", HERE) == "dana"
