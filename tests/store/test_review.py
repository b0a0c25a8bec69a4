"""The review queue in the store: items queued in the caller's transaction, listed (unlabelled,
closest to τ first), read back with their tokens, resolved by message id, trimmed (labelled items
first, then the oldest) and pruned by age; on SQLite, and the round trip on PostgreSQL too."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from filterd.bayes.model import ModelSpec
from filterd.service.review import ReviewItem
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.store.schema import ReviewItem as ReviewRow
from filterd.store.sql import pack_tokens, unpack_tokens
from tests.queued import queued as item
from tests.queued import stored_id

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def queue(model: ModelStore, items: list[ReviewItem], now: datetime = T0) -> None:
    with model.transaction() as writing:
        writing.queue_review(items, now)


def count(model: ModelStore) -> int:
    with model.store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(ReviewRow)).scalar_one()


def learn(model: ModelStore, message_id: str, label: str, fraction: float = 0.0) -> None:
    model.learn([LabelledTokens(message_id, label, ["x"])], holdout_fraction=fraction)


@pytest.fixture
def model(tmp_path: Path) -> Iterator[ModelStore]:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    yield store.create_model("default", ModelSpec("mnb"), seed=1)
    store.close()


def test_tokens_pack_round_trip_and_compress() -> None:
    tokens = ["subject:free", "win", "£1000", "url:example.com", "a b"] * 200
    packed = pack_tokens(tokens)
    assert unpack_tokens(packed) == tokens
    assert len(packed) < len("\x00".join(tokens)) / 10


def test_round_trip_on_each_database(store: Store) -> None:
    """Every column comes back as queued, on SQLite and PostgreSQL (JSON, booleans, times)."""
    model = store.create_model("default", ModelSpec("mnb"), seed=1)
    full = item(
        "m-1",
        score=0.47,
        threshold=0.5,
        subject="Win now",
        excerpt="Claim £1000 today",
        sender="Eve <eve@example.com>",
        attributes={"channel": "sms", "n": [1, 2]},
        explanation=[("win", 1.25), ("cash", -0.5)],
        truncated=True,
        threshold_version=None,
        tokens=["win", "cash", "£1000"],
    )
    queue(model, [full, item("m-2", score=0.9, reason="random")], now=T0)
    entries = model.review_items()
    assert [e.message_id for e in entries] == ["m-1", "m-2"]
    got = model.review_item(stored_id(entries[0]))
    assert got is not None
    assert (got.subject, got.excerpt, got.sender) == (full.subject, full.excerpt, full.sender)
    assert got.attributes == {"channel": "sms", "n": [1, 2]}
    assert got.explanation == [("win", 1.25), ("cash", -0.5)]
    assert (got.truncated, got.threshold_version, got.model_version) == (True, None, 3)
    assert (got.reason, got.label, got.score, got.threshold) == ("band", "spam", 0.47, 0.5)
    assert got.queued_at == T0
    assert (got.tokens, got.token_count, got.labelled) == (["win", "cash", "£1000"], 3, None)
    assert model.review_tokens(["m-2", "m-1", "nope"]) == {
        "m-1": ["win", "cash", "£1000"],
        "m-2": ["win", "cash"],
    }


def test_list_is_closest_to_tau_first_or_newest_first_and_filters_by_reason(
    model: ModelStore,
) -> None:
    queue(model, [item("far", score=0.9), item("near", score=0.51)], now=T0)
    queue(model, [item("mid", score=0.4, reason="random")], now=T0 + timedelta(hours=1))
    assert [e.message_id for e in model.review_items()] == ["near", "mid", "far"]
    newest = model.review_items(order="newest")
    assert [e.message_id for e in newest] == ["mid", "near", "far"]  # then by id, last first
    assert [e.message_id for e in model.review_items(reason="random")] == ["mid"]
    assert [e.message_id for e in model.review_items(limit=1)] == ["near"]
    assert model.review_items()[0].tokens is None  # counted, not read
    assert model.review_items()[0].token_count == 2
    oldest: Any = "oldest"  # not an order: as untyped input may give it
    with pytest.raises(ValueError, match="unknown order"):
        model.review_items(order=oldest)


def test_labelled_items_leave_the_list_unless_asked_for_with_their_label(model: ModelStore) -> None:
    queue(model, [item("a", score=0.5), item("b", score=0.6), item("c", score=0.7)])
    learn(model, "a", "ham")  # the ledger
    learn(model, "b", "spam", fraction=1.0)  # the holdout
    assert [e.message_id for e in model.review_items()] == ["c"]
    every = model.review_items(include_labelled=True)
    assert [(e.message_id, e.labelled) for e in every] == [("a", "ham"), ("b", "spam"), ("c", None)]


def test_get_item_of_another_model_or_unknown_id_is_none(model: ModelStore) -> None:
    other = model.store.create_model("other", ModelSpec("mnb"), seed=2)
    queue(other, [item("a")])
    (entry,) = other.review_items()
    assert other.review_item(stored_id(entry)) is not None
    assert model.review_item(stored_id(entry)) is None
    assert other.review_item(stored_id(entry) + 1000) is None


def test_tokens_of_gives_the_newest_item_of_a_message_and_works_in_chunks(
    model: ModelStore,
) -> None:
    queue(model, [item("m", tokens=["old"])], now=T0)
    queue(model, [item("m", tokens=["new", "er"])], now=T0 + timedelta(minutes=1))
    many = [item(f"x{i}", tokens=[f"t{i}"]) for i in range(1200)]  # more than one IN (...) list
    queue(model, many, now=T0)
    found = model.review_tokens(["m", *(f"x{i}" for i in range(1200)), "unknown"])
    assert found["m"] == ["new", "er"]
    assert len(found) == 1201 and found["x1199"] == ["t1199"]
    assert model.review_tokens([]) == {}


def test_queue_is_in_the_callers_transaction(model: ModelStore) -> None:
    with pytest.raises(RuntimeError), model.transaction() as writing:
        writing.queue_review([item("a")], T0)
        raise RuntimeError("the scorer's batch failed")
    assert count(model) == 0


def test_trim_removes_labelled_items_first_then_the_oldest(model: ModelStore) -> None:
    for n, message_id in enumerate(["a", "b", "c", "d", "e"]):
        queue(model, [item(message_id)], now=T0 + timedelta(minutes=n))
    learn(model, "d", "spam")
    learn(model, "e", "ham", fraction=1.0)
    assert model.trim_review(5) == 0  # nothing to do
    assert model.trim_review(4) == 1
    left = {e.message_id for e in model.review_items(include_labelled=True)}
    assert left == {"a", "b", "c", "e"}  # the older labelled one went first
    assert model.trim_review(2) == 2
    still = [e.message_id for e in model.review_items(include_labelled=True)]
    assert sorted(still) == ["b", "c"]  # the other labelled one, then the oldest
    assert model.trim_review(0) == 2 and count(model) == 0


def test_an_item_read_back_without_its_tokens_is_not_queued_again(model: ModelStore) -> None:
    queue(model, [item("a")])
    (read_back,) = model.review_items()  # tokens counted, not read: None
    with pytest.raises(ValueError, match="'a' is queued without tokens"):
        queue(model, [item("b"), read_back])
    assert [e.message_id for e in model.review_items()] == ["a"]  # the batch wrote nothing
    assert model.review_tokens(["a"]) == {"a": ["win", "cash"]}


def test_trim_counts_only_its_model(model: ModelStore) -> None:
    other = model.store.create_model("other", ModelSpec("mnb"), seed=2)
    queue(other, [item("a"), item("b")])
    queue(model, [item("c")])
    assert model.trim_review(1) == 0
    assert other.trim_review(1) == 1
    assert count(model) == 2


def test_prune_deletes_items_older_than_the_retention(model: ModelStore) -> None:
    for days in (20, 15, 13, 1):
        queue(model, [item(f"d{days}")], now=T0 - timedelta(days=days))
    assert model.prune_review(14, now=T0, dry_run=True) == 2
    assert count(model) == 4
    assert model.prune_review(0, now=T0) == 0  # keep every item
    assert model.prune_review(14, now=T0) == 2
    assert sorted(e.message_id for e in model.review_items()) == ["d1", "d13"]
    with pytest.raises(ValueError, match="negative"):
        model.prune_review(-1)


def test_prune_works_in_chunks(model: ModelStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from filterd.store import review

    monkeypatch.setattr(review, "CHUNK", 3)
    queue(model, [item(f"m{i}") for i in range(8)], now=T0 - timedelta(days=30))
    queue(model, [item("new")], now=T0)
    assert model.prune_review(14, now=T0) == 8
    assert [e.message_id for e in model.review_items()] == ["new"]
