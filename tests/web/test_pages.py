"""The workbench's pages over HTTP (uvicorn on a free port, a learned SQLite store, the session's
broker): sessions, CSRF, redirects, the queue's filters, escaping of what senders wrote, labels
published as the session's analyst, and the model page's calibration refused by the guardrails.
The browser tests (test_workbench_browser.py) drive the same pages with the keyboard."""

import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

from filterd.entities.memory import EntityEvent
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.config import Config
from filterd.service.records import Decision
from filterd.store.decided import id_hash
from filterd.store.entities import DecidedEvent, EntityLabelled
from filterd.store.forgetting import Selector
from filterd.store.labels import LabelledTokens
from filterd.web.serving import Api
from filterd.web.sessions import SESSION_COOKIE
from tests.conftest import fresh_postgres
from tests.daemon.conftest import read_all, valid
from tests.web.browser import wait_until
from tests.web.client import Client, csrf_of
from tests.web.conftest import ERIN_TOKEN, PASSWORD, WorkbenchOf, learned_config_of, queue_messages

HOSTILE = '<img src=x onerror="alert(1)">'


def rows_of(page: str) -> list[str]:
    return re.findall(r'<tr class="item" data-message-id="([^"]+)"', page)


@pytest.fixture
def workbench(learned_config: Config, workbench_of: WorkbenchOf) -> tuple[Api, list[Decision]]:
    """The app over a learned store with 30 queued decisions (q0 has a hostile subject), users
    dana (password) and erin (API token), labels to the session's feedback topic."""
    api, state = workbench_of(learned_config)
    texts = [r["text"] for r in generate(SynthConfig(n_messages=200, seed=1))[:30]]
    messages = [
        {"id": f"q{i}", "text": t, "subject": HOSTILE if i == 0 else f"s{i}"}
        for i, t in enumerate(texts)
    ]
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    decisions = queue_messages(api.context.config, state, messages[:20], two_days_ago)
    decisions += queue_messages(api.context.config, state, messages[20:], start=20)
    return api, decisions


def test_pages_need_a_session_and_state_changes_its_csrf_token(
    workbench: tuple[Api, list[Decision]],
) -> None:
    api, _ = workbench
    client = Client(api.port)
    status, _, headers = client.get("/queue?label=spam")
    assert status == 303 and headers["location"] == "/login?next=%2Fqueue%3Flabel%3Dspam"
    status, page, _ = client.post("/queue/label", {"message_id": "q1", "label": "spam"})
    assert status == 401 and "log in first" in page
    # the login form's own token: a login posted from elsewhere is refused
    assert (
        Client(api.port).post("/login", {"csrf": "x", "name": "dana", "password": PASSWORD})[0]
        == 403
    )
    assert client.log_in(password="wrong")[0] == 401
    status, _, headers = client.log_in(next="//evil.example/")
    assert status == 303 and headers["location"] == "/queue"  # never off the site
    cookie = next(c for c in headers.get_all("set-cookie", []) if c.startswith(SESSION_COOKIE))
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert PASSWORD not in cookie

    status, page, headers = client.get("/queue")
    assert status == 200 and "dana" in page
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    token = csrf_of(page)
    assert client.post("/messages/q1/label", {"label": "spam"})[0] == 403  # no token
    other = Client(api.port)
    other.log_in()
    other_token = csrf_of(other.get("/queue")[1])
    assert other_token != token
    assert client.post("/messages/q1/label", {"label": "spam", "csrf": other_token})[0] == 403

    # a forged session (another analyst's name, the signature kept) is no session
    forged = Client(api.port)
    value = client.cookies[SESSION_COOKIE]
    forged.cookies[SESSION_COOKIE] = "e30" + value[3:]
    assert forged.get("/queue")[0] == 303
    # an API token logs in too, as its analyst
    erin = Client(api.port)
    assert erin.log_in("erin", ERIN_TOKEN)[0] == 303
    assert "erin" in erin.get("/audit")[1]
    # logging out ends the session in this browser
    assert client.post("/logout", {"csrf": token})[0] == 303
    assert client.get("/queue")[0] == 303


