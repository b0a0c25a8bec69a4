"""`filterd serve` as a child process serves /healthz, /readyz and /metrics on
`observe.metrics_port`, as `filterd run` does: ready once the model is loaded and the API
listens, not ready while the store fails, and the API's requests counted on /metrics."""

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from filterd.demo.broker import free_port
from filterd.service.passwords import hash_secret
from tests.web.conftest import PASSWORD, ROUNDS, basic, call, learned_store


def serve(config: Path) -> list[str]:
    return [sys.executable, "-m", "filterd", "serve", "--config", str(config)]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for(
    condition: Callable[[], object],
    process: subprocess.Popen[bytes],
    log: Path,
    what: str,
    seconds: float = 30,
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        assert process.poll() is None, f"serve exited while waiting for {what}:\n{log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")


@pytest.fixture
def serve_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, int, int]:
    """A configuration file for `filterd serve` over a learned SQLite store: (path, database
    file, HTTP port, metrics port). No broker: serve needs one only to send labels."""
    database = tmp_path / "filterd.db"
    learned_store(f"sqlite:///{database}")
    users = '{dana = "%s"}' % hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    monkeypatch.setenv("FILTERD_HTTP_USERS", users)
    http_port, metrics_port = free_port(), free_port()
    path = tmp_path / "filterd.toml"
    path.write_text(f"""
[database]
url = "sqlite:///{database}"
[model]
variant = "mnb"
min_docs = 5
holdout_fraction = 0.0
[intervals]
sync_seconds = 0.3
threshold_reload_seconds = 0.3
[kafka]
bootstrap_servers = "127.0.0.1:9"
[http]
port = {http_port}
[observe]
metrics_port = {metrics_port}
""")
    return path, database, http_port, metrics_port


def test_serve_answers_health_readiness_and_metrics(
    serve_config: tuple[Path, Path, int, int], tmp_path: Path
) -> None:
    path, database, http_port, metrics_port = serve_config
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(serve(path), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: get(metrics_port, "/readyz")[0] == 200, process, log, "readiness")
        assert get(metrics_port, "/healthz") == (200, '{"status": "ok"}\n')
        auth = basic("dana", PASSWORD)
        body = {"id": "s1", "text": "hello there"}
        assert call(http_port, "POST", "/v1/check", body, auth=auth)[0] == 200
        # a request is counted as it ends, just after its answer: a scrape at once may precede it
        counted = 'filterd_http_requests_total{route="/v1/check",status="200"} 1.0\n'
        wait_for(lambda: counted in get(metrics_port, "/metrics")[1], process, log, "the count")
        status, metrics = get(metrics_port, "/metrics")
        assert status == 200 and "filterd_not_ready 0.0" in metrics.splitlines()

        # the store fails: not ready, naming the condition; ready again once it answers
        with sqlite3.connect(database) as db:
            db.execute("ALTER TABLE models RENAME TO models_away")
        wait_for(lambda: get(metrics_port, "/readyz")[0] == 503, process, log, "not ready")
        status, text = get(metrics_port, "/readyz")
        assert status == 503 and "model store" in json.loads(text)["failing"], text
        with sqlite3.connect(database) as db:
            db.execute("ALTER TABLE models_away RENAME TO models")
        wait_for(lambda: get(metrics_port, "/readyz")[0] == 200, process, log, "ready again")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0, log.read_text()
    with pytest.raises(OSError):  # the observe port closed with the process
        socket.create_connection(("127.0.0.1", metrics_port), timeout=2)


def test_serve_with_its_metrics_port_taken_says_so_in_one_line(
    serve_config: tuple[Path, Path, int, int],
) -> None:
    path, _, _, metrics_port = serve_config
    with socket.create_server(("127.0.0.1", metrics_port)):
        result = subprocess.run(serve(path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert f"metrics port {metrics_port} is in use (observe.metrics_port)" in result.stderr
    assert "Traceback" not in result.stderr
