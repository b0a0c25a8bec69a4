"""The HTTP API served by uvicorn in a background thread: `HttpServer(app, host, port).start()`.

The socket is bound in the caller's thread, so that a port in use or an address that cannot be
bound is an OSError at start-up (the daemon turns it into a StartupError naming the key), and
port 0 picks a free port (then in `port`). `stop()` lets the requests in flight finish, up to
`STOP_SECONDS`, and returns; uvicorn installs no signal handlers outside the main thread, so the
process's own SIGTERM handling (`filterd run`, `filterd serve`) stays in charge.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Self

import uvicorn
from starlette.types import ASGIApp

STOP_SECONDS = 3  # from stop() to the server thread's end, at the most
START_SECONDS = 10.0


class HttpServer:
    def __init__(self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app, self.host, self.port = app, host, port
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
        config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=int(STOP_SECONDS))  # fmt: skip
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                        name="filterd-http", daemon=True)  # fmt: skip
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
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
