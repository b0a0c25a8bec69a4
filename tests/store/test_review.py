"""The review queue in the store: items queued in the caller's transaction, listed (unlabelled,
closest to τ first), read back with their tokens, resolved by message id, trimmed (labelled items
first, then the oldest) and pruned by age; on SQLite, and the round trip on PostgreSQL too."""

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from filterd.bayes.model import ModelSpec
from filterd.service.review import QueuedItem, Reason
from filterd.store.database import connect, upgrade
from filterd.store.learning import (
    LabelledTokens,
    UnknownModel,
    apply_feedback,
    create_model,
    find_model_id,
)
from filterd.store.review import (
    get_item,
    list_items,
    pack_tokens,
    prune_items,
    queue_items,
    tokens_of,
    trim,
    unpack_tokens,
)
from filterd.store.schema import ReviewItem

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def item(
    message_id: str,
    score: float = 0.5,
    threshold: float = 0.5,
    reason: Reason = "band",
    tokens: Sequence[str] = ("win", "cash"),
    **fields: Any,  # other fields of `QueuedItem`, of their own types
) -> QueuedItem:
    defaults = QueuedItem(
        message_id,
        reason,
        "spam",
        score,
        threshold,
        3,
        1,
        None,
        None,
        None,
        None,
        [("win", 1.25)],
        False,
        list(tokens),
    )
    return replace(defaults, **fields)


def queue(
    engine: Engine, items: list[QueuedItem], now: datetime = T0, model: str = "default"
) -> None:
    with engine.begin() as conn:
        queue_items(conn, find_model_id(conn, model), items, now)


def count(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(ReviewItem)).scalar_one()


