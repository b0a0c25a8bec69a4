"""The HTTP API's tests: the real app served by uvicorn on a free port, called over HTTP.

api = serve(config, kafka_config)         # an `Api` over a learned SQLite store, listening
status, body, headers = call(api.port, "POST", "/v1/check", {...}, auth=BASIC)
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import pytest
from msgspec.structs import replace

from filterd.bayes.model import ModelSpec
from filterd.demo.broker import LocalBroker
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.config import Config, load
from filterd.service.passwords import hash_secret
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer
from filterd.web.auth import new_token
from tests.conftest import kafka_settings, new_topics

# the daemon's fixtures: `filterd run` as a child process (`start_daemon`), a SQLite URL
from tests.daemon.conftest import sqlite_url, start_daemon  # noqa: F401

# a headless chromium (Selenium) for the workbench's browser tests
from tests.web.browser import browser  # noqa: F401

if TYPE_CHECKING:  # imported where they are used, as the fixtures start them
    from filterd.daemon.model_state import ModelState
    from filterd.service.decide import EvidenceOf
    from filterd.service.records import Decision
    from filterd.web.context import Scoring
    from filterd.web.serving import Api

PASSWORD = "correct horse battery staple"
ERIN_TOKEN = new_token("erin")
# cheap hashes: the tests verify them often (the scheme's parameters are the operator's choice)
ROUNDS = 1000


def learned_store(url: str) -> None:
    """A store whose model "default" (MNB) learned 200 synthetic messages (seed 1), none held
    out: decisions with real scores."""
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    tokenize = Tokenizer()
    train = generate(SynthConfig(n_messages=200, seed=1))
    model.learn(
        [LabelledTokens(r["id"], r["label"], tokenize(r).tokens) for r in train],
        holdout_fraction=0,
    )
    store.close()


def learned_config_of(url: str) -> Config:
    """The configuration of a `learned_store` at `url`."""
    learned_store(url)
    overrides = {"database.url": url, "model.variant": "mnb", "model.min_docs": 5}
    return load(None, environ={}, overrides=overrides)


@pytest.fixture
def learned_config(sqlite_url: str) -> Config:  # noqa: F811 - the fixture imported above
    """The configuration of a `learned_store` in this test's SQLite file."""
    return learned_config_of(sqlite_url)


def basic(name: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()


def call(
    port: int,
    method: str,
    path: str,
    body: object = None,
    auth: str | None = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """(status, JSON body (any JSON value) or None, headers) of one request to
    127.0.0.1:`port` (a JSON body, unless `headers` say otherwise)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if auth is not None:
        request.add_header("Authorization", auth)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text, headers = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, text, headers = error.code, error.read(), dict(error.headers)
    return status, json.loads(text) if text else None, headers


class Serve(Protocol):
    """`serve(config, model, scoring[, evidence])`: an `Api` listening on a free port."""

    def __call__(
        self,
        settings: Config,
        model: ModelStore,
        scoring: Scoring,
        evidence: EvidenceOf | None = None,
    ) -> Api: ...


def serving() -> Iterator[Serve]:
    """Starts `Api`s (the real app, uvicorn in a thread, port 0) and stops them at the end."""
    started = []

    def start(
        settings: Config,
        model: ModelStore,
        scoring: Scoring,
        evidence: EvidenceOf | None = None,
    ) -> Api:
        import structlog

        settings = replace(settings, http=replace(settings.http, port=0))  # any free port

        from filterd.service.decide import tokenizer_of
        from filterd.web.serving import Api

        log = structlog.get_logger("test")
        api = Api(settings, model, scoring, tokenizer_of(settings), log, evidence=evidence)
        api = api.start()
        started.append(api)
        return api

    yield start
    for api in started:
        api.stop()


@pytest.fixture
def serve() -> Iterator[Serve]:
    """`serving` for one test."""
    yield from serving()


@pytest.fixture(scope="module")
def module_serve() -> Iterator[Serve]:
    """`serving` for the tests of a module: an API that tests only ask, and do not change."""
    yield from serving()


def queue_messages(
    config: Config,
    state: ModelState,
    messages: list[dict[str, Any]],
    queued_at: datetime | None = None,
    start: int = 0,
) -> list[Decision]:
    """`messages` (message records) decided by `state`'s model and queued for review in
    `config`'s store at `queued_at` (now by default), the i-th as a random pick when i + `start`
    is a multiple of 3 (the others as band picks); their decisions."""
    import msgspec

    from filterd.service.decide import decide_payloads
    from filterd.service.review import queued_item

    assert state.decider is not None, "the model state has no model"
    payloads = [msgspec.json.encode(m) for m in messages]
    decided = decide_payloads(state.decider, state.threshold, payloads, 20_000)
    picks = zip(decided.messages, decided.decisions, decided.tokens, strict=True)
    items = [
        queued_item(m, d, t, "band" if (start + i) % 3 else "random", 100)
        for i, (m, d, t) in enumerate(picks)
    ]
    store = Store.open(config.database.url)
    with store.model(config.model.name).transaction() as writing:
        writing.queue_review(items, queued_at or datetime.now(UTC))
    store.close()
    return decided.decisions


class WorkbenchOf(Protocol):
    """`workbench_of(learned)`: the workbench served over `learned`, and its model state."""

    def __call__(
        self,
        learned: Config,
        kafka: dict[str, Any] | None = None,
        topic_names: dict[str, str] | None = None,
    ) -> tuple[Api, ModelState]: ...


@pytest.fixture
def workbench_of(
    serve: Serve, kafka_config: dict[str, Any], topics: dict[str, str]
) -> Iterator[WorkbenchOf]:
    """Serves the workbench over a learned configuration: `workbench_of(learned)` → (the `Api`,
    its model state); users dana (password) and erin (API token `ERIN_TOKEN`), labels to this
    test's feedback topic (or to those of `kafka` and `topic_names`, given)."""
    yield from workbench_serving(serve, kafka_config, topics)


@pytest.fixture(scope="module")
def module_workbench_of(module_serve: Serve, broker: LocalBroker) -> Iterator[WorkbenchOf]:
    """`workbench_of` for the tests of a module that only ask it, and change nothing."""
    yield from workbench_serving(module_serve, kafka_settings(broker), new_topics(broker))


def workbench_serving(
    serve: Serve, kafka_config: dict[str, Any], topics: dict[str, str]
) -> Iterator[WorkbenchOf]:
    """`workbench_of`'s, over `serve`, labelling to `topics` by default."""
    import structlog

    from filterd.daemon.model_state import ModelState
    from filterd.observe.health import Health
    from filterd.observe.metrics import Metrics

    stores = []

    def start(
        learned: Config,
        kafka: dict[str, Any] | None = None,
        topic_names: dict[str, str] | None = None,
    ) -> tuple[Api, ModelState]:
        users = {"dana": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}
        tokens = {"erin": hash_secret(ERIN_TOKEN, "pbkdf2_sha256", rounds=ROUNDS)}
        http = replace(learned.http, users=users, tokens=tokens)
        topics_here = replace(learned.topics, **(topic_names or topics))
        config = replace(learned, http=http, kafka=kafka or kafka_config, topics=topics_here)
        stores.append(Store.open(config.database.url))
        model = stores[-1].model(config.model.name)
        state = ModelState(model, config, Metrics(), Health(), structlog.get_logger("test"))
        state.refresh(force=True)
        return serve(config, model, state), state

    yield start
    for store in stores:
        store.close()
