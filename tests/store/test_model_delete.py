"""Deleting a model removes every row that belongs to it, in one transaction, on SQLite and
PostgreSQL, and nothing of another model; a learner that wrote meanwhile stops it."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from filterd.bayes.model import ModelSpec
from filterd.entities.lists import ListEntry
from filterd.entities.memory import EntityEvent
from filterd.entities.rules import Rule
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import Scored
from filterd.store.entities import DecidedEvent, EntityLabelled
from filterd.store.errors import ModelChanged, UnknownModel
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.store.models import model_tables
from filterd.store.parking import Parked
from filterd.store.schema import ModelRow
from tests.queued import queued

FEEDBACK = [
    LabelledTokens(f"m{i}", "spam" if i % 3 == 0 else "ham", f"word{i} common w{i % 5}".split())
    for i in range(30)
]


def fill(store: Store, name: str) -> ModelStore:
    model = store.create_model(name, ModelSpec("mnb"))
    model.learn(FEEDBACK, holdout_fraction=0.3)
    model.write_threshold(
        "spam",
        Threshold(0.5, 0.99, 1.0, 0.9, 0.8, 10, 20, False, None),
        0.95,
        None,
        None,
        "test",
    )
    model.record_scores("spam", [Scored("m1", "ham", 0.1, 1)], keep=100)
    item = queued("q1", 0.1, 0.0, ["a"])
    now = datetime.now(UTC)
    with model.transaction() as writing:
        writing.record_decided([("m1", 0, 1)], datetime.now(UTC), {"m1": '{"at":0,"entities":[]}'})
        writing.record_entity_events(
            [DecidedEvent("m1", EntityEvent("customer", "c1", 0.0, None, None))], now
        )
        writing.record_entity_labels([EntityLabelled(1, "customer", "c1", 0.0)], [], now)
        writing.queue_review([item], datetime.now(UTC))
        writing.park([Parked("waiting", b"{}")], datetime.now(UTC), datetime.now(UTC))
    model.put_on_list(ListEntry("customer", "c1", "block"))
    model.put_rule(Rule("big", "amount > 1000", "review"))
    return model


def test_every_table_of_the_model_is_emptied_and_other_models_keep_theirs(store: Store) -> None:
    doomed = fill(store, "doomed")
    kept = fill(store, "kept")
    held = doomed.rows()
    assert all(held.rows[t.name] > 0 for t in model_tables()), held.rows  # every kind of row
    assert held.labels == len(FEEDBACK) + 1  # ledger, holdout and parked: every label given
    deleted = doomed.delete(held.seq)
    assert deleted == held.rows
    with pytest.raises(UnknownModel, match="'doomed' is no longer in the store"):
        doomed.rows()
    with pytest.raises(UnknownModel):
        store.model("doomed")
    assert kept.rows().rows == held.rows  # the same feedback, untouched
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(ModelRow)).scalar_one() == 1


def test_a_learner_writing_meanwhile_stops_the_deletion(store: Store) -> None:
    busy = fill(store, "busy")
    held = busy.rows()
    store.model("busy").learn([LabelledTokens("late", "spam", ["late", "label"])])
    with pytest.raises(ModelChanged, match="nothing deleted"):
        busy.delete(held.seq)
    assert busy.rows().labels == held.labels + 1  # the late label is still there
