"""What feedback by id rests on, on SQLite and PostgreSQL: the decided messages' coordinates
(`filterd.store.decided`) and the parked feedback (`filterd.store.parking`)."""

from datetime import UTC, datetime, timedelta

import pytest

from filterd.bayes.model import ModelSpec
from filterd.store import decided
from filterd.store.handle import ModelStore, Store
from filterd.store.parking import Parked

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=1)


def test_a_decided_message_keeps_its_latest_coordinates(model: ModelStore) -> None:
    with model.transaction() as writing:
        writing.record_decided([("a", 0, 10), ("b", 1, 11), ("a", 2, 12)], T0)
    with model.transaction() as writing:  # decided again later (a batch read again, an id twice)
        writing.record_decided([("b", 1, 99)], T0 + timedelta(hours=1))
    assert model.where_decided(["a", "b", "c"]) == {"a": (2, 12), "b": (1, 99)}


def test_a_small_messages_tokens_are_kept_with_it_and_told_apart_from_a_shared_hash(
    model: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with model.transaction() as writing:
        writing.record_decided(
            [("a", 0, 1), ("b", 0, 2), ("c", 0, 3)], T0, tokens={"a": ["win", "£5"], "b": []}
        )
    assert model.decided_tokens(["a", "b", "c", "d"]) == {"a": ["win", "£5"], "b": []}
    # an id whose hash is another's (odds of one in 2^64 a pair, forced here) gets no tokens
    monkeypatch.setattr(decided, "id_hash", lambda message_id: 42)
    with model.transaction() as writing:
        writing.record_decided([("x", 0, 4)], T0, tokens={"x": ["cash"]})
    assert model.decided_tokens(["y"]) == {}
    assert model.decided_tokens(["x"]) == {"x": ["cash"]}


def test_decided_messages_older_than_the_cutoff_are_pruned_in_chunks(
    model: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decided, "PRUNE_CHUNK", 7)
    with model.transaction() as writing:
        writing.record_decided([(f"old{i}", 0, i) for i in range(30)], T0)
        writing.record_decided([("new", 0, 99)], T0 + timedelta(days=5))
    cutoff = T0 + timedelta(days=1)
    assert model.prune_decided(cutoff, dry_run=True) == 30
    assert model.prune_decided(cutoff) == 30
    assert model.where_decided([f"old{i}" for i in range(30)] + ["new"]) == {"new": (0, 99)}


def park(model: ModelStore, *parked: Parked, now: datetime = T0, due: datetime = T0) -> None:
    with model.transaction() as writing:
        writing.park(list(parked), now, due)


def test_parked_feedback_is_claimed_when_due_and_once(model: ModelStore) -> None:
    park(
        model,
        Parked("m1", b'{"label": "spam"}', "fb", 0, 5),
        Parked("m2", b"{}", "fb", 1, 6),
        due=T0 + timedelta(seconds=30),
    )
    assert model.claim_parked(T0, T0 + timedelta(minutes=1), 10) == []  # not due yet
    now = T0 + timedelta(seconds=30)
    claimed = model.claim_parked(now, now + timedelta(seconds=30), 10)
    assert sorted((p.message_id, p.kafka_offset, p.attempts) for p in claimed) == [
        ("m1", 5, 1),
        ("m2", 6, 1),
    ]
    assert model.claim_parked(now, now + timedelta(seconds=30), 10) == []  # taken
    again = model.claim_parked(now + timedelta(minutes=1), now + timedelta(minutes=2), 1)
    assert len(again) == 1 and again[0].attempts == 2  # one at a time when asked
    assert model.count_parked() == 2


def test_a_newer_label_replaces_the_parked_one_and_is_not_released_with_it(
    model: ModelStore,
) -> None:
    park(model, Parked("m1", b"old"))
    (claimed,) = model.claim_parked(T0, T0 + timedelta(seconds=30), 10)
    park(model, Parked("m1", b"new"), now=T0 + timedelta(seconds=1))  # meanwhile, a newer label
    with model.transaction() as writing:
        assert writing.release([claimed]) == []  # the claimed one is gone already
    (newer,) = model.claim_parked(T0 + timedelta(days=1), T0 + timedelta(days=2), 10)
    assert newer.payload == b"new" and newer.attempts == 1
    with model.transaction() as writing:
        assert writing.release([newer]) == ["m1"]
    assert model.count_parked() == 0


def test_unpark_deletes_what_newer_feedback_settled(model: ModelStore) -> None:
    park(model, Parked("m1", b"a"), Parked("m2", b"b"))
    with model.transaction() as writing:
        assert writing.unpark(["m1", "m3"]) == 1
        assert writing.unpark([]) == 0
    assert model.count_parked() == 1