def test_the_queue_filters_orders_and_escapes(workbench: tuple[Api, list[Decision]]) -> None:
    api, decisions = workbench
    client = Client(api.port)
    client.log_in()
    status, page, _ = client.get("/queue?limit=500")
    assert status == 200
    rows = rows_of(page)
    assert sorted(rows) == sorted(f"q{i}" for i in range(30))
    distance = {d.message_id: abs(d.score - d.threshold) for d in decisions}
    assert [distance[r] for r in rows] == sorted(
        distance[r] for r in rows
    )  # most informative first
    assert HOSTILE not in page and "&lt;img src=x onerror=" in page

    spam = {d.message_id for d in decisions if d.label == "spam"}
    assert 0 < len(spam) < 30
    assert set(rows_of(client.get("/queue?label=spam&limit=500")[1])) == spam
    assert set(rows_of(client.get("/queue?reason=random&limit=500")[1])) == {
        f"q{i}" for i in range(0, 30, 3)
    }
    high = sorted(d.score for d in decisions)[-5]
    assert set(rows_of(client.get(f"/queue?min_score={high}&limit=500")[1])) == {
        d.message_id for d in decisions if d.score >= high
    }
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert set(rows_of(client.get(f"/queue?since={yesterday}&limit=500")[1])) == {
        f"q{i}" for i in range(20, 30)
    }
    assert set(rows_of(client.get(f"/queue?until={yesterday}&limit=500")[1])) == {
        f"q{i}" for i in range(20)
    }
    assert rows_of(client.get("/queue?model_version=99")[1]) == []
    assert len(rows_of(client.get("/queue?model_version=1&limit=500")[1])) == 30
    # pages of 10, newest first, with links to the next page
    first, second = (
        client.get("/queue?order=newest&limit=10")[1],
        client.get("/queue?order=newest&limit=10&offset=10")[1],
    )
    assert len(set(rows_of(first)) | set(rows_of(second))) == 20
    assert set(rows_of(first)) <= {f"q{i}" for i in range(20, 30)}
    assert 'href="/queue?order=newest&amp;limit=10&amp;offset=10"' in first
    # a filter that does not parse is a 4xx page naming it, never a 500
    status, page, _ = client.get("/queue?min_score=lots")
    assert status == 422 and "min_score" in page
    assert client.get("/queue?order=random")[0] == 422

    # the message page: the stored content escaped, every selected token's bar, the labels
    status, page, _ = client.get("/messages/q0")
    assert status == 200 and HOSTILE not in page and "&lt;img src=x" in page
    assert page.count('class="bar ') >= 5
    assert 'value="spam"' in page and 'value="ham"' in page
    assert client.get("/messages/nowhere")[0] == 404


def test_labels_from_the_pages_are_published_as_the_sessions_analyst(
    workbench: tuple[Api, list[Decision]], kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    api, _ = workbench
    client = Client(api.port)
    client.log_in()
    token = csrf_of(client.get("/queue")[1])
    # the analyst is the session's, whatever the form says
    status, _, headers = client.post(
        "/messages/q3/label",
        {
            "label": "spam",
            "comment": "phish",
            "analyst": "mallory",
            "csrf": token,
            "next": "/queue?label=ham",
        },
    )
    assert status == 303 and headers["location"] == "/queue?label=ham"
    # htmx (the queue's row buttons) sends the token as a header and swaps the row out
    status, body, _ = client.post(
        "/messages/q4/label", {"label": "ham"}, {"HX-Request": "true", "X-CSRF-Token": token}
    )
    assert status == 200 and body == ""
    status, _, _ = client.post(
        "/queue/label",
        [("message_id", "q5"), ("message_id", "q6"), ("label", "ham"), ("csrf", token)],
    )
    assert status == 303
    status, page, _ = client.post("/messages/q7/label", {"label": "eggs", "csrf": token})
    assert status == 422 and "model.labels" in page
    assert (
        client.post("/queue/label", {"label": "ham", "csrf": token})[0] == 422
    )  # nothing selected

    sent = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 4)
    records = {r["message_id"]: r for r in (valid("feedback", s.value) for s in sent)}
    assert {m: r["label"] for m, r in records.items()} == {
        "q3": "spam",
        "q4": "ham",
        "q5": "ham",
        "q6": "ham",
    }
    assert {r["analyst"] for r in records.values()} == {"dana"}
    assert records["q3"]["comment"] == "phish" and records["q3"]["source"] == "analyst"


