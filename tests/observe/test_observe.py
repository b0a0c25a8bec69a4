"""filterd.observe: /metrics, /healthz and /readyz over real HTTP, and the logging set-up."""

from __future__ import annotations

import io
import json
import logging
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
import structlog
from starlette.types import Receive, Scope, Send

from filterd.observe.health import Health
from filterd.observe.logs import RateLimit, Repeats, configure_logging, progress
from filterd.observe.metrics import Metrics
from filterd.observe.server import ObserveServer
from tests.sockets import connected, is_open, seconds_until_closed


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def get(server: ObserveServer, path: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET on the running server."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Iterator[ObserveServer]:
    with ObserveServer(Metrics(), Health(clock=clock), port=0, host="127.0.0.1") as s:
        yield s


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """A stream to log to; the logging configuration is undone afterwards."""
    stream = io.StringIO()
    root, kafka = logging.getLogger(), logging.getLogger("kafka")
    levels, handlers = (root.level, kafka.level), list(root.handlers)
    yield stream
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(levels[0])
    kafka.setLevel(levels[1])
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_metrics_show_counters_with_their_labels(server: ObserveServer) -> None:
    m = server.metrics
    m.messages.labels(outcome="decided").inc(3)
    m.decisions.labels(label="spam", decided_by="model").inc()
    m.dead_letters.labels(reason="undecodable", topic="filterd.messages").inc(2)
    m.feedback.labels(outcome="relabelled").inc()
    m.batch_seconds.labels(role="scorer").observe(0.004)
    m.store_errors.labels(role="learner").inc()
    m.model_version.set(7)
    status, content_type, body = get(server, "/metrics")
    assert status == 200 and content_type == prometheus_client.CONTENT_TYPE_LATEST
    text = body.decode().splitlines()
    for line in [
        'filterd_messages_total{outcome="decided"} 3.0',
        'filterd_messages_total{outcome="dead_lettered"} 0.0',
        'filterd_decisions_total{decided_by="model",label="spam"} 1.0',
        'filterd_dead_letters_total{reason="undecodable",topic="filterd.messages"} 2.0',
        'filterd_feedback_total{outcome="relabelled"} 1.0',
        'filterd_feedback_total{outcome="held_out"} 0.0',
        'filterd_batch_seconds_bucket{le="0.001",role="scorer"} 0.0',
        'filterd_batch_seconds_bucket{le="0.005",role="scorer"} 1.0',
        'filterd_batch_seconds_count{role="learner"} 0.0',
        'filterd_store_errors_total{role="learner"} 1.0',
        "filterd_model_version 7.0",
        "filterd_threshold_version -1.0",
        "filterd_not_ready 1.0",
        "filterd_model_staleness_seconds 0.0",
    ]:
        assert line in text


def test_decision_latency_counts_a_batch_of_decisions_at_once(server: ObserveServer) -> None:
    latency = server.metrics.decision_latency
    latency.observe(0.05, 80)  # a bound itself counts in its bucket (le = less or equal)
    latency.observe(0.0501, 2)
    latency.observe(30.0)
    latency.observe(0.001, 0)  # an empty batch changes nothing
    text = get(server, "/metrics")[2].decode().splitlines()
    for line in [
        'filterd_decision_latency_seconds_bucket{le="0.045"} 0.0',
        'filterd_decision_latency_seconds_bucket{le="0.05"} 80.0',
        'filterd_decision_latency_seconds_bucket{le="0.06"} 82.0',
        'filterd_decision_latency_seconds_bucket{le="10.0"} 82.0',
        'filterd_decision_latency_seconds_bucket{le="+Inf"} 83.0',
        "filterd_decision_latency_seconds_count 83.0",
    ]:
        assert line in text
    total = next(line for line in text if line.startswith("filterd_decision_latency_seconds_sum "))
    assert float(total.split()[1]) == pytest.approx(80 * 0.05 + 2 * 0.0501 + 30.0)


def test_each_metrics_has_a_registry_of_its_own() -> None:
    a, b = Metrics(), Metrics()  # the same names twice in one registry would raise
    a.decisions.labels(label="ham", decided_by="model").inc()
    assert b'filterd_decisions_total{decided_by="model",label="ham"} 1.0' in a.render()
    assert b"filterd_decisions_total{" not in b.render()
    assert prometheus_client.REGISTRY.get_sample_value("filterd_not_ready") is None


def test_an_unknown_path_is_404(server: ObserveServer) -> None:
    assert get(server, "/nothing")[0] == 404
    assert get(server, "/metrics?name[]=x")[0] == 200


def test_healthz_is_503_while_a_loop_is_stalled(server: ObserveServer, clock: Clock) -> None:
    health = server.health
    assert get(server, "/healthz")[:2] == (200, "application/json")
    health.register_loop("scorer", stall_seconds=30)
    health.register_loop("learner", stall_seconds=60)
    clock.now += 29
    health.beat("scorer")
    clock.now += 29
    assert get(server, "/healthz")[0] == 200 and health.live() == (True, {"status": "ok"})
    clock.now += 2  # scorer 31 s since its beat, learner 60 s: only scorer is late
    status, _, body = get(server, "/healthz")
    assert status == 503
    assert json.loads(body) == {
        "status": "stalled",
        "stalled": {"scorer": "no beat for 31.0 s (limit 30 s)"},
    }
    health.beat("scorer")
    assert get(server, "/healthz")[0] == 200
    clock.now += 100
    health.unregister_loop("scorer")
    health.unregister_loop("learner")
    health.beat("scorer")  # a late beat after unregistering is ignored
    assert get(server, "/healthz")[0] == 200


def test_readyz_is_503_until_every_condition_is_ok(server: ObserveServer) -> None:
    health = server.health
    status, content_type, body = get(server, "/readyz")
    assert (status, content_type) == (503, "application/json")  # nothing set yet
    assert json.loads(body)["status"] == "not ready"
    health.set_ready("kafka", True)
    health.set_ready("store", False, "connection refused")
    status, _, body = get(server, "/readyz")
    assert status == 503
    # the failing condition is named; its detail stays in the log
    assert json.loads(body) == {"status": "not ready", "failing": {"store": ""}}
    assert "connection refused" not in body.decode()
    health.set_ready("store", True)
    status, _, body = get(server, "/readyz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})


def test_the_server_stops_and_frees_its_port(clock: Clock) -> None:
    server = ObserveServer(Metrics(), Health(clock=clock), port=0, host="127.0.0.1").start()
    assert server.port != 0 and get(server, "/metrics")[0] == 200
    server.stop()
    with pytest.raises(urllib.error.URLError):
        get(server, "/metrics")
    again = ObserveServer(Metrics(), Health(clock=clock), port=server.port, host="127.0.0.1")
    with again:
        assert again.port == server.port and get(again, "/healthz")[0] == 200


def test_json_logs_from_structlog_and_stdlib_are_one_object_a_line(logs: io.StringIO) -> None:
    configure_logging("json", "info", stream=logs)
    structlog.get_logger("filterd.daemon").info("model_reloaded", version=7)
    structlog.get_logger("filterd.daemon").debug("hidden_below_info")
    logging.getLogger("sqlalchemy.engine").warning("slow query: %s", "SELECT 1")
    logging.getLogger("kafka.conn").info("connecting")  # kafka loggers start at WARNING
    logging.getLogger("alembic.runtime.migration").info("Context impl SQLiteImpl.")  # …as alembic's
    try:
        raise ValueError("bad row")
    except ValueError:
        logging.getLogger("alembic").exception("migration failed")
    own, foreign, failed = lines(logs)
    assert own["event"] == "model_reloaded" and own["version"] == 7
    assert (own["level"], own["logger"]) == ("info", "filterd.daemon")
    assert foreign["event"] == "slow query: SELECT 1"
    assert (foreign["level"], foreign["logger"]) == ("warning", "sqlalchemy.engine")
    assert failed["level"] == "error" and "ValueError: bad row" in failed["exception"]
    for record in (own, foreign, failed):
        stamp = datetime.fromisoformat(record["timestamp"])
        assert stamp.utcoffset() == timedelta(0)


def test_console_logs_are_lines_for_people(logs: io.StringIO) -> None:
    configure_logging("console", "debug", stream=logs)
    structlog.get_logger("filterd").debug("scorer_started", partitions=3)
    (line,) = logs.getvalue().splitlines()
    assert "scorer_started" in line and "partitions=3" in line and not line.startswith("{")


def test_kafka_errors_are_rate_limited_per_logger_and_message(
    logs: io.StringIO, clock: Clock
) -> None:
    configure_logging("json", stream=logs, clock=clock)
    conn = logging.getLogger("kafka.conn")
    for i in range(100):  # what kafka-python does in 8 s while a broker is down
        conn.error("%s: Connection error: %s", f"<BrokerConnection {i}>", "refused")
        clock.now += 0.08
    logging.getLogger("kafka.client").error("Unable to bootstrap")  # another logger passes
    for _ in range(3):
        logging.getLogger("filterd.stream").error("not a kafka logger")
    assert [r["event"] for r in lines(logs)] == [
        "<BrokerConnection 0>: Connection error: refused",
        "Unable to bootstrap",
        *["not a kafka logger"] * 3,
    ]
    clock.now += 2  # 10 s after the first one
    conn.error("%s: Connection error: %s", "<BrokerConnection 100>", "refused")
    last = lines(logs)[-1]
    assert last["event"] == "<BrokerConnection 100>: Connection error: refused"
    assert last["suppressed"] == 99


def test_a_flood_of_bad_requests_logs_a_line_per_window_not_per_request(logs: io.StringIO) -> None:
    """uvicorn warns of each request it cannot parse: rate-limited like kafka-python."""
    from filterd.web.server import HttpServer

    configure_logging("json", stream=logs)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("no request should get through")

    with HttpServer(app) as server:
        for _ in range(30):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
                sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 400")
    invalid = [r for r in lines(logs) if r["event"] == "Invalid HTTP request received."]
    assert len(invalid) == 1 and invalid[0]["logger"] == "uvicorn.error"


def test_the_rate_limit_window_is_a_parameter(clock: Clock) -> None:
    limit = RateLimit(window=1.0, clock=clock)
    record = logging.LogRecord("kafka", logging.ERROR, __file__, 1, "down", None, None)
    assert limit.filter(record) and not limit.filter(record)
    clock.now += 1.0
    assert limit.filter(record) and vars(record)["suppressed"] == 1


def test_an_unknown_format_or_level_is_refused(logs: io.StringIO) -> None:
    with pytest.raises(ValueError, match="json or console"):
        configure_logging("xml", stream=logs)
    with pytest.raises(ValueError, match="level"):
        configure_logging("json", "verbose", stream=logs)


def test_the_server_listens_on_loopback_unless_told_otherwise(clock: Clock) -> None:
    with ObserveServer(Metrics(), Health(clock=clock), port=0) as server:
        assert server._server is not None and server._server.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("drip", [b"", b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * 100])
def test_a_request_not_whole_by_its_deadline_is_closed_however_it_trickles(
    clock: Clock, drip: bytes
) -> None:
    with ObserveServer(Metrics(), Health(clock=clock), port=0, request_seconds=1.0) as server:
        sock = connected(server.port)
        assert 0.9 < seconds_until_closed(sock, drip) < 1.8
        sock.close()
        assert get(server, "/healthz")[0] == 200


def test_at_the_limit_the_connection_that_waited_longest_is_closed(clock: Clock) -> None:
    health = Health(clock=clock)
    with ObserveServer(Metrics(), health, port=0, max_connections=8, request_seconds=60) as server:
        idle = [connected(server.port) for _ in range(8)]
        time.sleep(0.2)
        idle += [connected(server.port) for _ in range(3)]  # each closes the oldest idle one
        time.sleep(0.2)
        assert get(server, "/healthz")[0] == 200  # and so does this one
        assert [is_open(sock) for sock in idle] == [False] * 4 + [True] * 7
        for sock in idle:
            sock.close()


def test_a_flood_of_connections_costs_no_thread_each(clock: Clock) -> None:
    """One thread serves them all: a flood does not queue the probe behind a thread per
    connection (the start of each, and the wake-up of each one closed to make room)."""
    with ObserveServer(Metrics(), Health(clock=clock), port=0, request_seconds=60) as server:
        threads = threading.active_count()
        flood = [connected(server.port) for _ in range(200)]
        for sock in flood:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Pad: ")
        time.sleep(0.2)
        assert get(server, "/healthz")[0] == 200
        assert threading.active_count() <= threads
        assert sum(is_open(sock) for sock in flood) == server.max_connections - 1
        for sock in flood:
            sock.close()


def answer_to(port: int, request: bytes) -> bytes:
    """What the server sends back to `request` before it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_get_and_head_are_answered_other_methods_and_oversized_heads_are_not(
    server: ObserveServer,
) -> None:
    host = f"Host: 127.0.0.1:{server.port}\r\n\r\n".encode()
    get_answer = answer_to(server.port, b"GET /healthz HTTP/1.1\r\n" + host)
    head, _, body = get_answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and b"Connection: close" in head.split(b"\r\n")
    assert body == b'{"status": "ok"}\n'
    head_answer = answer_to(server.port, b"HEAD /healthz HTTP/1.1\r\n" + host)
    assert head_answer == head + b"\r\n\r\n"  # the same head, no body
    post = answer_to(server.port, b"POST /healthz HTTP/1.1\r\n" + host)
    assert post.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in post
    padded = b"GET /healthz HTTP/1.1\r\nX-Pad: " + b"a" * 20_000  # and on and on
    assert answer_to(server.port, padded).startswith(b"HTTP/1.1 431 ")
    assert answer_to(server.port, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def test_clients_that_go_away_leave_no_traceback(
    clock: Clock, capfd: pytest.CaptureFixture[str]
) -> None:
    with ObserveServer(Metrics(), Health(clock=clock), port=0) as server:
        for request in (b"GET /metrics HTTP/1.0\r\n\r\n", b"GET /metr"):
            for _ in range(20):
                sock = socket.create_connection(("127.0.0.1", server.port))
                sock.sendall(request)
                # closed with a reset, before the answer is written
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
        time.sleep(0.5)
        assert get(server, "/healthz")[0] == 200
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Exception" not in out + err, err[:2000]


def test_the_open_file_limit_is_raised_and_bounds_the_connections(tmp_path: Path) -> None:
    """At start the soft limit of open files goes up to the hard one; a server keeps at most a
    quarter of it in connections."""
    script = (
        "import resource, sys\n"
        "from filterd.observe.connections import connection_cap\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2])))\n"
        "print(connection_cap(1000), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    answers = [
        subprocess.run(
            [sys.executable, "-c", script, *limits], capture_output=True, text=True, check=True
        ).stdout.split()
        for limits in (("1024", "8192"), ("1024", "1024"), ("16", "16"))
    ]
    assert answers == [["1000", "8192"], ["256", "1024"], ["8", "16"]]


def test_a_repeated_warning_is_logged_once_then_counted_once_a_window(clock: Clock) -> None:
    repeats = Repeats(window=60.0, clock=clock)
    with structlog.testing.capture_logs() as logged:
        log = structlog.get_logger("filterd")
        for offset in range(100):
            repeats.warning(log, "dead-lettered", {"reason": "invalid_label"}, offset=offset)
            clock.now += 0.5  # 100 records in 50 s
        repeats.warning(log, "dead-lettered", {"reason": "schema"}, offset=7)  # another key passes
        repeats.flush()
        assert len(logged) == 2  # the window of the first key is not over yet
        clock.now += 10
        repeats.flush()
        repeats.warning(
            log, "dead-lettered", {"reason": "invalid_label"}, offset=100
        )  # a new window
        repeats.flush(everything=True)
    first, other, summary, again = logged
    assert first == {
        "event": "dead-lettered",
        "reason": "invalid_label",
        "offset": 0,
        "log_level": "warning",
    }
    assert other["reason"] == "schema" and "repeated" not in other
    assert summary == {
        "event": "dead-lettered",
        "reason": "invalid_label",
        "offset": 99,
        "repeated": 99,
        "window_seconds": 60.0,
        "log_level": "warning",
    }
    assert again["offset"] == 100 and "repeated" not in again  # alone in its window: no count


def test_a_failed_leave_group_is_not_an_error_and_other_kafka_errors_still_are(
    logs: io.StringIO,
) -> None:
    configure_logging("json", stream=logs)
    coordinator = logging.getLogger("kafka.coordinator")
    coordinator.error("LeaveGroup request failed: %s", "KafkaTimeoutError: Timed out after 5000 ms")
    coordinator.error("Error sending HeartbeatRequest to node %s", "coordinator-111")
    assert [(r["level"], r["event"]) for r in lines(logs)] == [
        ("error", "Error sending HeartbeatRequest to node coordinator-111")
    ]
    logging.getLogger("kafka").setLevel(logging.DEBUG)  # asked for: shown at the level it was given
    coordinator.error("LeaveGroup request failed: %s", "KafkaTimeoutError")
    assert lines(logs)[-1]["level"] == "info"


def test_a_receive_on_a_connection_closed_meanwhile_is_a_warning(logs: io.StringIO) -> None:
    configure_logging("json", stream=logs)
    transport = logging.getLogger("kafka.net.transport")
    try:
        raise OSError(9, "Bad file descriptor")
    except OSError:
        transport.exception(
            "%s: Error receiving network data closing socket", "<KafkaTCPTransport [none] (closed)>"
        )
    transport.error("%s: socket disconnected", "<KafkaTCPTransport [node 1]>")
    assert [r["level"] for r in lines(logs)] == ["warning", "error"]


def test_a_long_step_logs_its_progress_until_it_ends() -> None:
    with structlog.testing.capture_logs() as logged:
        with progress(structlog.get_logger(), "loading the model", every=0.05, model="m") as so_far:
            time.sleep(0.15)
            so_far["token_rows"] = 50_000
            time.sleep(0.15)
        at_the_end = len(logged)
        time.sleep(0.15)
    assert len(logged) == at_the_end  # the ticker stopped with the step
    assert logged[0] == {"event": "loading the model", "model": "m", "log_level": "info"}
    ticks = logged[1:]
    assert len(ticks) >= 2 and all(
        t["event"] == "loading the model" and "seconds" in t for t in ticks
    )
    assert ticks[-1]["token_rows"] == 50_000  # how far the step got, once it says


def test_the_lag_and_target_recall_gauges_are_exported(server: ObserveServer) -> None:
    m = server.metrics
    m.consumer_lag.labels(role="scorer", topic="filterd.messages", partition="3").set(42)
    m.target_recall.set(0.95)
    text = get(server, "/metrics")[2].decode().splitlines()
    assert 'filterd_consumer_lag{partition="3",role="scorer",topic="filterd.messages"} 42.0' in text
    assert "filterd_target_recall 0.95" in text


def get_as(server: ObserveServer, path: str, host: str) -> int:
    """The status of a GET of `path` with `Host: host`, as a rebound page's request says it."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", headers={"Host": host}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            status: int = r.status
            return status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_host_header_naming_another_site_is_refused_against_dns_rebinding(
    server: ObserveServer, clock: Clock
) -> None:
    server.health.set_ready("store", True)
    for path in ("/metrics", "/healthz", "/readyz"):
        assert get_as(server, path, f"evil.example:{server.port}") == 400
        assert get_as(server, path, f"localhost:{server.port}") == 200
        assert get_as(server, path, f"127.0.0.1:{server.port}") == 200
    assert get_as(server, "/metrics", "localhost:1") == 400  # another port is another site


def test_a_scraper_that_names_the_host_is_answered_once_the_name_is_listed(clock: Clock) -> None:
    health = Health(clock=clock)
    listed = ["filterd-1.example.net"]
    with ObserveServer(Metrics(), health, port=0, allowed_hosts=listed) as server:
        assert get_as(server, "/metrics", f"filterd-1.example.net:{server.port}") == 200
        assert get_as(server, "/metrics", f"filterd-2.example.net:{server.port}") == 400