def learn(engine: Engine, message_id: str, label: str, fraction: float = 0.0) -> None:
    apply_feedback(
        engine, "default", [LabelledTokens(message_id, label, ["x"])], holdout_fraction=fraction
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    upgrade(url)
    engine = connect(url)
    create_model(engine, "default", ModelSpec("mnb"), seed=1)
    yield engine
    engine.dispose()


def test_tokens_pack_round_trip_and_compress() -> None:
    tokens = ["subject:free", "win", "£1000", "url:example.com", "a b"] * 200
    packed = pack_tokens(tokens)
    assert unpack_tokens(packed) == tokens
    assert len(packed) < len("\x00".join(tokens)) / 10


def test_round_trip_on_each_database(engine: Engine) -> None:
    """Every column comes back as queued, on SQLite and PostgreSQL (JSON, booleans, times)."""
    create_model(engine, "default", ModelSpec("mnb"), seed=1)
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
    queue(engine, [full, item("m-2", score=0.9, reason="random")], now=T0)
    entries = list_items(engine, "default")
    assert [e.message_id for e in entries] == ["m-1", "m-2"]
    got = get_item(engine, "default", entries[0].id)
    assert got is not None
    assert (got.subject, got.excerpt, got.sender) == (full.subject, full.excerpt, full.sender)
    assert got.attributes == {"channel": "sms", "n": [1, 2]}
    assert got.explanation == [("win", 1.25), ("cash", -0.5)]
    assert (got.truncated, got.threshold_version, got.model_version) == (True, None, 3)
    assert (got.reason, got.label, got.score, got.threshold) == ("band", "spam", 0.47, 0.5)
    assert got.queued_at == T0
    assert (got.tokens, got.token_count, got.labelled) == (["win", "cash", "£1000"], 3, None)
    with engine.connect() as conn:
        model_id = find_model_id(conn, "default")
        assert tokens_of(conn, model_id, ["m-2", "m-1", "nope"]) == {
            "m-1": ["win", "cash", "£1000"],
            "m-2": ["win", "cash"],
        }


def test_list_is_closest_to_tau_first_or_newest_first_and_filters_by_reason(store: Engine) -> None:
    queue(store, [item("far", score=0.9), item("near", score=0.51)], now=T0)
    queue(store, [item("mid", score=0.4, reason="random")], now=T0 + timedelta(hours=1))
    assert [e.message_id for e in list_items(store, "default")] == ["near", "mid", "far"]
    newest = list_items(store, "default", order="newest")
    assert [e.message_id for e in newest] == ["mid", "near", "far"]  # then by id, last first
    assert [e.message_id for e in list_items(store, "default", reason="random")] == ["mid"]
    assert [e.message_id for e in list_items(store, "default", limit=1)] == ["near"]
    assert list_items(store, "default")[0].tokens is None  # counted, not read
    assert list_items(store, "default")[0].token_count == 2
    oldest: Any = "oldest"  # not an order: as untyped input may give it
    with pytest.raises(ValueError, match="unknown order"):
        list_items(store, "default", order=oldest)


def test_labelled_items_leave_the_list_unless_asked_for_with_their_label(store: Engine) -> None:
    queue(store, [item("a", score=0.5), item("b", score=0.6), item("c", score=0.7)])
    learn(store, "a", "ham")  # the ledger
    learn(store, "b", "spam", fraction=1.0)  # the holdout
    assert [e.message_id for e in list_items(store, "default")] == ["c"]
    every = list_items(store, "default", include_labelled=True)
    assert [(e.message_id, e.labelled) for e in every] == [("a", "ham"), ("b", "spam"), ("c", None)]


def test_get_item_of_another_model_or_unknown_id_is_none(store: Engine) -> None:
    create_model(store, "other", ModelSpec("mnb"), seed=2)
    queue(store, [item("a")], model="other")
    (entry,) = list_items(store, "other")
    assert get_item(store, "other", entry.id) is not None
    assert get_item(store, "default", entry.id) is None
    assert get_item(store, "other", entry.id + 1000) is None


def test_unknown_model(store: Engine) -> None:
    for call in (
        lambda: list_items(store, "nope"),
        lambda: get_item(store, "nope", 1),
        lambda: trim(store, "nope", 10),
        lambda: prune_items(store, "nope", 14),
    ):
        with pytest.raises(UnknownModel, match="nope"):
            call()


def test_tokens_of_gives_the_newest_item_of_a_message_and_works_in_chunks(store: Engine) -> None:
    queue(store, [item("m", tokens=["old"])], now=T0)
    queue(store, [item("m", tokens=["new", "er"])], now=T0 + timedelta(minutes=1))
    many = [item(f"x{i}", tokens=[f"t{i}"]) for i in range(1200)]  # more than one IN (...) list
    queue(store, many, now=T0)
    with store.connect() as conn:
        model_id = find_model_id(conn, "default")
        found = tokens_of(conn, model_id, ["m", *(f"x{i}" for i in range(1200)), "unknown"])
        assert found["m"] == ["new", "er"]
        assert len(found) == 1201 and found["x1199"] == ["t1199"]
        assert tokens_of(conn, model_id, []) == {}


def test_queue_is_in_the_callers_transaction(store: Engine) -> None:
    with pytest.raises(RuntimeError), store.begin() as conn:
        queue_items(conn, find_model_id(conn, "default"), [item("a")], T0)
        raise RuntimeError("the scorer's batch failed")
    assert count(store) == 0


def test_trim_removes_labelled_items_first_then_the_oldest(store: Engine) -> None:
    for n, message_id in enumerate(["a", "b", "c", "d", "e"]):
        queue(store, [item(message_id)], now=T0 + timedelta(minutes=n))
    learn(store, "d", "spam")
    learn(store, "e", "ham", fraction=1.0)
    assert trim(store, "default", 5) == 0  # nothing to do
    assert trim(store, "default", 4) == 1
    left = {e.message_id for e in list_items(store, "default", include_labelled=True)}
    assert left == {"a", "b", "c", "e"}  # the older labelled one went first
    assert trim(store, "default", 2) == 2
    still = [e.message_id for e in list_items(store, "default", include_labelled=True)]
    assert sorted(still) == ["b", "c"]  # the other labelled one, then the oldest
    assert trim(store, "default", 0) == 2 and count(store) == 0


def test_trim_counts_only_its_model(store: Engine) -> None:
    create_model(store, "other", ModelSpec("mnb"), seed=2)
    queue(store, [item("a"), item("b")], model="other")
    queue(store, [item("c")])
    assert trim(store, "default", 1) == 0
    assert trim(store, "other", 1) == 1
    assert count(store) == 2


def test_prune_deletes_items_older_than_the_retention(store: Engine) -> None:
    for days in (20, 15, 13, 1):
        queue(store, [item(f"d{days}")], now=T0 - timedelta(days=days))
    assert prune_items(store, "default", 14, now=T0, dry_run=True) == 2
    assert count(store) == 4
    assert prune_items(store, "default", 0, now=T0) == 0  # keep every item
    assert prune_items(store, "default", 14, now=T0) == 2
    assert sorted(e.message_id for e in list_items(store, "default")) == ["d1", "d13"]
    with pytest.raises(ValueError, match="negative"):
        prune_items(store, "default", -1)


def test_prune_works_in_chunks(store: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    from filterd.store import review

    monkeypatch.setattr(review, "CHUNK", 3)
    queue(store, [item(f"m{i}") for i in range(8)], now=T0 - timedelta(days=30))
    queue(store, [item("new")], now=T0)
    assert prune_items(store, "default", 14, now=T0) == 8
    assert [e.message_id for e in list_items(store, "default")] == ["new"]
