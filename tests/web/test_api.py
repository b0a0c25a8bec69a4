"""The HTTP API served for real (uvicorn on a free port) over a learned SQLite store, called
over HTTP: authentication, checks, bad input, the reads and the OpenAPI document."""

import http.client
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import NoReturn

import jsonschema
import msgspec
import pytest
import structlog
from msgspec.structs import replace
from sqlalchemy import event

from filterd.daemon.entity_state import EntityState
from filterd.daemon.model_state import ModelState
from filterd.daemon.override_state import OverrideState
from filterd.daemon.recorder import Recorder
from filterd.daemon.scorer import queue_for_review
from filterd.entities import EntitySpec
from filterd.evaluation.synth import SynthConfig, generate
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config, Review
from filterd.service.decide import decide_payloads
from filterd.service.passwords import hash_secret
from filterd.service.records import Decision, Message
from filterd.service.review import ReviewItem, queued_item
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.web.api import CHECK_BATCH, FORGET_IDS
from filterd.web.auth import FAILURES
from filterd.web.context import WebContext
from filterd.web.serving import Api
from tests.conftest import fresh_postgres
from tests.daemon.conftest import valid
from tests.web.browser import wait_until
from tests.web.client import Client
from tests.web.conftest import PASSWORD, ROUNDS, Serve, basic, call, learned_config_of

DANA = basic("dana", PASSWORD)
# messages like those the store learned (filterd.evaluation.synth, seed 1): their words are known
LEARNED = generate(SynthConfig(n_messages=200, seed=1))
SPAMMY = next(r["text"] for r in LEARNED if r["label"] == "spam")
SYNTH = [r for r in LEARNED if r["label"] == "ham"][:2] + [
    r for r in LEARNED if r["label"] == "spam"
][:2]
PROTECTED = [
    ("POST", "/v1/check"),
    ("POST", "/v1/feedback"),
    ("GET", "/v1/decisions/m1"),
    ("GET", "/v1/review"),
    ("GET", "/v1/model"),
    ("GET", "/v1/lists"),
    ("POST", "/v1/lists"),
    ("DELETE", "/v1/lists/customer/c1"),
    ("GET", "/v1/rules"),
    ("POST", "/v1/rules"),
    ("DELETE", "/v1/rules/big"),
    ("POST", "/v1/forget"),
]


def serve_learned(learned: Config, serve: Serve) -> Iterator[Api]:
    """The API over the learned store of configuration `learned`, analyst dana with PASSWORD,
    a small body limit; its store is closed at the end."""
    users = {"dana": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}
    limits = replace(learned.limits, max_bytes=20_000)
    config = replace(learned, http=replace(learned.http, users=users), limits=limits)
    store = Store.open(config.database.url)
    model = store.model(config.model.name)
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger("test"))
    state.refresh(force=True)
    assert state.decider is not None and state.decider.not_ready is None
    yield serve(config, model, state)
    store.close()


@pytest.fixture
def api(learned_config: Config, serve: Serve) -> Iterator[Api]:
    """The API over a learned SQLite store (`serve_learned`)."""
    yield from serve_learned(learned_config, serve)


@pytest.fixture(scope="module")
def shared_api(tmp_path_factory: pytest.TempPathFactory, module_serve: Serve) -> Iterator[Api]:
    """One API over a learned SQLite store for the tests that only ask it, and change nothing
    (bad input), so that each need not start its own."""
    url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'filterd.db'}"
    yield from serve_learned(learned_config_of(url), module_serve)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_api_any(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    module_serve: Serve,
) -> Iterator[Api]:
    """`shared_api` on SQLite, then on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('shared') / 'filterd.db'}"
    else:
        url = fresh_postgres(request.getfixturevalue("postgres_server"))
    yield from serve_learned(learned_config_of(url), module_serve)


def conforms(port: int, name: str, value: object) -> None:
    """`value` is valid against component `name` of the API's own OpenAPI document."""
    _, document, _ = call(port, "GET", "/v1/openapi.json")
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(value)


def test_every_endpoint_that_reads_or_writes_needs_a_credential(api: Api) -> None:
    for i, (method, path) in enumerate(PROTECTED):
        # dana's wrong password and token twice on each of five endpoints: her FAILURES (10)
        # before the throttle answers 429 instead; the others without and with another name
        dana = (basic("dana", "wrong"), "Bearer dana.x") if i < FAILURES // 2 else ()
        stranger = basic(f"mallory{i // FAILURES}", PASSWORD)  # each within FAILURES too
        for auth in (None, stranger, *dana):
            status, body, headers = call(api.port, method, path, {"id": "m1"}, auth=auth)
            assert status == 401, (method, path, auth)
            assert body["error"].startswith("authentication required")
            # a challenge no browser answers with a prompt (and then keeps the password for
            # every page that posts here): basic credentials sent unasked still work
            assert headers["www-authenticate"] == 'Bearer realm="filterd"'
    status, document, _ = call(api.port, "GET", "/v1/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.1")


