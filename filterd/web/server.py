"""The HTTP API served by uvicorn in a background thread: `HttpServer(app, host, port).start()`.

The socket is bound in the caller's thread, so that a port in use or an address that cannot be
bound is an OSError at start-up (the daemon turns it into a StartupError naming the key), and
port 0 picks a free port (then in `port`). `stop()` lets the requests in flight finish, up to
`STOP_SECONDS`, and returns; uvicorn installs no signal handlers outside the main thread, so the
process's own SIGTERM handling (`filterd run`, `filterd serve`) stays in charge.

Connections are bounded in number and time (`DeadlineProtocol`): a request (headers and body)
must arrive whole within `request_seconds` of the accept, or of the end of the answer before it
on a kept-alive connection; a kept-alive connection that sends nothing is closed after
`KEEP_ALIVE_SECONDS`; at most `max_connections` are open (`filterd.observe.connections`).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Self

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from filterd.observe.connections import Connections, connection_cap
from filterd.service.config import DEFAULTS

STOP_SECONDS = 3  # from stop() to the server thread's end, at the most
START_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5
# connections accepted in one turn of the event loop (and the kernel's queue of connections not
# yet accepted): a burst of accepts holds file descriptors until the turn ends, and a connection
# needs a turn or two to be read before a burst can count it the oldest waiting
BACKLOG = 128
# h11's states of the client once its request has arrived whole
RECEIVED = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)


class DeadlineProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11), with a deadline on each request and a bounded number
    of connections (`registry`, set by `bounded_protocol`).

    A connection is admitted into `registry` at its accept (closing the oldest waiting one
    at the limit, or itself when none waits). Its request, headers and body, must then arrive
    whole within `request_seconds`, however slowly the bytes trickle in; else the connection is
    closed (an ASGI app already reading the body sees a disconnect). The deadline is counted
    again from the end of each answer on a kept-alive connection."""

    registry: Connections[DeadlineProtocol]
    request_seconds: float

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not isinstance(transport, asyncio.Transport):
            raise TypeError(f"a stream transport expected, not {transport!r}")
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        if self.registry.admit(self):
            self._arm()
        else:
            transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.registry.remove(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self._deadline is not None and self.conn.their_state in RECEIVED:
            self._disarm()
            self.registry.busy(self)

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            # armed first: a pipelined request that super() handles now disarms it again
            self.registry.waiting(self)
            self._arm()
        super().on_response_complete()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        self.transport.abort()


def bounded_protocol(max_connections: int, request_seconds: float) -> type[DeadlineProtocol]:
    """A `DeadlineProtocol` class of its own for one server: at most `max_connections` (capped
    by `connection_cap`) connections, each request within `request_seconds`."""

    def evict(protocol: DeadlineProtocol) -> None:
        protocol.transport.abort()

    table = Connections(connection_cap(max_connections), evict, "http", "http.max_connections")
    seconds = request_seconds

    class Bounded(DeadlineProtocol):
        registry = table
        request_seconds = seconds

    return Bounded


class HttpServer:
    def __init__(
        self,
        app: ASGIApp,
        host: str = DEFAULTS.http.host,
        port: int = 0,
        max_connections: int = DEFAULTS.http.max_connections,
        request_seconds: float = DEFAULTS.http.request_seconds,
    ) -> None:
        self.app, self.host, self.port = app, host, port
        self.max_connections, self.request_seconds = max_connections, request_seconds
        self.registry: Connections[DeadlineProtocol] | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind, then serve in a daemon thread; returns once uvicorn accepts connections."""
        if self._server is not None:
            raise RuntimeError("the HTTP server is already started")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        # uvicorn's own logging off: filterd logs each request itself (filterd.web.app.RequestLog)
        protocol = bounded_protocol(self.max_connections, self.request_seconds)
        config = uvicorn.Config(
            self.app,
            http=protocol,
            backlog=max(8, min(BACKLOG, protocol.registry.limit // 2)),
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=int(STOP_SECONDS),
        )
        self.registry = protocol.registry
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="filterd-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            self.stop()
            raise OSError(f"the HTTP server on {self.host}:{self.port} did not start")
        return self

    def stop(self) -> None:
        """Finish the requests in flight (up to STOP_SECONDS) and close; no-op if not started."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.should_exit = True
        if thread is not None:
            thread.join(STOP_SECONDS + 1.0)
        if self.registry is not None:
            self.registry.flush()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
