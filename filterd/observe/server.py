"""The observe server: GET /metrics (Prometheus text format), /healthz and /readyz (200 or 503
with a small JSON body), 404 otherwise, served by one daemon thread.

    server = start_observe_server(config.observe, metrics, health)   # None when the port is 0

One thread serves every connection, in a selector loop: a flood of connections costs no thread
each, so the probes are answered while it lasts. Connections are bounded in number and time:
each request (its line and headers) must arrive whole within `request_seconds` of its accept,
however slowly its bytes trickle in, and its answer be taken within as long again; at most
`max_connections` are open, a new one closing the one that waited longest for its request at
the limit (`filterd.observe.connections`). Each answer closes its connection. GET and HEAD are
answered (405 otherwise), a malformed request gets 400, a request line and headers still
unfinished past HEAD_BYTES get 431. A client that goes away is not logged. A Host header that
names none of the server's hosts (`allowed_hosts`, `filterd.service.hosts`) gets 400: a page on
another site cannot read the answers through DNS rebinding.
"""

from __future__ import annotations

import contextlib
import errno
import json
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from http import HTTPStatus
from typing import Self

import h11
import prometheus_client
import structlog

from filterd.observe.connections import Connections, connection_cap
from filterd.observe.health import Health
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.config import DEFAULTS, Observe
from filterd.service.hosts import AllowedHosts

JSON = "application/json"
BACKLOG = 1024  # the kernel's queue of connections not yet accepted: a burst waits there
# connections accepted in one turn of the loop, at most, and at most half the limit: a
# connection is read in the turn after its accept, before a burst can count it the oldest waiting
ACCEPTS_PER_TURN = 32
HEAD_BYTES = 16 * 1024
RECEIVE_BYTES = 64 * 1024
POLL_SECONDS = 0.1  # stop() waits up to this long
# out of file descriptors: accepting pauses this long, instead of the loop spinning on the queue
PAUSE_SECONDS = 0.1
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


log = structlog.get_logger(__name__)


class CannotListen(RuntimeError):
    """The observe server cannot listen as configured; the message names the keys."""


def start_observe_server(
    observe: Observe, metrics: Metrics, health: Health
) -> ObserveServer | None:
    """The /metrics, /healthz and /readyz server of `[observe]`, listening (None when
    `metrics_port` is 0); CannotListen when the address cannot be bound."""
    if not observe.metrics_port:
        return None
    server = ObserveServer(
        metrics,
        health,
        observe.metrics_port,
        observe.metrics_host,
        observe.metrics_max_connections,
        observe.metrics_request_seconds,
        observe.metrics_allowed_hosts,
    )
    try:
        return server.start()
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise CannotListen(
                f"metrics port {observe.metrics_port} is in use (observe.metrics_port): "
                f"{error.strerror}"
            ) from None
        raise CannotListen(
            f"cannot listen on {observe.metrics_host}:{observe.metrics_port} "
            f"(observe.metrics_host, observe.metrics_port): {error.strerror or error}"
        ) from None


