"""A threaded HTTP server in a daemon thread answering GET /metrics (Prometheus text format),
/healthz and /readyz (200 or 503 with a small JSON body), 404 otherwise.

    server = start_observe_server(config.observe, metrics, health)   # None when the port is 0

One thread per connection, and connections bounded in number and time: each request must
arrive whole within `request_seconds` of its accept, however slowly its bytes trickle in, and
its answer be taken within as long again; at most `max_connections` are open, a new one closing
the one that waited longest for its request at the limit (`filterd.observe.connections`). A
client that goes away is not logged. A Host header that names none of the server's hosts
(`allowed_hosts`, `filterd.service.hosts`) gets 400: a page on another site cannot read the
answers through DNS rebinding.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import socket
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import prometheus_client
import structlog

from filterd.observe.connections import Connections, connection_cap
from filterd.observe.health import Health
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.config import Observe
from filterd.service.hosts import AllowedHosts

JSON = "application/json"
MAX_CONNECTIONS = 64
REQUEST_SECONDS = 5.0
BACKLOG = 1024  # the kernel's queue of connections not yet accepted: a burst waits there


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
        host: str = "127.0.0.1",
        max_connections: int = MAX_CONNECTIONS,
        request_seconds: float = REQUEST_SECONDS,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        self.metrics = metrics
        self.health = health
        self.host = host
        self.port = port
        self.max_connections, self.request_seconds = max_connections, request_seconds
        self.allowed_hosts = list(allowed_hosts)
        self.hosts = AllowedHosts.of(self.allowed_hosts, host, port)
        self._server: _BoundedServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind (port 0 picks a free port, then in `self.port`) and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the observe server is already started")
        registry: Connections[socket.socket] = Connections(
            connection_cap(self.max_connections),
            _hang_up,
            "observe",
            "observe.metrics_max_connections",
        )
        server = _BoundedServer((self.host, self.port), _handler_for(self), registry)
        self._server = server
        self.port = server.server_address[1]
        self.hosts = AllowedHosts.of(self.allowed_hosts, self.host, self.port)  # the bound port
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},  # stop() waits up to one poll interval
            name="filterd-observe",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; a no-op when not started."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        server.registry.flush()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _hang_up(sock: socket.socket) -> None:
    """End a connection evicted to make room: its thread sees the end of its input and closes it."""
    with contextlib.suppress(OSError):  # closed meanwhile
        sock.shutdown(socket.SHUT_RDWR)


class _BoundedServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that admits each accepted connection into `registry` (closing it at
    once when refused) and logs no client's failure."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        registry: Connections[socket.socket],
    ) -> None:
        self.registry = registry
        self.repeats = Repeats()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if self.registry.admit(request):
            super().process_request(request, client_address)
        else:
            self.shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        self.registry.remove(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A failure outside the handler's own answer: a client that went away (not logged),
        or no thread to be had (one warning a minute), instead of a traceback on stderr."""
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            self.repeats.warning(log, "observe server: a connection failed", error=repr(error))


class _DeadlineReader(io.RawIOBase):
    """A socket's input that ends in TimeoutError at `deadline` (time.monotonic()), however
    often bytes arrive before it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(remaining)
        return self.sock.recv_into(buffer)


def _handler_for(observe: ObserveServer) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `observe`'s metrics and health."""

    class Handler(BaseHTTPRequestHandler):
        server: _BoundedServer

        def setup(self) -> None:
            super().setup()
            deadline = time.monotonic() + observe.request_seconds
            self.rfile.close()  # the socket's own file: read through the deadline instead
            self.rfile = io.BufferedReader(_DeadlineReader(self.connection, deadline))

        def do_GET(self) -> None:
            # the request is in: this connection is no longer closed to make room, and its
            # answer must be taken within request_seconds
            self.server.registry.busy(self.connection)
            self.connection.settimeout(observe.request_seconds)
            path = self.path.split("?", 1)[0]
            try:
                if not observe.hosts.allows(self.headers.get("Host")):
                    status, body, content_type = 400, b'{"status": "host not allowed"}\n', JSON
                else:
                    status, body, content_type = _answer(observe, path)
            except Exception:
                log.exception("observe_request_failed", path=path)
                status, body, content_type = 500, b'{"status": "error"}\n', JSON
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a line per scrape would drown the daemon's own logs

    return Handler


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
