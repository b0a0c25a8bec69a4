"""The audit trail of label events, on SQLite and PostgreSQL: one event per label with what it
did and the label before, written in the batch's transaction; read back filtered, newest first;
pruned by age in chunks."""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import TypedDict, Unpack

import pytest
from sqlalchemy import Connection, func, select

from filterd.bayes.model import ModelSpec
from filterd.store import audit, expiry
from filterd.store.errors import UnknownModel
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import Event, LabelledTokens, Outcome, Source
from filterd.store.schema import FeedbackLedger, LabelEvent

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WORDS = ["cheap", "pills", "now"]


class Extra(TypedDict, total=False):
    """The other keywords of `Origin`, for the audit trail."""

    comment: str
    received_at: datetime
    kafka_topic: str
    kafka_partition: int
    kafka_offset: int


def label(
    message_id: str,
    value: str,
    source: Source = "analyst",
    analyst: str | None = None,
    **extra: Unpack[Extra],
) -> LabelledTokens:
    return LabelledTokens(message_id, value, WORDS, source, analyst=analyst, **extra)


class Filters(TypedDict, total=False):
    """`ModelStore.events`' choice of events."""

    message_id: str
    analyst: str
    since: datetime


def trail(model: ModelStore, **filters: Unpack[Filters]) -> list[Event]:
    return list(model.events(limit=None, **filters))


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=1)


def test_each_outcome_is_one_event_with_the_label_before_and_who_gave_it(model: ModelStore) -> None:
    received = T0 - timedelta(minutes=5)
    steps = [  # (item, holdout fraction, outcome, previous label)
        (
            label(
                "m1",
                "spam",
                analyst="alice",
                comment="lure",
                received_at=received,
                kafka_topic="filterd.feedback",
                kafka_partition=2,
                kafka_offset=41,
            ),
            0.0,
            "learned",
            None,
        ),
        (label("m1", "spam", analyst="bob"), 0.0, "duplicate", "spam"),
        (label("m1", "ham", analyst="carol"), 0.0, "relabelled", "spam"),
        (label("m1", "spam", source="auto"), 0.0, "kept_analyst_label", "ham"),
        (label("h1", "spam", analyst="alice"), 1.0, "held_out", None),
        (label("h1", "ham", analyst="bob"), 1.0, "relabelled", "spam"),
    ]
    for n, (item, fraction, _, _) in enumerate(steps):
        model.learn([item], holdout_fraction=fraction, now=T0 + timedelta(seconds=n))
    events = trail(model)[::-1]  # oldest first
    assert [(e.message_id, e.label, e.outcome, e.previous_label) for e in events] == [
        (item.message_id, item.label, outcome, previous) for item, _, outcome, previous in steps
    ]
    assert [(e.source, e.analyst) for e in events] == [
        ("analyst", "alice"),
        ("analyst", "bob"),
        ("analyst", "carol"),
        ("auto", None),
        ("analyst", "alice"),
        ("analyst", "bob"),
    ]
    first = events[0]
    assert (first.comment, first.received_at, first.applied_at) == ("lure", received, T0)
    assert (first.kafka_topic, first.kafka_partition, first.kafka_offset) == (
        "filterd.feedback",
        2,
        41,
    )
    assert (
        events[1].received_at == events[1].applied_at == T0 + timedelta(seconds=1)
    )  # default: now
    assert events[1].kafka_topic is None and events[1].comment is None


def test_one_batch_writes_one_event_per_item_in_order(model: ModelStore) -> None:
    items = [label("a", "spam"), label("b", "ham"), label("a", "ham"), label("a", "ham")]
    applied = model.learn(items, holdout_fraction=0, now=T0)
    assert (applied.learned, applied.relabelled, applied.duplicates) == (2, 1, 1)
    events = trail(model)
    # one applied_at for the whole batch: newest first is the reverse of the batch's order
    assert [(e.message_id, e.outcome, e.previous_label) for e in events] == [
        ("a", "duplicate", "ham"),
        ("a", "relabelled", "spam"),
        ("b", "learned", None),
        ("a", "learned", None),
    ]