def test_the_openapi_document_is_generated_from_the_record_types(api: Api) -> None:
    _, document, _ = call(api.port, "GET", "/v1/openapi.json")
    components = document["components"]["schemas"]
    for kind in (Message, Decision):
        generated = msgspec.json.schema(kind, ref_template="#/components/schemas/{name}")
        assert components[kind.__name__] == generated["$defs"][kind.__name__]
    assert set(document["paths"]) == {
        "/v1/check",
        "/v1/feedback",
        "/v1/forget",
        "/v1/decisions/{id}",
        "/v1/review",
        "/v1/model",
        "/v1/lists",
        "/v1/lists/{key}/{value}",
        "/v1/rules",
        "/v1/rules/{name}",
    }
    review = document["paths"]["/v1/review"]["get"]["parameters"]
    assert {p["name"] for p in review} >= {"label", "reason", "min_score", "max_score", "limit"}


def test_a_check_decides_as_the_scorer_decides(api: Api) -> None:
    one = {"id": "c1", "text": SPAMMY}
    status, body, _ = call(api.port, "POST", "/v1/check", one, auth=DANA)
    assert status == 200 and body["not_ready"] is None
    conforms(api.port, "CheckResponse", body)
    (decision,) = body["decisions"]
    valid("decision", msgspec.json.encode(decision))  # against schemas/decision.v1.json
    assert decision["source_topic"] == "http" and decision["offset"] == 0

    batch = [{"id": f"c{i}", "text": text} for i, text in enumerate([SPAMMY, SYNTH[0]["text"], ""])]
    status, body, _ = call(api.port, "POST", "/v1/check", batch, auth=DANA)
    assert status == 200 and [d["message_id"] for d in body["decisions"]] == ["c0", "c1", "c2"]
    # the scorer's path on the same records, with the same model and threshold
    context = api.context
    assert context.scoring.decider is not None
    expected = decide_payloads(
        context.scoring.decider,
        context.scoring.threshold,
        [msgspec.json.encode(m) for m in batch],
        20_000,
    )
    assert [(d["label"], d["score"]) for d in body["decisions"]] == [
        (d.label, d.score) for d in expected.decisions
    ]
    assert body["decisions"][0]["score"] == decision["score"] and decision["label"] == "spam"


def test_a_check_reads_the_scorers_entity_memory_and_is_not_remembered(
    learned_config: Config, serve: Serve
) -> None:
    users = {"dana": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}
    config = replace(learned_config, http=replace(learned_config.http, users=users))
    store = Store.open(config.database.url)
    model = store.model(config.model.name)
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger("test"))
    state.refresh(force=True)
    entities = EntityState(model, EntitySpec(keys=("customer",)), structlog.get_logger("test"))
    t0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    entities.evidence(  # three payments of c1 the scorer decided
        [Message(id=f"p{i}", text="pay", attributes={"customer": "c1"}, ts=t0) for i in range(3)]
    )
    api = serve(config, model, state, evidence=entities.peek)
    check = {"id": "c1", "text": "pay", "attributes": {"customer": "c1"}}
    for _ in range(2):  # the first check is not counted by the second
        status, body, _ = call(api.port, "POST", "/v1/check", check, auth=DANA)
        assert status == 200, body
        (decision,) = body["decisions"]
        assert decision["evidence"] == ["3 messages of customer c1 in the last 1h"]
    assert len(entities.memory) == 1 and entities.take()[0].keys() == {"p0", "p1", "p2"}
    store.close()