class ObserveServer:
    """HTTP server in a daemon thread: GET /metrics, /healthz, /readyz; 404 otherwise."""

    def __init__(
        self,
        metrics: Metrics,
        health: Health,
        port: int,
        host: str = DEFAULTS.observe.metrics_host,
        max_connections: int = DEFAULTS.observe.metrics_max_connections,
        request_seconds: float = DEFAULTS.observe.metrics_request_seconds,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.metrics = metrics
        self.health = health
        self.host = host
        self.port = port
        self.max_connections, self.request_seconds = max_connections, request_seconds
        self.allowed_hosts = list(allowed_hosts)
        self.hosts = AllowedHosts.of(self.allowed_hosts, host, port)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind (port 0 picks a free port, then in `self.port`) and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the observe server is already started")
        registry: Connections[_Connection] = Connections(
            connection_cap(self.max_connections),
            _Connection.close,
            "observe",
            "observe.metrics_max_connections",
        )
        server = _Server(_listening(self.host, self.port), self, registry)
        self._server = server
        self.port = server.server_address[1]
        self.hosts = AllowedHosts.of(self.allowed_hosts, self.host, self.port)  # the bound port
        self._thread = threading.Thread(target=server.serve, name="filterd-observe", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket and the connections; a no-op when not started."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.stopping.set()
        if thread is not None:
            thread.join()
        server.registry.flush()
        server.repeats.flush(everything=True)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _listening(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on (host, port); OSError when it cannot be bound."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class _Server:
    """The loop: the listening socket and the open connections in one selector, and the open
    connections' deadlines in the order they fall due."""

    def __init__(
        self, listener: socket.socket, observe: ObserveServer, registry: Connections[_Connection]
    ) -> None:
        self.listener, self.observe, self.registry = listener, observe, registry
        self.server_address: tuple[str, int] = listener.getsockname()[:2]
        self.selector = selectors.DefaultSelector()
        # every deadline is an event's time plus request_seconds: the one set last falls due last
        self.deadlines: OrderedDict[_Connection, float] = OrderedDict()
        self.accepts = max(1, min(ACCEPTS_PER_TURN, registry.limit // 2))
        self.paused_until: float | None = None
        self.stopping = threading.Event()
        self.repeats = Repeats()

    def serve(self) -> None:
        """Until `stopping` is set; then closes every connection and the listening socket."""
        self.selector.register(self.listener, selectors.EVENT_READ)
        try:
            while not self.stopping.is_set():
                self._turn()
        finally:
            for key in list(self.selector.get_map().values()):
                if isinstance(key.data, _Connection):
                    key.data.close()
            self.selector.close()
            self.listener.close()

    def _turn(self) -> None:
        timeout = POLL_SECONDS
        for first in self.deadlines.values():
            timeout = min(timeout, max(0.0, first - time.monotonic()))
            break
        accept = False
        for key, _ in self.selector.select(timeout):
            if isinstance(key.data, _Connection):
                key.data.ready()
            else:
                accept = True
        now = time.monotonic()
        while self.deadlines:
            connection, deadline = next(iter(self.deadlines.items()))
            if deadline > now:
                break
            connection.close()  # and out of `deadlines`
        # accepted last: the connections accepted before are read first
        if accept:
            self._accept()
        elif self.paused_until is not None and now >= self.paused_until:
            self.paused_until = None
            self.selector.register(self.listener, selectors.EVENT_READ)

    def _accept(self) -> None:
        for _ in range(self.accepts):
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno in OUT_OF_RESOURCES:
                    self.repeats.warning(
                        log, "observe server: cannot accept a connection", error=str(error)
                    )
                    self.selector.unregister(self.listener)
                    self.paused_until = time.monotonic() + PAUSE_SECONDS
                    return
                continue  # the client went away before its accept
            sock.setblocking(False)
            connection = _Connection(self, sock)
            if self.registry.admit(connection):
                self.selector.register(sock, selectors.EVENT_READ, connection)
                self.deadline(connection, time.monotonic())
            else:
                sock.close()

    def deadline(self, connection: _Connection, now: float) -> None:
        """`connection` is closed `request_seconds` after `now` unless done by then."""
        self.deadlines[connection] = now + self.observe.request_seconds
        self.deadlines.move_to_end(connection)


class _Connection:
    """One client's connection: its request read through h11, then its answer sent."""

    def __init__(self, server: _Server, sock: socket.socket) -> None:
        self.server, self.sock = server, sock
        self.parser = h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_BYTES)
        self.answer = memoryview(b"")
        self.closed = False

    def ready(self) -> None:
        """Its socket is ready: read the request, or send the answer's next bytes."""
        try:
            if self.answer:
                self._send()
            else:
                self._receive()
        except OSError:
            self.close()  # the client went away: not logged
        except Exception as error:  # a bug: logged; the loop serves the other connections on
            log.error("observe server: a connection failed", error=repr(error), exc_info=error)
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.server.registry.remove(self)
        self.server.deadlines.pop(self, None)
        with contextlib.suppress(KeyError):  # refused at its accept: never registered
            self.server.selector.unregister(self.sock)
        self.sock.close()

    def _receive(self) -> None:
        data = self.sock.recv(RECEIVE_BYTES)
        self.parser.receive_data(data)
        try:
            event = self.parser.next_event()
        except h11.RemoteProtocolError as error:
            if not data:  # gone before its request was whole
                self.close()
                return
            status = error.error_status_hint
            self._respond(_response(status, _status_body(status), JSON, head=False))
            return
        if isinstance(event, h11.Request):
            self._respond(self._reply(event))
        elif event is not h11.NEED_DATA:
            self.close()

    def _reply(self, request: h11.Request) -> bytes:
        observe = self.server.observe
        head = request.method == b"HEAD"
        if request.method not in (b"GET", b"HEAD"):
            return _response(405, _status_body(405), JSON, head, (("Allow", "GET, HEAD"),))
        host = next((value for name, value in request.headers if name == b"host"), None)
        if not observe.hosts.allows(None if host is None else host.decode("latin-1")):
            return _response(400, b'{"status": "host not allowed"}\n', JSON, head)
        path = request.target.decode("latin-1").split("?", 1)[0]
        try:
            status, body, content_type = _answer(observe, path)
        except Exception:
            log.exception("observe_request_failed", path=path)
            status, body, content_type = 500, b'{"status": "error"}\n', JSON
        return _response(status, body, content_type, head)

    def _respond(self, answer: bytes) -> None:
        """Send `answer`, taken within request_seconds, then close."""
        self.server.registry.busy(self)  # no longer closed to make room
        self.server.selector.modify(self.sock, selectors.EVENT_WRITE, self)
        self.server.deadline(self, time.monotonic())
        self.answer = memoryview(answer)
        self._send()

    def _send(self) -> None:
        self.answer = self.answer[self.sock.send(self.answer) :]
        if not self.answer:
            self.close()


def _status_body(status: int) -> bytes:
    return json.dumps({"status": HTTPStatus(status).phrase.lower()}).encode() + b"\n"


def _response(
    status: int,
    body: bytes,
    content_type: str,
    head: bool,
    headers: Sequence[tuple[str, str]] = (),
) -> bytes:
    """An HTTP/1.1 answer that closes its connection (HEAD: without the body)."""
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}"]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    return "\r\n".join(lines).encode() + b"\r\n\r\n" + (b"" if head else body)


def _answer(observe: ObserveServer, path: str) -> tuple[int, bytes, str]:
    """(status, body, content type) for a GET of `path`."""
    if path == "/metrics":
        return 200, observe.metrics.render(), prometheus_client.CONTENT_TYPE_LATEST
    if path in ("/healthz", "/readyz"):
        ok, body = observe.health.live() if path == "/healthz" else observe.health.ready()
        if "failing" in body:
            # the conditions' names only: their details (driver errors, socket paths, hosts) are
            # for the log, not for whoever can reach the port
            body = {"status": body["status"], "failing": dict.fromkeys(body["failing"], "")}
        return (200 if ok else 503), json.dumps(body).encode() + b"\n", JSON
    return 404, b'{"status": "not found"}\n', JSON
