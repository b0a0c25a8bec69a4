"""Decisions carry their provenance: the real Scorer over the in-memory broker
(`filterd.kafka.memory`) and a real SQLite store, several partitions and batches, dead letters in
between and a batch read again after a failed publish. The same against a real broker:
test_daemon.py, `test_every_message_gets_exactly_one_valid_decision`."""

from __future__ import annotations

import json

import structlog

from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.model_state import ModelState
from filterd.daemon.recent import RecentMessages
from filterd.daemon.scorer import Scorer
from filterd.evaluation.synth import SynthConfig, generate
from filterd.kafka.memory import MemoryBroker, MemoryConsumer, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.store.handle import Store
from tests.daemon.conftest import run_until, valid

BAD = {4: b"{not json", 9: b'{"text": "no id"}', 10: b"", 23: b"[1, 2]"}


def trained_scorer(config: Config, broker: MemoryBroker, publisher: MemoryPublisher) -> Scorer:
    """A scorer of the `config` fixture's trained model, reading topic "messages" of `broker`."""
    model = Store.open(config.database.url).model(config.model.name)
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger())
    return Scorer(
        state,
        RecentMessages(1000, 10_000_000, 3600.0),
        "decisions",
        config.limits.max_bytes,
        config.review,
        kafka={},
        topic="messages",
        group="scorers",
        max_records=7,
        publisher=publisher,
        guard=DeadLetterGuard(1.0, 100, 0),
        dead_letter_topic="dead-letter",
        payload_limit=1000,
        metrics=Metrics(),
        health=Health(),
        log=structlog.get_logger(),
        connect=lambda: MemoryConsumer(broker, "messages", "scorers"),
    )


def test_every_decision_names_the_partition_and_offset_of_its_message(config: Config) -> None:
    broker = MemoryBroker({"messages": 3, "decisions": 2, "dead-letter": 1})
    read_from: dict[str, tuple[str, int, int]] = {}  # message id → where the scorer reads it
    bad = []
    for i, r in enumerate(generate(SynthConfig(n_messages=40, seed=2))):
        if i in BAD:
            bad.append(broker.produce("messages", None, BAD[i], partition=i % 3))
            continue
        payload = json.dumps({"id": f"m{i}", "text": r["text"]}).encode()
        record = broker.produce("messages", f"m{i}".encode(), payload)
        read_from[f"m{i}"] = (record.topic, record.partition, record.offset)
    # every partition has messages, and each bad record has good ones after it in its partition
    assert len({p for _, p, _ in read_from.values()}) == 3
    assert all(
        any(p == b.partition and o > b.offset for _, p, o in read_from.values()) for b in bad
    )
    publisher = MemoryPublisher(broker)
    publisher.fail_flushes = 1  # the first batch is read again: its decisions name the same places
    scorer = trained_scorer(config, broker, publisher)
    run_until(scorer, lambda: len(broker.read("decisions")) + len(broker.read("dead-letter")) >= 40)

    decisions = [valid("decision", r.value) for r in broker.read("decisions")]
    where = {d["message_id"]: (d["source_topic"], d["partition"], d["offset"]) for d in decisions}
    assert len(decisions) == len(where) == len(read_from) and where == read_from
    assert {d["review"] for d in decisions} == {False}
    letters = [valid("dead-letter", r.value) for r in broker.read("dead-letter")]
    assert sorted((x["source_topic"], x["partition"], x["offset"]) for x in letters) == sorted(
        (r.topic, r.partition, r.offset) for r in bad
    )
