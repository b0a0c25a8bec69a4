"""Idle and trickling sockets against both ports of a real `filterd run` (the HTTP API with
`[http] enabled`, and the observe port) whose open-file limit is 1,024, soft and hard: with
1,100 half-sent requests held on one port, `/v1/check`, a workbench page, `/healthz` and
`/metrics` still answer within a second, and the log stays quiet."""

import contextlib
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from filterd.demo.broker import LocalBroker, free_port
from filterd.service.passwords import hash_secret
from tests.conftest import kafka_settings, new_topics
from tests.daemon.conftest import write_config
from tests.web.conftest import PASSWORD, ROUNDS, basic, learned_store

OPEN_FILES = 1024  # the default soft limit, and here the hard one too: nothing to raise it to
ATTACKERS = 1100
ANSWER_SECONDS = 1.0
TRICKLE_SECONDS = 0.5
# what the daemon may log while attacked, besides one "http request" line per request the test
# makes itself: a rate-limited warning or two, and a few lines of its own business
QUIET_WARNINGS, QUIET_LINES = 3, 10

AUTH = basic("dana", PASSWORD)
CHECK = json.dumps({"id": "c1", "text": "cheap meds, click now"}).encode()


class Flood:
    """`count` connections to 127.0.0.1:`port`, each sending the start of a request it never
    finishes: half stop after the first header line, half trickle a header byte every
    TRICKLE_SECONDS. `closed` counts those the server has closed. `close()` closes the rest."""

    def __init__(self, port: int, count: int) -> None:
        self.socks = []
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            self.socks.append(sock)
        self.closed = 0
        self._stop = threading.Event()
        self._wait_connected(3.0)
        for sock in self.socks:
            self._send(sock, b"POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _wait_connected(self, seconds: float) -> None:
        with selectors.DefaultSelector() as selector:
            for sock in self.socks:
                selector.register(sock, selectors.EVENT_WRITE)
            pending, deadline = len(self.socks), time.monotonic() + seconds
            while pending and time.monotonic() < deadline:
                for key, _ in selector.select(0.1):
                    selector.unregister(key.fileobj)
                    pending -= 1

    @staticmethod
    def _send(sock: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):  # reset: seen as closed by _trickle
            sock.send(data)

    def _trickle(self) -> None:
        while not self._stop.wait(TRICKLE_SECONDS):
            open_socks = []
            for i, sock in enumerate(self.socks):
                if i % 2 == 0:
                    self._send(sock, b"a")
                try:
                    alive = sock.recv(1) != b""
                except BlockingIOError:
                    alive = True
                except OSError:
                    alive = False
                if alive:
                    open_socks.append(sock)
                else:
                    sock.close()
                    self.closed += 1
            self.socks = open_socks

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.socks:
            sock.close()


def timed_get(url: str, data: bytes | None = None, auth: str | None = None) -> tuple[int, float]:
    """(status, seconds) of one request; status 0 when no answer came within 5 s."""
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    request.add_header("Content-Type", "application/json")
    if auth:
        request.add_header("Authorization", auth)
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = 0
    return status, time.monotonic() - started


class Daemon:
    """`filterd run` with the HTTP API, at OPEN_FILES open files, its log in a file."""

    def __init__(
        self, tmp_path: Path, kafka_config: dict[str, Any], topics: dict[str, str]
    ) -> None:
        url = f"sqlite:///{tmp_path / 'filterd.db'}"
        learned_store(url)
        users = '{dana = "%s"}' % hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
        self.http_port = free_port()
        model = {"min_docs": 5, "variant": "mnb", "holdout_fraction": 0.0}
        http = {"enabled": True, "port": self.http_port}
        config = write_config(tmp_path, kafka_config, topics, url, http=http, model=model)
        self.observe_port = json.loads(config.with_suffix(".json").read_text())["port"]
        self.log_path = tmp_path / "daemon.log"
        limit = f"resource.setrlimit(resource.RLIMIT_NOFILE, ({OPEN_FILES}, {OPEN_FILES}))"
        limited = f"import os, resource, sys; {limit}; os.execv(sys.argv[1], sys.argv[1:])"
        command = [sys.executable, "-c", limited, sys.executable, "-m", "filterd", "run"]
        command += ["--config", str(config)]
        env = {**os.environ, "FILTERD_HTTP_USERS": users}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while '"event": "ready"' not in self.log() or self.check()[0] != 200:
            assert self.process.poll() is None, self.log()
            assert time.monotonic() < deadline, "the API did not answer:\n" + self.log()[-3000:]
            time.sleep(0.2)

    def check(self) -> tuple[int, float]:
        return timed_get(f"http://127.0.0.1:{self.http_port}/v1/check", CHECK, AUTH)

    def page(self) -> tuple[int, float]:
        return timed_get(f"http://127.0.0.1:{self.http_port}/login")

    def observe(self, path: str) -> tuple[int, float]:
        return timed_get(f"http://127.0.0.1:{self.observe_port}{path}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, broker: LocalBroker) -> Iterator[Daemon]:
    """One daemon for the module: each test floods one of its ports, and checks the answers,
    the log and the connections of its own flood."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 3 * ATTACKERS:
        pytest.skip(f"the test's own sockets need more open files than {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp_path = tmp_path_factory.mktemp("idle")
    started = Daemon(tmp_path, kafka_settings(broker), new_topics(broker))
    yield started
    started.stop()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def attacked(
    daemon: Daemon, port: int
) -> tuple[dict[str, list[tuple[int, float]]], list[str], int]:
    """Floods `port` for a few seconds while asking each endpoint three times; (answers by
    endpoint, the log lines written meanwhile but the requests' own, the reconnections)."""
    before = len(daemon.log().splitlines())
    flood = Flood(port, ATTACKERS)
    answers: dict[str, list[tuple[int, float]]] = {
        "check": [],
        "page": [],
        "healthz": [],
        "metrics": [],
    }
    try:
        for _ in range(3):
            time.sleep(1.0)
            answers["check"].append(daemon.check())
            answers["page"].append(daemon.page())
            answers["healthz"].append(daemon.observe("/healthz"))
            answers["metrics"].append(daemon.observe("/metrics"))
    finally:
        flood.close()
    time.sleep(0.5)  # what the flood made the daemon log, logged
    lines = daemon.log().splitlines()[before:]
    noise = [line for line in lines if '"event": "http request"' not in line]
    return answers, noise, flood.closed


def is_warning(line: str) -> bool:
    """A warning or an error, or a line that is not a JSON log record (a traceback's)."""
    try:
        record = json.loads(line)
    except ValueError:
        return True
    return not isinstance(record, dict) or record.get("level") not in ("debug", "info")


@pytest.mark.parametrize("flooded", ["http_port", "observe_port"])
def test_every_endpoint_answers_within_a_second_while_a_port_is_flooded(
    daemon: Daemon, flooded: str
) -> None:
    """The API's port, then the observe port: the other endpoints and the flooded port's own
    answer within ANSWER_SECONDS, the log stays quiet, the daemon lives."""
    answers, noise, closed = attacked(daemon, getattr(daemon, flooded))
    for endpoint, results in answers.items():
        for status, seconds in results:
            assert status == 200 and seconds < ANSWER_SECONDS, (endpoint, results)
    warnings = [line for line in noise if is_warning(line)]
    assert len(warnings) <= QUIET_WARNINGS, warnings[:20]
    assert len(noise) <= QUIET_LINES, noise[:20]
    # it holds fewer connections than it has file descriptors
    assert closed > ATTACKERS - OPEN_FILES
    assert daemon.process.poll() is None
