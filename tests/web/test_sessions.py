"""Session cookies and forms as an attacker would send them: never an exception, never a
session that was not issued, and a cost bounded by the size limits."""

import time

from hypothesis import given
from hypothesis import strategies as st

from filterd.web.errors import Problem
from filterd.web.pages import FORM_FIELDS, parse_form, safe_next
from filterd.web.sessions import MAX_COOKIE, Sessions

SESSIONS = Sessions(b"k" * 32, hours=1.0)


@given(st.text(max_size=300))
def test_any_cookie_text_is_no_session_and_never_an_error(text: str) -> None:
    assert SESSIONS.read(text) is None


@given(st.text(min_size=1, max_size=50))
def test_a_session_is_read_back_only_with_its_own_key(analyst: str) -> None:
    cookie = SESSIONS.issue(analyst)
    session = SESSIONS.read(cookie)
    assert session is not None and session.analyst == analyst
    assert Sessions(b"j" * 32, hours=1.0).read(cookie) is None


def test_a_signed_body_that_is_not_a_session_is_refused() -> None:
    # signed with the right key, but not what `issue` writes
    for body in ("W10", "e30", "bnVsbA", "eyJhIjoxfQ", "%%%"):
        assert SESSIONS.read(f"{body}.{SESSIONS._sign(body)}") is None


def test_an_oversized_cookie_is_refused_before_it_is_decoded() -> None:
    cookie = SESSIONS.issue("dana")
    started = time.perf_counter()
    assert SESSIONS.read(cookie + "A" * (10 * MAX_COOKIE)) is None
    assert SESSIONS.read("A" * 10_000_000) is None
    assert time.perf_counter() - started < 0.5  # refused on its length, not parsed


def test_hostile_forms_are_a_400_never_an_exception() -> None:
    for body in (b"\xff\xfe", b"a=%ff%fe"):
        try:
            form = parse_form(body)
        except Problem as problem:
            assert problem.status == 400
        else:  # percent-escapes that are not UTF-8 decode with replacement characters
            assert all(isinstance(v, str) for vs in form.values() for v in vs)
    many = "&".join(f"f{i}=1" for i in range(FORM_FIELDS + 1)).encode()
    try:
        parse_form(many)
        raise AssertionError("a form of too many fields was read")
    except Problem as problem:
        assert problem.status == 400


@given(st.text(max_size=200))
def test_a_redirect_never_leaves_the_site(target: str) -> None:
    safe = safe_next(target)
    assert safe.startswith("/") and not safe.startswith(("//", "/\\"))
    assert all(ord(ch) >= 32 for ch in safe)