def test_an_analyst_manages_the_lists_and_a_check_obeys_them(api: Api) -> None:
    stolen = {"key": "customer", "value": "c/596", "outcome": "block", "reason": "stolen card"}
    status, body, _ = call(api.port, "POST", "/v1/lists", stolen, auth=DANA)
    assert status == 201, body
    conforms(api.port, "ListedEntity", body)
    assert (body["created_by"], body["active"], body["expires_at"]) == ("dana", True, None)
    snooze = {
        "key": "terminal",
        "value": "t9",
        "outcome": "allow",
        "expires_at": "2099-01-01T00:00:00Z",
    }
    assert call(api.port, "POST", "/v1/lists", snooze, auth=DANA)[0] == 201
    status, page, _ = call(api.port, "GET", "/v1/lists", auth=DANA)
    assert status == 200 and [(e["key"], e["outcome"]) for e in page["entries"]] == [
        ("customer", "block"),
        ("terminal", "allow"),
    ]
    # every scorer reads them within seconds; so does this check, made through the same lists
    kept = OverrideState(api.context.model, EntitySpec(), structlog.get_logger("test"))
    kept.refresh(force=True)
    api.context.overrides = kept.overridden
    check = {"id": "k1", "text": "hello", "attributes": {"customer": "c/596"}}
    status, body, _ = call(api.port, "POST", "/v1/check", check, auth=DANA)
    (decision,) = body["decisions"]
    assert (decision["label"], decision["decided_by"]) == ("spam", "list")

    for bad, field in [
        ({**stolen, "outcome": "blok"}, "$.outcome"),
        ({**stolen, "expires_at": "2020-01-01T00:00:00Z"}, "$.expires_at"),
        ({**stolen, "expires_at": "2099-01-01T00:00:00"}, "$.expires_at"),  # no time zone
        ({**stolen, "value": ""}, "$.value"),
        ({**stolen, "extra": 1}, "$.extra"),
    ]:
        status, body, _ = call(api.port, "POST", "/v1/lists", bad, auth=DANA)
        assert status == 422 and body["field"] == field, (bad, body)
    status, body, _ = call(api.port, "DELETE", "/v1/lists/customer/c%2F596", auth=DANA)
    assert status == 200 and body["value"] == "c/596"
    assert call(api.port, "DELETE", "/v1/lists/customer/c%2F596", auth=DANA)[0] == 404
    changes = api.context.model.list_changes()
    assert (changes[0].action, changes[0].value, changes[0].analyst) == ("removed", "c/596", "dana")


def test_an_analyst_manages_the_rules_and_a_check_obeys_them(api: Api) -> None:
    huge = {"name": "huge", "when": "amount >= 5000", "outcome": "block", "reason": "limit"}
    status, added, _ = call(api.port, "POST", "/v1/rules", huge, auth=DANA)
    assert status == 201 and added == {**huge, "created_by": "dana"}
    burst = {"name": "burst", "when": "customer:count_1h > 3", "outcome": "review"}
    status, body, _ = call(api.port, "POST", "/v1/rules", burst, auth=DANA)
    assert status == 422 and body["field"] == "$.when"  # this configuration has no [entities]
    assert body["error"].startswith("no entity feature customer:count_1h")
    status, page, _ = call(api.port, "GET", "/v1/rules", auth=DANA)
    assert status == 200 and [r["name"] for r in page["rules"]] == ["huge"]
    # every scorer reads them within seconds; so does this check, made through the same rules
    kept = OverrideState(api.context.model, EntitySpec(), structlog.get_logger("test"))
    kept.refresh(force=True)
    api.context.overrides = kept.overridden
    check = {"id": "k1", "text": "hello", "attributes": {"amount": 7000}}
    status, body, _ = call(api.port, "POST", "/v1/check", check, auth=DANA)
    (decision,) = body["decisions"]
    assert (decision["label"], decision["decided_by"]) == ("spam", "rule")
    assert decision["evidence"][0] == "block rule huge: amount >= 5000 (limit)"
    status, body, _ = call(api.port, "DELETE", "/v1/rules/huge", auth=DANA)
    assert status == 200 and (body["name"], body["created_by"]) == ("huge", "dana")
    assert call(api.port, "DELETE", "/v1/rules/huge", auth=DANA)[0] == 404
    changes = api.context.model.rule_changes()
    assert [(c.action, c.name, c.analyst) for c in changes] == [
        ("removed", "huge", "dana"),
        ("added", "huge", "dana"),
    ]


