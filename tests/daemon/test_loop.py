"""The daemon's loop logic without a broker: the real Scorer and Learner over the in-memory broker
(`filterd.kafka.memory`) and a real SQLite store. The same loops against a real broker are in
test_daemon.py; these pin down what must hold whatever the timing: one decision or dead letter
per record, nothing committed before it is published, a failed publish read again, a flood stops
the loop before its batch is committed. The consume loop itself (`filterd.kafka.processor`), on
both brokers: tests/kafka/test_processor.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
import structlog
from kafka import TopicPartition

from filterd.daemon.entity_state import EntityState
from filterd.daemon.guard import DeadLetterFlood, DeadLetterGuard
from filterd.daemon.learner import Learner
from filterd.daemon.loop import LoopSettings
from filterd.daemon.model_state import ModelState
from filterd.daemon.monitor import Monitor
from filterd.daemon.override_state import OverrideState
from filterd.daemon.recent import RecentMessages
from filterd.daemon.resolver import Resolver
from filterd.daemon.scorer import Scorer
from filterd.entities import EntitySpec
from filterd.evaluation.synth import SynthConfig, generate
from filterd.kafka.consumer import Batch
from filterd.kafka.memory import MemoryBroker, MemoryConsumer, MemoryFetcher, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config, parse_duration
from filterd.store.handle import Store
from filterd.tokenize import Tokenizer
from tests.daemon.conftest import run_until

TOPICS = {"messages": 3, "decisions": 3, "feedback": 2, "dead-letter": 1}


def settings(
    broker: MemoryBroker, topic: str, publisher: MemoryPublisher, guard: DeadLetterGuard
) -> LoopSettings:
    return {
        "kafka": {},
        "topic": topic,
        "group": f"{topic}-group",
        "max_records": 7,
        "publisher": publisher,
        "guard": guard,
        "dead_letter_topic": "dead-letter",
        "payload_limit": 1000,
        "metrics": Metrics(),
        "health": Health(),
        "log": structlog.get_logger(),
        "connect": lambda: MemoryConsumer(broker, topic, f"{topic}-group"),
    }


def scorer(
    config: Config,
    broker: MemoryBroker,
    publisher: MemoryPublisher,
    guard: DeadLetterGuard | None = None,
    entities: EntitySpec | None = None,
    keep_tokens_bytes: int = 0,
    lists: bool = False,
) -> Scorer:
    model = Store.open(config.database.url).model(config.model.name)
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger())
    return Scorer(
        state,
        RecentMessages(1000, 10_000_000, 3600.0),
        "decisions",
        config.limits.max_bytes,
        config.review,
        EntityState(model, entities, structlog.get_logger()) if entities else None,
        keep_tokens_bytes,
        OverrideState(model, entities or EntitySpec(), structlog.get_logger()) if lists else None,
        **settings(broker, "messages", publisher, guard or DeadLetterGuard(1.0, 100, 0)),
    )


def messages(broker: MemoryBroker, n: int, bad: dict[int, bytes] | None = None) -> list[str]:
    """n records on the messages topic, record i replaced by bad[i]; the good ids, in order."""
    ids = []
    for i, record in enumerate(generate(SynthConfig(n_messages=n, seed=2))):
        if bad and i in bad:
            broker.produce("messages", None, bad[i], partition=i % TOPICS["messages"])
            continue
        payload = json.dumps({"id": f"m{i}", "text": record["text"]}).encode()
        broker.produce("messages", f"m{i}".encode(), payload)
        ids.append(f"m{i}")
    return ids


def committed_everything(broker: MemoryBroker, group: str, topic: str) -> bool:
    return all(
        broker.committed.get((group, tp), 0) == len(log)
        for tp, log in broker.records.items()
        if tp.topic == topic
    )


def test_every_record_gets_one_decision_or_one_dead_letter_and_then_its_offset_is_committed(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    ids = messages(broker, 60, bad={5: b"{not json", 17: b'{"text": "no id"}'})
    publisher = MemoryPublisher(broker)
    loop = scorer(config, broker, publisher)
    run_until(loop, lambda: len(broker.read("decisions")) + len(broker.read("dead-letter")) >= 60)
    decided = [json.loads(r.value)["message_id"] for r in broker.read("decisions")]
    assert sorted(decided) == sorted(ids)
    assert {json.loads(r.value)["label"] for r in broker.read("decisions")} <= {"spam", "ham"}
    reasons = sorted(json.loads(r.value)["reason"] for r in broker.read("dead-letter"))
    assert reasons == ["invalid_json", "schema"]
    assert committed_everything(broker, "messages-group", "messages")


def test_a_decision_is_keyed_by_its_message_id_on_kafkas_partition(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    messages(broker, 30)
    loop = scorer(config, broker, MemoryPublisher(broker))
    run_until(loop, lambda: len(broker.read("decisions")) >= 30)
    for record in broker.read("decisions"):
        assert record.key == json.loads(record.value)["message_id"].encode()
    # the same key lands on the same partition in both topics, whatever their partition counts
    by_id = {r.key: r.partition for r in broker.read("messages")}
    assert all(by_id[r.key] == r.partition for r in broker.read("decisions"))


def test_a_failed_publish_is_read_again_and_nothing_is_committed_before_it_succeeds(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    ids = messages(broker, 20)
    publisher = MemoryPublisher(broker)
    publisher.fail_flushes = 3
    committed_while_failing: list[dict[tuple[str, TopicPartition], int]] = []
    flush = publisher.flush

    def observed_flush() -> None:
        if publisher.fail_flushes:
            committed_while_failing.append(dict(broker.committed))
        flush()

    # the real publisher, its flush observed: what was committed while it failed
    publisher.flush = observed_flush  # type: ignore[method-assign]
    loop = scorer(config, broker, publisher)
    run_until(loop, lambda: len(broker.read("decisions")) >= 20)
    assert len(committed_while_failing) == 3 and all(c == {} for c in committed_while_failing)
    decided = [json.loads(r.value)["message_id"] for r in broker.read("decisions")]
    assert sorted(decided) == sorted(ids)  # each once: a failed flush delivered nothing
    assert committed_everything(broker, "messages-group", "messages")


def test_a_dead_letter_flood_stops_the_loop_before_its_batch_is_committed(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    for i in range(30):
        broker.produce("messages", None, b"garbage %d" % i, partition=0)
    publisher = MemoryPublisher(broker)
    loop = scorer(config, broker, publisher, guard=DeadLetterGuard(1.0, 100, max_consecutive=5))
    with pytest.raises(DeadLetterFlood):
        run_until(loop, lambda: False, timeout=10)
    assert broker.committed == {} and broker.read("dead-letter") == []


def test_content_senders_control_cannot_trip_the_guard(config: Config) -> None:
    """Long messages are decided (flagged truncated), oversized ones dead-lettered: neither is
    the sign of a bad deploy that the guard stops the daemon for."""
    broker = MemoryBroker(dict(TOPICS))
    long_text = "padding " * (config.limits.max_tokens + 1)
    for i in range(20):
        payload = json.dumps({"id": f"long{i}", "text": long_text}).encode()
        broker.produce("messages", f"long{i}".encode(), payload)
    for i in range(10):
        payload = json.dumps({"id": f"big{i}", "text": "x" * config.limits.max_bytes}).encode()
        broker.produce("messages", f"big{i}".encode(), payload)
    ids = messages(broker, 10)
    guard = DeadLetterGuard(1.0, 100, max_consecutive=5)
    loop = scorer(config, broker, MemoryPublisher(broker), guard=guard)
    run_until(loop, lambda: len(broker.read("decisions")) >= 30)
    decisions = {
        json.loads(r.value)["message_id"]: json.loads(r.value) for r in broker.read("decisions")
    }
    assert set(decisions) == {f"long{i}" for i in range(20)} | set(ids)
    assert all(decisions[f"long{i}"]["truncated"] for i in range(20))
    assert not any(decisions[i]["truncated"] for i in ids)
    reasons = [json.loads(r.value)["reason"] for r in broker.read("dead-letter")]
    assert reasons == ["oversized"] * 10
    assert committed_everything(broker, "messages-group", "messages")


def test_the_learner_applies_feedback_once_however_often_it_is_delivered(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    feedback = [
        json.dumps({"message_id": f"f{i}", "label": r["label"], "text": r["text"]}).encode()
        for i, r in enumerate(generate(SynthConfig(n_messages=30, seed=3)))
    ]
    for i, payload in enumerate(feedback + feedback[:10]):  # the first ten delivered twice
        broker.produce("feedback", f"f{i % 30}".encode(), payload)
    learner = learner_of(config, broker, labels=[])
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    with learner.model.store.engine.connect() as conn:
        ledger = conn.exec_driver_sql("SELECT message_id FROM feedback_ledger").scalars().all()
    assert sorted(m for m in ledger if m.startswith("f")) == sorted(f"f{i}" for i in range(30))
    assert len(ledger) == 200 + 30  # the fixture's 200 and these 30, the repeated ten once


def learner_of(
    config: Config,
    broker: MemoryBroker,
    recent: RecentMessages | None = None,
    labels: list[str] | None = None,
    retry_seconds: float = 30.0,
    resolve_ttl: str = "3d",
    guard: DeadLetterGuard | None = None,
    entities: EntitySpec | None = None,
) -> Learner:
    """The learner of `config` over `broker`, resolving ids through `recent` (default: an empty
    cache), the store and the broker's messages topic."""
    model = Store.open(config.database.url).model("default")
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger())
    recent = recent or RecentMessages(1000, 10_000_000, 3600.0)
    resolver = Resolver(
        model,
        recent,
        "messages",
        Tokenizer(),
        config.limits.max_bytes,
        lambda: MemoryFetcher(broker),
        structlog.get_logger(),
    )
    return Learner(
        model,
        Tokenizer(),
        resolver,
        Monitor(model, config, state, Metrics(), structlog.get_logger()),
        config.model.labels if labels is None else labels,
        0.0,
        config.limits.max_bytes,
        parse_duration(resolve_ttl),
        retry_seconds,
        entities,
        **settings(
            broker, "feedback", MemoryPublisher(broker), guard or DeadLetterGuard(1.0, 100, 0)
        ),
    )


