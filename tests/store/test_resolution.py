"""What feedback by id rests on, on SQLite and PostgreSQL: the decided messages' coordinates
(`filterd.store.decided`) and the parked feedback (`filterd.store.parking`)."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from filterd.bayes.model import ModelSpec
from filterd.store import decided, parking
from filterd.store.learning import UnknownModel, create_model, find_model_id, lock_model
from filterd.store.parking import Parked

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def model_id(engine: Engine) -> int:
    create_model(engine, "default", ModelSpec("mnb"), seed=1)
    with engine.connect() as conn:
        return find_model_id(conn, "default")


def test_a_decided_message_keeps_its_latest_coordinates(engine: Engine, model_id: int) -> None:
    with engine.begin() as conn:
        decided.record_decided(conn, model_id, [("a", 0, 10), ("b", 1, 11), ("a", 2, 12)], T0)
    with engine.begin() as conn:  # decided again later (a batch read again, an id sent twice)
        decided.record_decided(conn, model_id, [("b", 1, 99)], T0 + timedelta(hours=1))
    with engine.connect() as conn:
        assert decided.where_decided(conn, model_id, ["a", "b", "c"]) == {
            "a": (2, 12),
            "b": (1, 99),
        }


def test_decided_messages_older_than_the_cutoff_are_pruned_in_chunks(
    engine: Engine, model_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decided, "PRUNE_CHUNK", 7)
    with engine.begin() as conn:
        decided.record_decided(conn, model_id, [(f"old{i}", 0, i) for i in range(30)], T0)
        decided.record_decided(conn, model_id, [("new", 0, 99)], T0 + timedelta(days=5))
    cutoff = T0 + timedelta(days=1)
    assert decided.prune_decided(engine, "default", cutoff, dry_run=True) == 30
    assert decided.prune_decided(engine, "default", cutoff) == 30
    with engine.connect() as conn:
        assert decided.where_decided(conn, model_id, [f"old{i}" for i in range(30)] + ["new"]) == {
            "new": (0, 99)
        }
    with pytest.raises(UnknownModel):
        decided.prune_decided(engine, "nope", cutoff)


def park(engine: Engine, *parked: Parked, now: datetime = T0, due: datetime = T0) -> None:
    with engine.begin() as conn:
        parking.park(conn, lock_model(conn, "default"), list(parked), now, due)


def test_parked_feedback_is_claimed_when_due_and_once(engine: Engine, model_id: int) -> None:
    park(
        engine,
        Parked("m1", b'{"label": "spam"}', "fb", 0, 5),
        Parked("m2", b"{}", "fb", 1, 6),
        due=T0 + timedelta(seconds=30),
    )
    assert (
        parking.claim_due(engine, "default", T0, T0 + timedelta(minutes=1), 10) == []
    )  # not due yet
    now = T0 + timedelta(seconds=30)
    claimed = parking.claim_due(engine, "default", now, now + timedelta(seconds=30), 10)
    assert sorted((p.message_id, p.kafka_offset, p.attempts) for p in claimed) == [
        ("m1", 5, 1),
        ("m2", 6, 1),
    ]
    assert parking.claim_due(engine, "default", now, now + timedelta(seconds=30), 10) == []  # taken
    again = parking.claim_due(
        engine, "default", now + timedelta(minutes=1), now + timedelta(minutes=2), 1
    )
    assert len(again) == 1 and again[0].attempts == 2  # one at a time when asked
    assert parking.count_parked(engine, "default") == 2


def test_a_newer_label_replaces_the_parked_one_and_is_not_released_with_it(
    engine: Engine, model_id: int
) -> None:
    park(engine, Parked("m1", b"old"))
    (claimed,) = parking.claim_due(engine, "default", T0, T0 + timedelta(seconds=30), 10)
    park(engine, Parked("m1", b"new"), now=T0 + timedelta(seconds=1))  # meanwhile, a newer label
    with engine.begin() as conn:
        assert parking.release(conn, model_id, [claimed]) == []  # the claimed one is gone already
    (newer,) = parking.claim_due(
        engine, "default", T0 + timedelta(days=1), T0 + timedelta(days=2), 10
    )
    assert newer.payload == b"new" and newer.attempts == 1
    with engine.begin() as conn:
        assert parking.release(conn, model_id, [newer]) == ["m1"]
    assert parking.count_parked(engine, "default") == 0


def test_unpark_deletes_what_newer_feedback_settled(engine: Engine, model_id: int) -> None:
    park(engine, Parked("m1", b"a"), Parked("m2", b"b"))
    with engine.begin() as conn:
        assert parking.unpark(conn, model_id, ["m1", "m3"]) == 1
        assert parking.unpark(conn, model_id, []) == 0
    assert parking.count_parked(engine, "default") == 1
