"""Entity memory (filterd.entities.memory): what the past says about a message's entities."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from filterd.entities import EntityMemory, EntitySpec
from filterd.entities.memory import count_bin, entity_tokens, entity_words, ratio_bin, window_name

HOUR = 3600
SPEC = EntitySpec(
    keys=("customer", "terminal"),
    windows=(HOUR, 24 * HOUR),
    counterparties=(("customer", "terminal"),),
    label_window=48 * HOUR,
)


def pay(customer: str, terminal: str, amount: float = 10.0) -> dict[str, Any]:
    return {"attributes": {"customer": customer, "terminal": terminal, "amount": amount}}


def of(tokens: list[str], prefix: str) -> str:
    (token,) = [t for t in tokens if t.startswith(prefix)]
    return token


def test_counts_come_from_the_past_and_leave_with_their_window() -> None:
    memory = EntityMemory(SPEC)
    for minute in (0, 10, 20):
        memory.observe(pay("c1", f"t{minute}"), minute * 60.0)
    tokens = memory.tokens(pay("c1", "t9"), 30 * 60.0)
    assert of(tokens, "customer:count_1h") == "customer:count_1h~2^1"  # 3 payments: 2 ≤ n < 4
    assert of(tokens, "customer:terminals_1h") == "customer:terminals_1h~2^1"
    assert of(tokens, "terminal:count_1h") == "terminal:count_1h~0"  # a terminal never seen
    # 70 minutes on, the first payment has left the hour; all three are within the day
    later = memory.tokens(pay("c1", "t9"), 70 * 60.0)
    assert of(later, "customer:count_1h") == "customer:count_1h~2^1"  # 2 left
    assert of(later, "customer:count_1d") == "customer:count_1d~2^1"
    gone = memory.tokens(pay("c1", "t9"), 100 * 60.0)
    assert of(gone, "customer:count_1h") == "customer:count_1h~0"
    assert of(gone, "customer:count_1d") == "customer:count_1d~2^1"


def test_an_analyst_reads_what_stands_out_in_words() -> None:
    memory = EntityMemory(SPEC)
    for minute in range(7):
        memory.observe(pay("c596", f"t{minute}", amount=20.0), minute * 60.0)
    memory.label(pay("c596", "t3"), 3 * 60.0, is_target=True)
    (customer, terminal) = memory.features(pay("c596", "t9", amount=102.0), 8 * 60.0)
    assert customer.counts == (7, 7) and customer.parties == (7, 7) and customer.labelled == 1
    assert entity_words(customer, SPEC) == [
        "7 messages of customer c596 in the last 1h",
        "amount 5.1× the mean of customer c596 over 1d",
        "7 distinct terminals of customer c596 in the last 1h",
        "1 message of customer c596 labelled fraud within 2d",
    ]
    assert entity_words(terminal, SPEC) == ["terminal t9: first seen within 1d"]
    # the words and the tokens are of the same numbers
    assert [t for f in (customer, terminal) for t in entity_tokens(f, SPEC)] == memory.tokens(
        pay("c596", "t9", amount=102.0), 8 * 60.0
    )


def test_the_clock_never_turns_back() -> None:
    memory = EntityMemory(SPEC)
    memory.observe(pay("c1", "t1"), 0.0)
    memory.observe(pay("c1", "t1"), 5 * HOUR)
    # a message dated before the last: counted at the stream's time, not at its own
    assert memory.now(1.0) == 5 * HOUR
    tokens = memory.tokens(pay("c1", "t1"), 1.0)
    assert of(tokens, "customer:count_1h") == "customer:count_1h~2^0"


def test_the_amount_against_the_entitys_mean() -> None:
    memory = EntityMemory(SPEC)
    assert of(memory.tokens(pay("c1", "t1", 50.0), 0.0), "customer:amount_vs") == (
        "customer:amount_vs_1d=new"
    )
    for amount in (10.0, 20.0, 30.0):
        memory.observe(pay("c1", "t1", amount), 0.0)
    tokens = memory.tokens(pay("c1", "t1", 102.0), 60.0)  # 5.1 × the mean of 20
    assert of(tokens, "customer:amount_vs_1d") == "customer:amount_vs_1d~2^2"
    assert ratio_bin(102.0 / 20.0) == "2^2"


def test_labels_count_once_arrived_within_their_window_by_the_messages_time() -> None:
    memory = EntityMemory(SPEC)
    memory.observe(pay("c1", "t1"), 0.0)
    assert of(memory.tokens(pay("c2", "t1"), HOUR), "terminal:fraud") == "terminal:fraud_2d~0"
    memory.label(pay("c1", "t1"), 0.0, is_target=True)  # a chargeback for the payment at 0 h
    memory.label(pay("c3", "t1"), 0.0, is_target=False)  # a cleared one counts for nothing
    assert of(memory.tokens(pay("c2", "t1"), HOUR), "terminal:fraud") == "terminal:fraud_2d~2^0"
    assert of(memory.tokens(pay("c2", "t1"), HOUR), "customer:fraud") == "customer:fraud_2d~0"
    assert of(memory.tokens(pay("c1", "t2"), HOUR), "customer:fraud") == "customer:fraud_2d~2^0"
    # the label window runs from the labelled payment's time
    assert of(memory.tokens(pay("c2", "t1"), 49 * HOUR), "terminal:fraud") == "terminal:fraud_2d~0"


def test_memory_is_bounded_per_entity_and_in_entities() -> None:
    small = EntityMemory(
        EntitySpec(keys=("customer",), windows=(HOUR,), max_events=3, max_entities=2)
    )
    for i in range(10):
        small.observe(pay("c1", "t1"), float(i))
    assert of(small.tokens(pay("c1", "t1"), 20.0), "customer:count_1h") == "customer:count_1h~2^1"
    small.observe(pay("c2", "t1"), 21.0)
    small.observe(pay("c3", "t1"), 22.0)  # the least recently seen, c1, is forgotten
    assert len(small) == 2
    assert of(small.tokens(pay("c1", "t1"), 23.0), "customer:count_1h") == "customer:count_1h~0"


def test_a_message_without_its_keys_or_with_odd_values_has_no_entity_tokens() -> None:
    memory = EntityMemory(SPEC)
    assert memory.tokens({"text": "hello"}, None) == []
    odd = {"attributes": {"customer": ["a"], "terminal": True, "amount": math.nan}}
    assert memory.tokens({"attributes": {"customer": 10**5000}}, None) == []  # not str()-ed
    assert memory.tokens(odd, None) == []
    memory.observe(odd, None)
    assert len(memory) == 0


def test_a_spec_that_cannot_work_is_refused() -> None:
    with pytest.raises(ValueError, match="shortest first"):
        EntitySpec(keys=("c",), windows=(86400, 3600))
    with pytest.raises(ValueError, match="counterparties of keys that name no entity"):
        EntitySpec(keys=("c",), counterparties=(("terminal", "c"),))
    assert [window_name(w) for w in (60, 3600 * 36)] == ["1m", "36h"]
    assert count_bin(8) == "2^3"


# --- against a reference that recounts every past event -------------------------------------

events = st.lists(
    st.tuples(
        st.integers(0, 3),  # customer
        st.integers(0, 3),  # terminal
        st.floats(1, 1000),  # amount
        st.integers(0, 7200),  # seconds since the previous message
        st.booleans(),  # labelled the target
        st.integers(0, 6),  # messages later its label arrives
    ),
    max_size=60,
)


def recounted(
    history: list[tuple[float, dict[str, Any]]],
    labelled: list[tuple[float, dict[str, Any]]],
    message: dict[str, Any],
    now: float,
    spec: EntitySpec,
) -> list[str]:
    out = []
    amount = message["attributes"]["amount"]
    for key in spec.keys:
        value = message["attributes"][key]
        mine = [(t, m) for t, m in history if m["attributes"][key] == value]
        for w in spec.windows:
            n = sum(1 for t, _ in mine if t >= now - w)
            out.append(f"{key}:count_{window_name(w)}~{count_bin(n)}")
        longest = [m["attributes"]["amount"] for t, m in mine if t >= now - spec.windows[-1]]
        name = window_name(spec.windows[-1])
        out.append(
            f"{key}:amount_vs_{name}~{ratio_bin(amount / (sum(longest) / len(longest)))}"
            if longest
            else f"{key}:amount_vs_{name}=new"
        )
        party = dict(spec.counterparties).get(key)
        if party:
            for w in spec.windows:
                n = len({m["attributes"][party] for t, m in mine if t >= now - w})
                out.append(f"{key}:{party}s_{window_name(w)}~{count_bin(n)}")
        n = sum(
            1
            for t, m in labelled
            if m["attributes"][key] == value and now - spec.label_window <= t < now
        )
        out.append(f"{key}:{spec.target}_{window_name(spec.label_window)}~{count_bin(n)}")
    return out


@settings(max_examples=60, deadline=None)
@given(events)
def test_the_memory_gives_what_recounting_every_past_event_gives(
    stream: list[tuple[int, int, float, int, bool, int]],
) -> None:
    spec = EntitySpec(
        keys=("customer", "terminal"),
        windows=(600, 3600, 4 * 3600),
        counterparties=(("customer", "terminal"),),
        label_window=3 * 3600,
    )
    memory = EntityMemory(spec)
    history: list[tuple[float, dict[str, Any]]] = []
    labelled: list[tuple[float, dict[str, Any]]] = []
    arrivals: list[tuple[int, float, dict[str, Any], bool]] = []
    now = 0.0
    for j, (c, t, amount, gap, target, late) in enumerate(stream):
        now += gap
        for arrival in [a for a in arrivals if a[0] <= j]:
            arrivals.remove(arrival)
            _, sent, message, is_target = arrival
            memory.label(message, sent, is_target)
            if is_target:
                labelled.append((sent, message))
        message = pay(f"c{c}", f"t{t}", round(amount, 2))
        assert memory.tokens(message, now) == recounted(history, labelled, message, now, spec)
        memory.observe(message, now)
        history.append((now, message))
        arrivals.append((j + 1 + late, now, message, target))


def test_a_long_stream_bounded_per_entity_gives_a_recount_of_the_events_kept() -> None:
    """Thousands of payments of a few entities: events leave the windows and are forgotten in
    bulk, and the bound per entity evicts the oldest; each message's numbers are a recount of
    the events a list of each entity's newest `max_events` within the longest window holds."""
    spec = EntitySpec(
        keys=("customer", "terminal"),
        windows=(600, 3600, 4 * 3600),
        counterparties=(("customer", "terminal"),),
        max_events=8,
    )
    memory = EntityMemory(spec)
    rng = random.Random(7)
    kept: dict[tuple[str, str], list[tuple[float, float, str | None]]] = {}
    now, evicted = 0.0, 0
    for _ in range(4000):
        now += rng.choice([0, 1, 5, 30, 60, 300, 3000])
        c, t = f"c{rng.randrange(2)}", f"t{rng.randrange(4)}"
        amount = rng.choice([0.5, 1.0, 10.0, 250.0])
        message = pay(c, t, amount)
        features = {f.key: f for f in memory.features(message, now)}
        for key, value, party in (("customer", c, t), ("terminal", t, None)):
            events = [e for e in kept.get((key, value), []) if e[0] >= now - spec.windows[-1]]
            f = features[key]
            within = [[e for e in events if e[0] >= now - w] for w in spec.windows]
            assert f.counts == tuple(len(w) for w in within)
            mean = sum(e[1] for e in events) / len(events) if events else 0.0
            assert f.amount_vs == (pytest.approx(amount / mean, rel=1e-12) if mean else 0.0)
            if party is not None:
                assert f.parties == tuple(len({e[2] for e in w}) for w in within)
            if len(events) >= spec.max_events:
                events.pop(0)
                evicted += 1
            kept[(key, value)] = [*events, (now, amount, party)]
        memory.observe(message, now)
    assert evicted > 100  # the bound was reached, and often


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.floats(), st.integers(min_value=-(10**400), max_value=10**400))),
    st.sampled_from([1.0, 13 * HOUR]),
)
@example([5e-324, 1e308], 1.0)  # a mean of the smallest float, then the largest: a ratio of inf
@example([1e308, 1e308, 1e308, 1.0], 1.0)  # a sum that overflows
# the largest amount leaves the window, the smallest stays: a sum kept by adding and taking
# away amounts was 0 then, and the mean a division by zero
@example([1e15, 1e-12, 5.0], 13 * HOUR)
def test_no_amount_a_sender_chooses_breaks_the_memory(amounts: list[Any], gap: float) -> None:
    """Whatever the amounts (zero, subnormal, 1e308, infinite, NaN, an integer of 400 digits),
    in whatever order, entering the windows and leaving them (`gap` seconds apart), every
    message gets its tokens: a mean's ratio never overflows nor divides by zero."""
    memory = EntityMemory(SPEC)
    for i, amount in enumerate(amounts):
        message = pay("c1", "t1", amount)
        tokens = memory.tokens(message, i * gap)
        assert of(tokens, "customer:count_1h").startswith("customer:count_1h~")
        memory.observe(message, i * gap)
