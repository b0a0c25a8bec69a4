"""The scorer's recorder: decisions go on while the store cannot take the decided messages'
coordinates, and a batch's offsets are committed only once its coordinates are written, so a
crash meanwhile loses none (the batch is decided again)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

import pytest
import structlog
from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from filterd.daemon import recorder as recorder_module
from filterd.daemon.recorder import Recorder
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.store import decided as decided_module
from filterd.store.database import connect
from filterd.store.decided import where_decided
from filterd.store.learning import find_model_id
from tests.daemon.conftest import run_until
from tests.daemon.test_loop import TOPICS, committed_everything, messages, scorer


def test_offsets_wait_for_the_coordinates_and_decisions_do_not(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = threading.Event()
    failing.set()
    real = decided_module.record_decided

    def record_decided(
        conn: Connection, model_id: int, decided: Sequence[tuple[str, int, int]], now: datetime
    ) -> None:
        if failing.is_set():
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        return real(conn, model_id, decided, now)

    monkeypatch.setattr(recorder_module, "record_decided", record_decided)
    broker = MemoryBroker(dict(TOPICS))
    ids = messages(broker, 60)
    decider = scorer(config, broker, MemoryPublisher(broker))
    run_until(decider, lambda: len(broker.read("decisions")) == len(ids))
    assert not any(
        broker.committed.get(("messages-group", tp))
        for tp in broker.records
        if tp.topic == "messages"
    )
    assert "decisions store" in str(decider.health.ready()[1])
    assert decider.metrics.store_errors.labels(role="scorer")._value.get() > 0

    failing.clear()  # the store is back: the same scorer reads the batches again, writes, commits
    run_until(decider, lambda: committed_everything(broker, "messages-group", "messages"))
    engine = connect(config.database.url)
    with engine.connect() as conn:
        found = where_decided(conn, find_model_id(conn, "default"), ids)
    assert sorted(found) == sorted(ids)


def test_pending_rows_are_bounded_oldest_first(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module, "MAX_PENDING_ROWS", 5)
    recorder = Recorder(
        connect(config.database.url), "default", 100, Health(), Metrics(), structlog.get_logger()
    )
    tickets = [recorder.put([(f"m{i}", 0, i)], []) for i in range(8)]
    assert tickets == list(range(1, 9))
    assert recorder.write() and recorder.recorded == 8
    engine = connect(config.database.url)
    with engine.connect() as conn:
        found = where_decided(conn, find_model_id(conn, "default"), [f"m{i}" for i in range(8)])
    assert sorted(found) == [f"m{i}" for i in range(3, 8)]  # the three oldest dropped
