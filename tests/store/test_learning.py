import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event, insert, text
from sqlalchemy.exc import IntegrityError

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.store.errors import UnknownModel
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens, Source
from filterd.store.ledger import in_holdout
from filterd.store.schema import TokenStats
from tests.store.conftest import DOCS, SEED, learned_directly, nonempty, store_statistics

HOLDOUT = 0.3


def fb(message_id: str, label: str, source: Source = "analyst") -> LabelledTokens:
    return LabelledTokens(message_id, label, DOCS[message_id].split(), source)


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=SEED)


def test_learning_then_redelivery_changes_nothing(model: ModelStore) -> None:
    first = model.learn([fb("m1", "spam"), fb("m2", "ham")], holdout_fraction=0)
    assert (first.learned, first.duplicates) == (2, 0)
    before = store_statistics(model)
    again = model.learn([fb("m1", "spam"), fb("m2", "ham")], holdout_fraction=0)
    assert (again.learned, again.duplicates) == (0, 2)
    assert store_statistics(model) == before == learned_directly([("m1", "spam"), ("m2", "ham")])


def test_a_relabel_unlearns_the_old_label_and_learns_the_new(model: ModelStore) -> None:
    model.learn([fb("m1", "spam"), fb("m3", "spam"), fb("m2", "ham")], holdout_fraction=0)
    result = model.learn([fb("m3", "ham")], holdout_fraction=0)
    assert result.relabelled == 1
    assert store_statistics(model) == learned_directly(
        [("m1", "spam"), ("m3", "ham"), ("m2", "ham")]
    )


def test_an_automatic_label_never_overrides_an_analyst(model: ModelStore) -> None:
    model.learn([fb("m1", "ham", "analyst"), fb("m2", "spam", "auto")], holdout_fraction=0)
    result = model.learn([fb("m1", "spam", "auto"), fb("m2", "ham", "analyst")], holdout_fraction=0)
    assert (result.kept_analyst_label, result.relabelled) == (1, 1)
    assert store_statistics(model) == learned_directly([("m1", "ham"), ("m2", "ham")])


def test_the_holdout_share_is_kept_out_of_learning(model: ModelStore) -> None:
    ids = [f"id-{i}" for i in range(2000)]
    share = np.mean([in_holdout(i, 0.1) for i in ids])
    assert 0.08 < share < 0.12 and in_holdout("id-7", 0.1) == in_holdout("id-7", 0.1)
    held = next(i for i in ids if in_holdout(i, 0.5))
    kept = next(i for i in ids if not in_holdout(i, 0.5))
    result = model.learn(
        [LabelledTokens(held, "spam", ["free"]), LabelledTokens(kept, "ham", ["noon"])],
        holdout_fraction=0.5,
    )
    assert (result.held_out, result.learned) == (1, 1)
    stats = Statistics(seed=SEED)
    stats.learn(["noon"], "ham")
    assert store_statistics(model) == nonempty(stats.canonical())


def test_counts_can_never_go_below_zero(model: ModelStore, engine: Engine) -> None:
    with pytest.raises(IntegrityError):
        with engine.begin() as conn:
            conn.execute(
                insert(TokenStats).values(
                    model_id=model.id,
                    token_key=1,
                    class_id=0,
                    count=-1,
                    doc_freq=0,
                    tfn=0,
                    seq=1,
                    last_seen=0,
                )
            )


def test_unknown_model_and_bad_source_are_refused(store: Store, model: ModelStore) -> None:
    with pytest.raises(UnknownModel, match="'nope'.*its models: 'default'"):
        store.model("nope")
    robot: Any = "robot"  # not a source: as an untyped feedback record may give it
    with pytest.raises(ValueError, match="source"):
        model.learn([LabelledTokens("m1", "spam", ["x"], source=robot)])


feedback = st.lists(
    st.tuples(
        st.sampled_from(sorted(DOCS)),
        st.sampled_from(["ham", "spam"]),
        st.sampled_from(["analyst", "auto"]),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(feedback, min_size=1, max_size=4))
def test_any_feedback_sequence_equals_learning_each_final_label_once(
    store: Store, batches: list[list[tuple[str, str, Source]]]
) -> None:
    model = store.create_model(f"model-{uuid.uuid4().hex}", ModelSpec("mnb"), seed=SEED)
    replica, synced = Statistics(seed=SEED), None
    final: dict[str, tuple[str, str]] = {}
    for batch in batches:
        model.learn([fb(*item) for item in batch], holdout_fraction=HOLDOUT)
        synced = model.sync(replica, synced)
        for message_id, label, source in batch:  # the rules, replayed in plain Python
            if message_id in final and final[message_id][1] == "analyst" and source == "auto":
                continue
            if message_id in final and final[message_id][0] == label:
                source = "analyst" if "analyst" in (source, final[message_id][1]) else source
            final[message_id] = (label, source)
    assert {in_holdout(m, HOLDOUT) for m in DOCS} == {True, False}  # both kinds are in play
    learned_ids = [m for m in final if not in_holdout(m, HOLDOUT)]  # held-out ids are never learned
    expected = learned_directly([(m, final[m][0]) for m in learned_ids])
    assert nonempty(model.load()[0].canonical()) == expected
    assert nonempty(replica.canonical()) == expected  # incremental sync = full load


def test_loading_reports_the_token_rows_read_so_far(model: ModelStore, engine: Engine) -> None:
    model.learn([fb("m1", "spam"), fb("m2", "ham")], holdout_fraction=0)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM token_stats")).scalar_one()
    heard: list[int] = []
    model.load(on_rows=heard.append)
    assert rows > 0 and heard == [rows]  # one chunk of 50,000 rows holds them all


def test_a_large_batch_is_written_in_a_few_statements_not_one_per_row(tmp_path: Any) -> None:
    """SQLite: the token rows of a batch go as a few VALUES lists, not executemany (sqlite3
    releases the GIL around each statement's step; one per row lets a busy thread of the daemon
    take it thousands of times a batch), and they add up as learning them one by one does."""
    store = Store.open(f"sqlite:///{tmp_path / 'filterd.db'}")
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"), seed=SEED)
    statements: list[str] = []

    @event.listens_for(store.engine, "connect")
    def trace(connection: Any, _: Any) -> None:
        connection.set_trace_callback(statements.append)

    store.engine.dispose()  # new connections, traced
    words = [f"w{i}" for i in range(6_000)]
    docs = [
        LabelledTokens(f"d{i}", "spam" if i % 2 else "ham", words[i * 100 : (i + 1) * 100 + 50])
        for i in range(59)
    ]
    model.learn(docs, holdout_fraction=0)
    token_writes = [s for s in statements if s.startswith("INSERT INTO token_stats")]
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM token_stats")).scalar_one()
    assert rows > 8_000
    # lists of 4,096 rows, then one of each power of two that the rest needs
    assert 1 <= len(token_writes) <= rows // 4096 + 12
    expected = Statistics(seed=SEED)
    for doc in docs:
        expected.learn(doc.tokens, doc.label)
    assert store_statistics(model) == nonempty(expected.canonical())
    store.close()
