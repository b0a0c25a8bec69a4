"""Deleting a model removes every row that belongs to it, in one transaction, on SQLite and
PostgreSQL, and nothing of another model; a learner that wrote meanwhile stops it."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, func, select

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.service.review import QueuedItem
from filterd.store.decided import record_decided
from filterd.store.drift import Scored, record_scores
from filterd.store.learning import (
    LabelledTokens,
    ModelChanged,
    UnknownModel,
    apply_feedback,
    create_model,
    delete_model,
    lock_model,
    model_rows,
    model_tables,
)
from filterd.store.parking import Parked, park
from filterd.store.review import queue_items
from filterd.store.schema import ModelRow
from filterd.store.thresholds import write_threshold

FEEDBACK = [
    LabelledTokens(f"m{i}", "spam" if i % 3 == 0 else "ham", f"word{i} common w{i % 5}".split())
    for i in range(30)
]


def fill(engine: Engine, name: str) -> None:
    create_model(engine, name, ModelSpec("mnb"))
    apply_feedback(engine, name, FEEDBACK, holdout_fraction=0.3)
    write_threshold(
        engine,
        name,
        "spam",
        Threshold(0.5, 0.99, 1.0, 0.9, 0.8, 10, 20, False, None),
        0.95,
        None,
        None,
        "test",
    )
    record_scores(engine, name, "spam", [Scored("m1", "ham", 0.1, 1)], keep=100)
    item = QueuedItem(
        "q1", "band", "spam", 0.1, 0.0, 1, None, None, "text", None, None, [], False, ["a"]
    )
    with engine.begin() as conn:
        model_id = lock_model(conn, name)
        record_decided(conn, model_id, [("m1", 0, 1)], datetime.now(UTC))
        queue_items(conn, model_id, [item], datetime.now(UTC))
        park(conn, model_id, [Parked("waiting", b"{}")], datetime.now(UTC), datetime.now(UTC))


def test_every_table_of_the_model_is_emptied_and_other_models_keep_theirs(engine: Engine) -> None:
    fill(engine, "doomed")
    fill(engine, "kept")
    held = model_rows(engine, "doomed")
    assert all(held.rows[t.name] > 0 for t in model_tables()), held.rows  # every kind of row
    assert held.labels == len(FEEDBACK) + 1  # ledger, holdout and parked: every label given
    deleted = delete_model(engine, "doomed", held.seq)
    assert deleted == held.rows
    with pytest.raises(UnknownModel):
        model_rows(engine, "doomed")
    assert model_rows(engine, "kept").rows == held.rows  # the same feedback, untouched
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(ModelRow)).scalar_one() == 1


def test_a_learner_writing_meanwhile_stops_the_deletion(engine: Engine) -> None:
    fill(engine, "busy")
    held = model_rows(engine, "busy")
    apply_feedback(engine, "busy", [LabelledTokens("late", "spam", ["late", "label"])])
    with pytest.raises(ModelChanged, match="nothing deleted"):
        delete_model(engine, "busy", held.seq)
    assert model_rows(engine, "busy").labels == held.labels + 1  # the late label is still there
    with pytest.raises(UnknownModel):
        delete_model(engine, "never", 0)