def test_a_made_up_label_is_dead_lettered_and_no_new_class_appears(config: Config) -> None:
    assert config.model.labels == ["ham", "spam"]  # the shipped default
    broker = MemoryBroker(dict(TOPICS))
    for i, r in enumerate(generate(SynthConfig(n_messages=10, seed=4))):
        payload = {"message_id": f"g{i}", "label": r["label"], "text": r["text"]}
        broker.produce("feedback", f"g{i}".encode(), json.dumps(payload).encode())
    poison = {"message_id": "p", "label": "free-money", "text": "win cash"}
    broker.produce("feedback", b"p", json.dumps(poison).encode())
    learner = learner_of(config, broker)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    (letter,) = [json.loads(r.value) for r in broker.read("dead-letter")]
    assert letter["reason"] == "invalid_label"
    stats, _ = learner.model.load()
    assert sorted(stats.labels) == ["ham", "spam"]


def test_the_consumers_fetch_no_more_than_the_record_limit_allows(config: Config) -> None:
    from msgspec.structs import replace

    from filterd.daemon.supervisor import Daemon
    from filterd.kafka.settings import RECORD_OVERHEAD_BYTES

    model = Store.open(config.database.url).model("default")
    per_partition = config.limits.max_bytes + RECORD_OVERHEAD_BYTES
    for loop in Daemon(config)._loops(model):
        assert loop.kafka["max_partition_fetch_bytes"] == per_partition
        assert loop.kafka["fetch_max_bytes"] == 8 * per_partition
    told = replace(config, kafka={**config.kafka, "fetch_max_bytes": 123_456})
    assert {loop.kafka["fetch_max_bytes"] for loop in Daemon(told)._loops(model)} == {123_456}


