"""The app's one route table: every route the app answers is counted in the metrics under its
own label, and every label of the table is a route the app answers; the OpenAPI document
describes the API's routes of the same table. Real uvicorn over a learned SQLite store."""

import http.client
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import structlog
from msgspec.structs import replace
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from filterd.daemon.model_state import ModelState
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import tokenizer_of
from filterd.store.handle import Store
from filterd.web.app import OTHER, RouteLabels
from filterd.web.openapi import document
from filterd.web.serving import Api
from tests.web.browser import wait_until


@pytest.fixture
def served(learned_config: Config) -> Iterator[tuple[Api, Metrics]]:
    """(the `Api` over a learned store, listening on a free port; the metrics it counts in)."""
    config = replace(learned_config, http=replace(learned_config.http, port=0))
    store = Store.open(config.database.url)
    model = store.model(config.model.name)
    log = structlog.get_logger("test")
    state = ModelState(model, config, Metrics(), Health(), log)
    state.refresh(force=True)
    metrics = Metrics()
    api = Api(config, model, state, tokenizer_of(config), log, metrics).start()
    yield api, metrics
    api.stop()
    store.close()


def status_of(port: int, method: str, path: str) -> int:
    """The status of one request, redirects not followed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = b"{}" if method == "POST" else None
        connection.request(method, path, body, {"Content-Type": "application/json"})
        return connection.getresponse().status
    finally:
        connection.close()


def asked(route: Route | Mount) -> tuple[str, str]:
    """(a method, a path) that `route` answers: its parameters filled in, a mount's first file."""
    if isinstance(route, Mount):
        assert isinstance(route.app, StaticFiles)
        first = min(p.name for p in Path(str(route.app.directory)).iterdir() if p.is_file())
        return "GET", f"{route.path}/{first}"
    assert route.methods is not None
    return min(route.methods - {"HEAD"}), re.sub(r"\{[^}]*\}", "m-1", route.path)


def test_every_route_answered_is_counted_under_its_own_label_and_every_label_is_a_route(
    served: tuple[Api, Metrics],
) -> None:
    api, metrics = served
    app = api.server.app
    assert isinstance(app, Starlette)
    labels = RouteLabels(app.routes)

    def count(label: str, status: int) -> float:
        sample = {"route": label, "status": str(status)}
        return metrics.registry.get_sample_value("filterd_http_requests_total", sample) or 0.0

    answered = set()
    for route in app.routes:
        assert isinstance(route, (Route, Mount)), route
        method, path = asked(route)
        label = labels(path)
        status = status_of(api.port, method, path)
        assert status != 404, (method, path)  # answered (a credential or a login asked for)
        wait_until(partial(count, label, status), what=f"{method} {path} counted as {label}")
        assert label == re.sub(r":[^}]*", "", route.path) != OTHER
        answered.add(label)
    assert answered == labels.labels - {OTHER}
    assert "/" in answered and "/static" in answered and "/v1/decisions/{id}" in answered
    assert status_of(api.port, "GET", "/nowhere") == 404
    wait_until(lambda: count(OTHER, 404) == 1, what="a path no route answers counted as other")
    # the OpenAPI document describes the API's routes of the table, but itself
    api_routes = {label for label in answered if label.startswith("/v1/")}
    assert set(document()["paths"]) == api_routes - {"/v1/openapi.json"}
