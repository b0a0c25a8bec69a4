"""The scorer's recorder: decisions go on while the store cannot take the decided messages'
coordinates, and a batch's offsets are committed only once its coordinates are written, so a
crash meanwhile loses none (the batch is decided again)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo

import pytest
import structlog
from kafka import TopicPartition
from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from filterd.daemon import recorder as recorder_module
from filterd.daemon.recorder import Recorder
from filterd.entities.memory import EntityEvent
from filterd.kafka.memory import MemoryBroker, MemoryConsumer, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.store import decided
from filterd.store.entities import DecidedEvent, ReadMarks
from filterd.store.handle import Store
from tests.daemon.conftest import run_until
from tests.daemon.test_loop import TOPICS, committed_everything, messages, scorer


class CommitLog(dict[tuple[str, TopicPartition], int]):
    """A MemoryBroker's committed offsets that keep every offset each (group, partition) was
    given, in order (`history`)."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[tuple[str, TopicPartition], list[int]] = defaultdict(list)

    def __setitem__(self, key: tuple[str, TopicPartition], offset: int) -> None:
        self.history[key].append(offset)
        super().__setitem__(key, offset)

    def moved_back(self) -> dict[tuple[str, TopicPartition], list[int]]:
        """The partitions whose committed offset ever went down, with their history."""
        return {key: offsets for key, offsets in self.history.items() if offsets != sorted(offsets)}


def failing_store(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Makes the recorder's writes fail with "database is locked" while the event is set (it
    is, at first)."""
    failing = threading.Event()
    failing.set()
    real = decided.record_decided

    def record_decided(
        conn: Connection,
        model_id: int,
        rows: Sequence[tuple[str, int, int]],
        now: datetime,
        entities: Mapping[str, str] | None = None,
        tokens: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if failing.is_set():
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        return real(conn, model_id, rows, now, entities, tokens)

    monkeypatch.setattr(decided, "record_decided", record_decided)
    return failing


def recorded_everything(config: Config, ids: list[str]) -> bool:
    found = Store.open(config.database.url).model("default").where_decided(ids)
    return sorted(found) == sorted(ids)


def test_offsets_wait_for_the_coordinates_and_decisions_do_not(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = failing_store(monkeypatch)
    broker = MemoryBroker(dict(TOPICS), committed=CommitLog())
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
    assert recorded_everything(config, ids)
    # the batches its first consumer read are not committed after the new consumer's
    assert isinstance(broker.committed, CommitLog) and broker.committed.moved_back() == {}


def test_batches_read_before_a_rebalance_never_move_an_offset_back_after_it(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store fails while every batch is read; a rebalance gives the partitions back, to be
    read again from the committed offsets; then the store comes back. Only the batches read
    after the rebalance are committed, each partition's offset only going forward."""
    failing = failing_store(monkeypatch)
    broker = MemoryBroker(dict(TOPICS), committed=CommitLog())
    ids = messages(broker, 60)
    decider = scorer(config, broker, MemoryPublisher(broker))
    consumers: list[MemoryConsumer] = []

    def connect() -> MemoryConsumer:
        consumer = MemoryConsumer(
            broker,
            "messages",
            "messages-group",
            decider.processor.assigned,
            decider.processor.revoked,
        )
        consumers.append(consumer)
        return consumer

    decider.processor.connect = connect
    asked: list[bool] = []

    def rebalanced_then_committed() -> bool:
        decided = len(broker.read("decisions"))
        if decided == len(ids) and not asked:  # every batch read, none recorded: a rebalance
            consumers[0].rebalances = 1
            asked.append(True)
        elif decided == 2 * len(ids):  # every batch read again: the store is back
            failing.clear()
        return committed_everything(broker, "messages-group", "messages")

    run_until(decider, rebalanced_then_committed)
    assert len(consumers) == 1 and consumers[0].rebalances == 0
    assert recorded_everything(config, ids)
    assert isinstance(broker.committed, CommitLog) and broker.committed.moved_back() == {}


def test_pending_rows_are_bounded_oldest_first(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module, "MAX_PENDING_ROWS", 5)
    model = Store.open(config.database.url).model("default")
    recorder = Recorder(model, 100, Health(), Metrics(), structlog.get_logger())
    tickets = [recorder.put([(f"m{i}", 0, i)], []).ticket for i in range(8)]
    assert tickets == list(range(1, 9))
    assert recorder.write() and recorder.recorded == 8
    found = model.where_decided([f"m{i}" for i in range(8)])
    assert sorted(found) == [f"m{i}" for i in range(3, 8)]  # the three oldest dropped


def test_each_write_is_later_than_the_last_whatever_the_clock_and_names_its_writer(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    # other scorers read a writer's entity events after the newest they read of it
    # (`filterd.store.entities.ReadMarks`): a clock turned back must not hide a write
    since = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    clock = iter([since + timedelta(seconds=5), since])

    class TurnedBack(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> TurnedBack:
            return cls.fromtimestamp(next(clock).timestamp(), tz)

    monkeypatch.setattr(recorder_module, "datetime", TurnedBack)
    model = Store.open(config.database.url).model("default")
    recorder = Recorder(model, 100, Health(), Metrics(), structlog.get_logger(), writer=7)
    other = ReadMarks(writer=8)
    for i in range(2):
        event = EntityEvent("customer", "c1", 1000.0 + i, 5.0, None)
        recorder.put([(f"m{i}", 0, i)], [], entity_events=[DecidedEvent(f"m{i}", event)])
        assert recorder.write()
        assert len(model.entity_events_written_since(since, other)) == 1  # the new write only
    assert list(other.newest) == [7] and other.newest[7] > since + timedelta(seconds=5)
    assert model.entity_events_written_since(since, ReadMarks(writer=7)) == []  # its own
