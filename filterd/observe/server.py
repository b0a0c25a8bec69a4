"""A threaded HTTP server in a daemon thread answering GET /metrics (Prometheus text format),
/healthz and /readyz (200 or 503 with a small JSON body), 404 otherwise."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import prometheus_client
import structlog

from filterd.observe.health import Health
from filterd.observe.metrics import Metrics

JSON = "application/json"
REQUEST_TIMEOUT_SECONDS = 10.0


log = structlog.get_logger(__name__)


class ObserveServer:
    """HTTP server in a daemon thread: GET /metrics, /healthz, /readyz; 404 otherwise."""

    def __init__(
        self, metrics: Metrics, health: Health, port: int, host: str = "127.0.0.1"
    ) -> None:
        self.metrics = metrics
        self.health = health
        self.host = host
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind (port 0 picks a free port, then in `self.port`) and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the observe server is already started")
        server = ThreadingHTTPServer((self.host, self.port), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
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
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler_for(observe: ObserveServer) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `observe`'s metrics and health."""

    class Handler(BaseHTTPRequestHandler):
        # a connection that sends nothing is closed after this many seconds instead of holding
        # its thread for ever
        timeout = REQUEST_TIMEOUT_SECONDS

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            try:
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
