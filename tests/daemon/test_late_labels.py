"""Labels that come months late (fraud: chargebacks): a small message's tokens are kept with
its decided message, so that its label by id learns it without the messages topic for as long
as `feedback.resolve_ttl`; a label's stage (early, final) is on the audit trail."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from filterd.bayes.vocab import TokenHasher
from filterd.daemon import entity_state
from filterd.entities.record import EntityRecord
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.service.config import Config
from filterd.store.handle import ModelStore
from filterd.store.ledger import unpack
from tests.daemon.conftest import run_until
from tests.daemon.test_entity_memory import SPEC, decisions, payment, produce, with_entities
from tests.daemon.test_loop import TOPICS, learner_of, scorer


def test_a_label_by_id_learns_a_small_message_without_the_messages_topic(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entity_state, "SYNC_SECONDS", 0.0)
    config = with_entities(config)
    broker = MemoryBroker(dict(TOPICS))
    a = scorer(config, broker, MemoryPublisher(broker), entities=SPEC, keep_tokens_bytes=512)
    big = payment(9, "c2", minutes=2) | {"text": " ".join(f"word{i}" for i in range(200))}
    produce(broker, [payment(1, "c1", minutes=0), big])
    run_until(a, lambda: len(decisions(broker)) == 2 and a.recorder.recorded == a.recorder.tickets)

    # months later: the messages topic has long dropped them, and no process remembers them
    later = MemoryBroker(dict(TOPICS))
    for message_id in ("p1", "p9"):
        feedback = {"message_id": message_id, "label": "spam", "stage": "final"}
        later.produce("feedback", message_id.encode(), json.dumps(feedback).encode())
    learner = learner_of(config, later, entities=SPEC)
    model = learner.model
    run_until(learner, lambda: model.count_parked() == 1 and learned(model) == ["p1"])

    kept = model.decided_tokens(["p1", "p9"])
    assert list(kept) == ["p1"] and "card" in kept["p1"]  # the big one is read back, or waits
    record = EntityRecord.loads(model.decided_entities(["p1"])["p1"])
    expected = TokenHasher(model.ref.hash_seed).keys([*kept["p1"], *record.tokens(SPEC)])
    with model.store.engine.connect() as conn:
        packed = conn.execute(
            text("SELECT tokens FROM feedback_ledger WHERE message_id = 'p1'")
        ).scalar_one()
    assert set(unpack(packed)[0].tolist()) == set(expected.tolist())
    (event,) = list(model.events(message_id="p1"))
    assert (event.outcome, event.stage) == ("learned", "final")


def learned(model: ModelStore) -> list[str]:
    """The ids in the ledger other than the fixture's (synth-…)."""
    with model.store.engine.connect() as conn:
        ids = conn.execute(text("SELECT message_id FROM feedback_ledger ORDER BY 1")).scalars()
        return [m for m in ids if not m.startswith("synth-")]


def test_an_early_label_and_the_final_one_are_both_on_the_audit_trail(config: Config) -> None:
    broker = MemoryBroker(dict(TOPICS))
    t0 = datetime(2026, 11, 2, tzinfo=UTC)
    labels = [
        {"message_id": "d1", "label": "spam", "stage": "early", "text": "refund my card now"},
        {"message_id": "d1", "label": "ham", "stage": "final", "comment": "dispute cleared"},
    ]
    for i, feedback in enumerate(labels):
        feedback["ts"] = (t0 + timedelta(days=30 * i)).isoformat()
        broker.produce("feedback", b"d1", json.dumps(feedback).encode())
    learner = learner_of(config, broker)
    model = learner.model
    run_until(learner, lambda: len(list(model.events(message_id="d1"))) == 2)
    events = sorted(model.events(message_id="d1"), key=lambda e: e.stage or "")
    assert [(e.stage, e.label, e.outcome) for e in events] == [
        ("early", "spam", "learned"),
        ("final", "ham", "relabelled"),
    ]
