"""The store's centre (`filterd.store.handle`), on SQLite and PostgreSQL: a model is found by name
once, and every operation after goes by its id; the store's errors are its own, whatever the
database or driver raised; an unknown or deleted model is a clear error."""

import socket
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError

from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import Threshold
from filterd.store.drift import Scored
from filterd.store.errors import (
    ModelExists,
    SchemaMissing,
    StoreError,
    StoreUnavailable,
    UnknownModel,
    ValueRefused,
    translated,
)
from filterd.store.handle import Store
from filterd.store.labels import Event, LabelledTokens
from filterd.store.parking import Parked
from tests.queued import queued, stored_id

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def statements(store: Store) -> list[str]:
    """Every SQL statement the store's engine runs from now on, as a list that fills."""
    seen: list[str] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        seen.append(" ".join(statement.split()).lower())

    return seen


def by_name(seen: list[str]) -> list[str]:
    """The statements that look a model up by its name."""
    return [s for s in seen if "from models" in s and "models.name =" in s]


def test_a_model_is_looked_up_once_and_every_operation_goes_by_its_id(store: Store) -> None:
    store.create_model("other", ModelSpec("mnb"), seed=2)
    store.create_model("default", ModelSpec("mnb"), seed=1)
    seen = statements(store)
    model = store.model("default")
    assert len(by_name(seen)) == 1 and model.name == "default" and model.spec == ModelSpec("mnb")
    labels = [
        LabelledTokens(f"m{i}", "spam" if i % 2 else "ham", ["win", f"w{i}"]) for i in range(8)
    ]
    model.learn(labels, holdout_fraction=0.25, now=T0)
    item = queued("q1", 0.1, 0.0, ["a"])
    with model.transaction() as writing:
        writing.record_decided([("q1", 0, 7)], T0)
        writing.queue_review([item], T0)
        writing.park([Parked("later", b"{}")], T0, T0)
        writing.record_events([Event("later", "spam", "parked")], T0)
    model.record_scores("spam", [Scored("m1", "spam", 1.0, 1)], keep=10, now=T0)
    model.write_threshold(
        "spam", Threshold(0.5, 0.9, 1.0, 0.9, 0.8, 10, 20, False, None), 0.9, None, None, "t"
    )
    stats, seq = model.load()
    assert model.sync(stats, seq) == seq
    (entry,) = model.review_items()
    read = [
        model.review_item(stored_id(entry)),
        model.review_tokens(["q1"]),
        model.where_decided(["q1"]),
        list(model.events(message_id="m1")),
        model.latest_threshold("spam"),
        model.threshold_history(),
        model.drift_report("spam"),
        model.drift_series("spam"),
        model.holdout_window(),
        model.prequential_window("spam"),
        model.delivered_since("spam", T0 - timedelta(days=1), 0.5),
        model.report(min_docs=1),
        model.class_documents(),
        model.count_parked(),
        model.claim_parked(T0, T0 + timedelta(minutes=1), 10),
        model.rows(),
        model.trim_review(10),
        model.prune_review(1, now=T0 + timedelta(days=2), dry_run=True),
        model.prune_events(1, now=T0 + timedelta(days=2), dry_run=True),
        model.prune_decided(T0 + timedelta(days=1), dry_run=True),
        model.prune_tokens(1, 0, now=T0 + timedelta(days=2), dry_run=True),
    ]
    assert all(r is not None for r in read)
    assert read[2] == {"q1": (0, 7)} and read[13] == 1  # they found the model's rows
    assert len(by_name(seen)) == 1  # the lookup of `store.model`, none after it
    assert len(seen) > len(read)  # the listener did hear the operations


def test_an_unknown_model_names_those_the_store_holds_and_a_name_is_taken_once(
    store: Store,
) -> None:
    with pytest.raises(UnknownModel, match="which holds none yet: `filterd model create x`"):
        store.model("x")
    store.create_model("default", ModelSpec("mnb"))
    with pytest.raises(UnknownModel, match=r"no model named 'defualt'.*its models: 'default'"):
        store.model("defualt")
    with pytest.raises(ModelExists, match="'default' exists already"):
        store.create_model("default", ModelSpec("mnb"))
    assert store.model_names() == ["default"]


def test_a_model_deleted_under_its_handle_is_an_unknown_model_not_another_one(
    store: Store,
) -> None:
    model = store.create_model("default", ModelSpec("mnb"), seed=1)
    model.learn([LabelledTokens("m1", "spam", ["win"])], holdout_fraction=0)
    model.delete(model.rows().seq)
    again = store.create_model("default", ModelSpec("mnb"), seed=2)  # the same name, a new model
    for call in (
        lambda: model.learn([LabelledTokens("m2", "ham", ["noon"])]),
        model.load,
        model.rows,
        lambda: model.report(1),
        lambda: model.claim_parked(T0, T0, 1),
    ):
        with pytest.raises(UnknownModel, match="'default' is no longer in the store"):
            call()
    assert again.rows().labels == 0  # nothing went to the new model


def test_an_unreachable_database_is_a_store_error_saying_so() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = Store.open(f"postgresql://filterd@127.0.0.1:{port}/filterd?connect_timeout=2")
    with pytest.raises(StoreUnavailable) as caught:
        store.model("default")
    assert not isinstance(caught.value, SQLAlchemyError)
    assert isinstance(caught.value.__cause__, SQLAlchemyError)  # kept for a traceback
    assert "connection" in str(caught.value).lower() and "\n" not in str(caught.value)


def test_a_database_without_the_schema_says_so(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(SchemaMissing, match="no such table"):
        store.model_names()
    assert store.revision() is None


def test_the_drivers_own_errors_are_the_stores_too() -> None:
    """The bulk writes go through the driver's cursor, whose errors SQLAlchemy never sees."""
    for raised, kind in (
        (sqlite3.OperationalError("database is locked"), StoreUnavailable),
        (sqlite3.DataError("value out of range"), ValueRefused),
        (sqlite3.IntegrityError("CHECK constraint failed"), StoreError),
    ):
        with pytest.raises(kind) as caught, translated():
            raise raised
        assert type(caught.value) is kind and str(caught.value) == str(raised)
    with pytest.raises(KeyError), translated():  # not the database's: left as it is
        raise KeyError("x")
