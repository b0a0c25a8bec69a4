"""The scorer's review queue, end to end over the in-memory broker and a real SQLite store: the
decisions it marks are exactly those of the band and of the random share, each is queued with
its message's fields, and a label given later for a queued message is learned from the queue
when Kafka no longer holds the message."""

from __future__ import annotations

import json
from typing import Any

from msgspec.structs import replace

from filterd.kafka.memory import MemoryBroker, MemoryPublisher
from filterd.service.config import Config, Review
from filterd.service.review import in_random_share
from tests.daemon.conftest import run_until
from tests.daemon.test_loop import TOPICS, committed_everything, learner_of, messages, scorer

BAND, SHARE = 1.0, 0.1


def test_the_band_and_the_random_share_are_queued_and_a_queued_label_outlives_kafka(
    config: Config,
) -> None:
    config = replace(config, review=Review(band=BAND, random_share=SHARE))
    broker = MemoryBroker(dict(TOPICS))
    ids = messages(broker, 400)
    decider = scorer(config, broker, MemoryPublisher(broker))
    run_until(decider, lambda: committed_everything(broker, "messages-group", "messages"))
    decisions = {
        d["message_id"]: d for d in (json.loads(r.value) for r in broker.read("decisions"))
    }
    assert sorted(decisions) == sorted(ids)

    def expected(d: dict[str, Any]) -> str | None:
        if abs(d["score"] - d["threshold"]) <= BAND:
            return "band"
        return "random" if in_random_share(d["message_id"], SHARE) else None

    reasons = {m: expected(d) for m, d in decisions.items()}
    assert 0 < sum(r == "band" for r in reasons.values()) < len(ids)  # the test can tell them apart
    assert sum(r == "random" for r in reasons.values()) > 0
    assert {m for m, d in decisions.items() if d["review"]} == {m for m, r in reasons.items() if r}
    items = decider.state.model.review_items(limit=None, include_labelled=True)
    assert {i.message_id: i.reason for i in items} == {m: r for m, r in reasons.items() if r}
    item = next(i for i in items if i.reason == "band")
    assert (item.score, item.label) == (
        decisions[item.message_id]["score"],
        decisions[item.message_id]["label"],
    )
    assert item.excerpt and item.token_count > 0

    # Kafka no longer holds the messages (retention): the queue's tokens still teach the model
    for tp in [tp for tp in broker.records if tp.topic == "messages"]:
        broker.records[tp] = []
    queued = item.message_id
    other = next(m for m, r in reasons.items() if r is None)
    for message_id in (queued, other):
        broker.produce(
            "feedback",
            message_id.encode(),
            json.dumps({"message_id": message_id, "label": "spam", "analyst": "eve"}).encode(),
        )
    learner = learner_of(config, broker)
    run_until(learner, lambda: committed_everything(broker, "feedback-group", "feedback"))
    (event,) = learner.model.events(message_id=queued)
    assert (event.outcome, event.analyst) == ("learned", "eve")
    assert [e.outcome for e in learner.model.events(message_id=other)] == ["parked"]
    assert learner.model.count_parked() == 1
    assert queued not in {i.message_id for i in learner.model.review_items(limit=None)}  # labelled
