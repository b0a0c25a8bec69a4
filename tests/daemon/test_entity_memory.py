"""The scorer's entity memory in the daemon (`filterd.daemon.entity_state`): every scorer's
messages count in every scorer's velocities within seconds, a scorer starting remembers the
longest window, a label learns the entity tokens its message was decided on, and a target label
counts for the message's entities in every scorer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog
from sqlalchemy import text

from filterd.bayes.vocab import TokenHasher
from filterd.daemon import entity_state
from filterd.daemon.entity_state import EntityState
from filterd.entities import EntityMemory, EntitySpec
from filterd.entities.lists import ListEntry
from filterd.entities.record import EntityRecord
from filterd.entities.rules import Rule
from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.service.config import Config
from filterd.service.config import load as load_config
from filterd.service.records import Message
from filterd.store.errors import StoreUnavailable
from filterd.store.handle import Store
from filterd.store.ledger import unpack
from tests.daemon.conftest import run_until
from tests.daemon.test_loop import TOPICS, learner_of, scorer

SPEC = EntitySpec(keys=("customer",), windows=(3600, 86400), target="spam")
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def payment(i: int, customer: str, minutes: float, amount: float = 20.0) -> dict[str, Any]:
    return {
        "id": f"p{i}",
        "text": "card payment",
        "attributes": {"customer": customer, "amount": amount},
        "ts": (T0 + timedelta(minutes=minutes)).isoformat(),
    }


def produce(broker: MemoryBroker, payments: list[dict[str, Any]]) -> None:
    for p in payments:
        broker.produce("messages", p["id"].encode(), json.dumps(p).encode())


def decisions(broker: MemoryBroker) -> dict[str, dict[str, Any]]:
    return {d["message_id"]: d for d in (json.loads(r.value) for r in broker.read("decisions"))}


def with_entities(config: Config) -> Config:
    overrides = {"database.url": config.database.url, "model.variant": "mnb"}
    return load_config(None, environ={}, overrides={**overrides, "entities.keys": ["customer"]})


def test_every_scorers_messages_count_within_seconds_and_a_start_remembers_them(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entity_state, "SYNC_SECONDS", 0.0)  # each refresh due: no waiting here
    config = with_entities(config)
    first, second = MemoryBroker(dict(TOPICS)), MemoryBroker(dict(TOPICS))
    a = scorer(config, first, MemoryPublisher(first), entities=SPEC)
    b = scorer(config, second, MemoryPublisher(second), entities=SPEC)
    produce(second, [payment(100, "c9", 0)])  # b is running, its memory loaded, before a decides
    run_until(b, lambda: "p100" in decisions(second))
    assert decisions(second)["p100"]["evidence"] == ["customer c9: first seen within 1d"]

    produce(first, [payment(i, "c1", minutes=i) for i in range(5)])
    run_until(a, lambda: len(decisions(first)) == 5 and a.recorder.recorded == a.recorder.tickets)
    assert decisions(first)["p4"]["evidence"] == ["4 messages of customer c1 in the last 1h"]
    # b reads what a wrote at its next refresh
    produce(second, [payment(101, "c1", minutes=6, amount=100.0)])
    run_until(b, lambda: "p101" in decisions(second))
    assert decisions(second)["p101"]["evidence"] == [
        "5 messages of customer c1 in the last 1h",
        "amount 5× the mean of customer c1 over 1d",
    ]
    # the tokens it was decided on are among its explanation's candidates, and kept for learning
    model = Store.open(config.database.url).model("default")
    record = EntityRecord.loads(model.decided_entities(["p101"])["p101"])
    assert record.features[0].counts == (5, 5)
    assert "customer:count_1h~2^2" in record.tokens(SPEC)

    # a scorer starting reads the longest window back from the newest event
    restarted = EntityState(model, SPEC, structlog.get_logger())
    restarted.refresh()
    assert restarted.loaded and len(restarted.memory) == 2
    message = Message(id="p102", attributes={"customer": "c1"}, ts=T0 + timedelta(minutes=7))
    (evidence,) = restarted.evidence([message])
    assert evidence.words == ["6 messages of customer c1 in the last 1h"]


def test_amounts_a_sender_chooses_do_not_stop_the_scorer(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The largest amount leaves the day's window, the smallest stays: the next payment is
    decided, its amount against a mean of 10^-12 (a running sum had cancelled to 0 there, and
    the division stopped the scorer on every start)."""
    monkeypatch.setattr(entity_state, "SYNC_SECONDS", 0.0)
    config = with_entities(config)
    broker = MemoryBroker(dict(TOPICS))
    a = scorer(config, broker, MemoryPublisher(broker), entities=SPEC)
    amounts = ((0, 1e15), (23.5 * 60, 1e-12), (24.5 * 60, 5.0))
    produce(
        broker, [payment(i, "c1", minutes, amount) for i, (minutes, amount) in enumerate(amounts)]
    )
    run_until(a, lambda: len(decisions(broker)) == 3)
    assert "amount 5e+12× the mean of customer c1 over 1d" in decisions(broker)["p2"]["evidence"]


