"""The hostile-input harness, fast part: every family of `filterd.evaluation.hostile` at 200 KB
goes through the scorer's path (decode, tokenize, decide, and the review item of every decision,
as if each were queued) and is decided or dead-lettered with a reason, at a bounded cost and
memory, and the normal message after it is decided. `bench/hostile.py` runs the same families
at full size and prints the cost per 100 KB and the memory of each."""

import json
import time
import tracemalloc

import pytest

from filterd.bayes.model import ModelSpec
from filterd.daemon.scorer import queue_for_review
from filterd.evaluation.hostile import FAMILIES, record
from filterd.service.config import Review
from filterd.service.decide import Decided, Decider, ThresholdSetting, decide_payloads
from tests.service.test_decide import trained

SIZE = 200_000
# The harness's bound is 50 ms of CPU per 100 KB (bench/hostile.py reports the real ratio); a
# test on a shared CI machine allows ten times that before it calls a family expensive.
SECONDS_PER_100_KB = 10 * 0.05
NORMAL = json.dumps({"id": "next", "text": "win cash now"}).encode()
QUEUE_ALL = Review(random_share=1.0)  # every decision becomes a review item


def scorer_path(decider: Decider, payloads: list[bytes]) -> Decided:
    result = decide_payloads(decider, ThresholdSetting(), payloads, max_bytes=1_000_000)
    queue_for_review(result, QUEUE_ALL)
    return result


@pytest.fixture(scope="module")
def decider() -> Decider:
    decider = Decider(ModelSpec("mnb"), "spam", min_docs=5)
    decider.update(trained(), version=1)
    return decider


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_hostile_record_is_decided_or_dead_lettered_cheaply_and_the_next_is_decided(
    decider: Decider, family: str
) -> None:
    payload = record(family, SIZE)
    started = time.process_time()
    result = scorer_path(decider, [payload, NORMAL])
    seconds = time.process_time() - started
    assert seconds < SECONDS_PER_100_KB * max(len(payload), 100_000) / 100_000, seconds
    decided = [d.message_id for d in result.decisions]
    assert decided[-1] == "next" and not result.decisions[-1].truncated
    assert all(d.review for d in result.decisions)  # each went through its review item
    if decided == ["hostile", "next"]:
        return
    ((position, reason, error),) = result.failures
    assert decided == ["next"] and position == 0 and reason and error


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_hostile_record_of_900_kb_takes_at_most_50_mb_more_memory(
    decider: Decider, family: str
) -> None:
    payload = record(family, 900_000)
    tracemalloc.start()
    try:
        scorer_path(decider, [payload, NORMAL])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, peak