def test_an_analyst_forgets_a_poisoners_labels_counting_first(api: Api) -> None:
    model = api.context.model
    poison = [LabelledTokens(f"p{i}", "ham", ["free", "prize"], analyst="mallory") for i in (1, 2)]
    model.learn(poison, holdout_fraction=0)
    before = model.load()[0].canonical()["ham"]
    status, body, _ = call(api.port, "POST", "/v1/forget", {"analyst": "mallory"}, auth=DANA)
    assert status == 200 and body == {"confirmed": False, "learned": 2, "held_out": 0}
    conforms(api.port, "ForgetResult", body)
    assert model.load()[0].canonical()["ham"] == before  # counted only
    request = {"analyst": "mallory", "confirm": True}
    status, body, _ = call(api.port, "POST", "/v1/forget", request, auth=DANA)
    assert status == 200 and body == {"confirmed": True, "learned": 2, "held_out": 0}
    assert model.load()[0].canonical()["ham"] != before
    events = list(model.events(analyst="dana"))
    assert sorted((e.message_id, e.outcome) for e in events) == [
        ("p1", "forgotten"),
        ("p2", "forgotten"),
    ]
    model.learn([LabelledTokens("p3", "spam", ["from:evil.example"], analyst="eve")], 0)
    sender = {"sender": "evil.example", "confirm": True}
    status, body, _ = call(api.port, "POST", "/v1/forget", sender, auth=DANA)
    assert status == 200 and body == {"confirmed": True, "learned": 1, "held_out": 0}
    for bad, field in (
        ({}, "$"),
        ({"analyst": "x", "everyone": True}, "$.everyone"),
        ({"sender": "a@"}, "$"),
        ({"sender": ""}, "$.sender"),
    ):
        status, body, _ = call(api.port, "POST", "/v1/forget", bad, auth=DANA)
        assert status == 422 and body["field"] == field, body


@pytest.mark.parametrize(
    "sender", ["a." * 160, "@" * 320, "a" * 319 + "@", "-." * 160, "\u0430" * 320, "+1 " * 106]
)
def test_a_hostile_sender_to_forget_is_answered_at_once(api: Api, sender: str) -> None:
    started = time.process_time()
    status, body, _ = call(api.port, "POST", "/v1/forget", {"sender": sender}, auth=DANA)
    assert status in (200, 422), body
    assert status == 200 or body["field"] == "$"
    assert time.process_time() - started < 1.0