def test_the_model_page_previews_and_the_guardrails_refuse(
    workbench: tuple[Api, list[Decision]],
) -> None:
    api, _ = workbench
    client = Client(api.port)
    client.log_in(next="/model")
    status, page, _ = client.get("/model")
    assert status == 200 and 'id="readiness">ready<' in page
    assert "No threshold version yet" in page
    assert "too few positives" not in page  # the preview is computed when asked for
    # no labelled window yet: the preview says why, and applying is refused the same way
    assert "too few positives" in client.get("/model/preview?target_recall=0.9")[1]
    assert "too few positives" in client.get("/model?target_recall=0.9")[1]  # without htmx
    status, page, _ = client.post(
        "/model/calibrate", {"target_recall": "0.9", "csrf": csrf_of(page)}
    )
    assert status == 409 and "Not applied" in page and "too few positives" in page
    assert client.get("/model/preview?target_recall=2")[0] == 422
    assert client.post("/model/calibrate", {"target_recall": "0.9"})[0] == 403


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_workbench_any(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    module_workbench_of: WorkbenchOf,
) -> Client:
    """The workbench over a learned store with one queued message, q1, on SQLite, then on
    PostgreSQL, and a client logged in as dana: one per database for the tests of this module
    that only ask it and change nothing (bad input), rather than one per test."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'filterd.db'}"
    else:
        url = fresh_postgres(request.getfixturevalue("postgres_server"))
    api, state = module_workbench_of(learned_config_of(url))
    queue_messages(api.context.config, state, [{"id": "q1", "text": "hello there"}])
    client = Client(api.port)
    client.log_in()
    return client


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/messages/q1?position=%C2%B2", "position"),  # "²": a digit to str.isdigit(), not int()
        ("/messages/q1?position=-1", "position"),
        ("/messages/q1?position=99999999999", "position"),
        ("/messages/a%00b", "id"),  # PostgreSQL text cannot hold NUL
        ("/messages/?id=a%00b", "id"),
        ("/messages/" + "x" * 257, "id"),
        ("/queue?model_version=9223372036854775808", "model_version"),  # 2^63
        ("/messages/q1?model_version=%C2%B2", "model_version"),
        ("/queue?since=0001-01-01T00:00:00%2B14:00", "since"),  # before year 1 in UTC
        ("/audit?message_id=a%00b", "message_id"),
        ("/audit?analyst=d%00na", "analyst"),
    ],
)
def test_bad_input_on_the_pages_is_a_4xx_naming_it(
    shared_workbench_any: Client, caplog: pytest.LogCaptureFixture, path: str, field: str
) -> None:
    with structlog.testing.capture_logs() as events:
        status, page, _ = shared_workbench_any.get(path)
        wait_until(lambda: [e for e in events if e.get("status") == 422], what="its log line")
    assert status == 422 and f"({field})</p>" in page
    # the request's own line, and nothing else: no "store unavailable", no traceback
    assert {e["event"] for e in events} == {"http request"}
    # nor a warning or traceback from the server (an access line of uvicorn's may show when
    # another test in this process configured logging: it says nothing about the request)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_analyst_manages_the_lists_and_rules_from_their_page(
    workbench: tuple[Api, list[Decision]],
) -> None:
    api, _ = workbench
    client = Client(api.port)
    client.log_in(next="/rules")
    status, page, _ = client.get("/rules")
    assert status == 200 and "No entity is on a list." in page and "No rules." in page
    assert "none (no <code>[entities]</code> keys configured)" in page
    token = csrf_of(page)
    entry = {"key": "customer", "value": HOSTILE, "outcome": "allow", "for": "7d", "csrf": token}
    assert client.post("/rules/lists", entry)[0] == 303
    rule = {"name": "huge", "when": "amount >= 5000", "outcome": "block", "reason": "limit"}
    assert client.post("/rules", {**rule, "csrf": token})[0] == 303
    assert client.post("/rules", rule)[0] == 403  # no CSRF token: nothing added
    status, page, _ = client.get("/rules")
    assert status == 200 and HOSTILE not in page and "&lt;img src=x" in page  # escaped
    assert (
        '<tr class="rule" data-name="huge">' in page
        and '<td class="small">until removed' not in page
    )
    model = api.context.model
    (listed,) = model.list_entries()
    assert (listed.value, listed.outcome, listed.created_by) == (HOSTILE, "allow", "dana")
    assert listed.expires_at is not None and listed.expires_at > datetime.now(UTC)
    (added,) = model.rules()
    assert (added.when, added.outcome, added.created_by) == ("amount >= 5000", "block", "dana")
    assert page.count('<tr class="change">') == 2

    # a condition that does not parse, a duration that is none: 422 pages naming the field
    status, page, _ = client.post("/rules", {**rule, "when": "amount >", "csrf": token})
    assert status == 422 and "expected a number or a text in quotes" in page and "when" in page
    status, page, _ = client.post("/rules/lists", {**entry, "for": "soon", "csrf": token})
    assert status == 422 and "(for)</p>" in page
    assert [r.when for r in model.rules()] == ["amount >= 5000"]

    removal = {"key": "customer", "value": HOSTILE, "csrf": token}
    assert client.post("/rules/lists/remove", removal)[0] == 303
    assert client.post("/rules/remove", {"name": "huge", "csrf": token})[0] == 303
    assert client.post("/rules/remove", {"name": "huge", "csrf": token})[0] == 404
    assert model.list_entries() == [] and model.rules() == []
    changes = [(c.action, c.analyst) for c in model.rule_changes()]
    assert changes == [("removed", "dana"), ("added", "dana")]


def test_an_entitys_page_shows_its_messages_velocity_and_labels_them_all_at_once(
    workbench: tuple[Api, list[Decision]], kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    """The entity memory's events keep their message's id: the page lists the entity's newest
    messages with their last label, counts them within the memory's windows back from the
    stream's time, and labels them all in one post; the queue filters by the entity."""
    api, _ = workbench
    model = api.context.model
    now = datetime.now(UTC)
    t = 1.8e9  # the stream's time of the newest event
    with model.transaction() as writing:
        writing.record_entity_events(
            [
                DecidedEvent("q1", EntityEvent("customer", "c1", t - 7200, 20.0, "t9")),
                DecidedEvent(
                    "q2", EntityEvent("customer", "c1", t - 60, 500.0, "t9"), "spam", 3.25, "rule"
                ),
                DecidedEvent("q2", EntityEvent("terminal", "t9", t - 60, 500.0, None)),
                DecidedEvent("q3", EntityEvent("customer", "c2", t, 5.0, None)),
            ],
            now,
        )
        writing.record_entity_labels([EntityLabelled(id_hash("q1"), "customer", "c1", t)], [], now)
    client = Client(api.port)
    client.log_in()
    status, page, _ = client.get("/entity?key=customer&value=c1")
    assert status == 200, page
    assert re.findall(r'<tr class="entity-message" data-message-id="([^"]+)"', page) == [
        "q2",
        "q1",
    ]
    # each message's decision: q1's was not told
    decisions = re.findall(r'<td class="decision">(.*?)</td><td class="num">([^<]*)</td>', page)
    assert decisions == [('spam <span class="muted small">by rule</span>', "3.25"), ("", "")]
    assert "<dt>Messages in the last 1h</dt><dd>1</dd>" in page
    assert "<dt>Messages in the last 1d</dt><dd>2</dd>" in page
    assert '<dd id="labelled">1</dd>' in page and "On no list." in page
    # the queue, filtered by the entity: its queued messages only
    status, queue, _ = client.get("/queue?entity=customer%3Dc1&include_labelled=true")
    assert status == 200 and sorted(rows_of(queue)) == ["q1", "q2"]
    assert client.get("/queue?entity=customer")[0] == 422  # KEY=VALUE
    assert client.get("/entity?key=customer&value=" + "x" * 201)[0] == 422

    form = {"key": "customer", "value": "c1", "label": "spam", "comment": "card stolen"}
    status, _, headers = client.post("/entity/label", {**form, "csrf": csrf_of(page)})
    assert status == 303 and headers["location"] == "/entity?key=customer&value=c1"
    assert client.post("/entity/label", form)[0] == 403  # no CSRF token: nothing sent
    missing = {**form, "value": "c-none", "csrf": csrf_of(page)}
    assert client.post("/entity/label", missing)[0] == 404
    sent = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 2)
    records = [valid("feedback", s.value) for s in sent]
    assert sorted((r["message_id"], r["label"], r["analyst"]) for r in records) == [
        ("q1", "spam", "dana"),
        ("q2", "spam", "dana"),
    ]


