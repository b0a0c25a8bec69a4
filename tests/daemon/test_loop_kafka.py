"""The consume loop on the session's real broker, through kafka-python: what test_loop.py checks
on the in-memory broker that depends on the client — the group join as the log tells it, the
lag gauge from the end offsets fetches report, and a close without error lines."""

import logging
import threading
from typing import Any, Unpack

import pytest
import structlog

from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.loop import Loop, LoopSettings
from filterd.kafka.consumer import Batch
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from tests.daemon.conftest import produce
from tests.daemon.test_loop import lag_gauge


class Reading(Loop):
    """Takes batches without doing anything with them, and asks to stop after `enough` records."""

    role = "scorer"

    def __init__(
        self, stop: threading.Event, enough: int, **settings: Unpack[LoopSettings]
    ) -> None:
        super().__init__(**settings)
        self.stop, self.enough, self.read = stop, enough, 0

    def process(self, batch: Batch) -> dict[str, int]:
        self.read += len(batch)
        if self.read >= self.enough:
            self.stop.set()
        return {"read": len(batch)}


def test_a_loop_logs_its_join_reports_its_lag_and_closes_quietly(
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("filterd.daemon.loop.LAG_SECONDS", 0.0)  # after every poll
    topic = topics["messages"]
    produce(kafka_config, topic, [b"%d" % i for i in range(100)], keys=["one partition"] * 100)
    stop = threading.Event()
    caplog.set_level(logging.WARNING, logger="kafka")
    with structlog.testing.capture_logs() as logged:
        loop = Reading(
            stop,
            60,
            kafka=kafka_config,
            topic=topic,
            group=f"lag-{topic}",
            max_records=25,
            publisher=MemoryPublisher(MemoryBroker({})),  # the loop publishes nothing
            guard=DeadLetterGuard(),
            dead_letter_topic="unused",
            payload_limit=100,
            metrics=Metrics(),
            health=Health(),
            log=structlog.get_logger(),
        )
        loop.run(stop)
    events = [e["event"] for e in logged]
    assert events[:2] == ["joining group", "group joined"] and events[-1] == "stopped"
    assert next(e for e in logged if e["event"] == "group joined")["partitions"] == [0, 1, 2, 3]
    lag = lag_gauge(loop.metrics)
    # the records' partition lags by what was not read; the empty ones (those fetched yet) by 0
    assert (
        60 <= loop.read < 100 and sorted(lag.values())[-1] == sum(lag.values()) == 100 - loop.read
    )
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