def test_a_large_check_decides_as_a_small_one(api: Api) -> None:
    # a body over INLINE_BYTES is checked in the thread pool, a smaller one on the event loop
    from filterd.web.check import INLINE_BYTES

    texts = [r["text"] for r in LEARNED]
    batch = [{"id": f"c{i}", "text": texts[i % len(texts)]} for i in range(CHECK_BATCH)]
    while len(msgspec.json.encode(batch)) <= INLINE_BYTES:
        batch = [{**m, "text": m["text"] + " " + m["text"]} for m in batch]
    assert len(msgspec.json.encode(batch)) <= 20_000  # under the fixture's max_bytes
    status, body, _ = call(api.port, "POST", "/v1/check", batch, auth=DANA)
    assert status == 200 and len(body["decisions"]) == CHECK_BATCH
    for message, decision in zip(batch[:3], body["decisions"][:3], strict=True):
        status, one, _ = call(api.port, "POST", "/v1/check", message, auth=DANA)
        assert status == 200
        assert (one["decisions"][0]["label"], one["decisions"][0]["score"]) == (
            decision["label"],
            decision["score"],
        )


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("POST", "/v1/check", b"{not json", 400, None),
        ("POST", "/v1/check", b"\xff\xfe", 400, None),
        ("POST", "/v1/check", b"{}", 422, "$.id"),
        ("POST", "/v1/check", b'{"id": 5}', 422, "$.id"),
        ("POST", "/v1/check", b'{"id": "a", "format": "pdf"}', 422, "$.format"),
        ("POST", "/v1/check", b'[{"id": "a"}, {"text": "x"}]', 422, "$[1].id"),
        ("POST", "/v1/check", b"[]", 422, None),
        (
            "POST",
            "/v1/check",
            msgspec.json.encode([{"id": str(i)} for i in range(CHECK_BATCH + 1)]),
            422,
            None,
        ),
        ("POST", "/v1/check", b'{"id": "a", "text": "' + b"x" * 30_000 + b'"}', 413, None),
        ("POST", "/v1/check", b"[" * 11_000 + b"]" * 11_000, 413, None),
        (
            "POST",
            "/v1/check",
            b'{"id": "a", "attributes": ' + b'{"a": ' * 2000 + b"1" + b"}" * 2001,
            400,
            None,
        ),
        ("POST", "/v1/feedback", b'{"message_id": "m1"}', 422, "$.label"),
        ("POST", "/v1/feedback", b'{"message_id": "m1", "label": "eggs"}', 422, "$.label"),
        ("POST", "/v1/feedback", b'{"message_id": "", "label": "spam"}', 422, "$.message_id"),
        ("GET", "/v1/review?limit=x", None, 422, "limit"),
        ("GET", "/v1/review?limit=0", None, 422, "limit"),
        ("GET", "/v1/review?reason=nearby", None, 422, "reason"),
        ("GET", "/v1/review?colour=red", None, 422, "colour"),
        ("GET", "/v1/review?entity=customer", None, 422, "entity"),
        ("POST", "/v1/lists", b'{"key": "customer", "value": "' + b"x" * 30_000 + b'"}', 413, None),
        ("POST", "/v1/lists", b"[" * 11_000 + b"]" * 11_000, 413, None),
        (
            "POST",
            "/v1/lists",
            b'{"key": "c", "value": "v\\u0000", "outcome": "block"}',
            422,
            "$.value",
        ),
        ("POST", "/v1/lists", b'{"key": "c", "value": "v"}', 422, "$.outcome"),
        ("DELETE", "/v1/lists/customer/" + "x" * 201, None, 422, "value"),
        ("DELETE", "/v1/lists/customer/never-listed", None, 404, None),
        ("POST", "/v1/rules", b'{"name": "r", "when": "' + b"x" * 30_000 + b'"}', 413, None),
        (
            "POST",
            "/v1/rules",
            b'{"name": "r", "outcome": "block", "when": "' + b"(" * 2001 + b'"}',
            422,
            "$.when",
        ),
        (  # within the length, too deep: the parser's bound answers, not a RecursionError
            "POST",
            "/v1/rules",
            b'{"name": "r", "outcome": "block", "when": "' + b"not (" * 399 + b'"}',
            422,
            "$.when",
        ),
        ("POST", "/v1/rules", b'{"name": "r", "when": "a > 1\\u0000"}', 422, "$.when"),
        ("POST", "/v1/rules", b'{"name": "R", "when": "a > 1", "outcome": "block"}', 422, "$.name"),
        (
            "POST",
            "/v1/rules",
            b'{"name": "r\\n", "when": "a > 1", "outcome": "block"}',
            422,
            "$.name",
        ),
        ("POST", "/v1/rules", b'{"name": "r", "when": "a > 1"}', 422, "$.outcome"),
        ("POST", "/v1/rules", b'{"name": "r", "when": "a >", "outcome": "block"}', 422, "$.when"),
        ("DELETE", "/v1/rules/" + "x" * 65, None, 422, "name"),
        ("DELETE", "/v1/rules/never-added", None, 404, None),
        ("POST", "/v1/forget", b"{}", 422, "$"),
        ("POST", "/v1/forget", b'{"analyst": ""}', 422, "$.analyst"),
        ("POST", "/v1/forget", b'{"analyst": "a\\u0000"}', 422, "$.analyst"),
        ("POST", "/v1/forget", b'{"source": "robot"}', 422, "$.source"),
        ("POST", "/v1/forget", b'{"since": "yesterday"}', 422, "$.since"),
        ("POST", "/v1/forget", b'{"confirm": "yes", "source": "auto"}', 422, "$.confirm"),
        (
            "POST",
            "/v1/forget",
            msgspec.json.encode({"message_ids": [str(i) for i in range(FORGET_IDS + 1)]}),
            422,
            "$.message_ids",
        ),
        ("POST", "/v1/forget", b'{"message_ids": ["' + b"x" * 30_000 + b'"]}', 413, None),
        ("GET", "/v1/decisions/never-seen", None, 404, "id"),
        ("GET", "/v1/nowhere", None, 404, None),
        ("DELETE", "/v1/model", None, 405, None),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(
    shared_api: Api, method: str, path: str, body: bytes | None, status: int, field: str | None
) -> None:
    got, answer, _ = call(shared_api.port, method, path, auth=DANA, raw=body)
    assert got == status, answer
    conforms(shared_api.port, "ApiError", answer)
    assert answer.get("field") == field and answer["error"]


# what reaches the store: values it cannot hold or compare are refused before it is asked
@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/review?model_version=9223372036854775808", "model_version"),  # 2^63
        ("/v1/review?model_version=100000000000000000000000", "model_version"),
        ("/v1/review?model_version=%C2%B2", "model_version"),  # "²", a digit to str.isdigit()
        ("/v1/review?limit=%D9%A3", "limit"),  # "٣", an Arabic-Indic three
        ("/v1/review?offset=1e400", "offset"),
        ("/v1/review?since=0001-01-01T00:00:00%2B14:00", "since"),  # before year 1 in UTC
        ("/v1/review?until=9999-12-31T23:59:59-14:00", "until"),  # after year 9999 in UTC
        ("/v1/review?label=sp%00am", "label"),
        ("/v1/decisions/a%00b", "id"),  # PostgreSQL text cannot hold NUL
        ("/v1/decisions/" + "x" * 257, "id"),
        ("/v1/decisions/?id=a%00b", "id"),
    ],
)
def test_bad_input_reaching_the_store_is_a_4xx_logged_as_a_request(
    shared_api_any: Api, caplog: pytest.LogCaptureFixture, path: str, field: str
) -> None:
    with structlog.testing.capture_logs() as events:
        status, answer, _ = call(shared_api_any.port, "GET", path, auth=DANA)
        wait_until(lambda: [e for e in events if e.get("status") == 422], what="its log line")
    assert status == 422, answer
    assert answer["field"] == field and answer["error"]
    # the request's own line, and nothing else: no "store unavailable", no traceback
    assert {e["event"] for e in events} == {"http request"}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # nor the server