def test_the_audit_page_forgets_an_analysts_labels_when_asked_with_its_token(
    workbench: tuple[Api, list[Decision]],
) -> None:
    api, _ = workbench
    model = api.context.model
    model.learn(
        [LabelledTokens(f"f{i}", "ham", ["prize", "cash"], analyst="mallory") for i in (1, 2)],
        holdout_fraction=0,
    )
    client = Client(api.port)
    client.log_in(next="/audit?analyst=mallory")
    status, page, _ = client.get("/audit?analyst=mallory")
    assert status == 200 and 'class="forget"' in page
    assert "2 labels in force given by mallory" in page
    token = csrf_of(page)
    assert client.post("/audit/forget", {"analyst": "mallory"})[0] == 403  # no token
    assert client.post("/audit/forget", {"analyst": "", "csrf": token})[0] == 422
    status, _, headers = client.post("/audit/forget", {"analyst": "mallory", "csrf": token})
    assert status == 303 and headers["location"] == "/audit?analyst=mallory"
    assert model.forget(Selector(analyst="mallory"), dry_run=True).learned == ()
    status, page, _ = client.get("/audit?analyst=mallory")
    assert status == 200 and 'class="forget"' not in page  # none left to forget
    status, page, _ = client.get("/audit?analyst=dana")  # who forgot them
    assert page.count("<td>forgotten</td>") == 2
    # a sender's labels, counted and forgotten the same way
    model.learn([LabelledTokens("f3", "spam", ["from:evil.example"], analyst="eve")], 0)
    status, page, _ = client.get("/audit?sender=evil.example")
    assert status == 200 and "1 label in force of messages from evil.example" in page
    assert client.get("/audit?sender=a@")[0] == 422
    form = {"sender": "evil.example", "csrf": csrf_of(page)}
    status, _, headers = client.post("/audit/forget", form)
    assert status == 303 and headers["location"] == "/audit?sender=evil.example"
    assert model.forget(Selector(sender="evil.example"), dry_run=True).learned == ()