def test_dead_letters_of_one_reason_are_one_warning_and_a_count(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    for i in range(40):
        payload = {"message_id": f"p{i}", "label": "free-money", "text": "win cash"}
        broker.produce("feedback", f"p{i}".encode(), json.dumps(payload).encode())
    broker.produce("feedback", b"x", b"{not json")
    with structlog.testing.capture_logs() as logged:
        learner = learner_of(config, broker)  # its logger is bound to the capturing configuration
        run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert len(broker.read("dead-letter")) == 41  # every record is still dead-lettered
    warned = [e for e in logged if e["event"] == "dead-lettered"]
    assert [(e["reason"], e.get("repeated")) for e in warned] == [
        ("invalid_label", None),
        ("invalid_json", None),
        ("invalid_label", 39),  # at the latest when the loop stops
    ]


def lag_gauge(metrics: Metrics) -> dict[int, float]:
    return {
        int(s.labels["partition"]): s.value
        for metric in metrics.registry.collect()
        if metric.name == "filterd_consumer_lag"
        for s in metric.samples
    }


def test_the_lag_gauge_counts_the_records_past_the_position(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    messages(broker, 30)
    sizes = {p: len(broker.records[TopicPartition("messages", p)]) for p in range(3)}
    loop = scorer(config, broker, MemoryPublisher(broker))
    consumer = MemoryConsumer(broker, "messages", "messages-group")
    taken = Batch.poll(consumer, 0, 7).offsets()  # 7 records, from the first partitions
    loop.processor.report_lag(consumer)
    read = {tp.partition: offset.offset for tp, offset in taken.items()}
    assert lag_gauge(loop.metrics) == {p: sizes[p] - read.get(p, 0) for p in range(3)}
    monkeypatch.setattr("filterd.kafka.processor.LAG_SECONDS", 0.0)  # after every poll
    run_until(
        loop,
        lambda: len(broker.read("decisions")) >= 30 and not any(lag_gauge(loop.metrics).values()),
    )


def test_a_label_reaches_the_audit_trail_with_its_analyst_comment_and_coordinates(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    payload = {
        "message_id": "f1",
        "label": "spam",
        "text": "win cash now",
        "analyst": "alice",
        "comment": "a prize lure",
    }
    broker.produce("feedback", b"other", json.dumps({**payload, "message_id": "f0"}).encode())
    record = broker.produce("feedback", b"other", json.dumps(payload).encode())  # offset 1
    learner = learner_of(config, broker)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    (event,) = learner.model.events(message_id="f1")
    assert (event.label, event.outcome, event.previous_label) == ("spam", "learned", None)
    assert (event.source, event.analyst, event.comment) == ("analyst", "alice", "a prize lure")
    assert (event.kafka_topic, event.kafka_partition, event.kafka_offset) == (
        "feedback",
        record.partition,
        1,
    )
    assert event.received_at == event.applied_at  # the in-memory broker's records have no time


def test_the_kafka_timestamp_is_when_the_feedback_was_received() -> None:
    from types import SimpleNamespace

    from filterd.daemon.learner import received_at

    assert received_at(SimpleNamespace(timestamp=1_767_225_600_250)) == datetime(
        2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC
    )
    assert received_at(SimpleNamespace(timestamp=-1)) is None  # a record without one
    assert received_at(SimpleNamespace()) is None


def test_a_labels_origin_is_built_once_and_carried_alike_by_its_item_event_and_parking() -> None:
    from dataclasses import fields
    from types import SimpleNamespace

    from filterd.daemon.learner import event, labelled, origin, parked
    from filterd.service.records import Feedback
    from filterd.store.labels import Origin

    feedback = Feedback(message_id="m1", label="spam", analyst="ana", comment="a lure")
    record = SimpleNamespace(
        topic="feedback", partition=2, offset=41, value=b"{}", timestamp=1_767_225_600_250
    )
    sent = datetime(2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC)
    read = origin(feedback, record)
    assert (read.analyst, read.comment, read.received_at) == ("ana", "a lure", sent)
    assert (read.kafka_topic, read.kafka_partition, read.kafka_offset) == ("feedback", 2, 41)
    later = datetime(2026, 1, 2, tzinfo=UTC)  # a parked record's own time of arrival
    for received in (None, later):
        expected = origin(feedback, record, received)
        assert expected.received_at == (received or sent)
        for built in (
            labelled(feedback, record, ["x"], received),
            event(feedback, record, "expired", received),
        ):
            assert {f.name: getattr(built, f.name) for f in fields(Origin)} == vars(expected)
    waiting = parked(feedback, record)
    assert (waiting.kafka_topic, waiting.kafka_partition, waiting.kafka_offset) == (
        "feedback",
        2,
        41,
    )
    assert (waiting.received_at, waiting.payload) == (sent, b"{}")
