"""Raw records → decisions or dead-letter reasons, as the scorer and `filterd score` do it
(no I/O)."""

import json

import pytest

from filterd.bayes.model import ModelSpec
from filterd.kafka.memory import MemoryRecord
from filterd.service.decide import Decider, Position, ThresholdSetting
from filterd.service.records import Decision
from filterd.tokenize import Tokenizer, TokenizerConfig
from tests.service.test_decide import trained

GOOD = json.dumps({"id": "ok", "text": "win cash now"}).encode()


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"k": value}
    return value


HOSTILE = {
    "invalid_json": b"{not json",
    "schema": json.dumps({"text": "a message without an id"}).encode(),
    "oversized": json.dumps({"id": "big", "text": "a" * 10_000_000}).encode(),
    "invalid_utf8": b'{"id": "bad", "text": "\xff\xfe\xfd"}',
    "empty": None,
}
EXPECTED_REASON = {"empty": "invalid_json"}
UNDECODABLE_KINDS = {"invalid_json", "schema", "invalid_utf8", "empty"}
# Cut short by a limit: decided on what was read, and flagged
LONG = {
    "too_many_tokens": json.dumps({"id": "long", "text": "word " * 100_000}).encode(),
    "too_deep_attributes": json.dumps({"id": "deep", "attributes": nested(50)}).encode(),
}


@pytest.fixture(scope="module")
def decider() -> Decider:
    decider = Decider(
        ModelSpec("mnb"),
        "spam",
        min_docs=5,
        tokenizer=Tokenizer(TokenizerConfig(max_tokens=10_000)),
    )
    decider.update(trained(), version=1)
    return decider


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_bad_record_gets_a_reason_and_the_rest_are_decided(decider: Decider, kind: str) -> None:
    from filterd.service.decide import decide_payloads

    result = decide_payloads(
        decider, ThresholdSetting(), [GOOD, HOSTILE[kind], GOOD], max_bytes=1_000_000
    )
    assert [d.message_id for d in result.decisions] == ["ok", "ok"]
    assert result.undecodable == [False, kind in UNDECODABLE_KINDS, False]
    ((position, reason, error),) = result.failures
    assert position == 1 and reason == EXPECTED_REASON.get(kind, kind) and error


def test_decisions_keep_the_order_of_the_records(decider: Decider) -> None:
    from filterd.service.decide import decide_payloads

    payloads = [
        json.dumps({"id": f"m{i}", "text": t}).encode()
        for i, t in enumerate(["win cash", "at noon"] * 50)
    ]
    result = decide_payloads(decider, ThresholdSetting(), payloads, max_bytes=1_000_000)
    assert [d.message_id for d in result.decisions] == [f"m{i}" for i in range(100)]
    assert [d.label for d in result.decisions[:2]] == ["spam", "ham"]
    assert result.tokens[0].tokens == ["win", "cash"]


@pytest.mark.parametrize("kind", sorted(LONG))
def test_a_message_cut_short_by_a_limit_is_decided_and_flagged(decider: Decider, kind: str) -> None:
    from filterd.service.decide import decide_payloads

    result = decide_payloads(
        decider, ThresholdSetting(), [GOOD, LONG[kind], GOOD], max_bytes=1_000_000
    )
    assert [d.message_id for d in result.decisions] == ["ok", json.loads(LONG[kind])["id"], "ok"]
    assert [d.truncated for d in result.decisions] == [False, True, False]
    assert result.failures == [] and result.undecodable == [False, False, False]


def source(record: MemoryRecord) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset


def coordinates(decision: Decision) -> tuple[str, int, int]:
    return decision.source_topic, decision.partition, decision.offset


def test_each_decision_carries_the_coordinates_of_its_record_past_dead_letters(
    decider: Decider,
) -> None:
    from filterd.service.decide import decide_payloads

    good = [json.dumps({"id": f"m{i}", "text": "win cash"}).encode() for i in range(3)]
    payloads = [
        good[0],
        HOSTILE["invalid_json"],
        good[1],
        HOSTILE["schema"],
        HOSTILE["empty"],
        good[2],
    ]
    # a poll's records: partition by partition, offsets not from 0
    records = [
        MemoryRecord("filterd.messages", i // 3, 40 + i % 3, None, p or b"")
        for i, p in enumerate(payloads)
    ]
    result = decide_payloads(decider, ThresholdSetting(), payloads, 1_000_000, records)
    assert [d.message_id for d in result.decisions] == ["m0", "m1", "m2"]
    assert [coordinates(d) for d in result.decisions] == [source(records[i]) for i in (0, 2, 5)]
    assert [position for position, _, _ in result.failures] == [1, 3, 4]
    assert {d.review for d in result.decisions} == {False}


def test_decisions_of_payloads_handed_over_directly_carry_their_position(decider: Decider) -> None:
    from filterd.service.decide import decide_payloads

    result = decide_payloads(decider, ThresholdSetting(), [b"{", GOOD, GOOD], 1_000_000)
    assert [coordinates(d) for d in result.decisions] == [("", 0, 1), ("", 0, 2)]
    with pytest.raises(ValueError, match="2 sources for 3 payloads"):
        decide_payloads(decider, ThresholdSetting(), [GOOD] * 3, 1_000_000, [Position(0)] * 2)