def test_a_fault_is_one_500_logged_once(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fault of filterd's own, not of the request: a read that fails as a bug would
    def broken(*_args: object) -> NoReturn:
        raise RuntimeError("a bug")

    monkeypatch.setattr("filterd.web.reads.decision_info", broken)
    with structlog.testing.capture_logs() as events:
        status, answer, _ = call(api.port, "GET", "/v1/decisions/m1", auth=DANA)
        wait_until(lambda: any(e["event"] == "http request" for e in events), what="the log line")
    assert status == 500 and answer == {"error": "internal error (logged)"}
    (failed,) = [e for e in events if e["event"] == "http: request failed"]
    assert isinstance(failed["exc_info"], RuntimeError)  # its traceback, logged once
    assert [e["status"] for e in events if e["event"] == "http request"] == [500]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # no 2nd traceback


@pytest.fixture
def api_postgresql(postgres_server: str, serve: Serve) -> Iterator[Api]:
    """The API over a learned store in a fresh PostgreSQL database (`serve_learned`)."""
    yield from serve_learned(learned_config_of(fresh_postgres(postgres_server)), serve)


def test_a_value_the_store_refuses_is_a_fault_not_an_outage(
    api_postgresql: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a check missing before the store: PostgreSQL refuses the value itself (a DataError)
    def unchecked(context: WebContext, _message_id: str) -> None:
        context.model.review_items(message_id="a\x00b")

    monkeypatch.setattr("filterd.web.reads.decision_info", unchecked)
    with structlog.testing.capture_logs() as events:
        status, answer, _ = call(api_postgresql.port, "GET", "/v1/decisions/m1", auth=DANA)
        wait_until(lambda: any(e["event"] == "http request" for e in events), what="the log line")
    assert status == 500 and answer == {"error": "internal error (logged)"}
    assert "http: store unavailable" not in {e["event"] for e in events}
    assert [e["event"] for e in events if "exc_info" in e] == ["http: request failed"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_request_never_looks_the_model_up_again(api: Api) -> None:
    """The model's id was found when the API was made: the reads go by it."""
    seen = []

    @event.listens_for(api.context.model.store.engine, "before_cursor_execute")
    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        seen.append(" ".join(statement.split()).lower())

    for path in ("/v1/review", "/v1/decisions/m1", "/v1/model", "/v1/review?order=newest"):
        assert call(api.port, "GET", path, auth=DANA)[0] in (200, 404)
    assert len(seen) > 10  # the listener heard the reads
    assert [s for s in seen if "models.name" in s] == []


def test_the_reads_answer_from_the_store(api: Api) -> None:
    config, held = api.context.config, api.context.model
    decider, threshold = api.context.scoring.decider, api.context.scoring.threshold
    assert decider is not None
    texts = {f"q{i}": r["text"] for i, r in enumerate(SYNTH[:4], start=1)}
    payloads = [msgspec.json.encode({"id": i, "text": t}) for i, t in texts.items()]
    decided = decide_payloads(decider, threshold, payloads, 20_000)
    items = [
        queued_item(m, d, t, "band", 100)
        for m, d, t in zip(decided.messages, decided.decisions, decided.tokens)
    ]
    with held.transaction() as writing:
        writing.queue_review(items, datetime.now(UTC))
        writing.record_decided([("q1", 2, 17)], datetime.now(UTC))

    status, page, _ = call(api.port, "GET", "/v1/review", auth=DANA)
    assert status == 200 and {i["message_id"] for i in page["items"]} == set(texts)
    conforms(api.port, "ReviewPage", page)
    distances = [i["distance"] for i in page["items"]]
    assert distances == sorted(distances)  # the most informative first
    spam = {d.message_id for d in decided.decisions if d.label == "spam"}
    _, page, _ = call(api.port, "GET", "/v1/review?label=spam", auth=DANA)
    assert {i["message_id"] for i in page["items"]} == spam
    low = min(d.score for d in decided.decisions)
    _, page, _ = call(api.port, "GET", f"/v1/review?max_score={low}&limit=5", auth=DANA)
    assert [i["score"] for i in page["items"]] == [low]

    status, info, _ = call(api.port, "GET", "/v1/decisions/q1", auth=DANA)
    assert status == 200
    conforms(api.port, "DecisionInfo", info)
    assert info["provenance"] == {
        "source_topic": config.topics.messages,
        "partition": 2,
        "offset": 17,
    }
    assert info["review"][0]["score"] == decided.decisions[0].score and info["labels"] == []

    status, model, _ = call(api.port, "GET", "/v1/model", auth=DANA)
    assert status == 200
    conforms(api.port, "ModelInfo", model)
    assert model["ready"] and {c["label"] for c in model["classes"]} == {"ham", "spam"}
    # counted from the model the process holds: the same as counting the store's rows
    assert model["distinct_tokens"] == held.report(5)["distinct_tokens"] > 0
    assert model["scoring"]["loaded"] and model["threshold"] is None and model["thresholds"] == []


def test_an_item_the_scorer_queues_is_what_the_store_and_the_api_give_back(api: Api) -> None:
    """One type from the scorer to the API: an item queued on the scorer's path (decided,
    `queue_for_review`, written by the recorder) comes back from the store and from GET
    /v1/review field by field as the scorer built it, but for the facts the store gives (`id`,
    `queued_at`, `labelled`); its tokens come back from the store alone, never from the API."""
    context = api.context
    records = [
        {"id": "s1", "text": SYNTH[0]["text"], "subject": "Lunch", "attributes": {"n": [1, 2]}},
        {"id": "s2", "text": SPAMMY, "sender": "Eve <eve@example.com>"},
        {
            "id": "s3",
            "text": "From: Bob <b@example.com>\nSubject: Hi\n\nSee you.",
            "format": "email",
        },
    ]
    payloads = [msgspec.json.encode(r) for r in records]
    assert context.scoring.decider is not None
    decided = decide_payloads(context.scoring.decider, context.scoring.threshold, payloads, 20_000)
    built = queue_for_review(decided, Review(random_share=1.0))  # every decision queued
    assert [i.message_id for i in built] == ["s1", "s2", "s3"]
    recorder = Recorder(context.model, 100, Health(), Metrics(), structlog.get_logger("test"))
    recorder.put([(i.message_id, 0, n) for n, i in enumerate(built)], built)
    assert recorder.write()

    status, page, _ = call(api.port, "GET", "/v1/review?order=newest", auth=DANA)
    assert status == 200
    given = {i["message_id"]: i for i in page["items"]}
    store_facts = {"id", "queued_at", "labelled"}
    for item in built:
        answer = given[item.message_id]
        assert set(answer) == set(ReviewItem.__struct_fields__) - {"tokens"}
        as_built = msgspec.json.decode(msgspec.json.encode(item))  # as JSON, tokens and all
        scorer = {k: v for k, v in as_built.items() if k not in store_facts}
        assert scorer.pop("tokens") == item.tokens and item.tokens
        assert {k: v for k, v in answer.items() if k not in store_facts} == scorer
        assert answer["labelled"] is None and answer["token_count"] == len(item.tokens)
        read_back = context.model.review_item(answer["id"])
        assert read_back is not None and read_back.queued_at is not None
        assert msgspec.json.decode(msgspec.json.encode(read_back)) == answer | {
            "tokens": item.tokens
        }
        assert msgspec.structs.replace(read_back, id=None, queued_at=None) == item


@pytest.mark.parametrize(
    "kind",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonx",
    ],
)
def test_a_request_that_decides_or_labels_takes_json_only(api: Api, kind: str) -> None:
    # what an HTML form on any page can send without the browser asking the server first
    for path, body in (
        ("/v1/check", {"id": "c1", "text": SPAMMY}),
        ("/v1/feedback", {"message_id": "m1", "label": "spam"}),
        ("/v1/lists", {"key": "customer", "value": "c1", "outcome": "allow"}),
        ("/v1/rules", {"name": "big", "when": "amount > 1", "outcome": "allow"}),
    ):
        status, answer, _ = call(
            api.port, "POST", path, body, auth=DANA, headers={"Content-Type": kind}
        )
        assert status == 415 and "application/json" in answer["error"], (path, answer)
    status, answer, _ = call(
        api.port,
        "POST",
        "/v1/check",
        {"id": "c1", "text": SPAMMY},
        auth=DANA,
        headers={"Content-Type": "Application/JSON; charset=utf-8"},
    )
    assert status == 200, answer


def test_every_api_answer_is_nosniff_and_no_store(api: Api) -> None:
    for method, path, body, auth in (
        ("POST", "/v1/check", {"id": "c1"}, DANA),
        ("GET", "/v1/model", None, DANA),
        ("GET", "/v1/model", None, None),
        ("GET", "/v1/decisions/nowhere", None, DANA),
        ("GET", "/v1/review?limit=0", None, DANA),
        ("GET", "/v1/openapi.json", None, None),
        ("GET", "/v1/nowhere", None, DANA),
    ):
        status, _, headers = call(api.port, method, path, body, auth=auth)
        assert headers.get("x-content-type-options") == "nosniff", (path, status)
        assert headers.get("cache-control") == "no-store", (path, status)


def test_a_host_not_the_servers_is_refused(api: Api) -> None:
    # a name rebound to this address (DNS rebinding): the browser sends the attacker's name
    for host in ("evil.example", f"evil.example:{api.port}", "localhost.evil.example", "a b"):
        for method, path, auth in (("GET", "/v1/openapi.json", None), ("GET", "/v1/model", DANA)):
            status, _, _ = call(api.port, method, path, auth=auth, headers={"Host": host})
            assert status == 400, (host, path)
        assert Client(api.port).request("GET", "/login", headers={"Host": host})[0] == 400
    for host in (f"localhost:{api.port}", f"127.0.0.1:{api.port}", f"LOCALHOST.:{api.port}"):
        assert call(api.port, "GET", "/v1/model", auth=DANA, headers={"Host": host})[0] == 200


def test_only_the_configured_hosts_are_answered(api: Api, serve: Serve) -> None:
    context = api.context
    config = replace(
        context.config, http=replace(context.config.http, allowed_hosts=["filterd.example.net"])
    )
    listed = serve(config, context.model, context.scoring)
    status, body, _ = call(
        listed.port,
        "GET",
        "/v1/model",
        auth=DANA,
        headers={"Host": f"filterd.example.net:{listed.port}"},
    )
    assert status == 200, body
    status, body, _ = call(listed.port, "GET", "/v1/model", auth=DANA)  # Host: 127.0.0.1:port
    assert status == 400 and "allowed_hosts" in body["error"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # another host of the same site
        {"Origin": "http://evil.example"},  # a browser without Sec-Fetch-*
        {"Origin": "null"},  # a sandboxed frame, a page from a file
    ],
)
def test_a_browsers_request_from_another_sites_page_is_refused(
    api: Api, headers: dict[str, str]
) -> None:
    for method, path, body in (
        ("POST", "/v1/feedback", {"message_id": "m1", "label": "spam"}),
        ("POST", "/v1/check", {"id": "c1"}),
        ("GET", "/v1/model", None),
        ("POST", "/v1/lists", {"key": "customer", "value": "c1", "outcome": "allow"}),
        ("DELETE", "/v1/lists/customer/c1", None),
        ("POST", "/v1/rules", {"name": "big", "when": "amount > 1", "outcome": "allow"}),
        ("DELETE", "/v1/rules/big", None),
    ):
        status, answer, _ = call(api.port, method, path, body, auth=DANA, headers=headers)
        assert status == 403 and "another site" in answer["error"], (path, answer)


def test_the_servers_own_pages_and_programs_are_not_refused(api: Api) -> None:
    own = {"Sec-Fetch-Site": "same-origin", "Origin": f"http://127.0.0.1:{api.port}"}
    for headers in (own, {"Sec-Fetch-Site": "none"}, {}):
        status, _, _ = call(api.port, "POST", "/v1/check", {"id": "c1"}, auth=DANA, headers=headers)
        assert status == 200, headers


def test_guessing_from_one_address_never_refuses_the_analyst_at_another(api: Api) -> None:
    # another address on this machine: all of 127/8 is loopback
    for i in range(FAILURES):
        assert call_from("127.0.0.2", api.port, "/v1/model", basic("dana", f"guess-{i}"))[0] == 401
    status, headers = call_from("127.0.0.2", api.port, "/v1/model", DANA)
    assert status == 429 and 0 < int(headers["retry-after"]) <= 60  # slowed down, right or wrong
    # dana at her desk: her password, never checked before, is not refused
    assert call_from("127.0.0.1", api.port, "/v1/model", DANA)[0] == 200


def call_from(address: str, port: int, path: str, auth: str) -> tuple[int, dict[str, str]]:
    """(status, headers) of a GET to 127.0.0.1:`port` from the local `address`."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=30, source_address=(address, 0)
    )
    try:
        connection.request("GET", path, headers={"Authorization": auth})
        response = connection.getresponse()
        response.read()
        return response.status, dict(response.headers)
    finally:
        connection.close()
