"""The workbench's logins and sessions over HTTP (uvicorn on a free port, a learned SQLite
store): a session ends at logout even for a saved copy of its cookie, and with the analyst's
credentials, across a restart; over HTTPS the cookies are `__Host-` cookies; guessing at a name
from one address never refuses the analyst at another; another site's page cannot post."""

from collections.abc import Callable, Iterator

import pytest
import structlog
from msgspec.structs import replace

from filterd.daemon.model_state import ModelState
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.passwords import hash_secret
from filterd.store.handle import Store
from filterd.web.auth import FAILURES
from filterd.web.serving import Api
from filterd.web.sessions import SESSION_COOKIE
from tests.web.client import Client, csrf_of
from tests.web.conftest import PASSWORD, ROUNDS, Serve

SECRET = "a session secret of at least 32 characters"


@pytest.fixture
def start(learned_config: Config, serve: Serve) -> Iterator[Callable[[dict[str, str]], Api]]:
    """Starts the app over the learned store with `users` (name → password), sessions signed
    with SECRET: a restart of the same deployment, with its credentials as they are now."""
    store = Store.open(learned_config.database.url)
    model = store.model(learned_config.model.name)
    state = ModelState(model, learned_config, Metrics(), Health(), structlog.get_logger("test"))
    state.refresh(force=True)

    hashes: dict[str, str] = {}  # password → its hash, as the configuration keeps it

    def started(users: dict[str, str]) -> Api:
        for password in users.values():
            hashes.setdefault(password, hash_secret(password, "pbkdf2_sha256", rounds=ROUNDS))
        hashed = {name: hashes[password] for name, password in users.items()}
        http = replace(learned_config.http, users=hashed, session_secret=SECRET)
        return serve(replace(learned_config, http=http), model, state)

    yield started
    store.close()


def test_a_cookie_saved_before_logout_is_refused_after_it(
    start: Callable[[dict[str, str]], Api],
) -> None:
    api = start({"dana": PASSWORD})
    client = Client(api.port)
    assert client.log_in()[0] == 303
    token = csrf_of(client.get("/queue")[1])
    saved = dict(client.cookies)
    assert client.post("/logout", {"csrf": token})[0] == 303
    replay = Client(api.port)
    replay.cookies.update(saved)
    status, _, headers = replay.get("/audit")
    assert status == 303 and headers["location"].startswith("/login")
    assert replay.post("/logout", {"csrf": token})[0] == 401
    # a new login is a new session
    assert client.log_in()[0] == 303 and client.get("/audit")[0] == 200


def test_a_session_ends_with_the_credentials_it_was_issued_under(
    start: Callable[[dict[str, str]], Api],
) -> None:
    client = Client(start({"dana": PASSWORD, "lee": PASSWORD}).port)
    assert client.log_in()[0] == 303
    cookie = client.cookies[SESSION_COOKIE]

    def works_after_restart(users: dict[str, str]) -> bool:
        again = Client(start(users).port)
        again.cookies[SESSION_COOKIE] = cookie
        return again.get("/audit")[0] == 200

    assert works_after_restart({"dana": PASSWORD, "lee": PASSWORD})  # the same credentials
    assert works_after_restart({"lee": PASSWORD, "dana": PASSWORD})
    assert not works_after_restart({"dana": "a new password", "lee": PASSWORD})
    assert not works_after_restart({"lee": PASSWORD})  # dana removed from [http] users


def test_over_https_the_session_is_a_host_only_secure_cookie(
    start: Callable[[dict[str, str]], Api],
) -> None:
    api = start({"dana": PASSWORD})
    # as a TLS proxy on this host sends them on (uvicorn trusts its forwarded headers)
    browser = Client(api.port, headers={"X-Forwarded-Proto": "https"})
    status, _, headers = browser.log_in()
    assert status == 303
    cookies = {c.split("=")[0]: c.lower() for c in headers.get_all("set-cookie", [])}
    session = cookies["__Host-" + SESSION_COOKIE]
    assert "secure" in session and "path=/" in session and "domain" not in session
    assert "httponly" in session and "samesite=strict" in session
    assert browser.get("/audit")[0] == 200
    # a cookie without the prefix (which any host of the site could have set) is no session
    planted = Client(api.port, headers={"X-Forwarded-Proto": "https"})
    planted.cookies[SESSION_COOKIE] = browser.cookies["__Host-" + SESSION_COOKIE]
    assert planted.get("/audit")[0] == 303
    # over plain HTTP the cookie has its plain name (a browser refuses __Host- without Secure)
    plain = Client(api.port)
    assert plain.log_in()[0] == 303 and SESSION_COOKIE in plain.cookies


def test_guessing_at_the_login_form_never_refuses_the_analyst_at_another_address(
    start: Callable[[dict[str, str]], Api],
) -> None:
    api = start({"dana": PASSWORD})
    guesser = Client(api.port, address="127.0.0.2")
    for i in range(FAILURES):
        assert guesser.log_in(password=f"guess-{i}")[0] == 401
    status, page, headers = guesser.log_in()  # her password, from the guesser's address
    assert status == 429 and "try again in" in page and int(headers["retry-after"]) > 0
    assert Client(api.port).log_in()[0] == 303  # dana at her desk


def test_another_sites_page_cannot_post_even_with_the_forms_token(
    start: Callable[[dict[str, str]], Api],
) -> None:
    api = start({"dana": PASSWORD})
    client = Client(api.port)
    client.log_in()
    token = csrf_of(client.get("/queue")[1])
    for headers in (
        {"Origin": "http://evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        status, page, _ = client.post("/logout", {"csrf": token}, headers)
        assert status == 403 and "another site" in page, headers
        status, page, _ = Client(api.port).post("/login", {"name": "dana"}, headers)
        assert status == 403, headers
    assert client.get("/audit")[0] == 200  # still logged in
    own = {"Origin": f"http://127.0.0.1:{api.port}", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/logout", {"csrf": token}, own)[0] == 303