def test_a_message_the_memory_fails_on_is_decided_without_its_evidence(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the memory for one message (here: any payment of customer "bug"): that message
    is decided on its own tokens and says why it has no entity evidence; the others are not
    touched."""
    monkeypatch.setattr(entity_state, "SYNC_SECONDS", 0.0)
    remember = EntityMemory.remember

    def failing(self: EntityMemory, message: dict[str, Any], ts: float | None) -> Any:
        if message["attributes"]["customer"] == "bug":
            raise RuntimeError("a bug")
        return remember(self, message, ts)

    monkeypatch.setattr(EntityMemory, "remember", failing)
    config = with_entities(config)
    broker = MemoryBroker(dict(TOPICS))
    a = scorer(config, broker, MemoryPublisher(broker), entities=SPEC)
    produce(broker, [payment(0, "c1", 0), payment(1, "bug", 1), payment(2, "c1", 2)])
    run_until(a, lambda: len(decisions(broker)) == 3)
    decided = decisions(broker)
    assert decided["p1"]["evidence"] == [entity_state.MEMORY_FAILED]
    assert decided["p2"]["evidence"] == ["1 message of customer c1 in the last 1h"]


def test_a_label_learns_the_entity_evidence_and_a_target_counts_for_the_entity(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entity_state, "SYNC_SECONDS", 0.0)
    config = with_entities(config)
    broker = MemoryBroker(dict(TOPICS))
    a = scorer(config, broker, MemoryPublisher(broker), entities=SPEC)
    produce(broker, [payment(i, "c1", minutes=i) for i in range(3)])
    run_until(a, lambda: len(decisions(broker)) == 3 and a.recorder.recorded == a.recorder.tickets)

    for message_id, label in (("p2", "spam"), ("p1", "ham")):
        feedback = {"message_id": message_id, "label": label}
        broker.produce("feedback", message_id.encode(), json.dumps(feedback).encode())
    learner = learner_of(config, broker, entities=SPEC)
    model = learner.model

    def learned() -> list[str]:
        with model.store.engine.connect() as conn:
            return list(conn.execute(text("SELECT message_id FROM feedback_ledger")).scalars())

    run_until(learner, lambda: {"p1", "p2"} <= set(learned()))
    with model.store.engine.connect() as conn:
        packed = conn.execute(
            text("SELECT tokens FROM feedback_ledger WHERE message_id = 'p2'")
        ).scalar_one()
        labels = conn.execute(text("SELECT key, value FROM entity_labels")).all()
    record = EntityRecord.loads(model.decided_entities(["p2"])["p2"])
    entity_keys = TokenHasher(model.ref.hash_seed).keys(record.tokens(SPEC))
    assert set(entity_keys.tolist()) <= set(unpack(packed)[0].tolist())
    assert labels == [("customer", "c1")]  # the spam label counts; the ham one does not

    # every scorer counts it at its next refresh
    produce(broker, [payment(3, "c1", minutes=4)])
    run_until(a, lambda: "p3" in decisions(broker))
    assert (
        "1 message of customer c1 labelled spam within 28d" in decisions(broker)["p3"]["evidence"]
    )


def test_a_store_that_fails_leaves_the_memory_as_it_is(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = Store.open(config.database.url).model("default")
    state = EntityState(model, SPEC, structlog.get_logger())
    state.refresh()
    state.evidence([Message(id="m1", attributes={"customer": "c1"}, ts=T0)])

    def unavailable(since: datetime, marks: Any = None) -> list[Any]:
        raise StoreUnavailable("database is locked")

    monkeypatch.setattr(model, "entity_events_written_since", unavailable)
    with structlog.testing.capture_logs() as logged:
        state.refresh(force=True)
    assert [e["event"] for e in logged] == ["entity memory not synced"]
    (evidence,) = state.evidence([Message(id="m2", attributes={"customer": "c1"}, ts=T0)])
    assert evidence.words == ["1 message of customer c1 in the last 1h"]


def test_a_message_dated_far_ahead_cannot_move_the_memory_past_this_machines_clock(
    config: Config,
) -> None:
    now = [T0.timestamp()]
    model = Store.open(config.database.url).model("default")
    state = EntityState(model, SPEC, structlog.get_logger(), clock=lambda: now[0])
    future = datetime(2100, 1, 1, tzinfo=UTC)
    state.evidence([Message(id="m1", attributes={"customer": "c1"}, ts=future)])
    assert state.memory.clock == T0.timestamp() + entity_state.MAX_AHEAD_SECONDS
    # two hours on, the message has left the hour as it would have at its honest time
    now[0] += 2 * 3600
    later = Message(id="m2", attributes={"customer": "c1"}, ts=T0 + timedelta(hours=2))
    (evidence,) = state.evidence([later])
    assert evidence.words == ["1 message of customer c1 in the last 1d"]


def test_a_listed_entity_decides_its_message_whatever_the_score(config: Config) -> None:
    """Block decides the target and allow the other class, apart from the model (`decided_by`
    "list"); review leaves the model's label and queues the message; the entry heads the
    evidence; an expired entry applies no more."""
    model = Store.open(config.database.url).model("default")
    later = datetime.now(UTC) + timedelta(days=7)
    model.put_on_list(ListEntry("customer", "c-stolen", "block", None, "stolen card", "erin"))
    model.put_on_list(ListEntry("customer", "c-trip", "allow", later, "travelling", "dana"))
    model.put_on_list(ListEntry("terminal", "t-odd", "review"))
    model.put_on_list(ListEntry("customer", "c-old", "block", datetime(2020, 1, 1, tzinfo=UTC)))
    broker = MemoryBroker(dict(TOPICS))
    spammy = "WINNER claim your FREE prize now call"
    produce(
        broker,
        [
            payment(1, "c-stolen", 0) | {"text": "hello mum see you at dinner"},
            payment(2, "c-trip", 1) | {"text": spammy},
            payment(3, "c-x", 2) | {"attributes": {"customer": "c-x", "terminal": "t-odd"}},
            payment(4, "c-old", 3),
        ],
    )
    loop = scorer(config, broker, MemoryPublisher(broker), lists=True)
    run_until(loop, lambda: len(decisions(broker)) == 4)
    decided = decisions(broker)
    assert (decided["p1"]["label"], decided["p1"]["decided_by"]) == ("spam", "list")
    assert decided["p1"]["evidence"][0] == "block list: customer c-stolen (stolen card)"
    assert (decided["p2"]["label"], decided["p2"]["decided_by"]) == ("ham", "list")
    assert decided["p3"]["decided_by"] == "model" and decided["p3"]["review"] is True
    assert decided["p4"]["decided_by"] == "model" and decided["p4"]["evidence"] == []
    run_until(loop, lambda: loop.recorder.recorded == loop.recorder.tickets)
    (item,) = model.review_items()
    assert (item.message_id, item.reason) == ("p3", "list")


def test_a_rule_decides_over_attributes_and_entity_features_after_the_lists(
    config: Config,
) -> None:
    """A block rule over an attribute decides the target class (`decided_by` "rule", the rule
    heading the evidence); a review rule over the entity memory's velocity queues its message
    (reason "rule"); an allow entry on a list comes before any rule."""
    model = Store.open(config.database.url).model("default")
    model.put_rule(Rule("huge", "amount >= 5000", "block", "over the card limit", "erin"))
    model.put_rule(Rule("burst", "customer:count_1h >= 2", "review"))
    model.put_rule(Rule("tiny", "amount < 1", "allow"))
    model.put_on_list(ListEntry("customer", "c-vip", "allow", None, "known"))
    broker = MemoryBroker(dict(TOPICS))
    spammy = "WINNER claim your FREE prize now call"
    produce(
        broker,
        [
            payment(1, "c-a", 0, amount=9000) | {"text": "hello mum see you at dinner"},
            payment(2, "c-b", 1),
            payment(3, "c-b", 2),
            payment(4, "c-b", 3),  # the third of c-b within the hour: two before it
            payment(5, "c-vip", 4, amount=9000),
            payment(6, "c-c", 5, amount=0.5) | {"text": spammy},
        ],
    )
    loop = scorer(config, broker, MemoryPublisher(broker), entities=SPEC, lists=True)
    run_until(loop, lambda: len(decisions(broker)) == 6)
    decided = decisions(broker)
    assert (decided["p1"]["label"], decided["p1"]["decided_by"]) == ("spam", "rule")
    assert decided["p1"]["evidence"][0] == "block rule huge: amount >= 5000 (over the card limit)"
    assert [decided[p]["review"] for p in ("p2", "p3", "p4")] == [False, False, True]
    assert decided["p4"]["decided_by"] == "model"
    assert decided["p4"]["evidence"][0] == "review rule burst: customer:count_1h >= 2"
    assert (decided["p5"]["label"], decided["p5"]["decided_by"]) == ("ham", "list")
    assert (decided["p6"]["label"], decided["p6"]["decided_by"]) == ("ham", "rule")
    run_until(loop, lambda: loop.recorder.recorded == loop.recorder.tickets)
    (item,) = model.review_items()
    assert (item.message_id, item.reason) == ("p4", "rule")
