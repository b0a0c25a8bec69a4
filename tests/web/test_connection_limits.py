"""The HTTP server's bounds (filterd.web.server), with uvicorn serving on 127.0.0.1: a request
must arrive whole within `request_seconds` of the accept (or of the answer before it), however
slowly its bytes trickle in; at `max_connections` a new connection closes the one that waited
longest for its request, or is refused when every one has a request in progress."""

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import structlog
from msgspec.structs import replace
from starlette.types import Receive, Scope, Send

from filterd.daemon.model_state import ModelState
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.passwords import hash_secret
from filterd.store.handle import Store
from filterd.web.server import HttpServer
from tests.sockets import DRIP_SECONDS, connected, is_open, seconds_until_closed
from tests.web.conftest import PASSWORD, ROUNDS, Serve, basic, call

DEADLINE = 1.0
GET = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
release = threading.Event()  # lets the `held` app answer


async def answer(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the whole body, answers 200 with its length; at /held, only once `release` is set."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    while scope["path"] == "/held" and not release.is_set():
        await asyncio.sleep(0.01)
    text = str(size).encode()
    headers = [(b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": text})


@pytest.fixture
def server() -> Iterator[HttpServer]:
    release.clear()
    with HttpServer(answer, max_connections=8, request_seconds=DEADLINE) as started:
        yield started
    release.set()


@pytest.fixture
def patient() -> Iterator[HttpServer]:
    """A server whose deadline the test does not reach: only the limit closes connections."""
    release.clear()
    with HttpServer(answer, max_connections=8, request_seconds=60) as started:
        yield started
    release.set()


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer of `answer` (its head, then Content-Length bytes of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_a_trickled_request_head_is_closed_at_its_deadline(server: HttpServer) -> None:
    sock = connected(server.port)
    header = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 1000
    assert DEADLINE - 0.1 < seconds_until_closed(sock, header) < DEADLINE + 0.8


@pytest.mark.parametrize("drip", [b"", GET], ids=["idle", "trickling"])
def test_a_kept_alive_connection_without_its_next_request_is_closed(
    server: HttpServer, drip: bytes
) -> None:
    sock = connected(server.port)
    sock.settimeout(5)
    sock.sendall(GET)
    assert read_answer(sock).startswith(b"HTTP/1.1 200")
    sock.settimeout(DRIP_SECONDS)
    # counted from the end of the answer: the first request's time does not shorten it
    assert DEADLINE - 0.1 < seconds_until_closed(sock, drip) < DEADLINE + 0.8


def test_at_the_limit_the_connection_that_waited_longest_is_closed(patient: HttpServer) -> None:
    server = patient
    idle = [connected(server.port) for _ in range(8)]
    time.sleep(0.2)
    # each new connection closes one idle connection, the oldest first
    idle += [connected(server.port) for _ in range(3)]
    time.sleep(0.2)
    assert call(server.port, "GET", "/")[0] == 200
    assert [is_open(sock) for sock in idle] == [False] * 4 + [True] * 7
    for sock in idle:
        sock.close()


def test_at_the_limit_with_every_request_in_progress_a_new_one_is_refused(
    patient: HttpServer,
) -> None:
    server = patient
    held = [connected(server.port) for _ in range(8)]
    for sock in held:
        sock.sendall(GET.replace(b"GET / ", b"GET /held "))
    time.sleep(0.3)
    refused = connected(server.port)
    refused.settimeout(2)
    try:
        refused.sendall(GET)
        answered = refused.recv(4096)
    except TimeoutError:
        raise AssertionError("the connection over the limit was kept") from None
    except OSError:  # reset
        answered = b""
    assert answered == b""  # closed without an answer
    release.set()
    for sock in held:  # the requests in progress were not disturbed
        sock.settimeout(5)
        assert read_answer(sock).startswith(b"HTTP/1.1 200")
        sock.close()
    assert call(server.port, "GET", "/")[0] == 200


def test_a_trickled_body_is_closed_at_the_deadline_without_an_error(
    learned_config: Config, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The real app reading a body that trickles in: the connection is closed at the deadline,
    nothing is logged above INFO, and the API answers the next client."""
    users = {"dana": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)}
    http = replace(learned_config.http, users=users, request_seconds=DEADLINE)
    config = replace(learned_config, http=http)
    store = Store.open(config.database.url)
    model = store.model(config.model.name)
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger("test"))
    state.refresh(force=True)
    api = serve(config, model, state)
    auth = basic("dana", PASSWORD)
    assert call(api.port, "POST", "/v1/check", {"id": "a", "text": "hi"}, auth=auth)[0] == 200
    body = json.dumps({"id": "b", "text": "x" * 500}).encode()
    lines = [
        "POST /v1/check HTTP/1.1",
        "Host: 127.0.0.1",
        f"Authorization: {auth}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "",
        "",
    ]
    head = "\r\n".join(lines).encode()
    sock = connected(api.port)
    caplog.set_level(logging.INFO)
    sock.sendall(head)
    assert DEADLINE - 0.1 < seconds_until_closed(sock, body) < DEADLINE + 0.8
    assert call(api.port, "POST", "/v1/check", {"id": "c", "text": "hi"}, auth=auth)[0] == 200
    assert [r.getMessage() for r in caplog.records if r.levelno > logging.INFO] == []
    store.close()
