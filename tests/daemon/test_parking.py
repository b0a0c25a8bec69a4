"""Feedback by id that cannot be resolved yet: parked in the store, applied once its message is
decided (by any process), dead-lettered as unresolved_message after feedback.resolve_ttl, never
counted by the dead-letter guard. The real Learner and Scorer over the in-memory broker and a
real SQLite store; the same against a real broker and PostgreSQL is in test_daemon.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select

from filterd.daemon.guard import DeadLetterGuard
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.service.config import Config
from filterd.store.parking import Parked
from filterd.store.schema import FeedbackLedger, Holdout
from tests.daemon.conftest import run_until
from tests.daemon.test_loop import (
    TOPICS,
    committed_everything,
    learner_of,
    messages,
    scorer,
)

LATER = timedelta(seconds=1001)  # past the retry_seconds the learners below are made with


def by_id(message_id: str, label: str, **fields: str) -> bytes:
    return json.dumps({"message_id": message_id, "label": label, **fields}).encode()


def labels_in_store(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = list(conn.execute(select(FeedbackLedger.message_id, FeedbackLedger.label)).all())
        rows += conn.execute(select(Holdout.message_id, Holdout.label)).all()
    return dict(rows)


def test_feedback_that_arrives_before_its_message_is_parked_then_applied(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    ids = [f"m{i}" for i in range(20)]
    for i, message_id in enumerate(ids):
        broker.produce(
            "feedback",
            message_id.encode(),
            by_id(message_id, "spam" if i % 2 else "ham", analyst="ana"),
        )
    # another process: its recent messages are not the scorer's, and it retries only when told
    learner = learner_of(config, broker, retry_seconds=1000, guard=DeadLetterGuard(0.0, 5, 1))
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert broker.read("dead-letter") == []  # not bad input: nothing dead-lettered, no flood
    assert learner.model.count_parked() == 20
    assert [e.outcome for e in learner.model.events(message_id="m3")] == ["parked"]

    assert messages(broker, 20) == ids
    decider = scorer(config, broker, MemoryPublisher(broker))
    run_until(decider, lambda: committed_everything(broker, "messages-group", "messages"))
    counts = learner.retry_parked(datetime.now(UTC) + LATER)
    assert counts["learned"] == 20 and counts["unresolved"] == 0
    assert learner.model.count_parked() == 0
    stored = labels_in_store(learner.model.store.engine)
    assert {m: stored[m] for m in ids} == {m: "spam" if i % 2 else "ham" for i, m in enumerate(ids)}
    (learned, parked) = learner.model.events(message_id="m3")
    assert (learned.outcome, learned.analyst, parked.outcome) == ("learned", "ana", "parked")
    assert learner.metrics.feedback.labels(outcome="parked")._value.get() == 20


def test_feedback_for_a_message_never_decided_expires_to_the_dead_letter_topic(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    for i in range(8):
        broker.produce("feedback", b"k", by_id(f"ghost{i}", "spam"))
    learner = learner_of(
        config, broker, retry_seconds=1000, resolve_ttl="2h", guard=DeadLetterGuard(0.0, 5, 1)
    )
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert learner.retry_parked(datetime.now(UTC) + LATER)["unresolved"] == 0  # within the TTL
    assert learner.model.count_parked() == 8
    counts = learner.retry_parked(datetime.now(UTC) + timedelta(hours=2, seconds=2002))
    assert counts["unresolved"] == 8
    letters = [json.loads(r.value) for r in broker.read("dead-letter")]
    assert sorted(json.loads(letter["payload"])["message_id"] for letter in letters) == [
        f"ghost{i}" for i in range(8)
    ]
    assert {letter["reason"] for letter in letters} == {"unresolved_message"}
    assert {(letter["source_topic"], letter["offset"]) for letter in letters} == {
        ("feedback", i) for i in range(8)
    }
    assert learner.model.count_parked() == 0
    assert [e.outcome for e in learner.model.events(message_id="ghost0")] == [
        "expired",
        "parked",
    ]
    assert learner.metrics.feedback.labels(outcome="unresolved")._value.get() == 8


def test_a_newer_label_replaces_the_parked_one_and_feedback_with_the_message_settles_it(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    broker.produce("feedback", b"x", by_id("x", "ham"))
    broker.produce("feedback", b"x", by_id("x", "spam"))
    learner = learner_of(config, broker, retry_seconds=1000)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert learner.model.count_parked() == 1  # one message, its newest label
    broker.produce("feedback", b"x", by_id("x", "ham", text="lunch at noon tomorrow?"))
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert learner.model.count_parked() == 0  # the parked label is older: dropped
    assert labels_in_store(learner.model.store.engine)["x"] == "ham"
    assert learner.retry_parked(datetime.now(UTC) + LATER) == {}  # nothing left to apply later


def test_an_id_and_its_message_in_one_batch_resolve_each_other(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    broker.produce("feedback", b"y", by_id("y", "spam", analyst="bo"))
    broker.produce("feedback", b"y", by_id("y", "spam", text="claim your prize now"))
    learner = learner_of(config, broker, retry_seconds=1000)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert learner.model.count_parked() == 0
    outcomes = [e.outcome for e in learner.model.events(message_id="y")]
    assert outcomes == ["duplicate", "learned"]
    with learner.model.store.engine.connect() as conn:
        assert (
            conn.execute(
                select(func.count())
                .select_from(FeedbackLedger)
                .where(FeedbackLedger.message_id == "y")
            ).scalar_one()
            == 1
        )


def test_a_parked_record_that_no_longer_decodes_is_dead_lettered_not_retried_for_ever(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    learner = learner_of(config, broker, retry_seconds=1000)
    now = datetime.now(UTC)
    with learner.model.transaction() as writing:
        writing.park([Parked("z", b"{not json", "feedback", 1, 7)], now, now)
    assert learner.retry_parked(now)["claimed"] == 1
    (letter,) = [json.loads(r.value) for r in broker.read("dead-letter")]
    assert (letter["reason"], letter["partition"], letter["offset"]) == ("invalid_json", 1, 7)
    assert learner.model.count_parked() == 0


def test_labels_resolved_from_parking_are_scored_on_arrival_for_the_calibration_window(
    config: Config,
) -> None:
    broker = MemoryBroker(dict(TOPICS))
    ids = [f"m{i}" for i in range(20)]
    for i, message_id in enumerate(ids):
        broker.produce(
            "feedback", message_id.encode(), by_id(message_id, "spam" if i % 2 else "ham")
        )
    learner = learner_of(config, broker, retry_seconds=1000)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    assert learner.model.drift_report("spam").n == 0  # parked: nothing scored yet

    assert messages(broker, 20) == ids
    decider = scorer(config, broker, MemoryPublisher(broker))
    run_until(decider, lambda: committed_everything(broker, "messages-group", "messages"))
    assert learner.retry_parked(datetime.now(UTC) + LATER)["learned"] == 20
    report = learner.model.drift_report("spam")
    assert (report.n, report.n_pos, report.n_neg) == (20, 10, 10)