def test_a_batch_that_fails_leaves_no_event_and_no_label(
    model: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[Event | LabelledTokens] = []

    def insert_then_fail(
        conn: Connection,
        model_id: int,
        labels: Sequence[Event | LabelledTokens],
        outcomes: Sequence[Outcome],
        previous: Sequence[str | None],
        now: datetime,
    ) -> None:
        audit.insert_events(conn, model_id, labels, outcomes, previous, now)
        written.extend(labels)
        raise RuntimeError("the store went away")

    monkeypatch.setattr("filterd.store.learning.insert_events", insert_then_fail)
    with pytest.raises(RuntimeError):
        model.learn([label("m1", "spam"), label("m2", "ham")], now=T0)
    assert len(written) == 2  # they were written, then rolled back with the batch
    with model.store.engine.connect() as conn:
        for table in (LabelEvent, FeedbackLedger):
            assert conn.execute(select(func.count()).select_from(table)).scalar_one() == 0


def test_the_log_filters_by_message_analyst_and_time_newest_first(model: ModelStore) -> None:
    for day in range(5):
        items = [label(f"m{day}", "spam", analyst="alice" if day % 2 else "bob")]
        model.learn(items, holdout_fraction=0, now=T0 + timedelta(days=day))
    assert [e.message_id for e in trail(model)] == ["m4", "m3", "m2", "m1", "m0"]
    assert [e.message_id for e in trail(model, analyst="alice")] == ["m3", "m1"]
    assert [e.message_id for e in trail(model, message_id="m2")] == ["m2"]
    since = T0 + timedelta(days=3)
    assert [e.message_id for e in trail(model, since=since)] == ["m4", "m3"]
    # a time with an offset means the same instant on both databases
    assert [
        e.message_id for e in trail(model, since=since.astimezone(timezone(timedelta(hours=5))))
    ] == [
        "m4",
        "m3",
    ]
    assert [e.message_id for e in model.events(limit=2)] == ["m4", "m3"]
    with pytest.raises(UnknownModel):
        model.store.model("nope")


def test_record_events_appends_in_the_transaction(model: ModelStore) -> None:
    with model.transaction() as writing:
        writing.record_events([Event("p1", "spam", "parked", analyst="alice")], now=T0)
    with pytest.raises(RuntimeError), model.transaction() as writing:
        writing.record_events([Event("p2", "spam", "expired")], now=T0)
        raise RuntimeError("the transaction decides: rolled back")
    assert [(e.message_id, e.outcome, e.analyst) for e in trail(model)] == [
        ("p1", "parked", "alice")
    ]
    with pytest.raises(ValueError, match="unknown label event outcome"), model.transaction() as w:
        # an outcome the type does not allow: what the store does with it at run time
        w.record_events([Event("p3", "spam", "lost")])  # type: ignore[arg-type]


def test_a_comment_with_nul_is_stored_with_a_replacement_character(model: ModelStore) -> None:
    # PostgreSQL text cannot hold NUL: the feedback would be retried for ever
    model.learn([label("m1", "spam", comment="a\x00b")], now=T0)
    assert trail(model)[0].comment == "a\N{REPLACEMENT CHARACTER}b"


def test_prune_deletes_events_older_than_the_retention_in_chunks(
    model: ModelStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = model.store.create_model("other", ModelSpec("mnb"), seed=2)
    old = [label(f"old{i}", "spam") for i in range(5)]
    for each in (model, other):
        each.learn(old, holdout_fraction=0, now=T0)
        each.learn([label("new", "ham")], holdout_fraction=0, now=T0 + timedelta(days=20))
    monkeypatch.setattr(expiry, "EVENT_CHUNK", 2)
    later = T0 + timedelta(days=30)
    assert model.prune_events(10, now=later, dry_run=True) == 5
    assert model.prune_events(0, now=later) == 0  # 0: keep every event
    assert len(trail(model)) == 6
    assert model.prune_events(10, now=later) == 5
    assert [e.message_id for e in trail(model)] == ["new"]
    assert len(trail(other)) == 6  # another model's trail is its own
    with pytest.raises(ValueError, match="must not be negative"):
        model.prune_events(-1)
