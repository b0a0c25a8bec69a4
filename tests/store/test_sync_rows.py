"""Syncs: SQLite's read token rows a chunk at a time, each chunk one aggregated text
(`filterd.store.sync._SQLiteRows`): every row comes back once, whatever the chunk size; a
class first learned while a sync reads is read by the next one."""

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, event
from sqlalchemy.engine.interfaces import DBAPICursor

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.store.bulk import driver_cursor
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.store.sync import _delta, _SQLiteRows, _values
from tests.conftest import fresh_postgres

KEYS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ROWS = st.lists(
    st.tuples(
        KEYS,
        st.integers(0, 3),
        st.integers(0, 10**12),
        st.integers(0, 9),
        st.integers(0, 9),
        st.integers(-(2**40), 2**40),  # a logistic weight, of either sign
    ),
    max_size=60,
    unique_by=lambda r: (r[0], r[1]),
)


def table(rows: list[tuple[int, ...]], seqs: list[int]) -> DBAPICursor:
    cursor = driver_cursor(create_engine("sqlite://").connect())
    cursor.execute(
        "CREATE TABLE token_stats (model_id INTEGER, token_key BIGINT, class_id INTEGER, "
        "count BIGINT, doc_freq BIGINT, tfn BIGINT, weight BIGINT, seq BIGINT, "
        "PRIMARY KEY (model_id, token_key, class_id))"
    )
    for (key, cls, n, df, tf, w), seq in zip(rows, seqs, strict=True):
        cursor.execute(
            "INSERT INTO token_stats VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
            (key, cls, n, df, tf, w, seq),
        )
        cursor.execute("INSERT INTO token_stats VALUES (2, ?, ?, 1, 1, 1, 1, 0)", (key, cls))
    return cursor


@settings(max_examples=60, deadline=None)
@given(ROWS, st.integers(1, 8), st.data())
def test_every_row_comes_back_once_whatever_the_chunk(
    rows: list[tuple[int, ...]], chunk: int, data: st.DataObject
) -> None:
    seqs = data.draw(st.lists(st.integers(0, 5), min_size=len(rows), max_size=len(rows)))
    cursor = table(rows, seqs)
    everything = _values(_SQLiteRows(cursor, 1, None), chunk=chunk)
    assert sorted(map(tuple, everything.tolist())) == sorted(rows)
    changed_keys = {key for (key, *_), seq in zip(rows, seqs, strict=True) if seq > 2}
    changed = _values(_SQLiteRows(cursor, 1, since=2), chunk=chunk)
    assert sorted(map(tuple, changed.tolist())) == sorted(r for r in rows if r[0] in changed_keys)
    assert changed.dtype == np.int64


def test_rows_of_a_class_read_before_its_class_row_wait_for_the_next_sync() -> None:
    """The classes are read before the token rows: a first label of a class committed in
    between gives rows of a class the sync does not know yet. They are left out (they carry a
    change number above the sync's, so the next sync reads them), not an IndexError."""
    classes = [(1, "ham", 3, -7)]
    values = np.array(
        [[10, 1, 2, 2, 2, -4], [10, 2, 1, 1, 1, 0], [11, 2, 5, 1, 5, 9]], dtype=np.int64
    )
    delta = _delta(4, classes, values)
    assert delta.labels == ("ham",) and delta.keys.tolist() == [10]
    assert delta.N.tolist() == [[2]] and delta.W.tolist() == [[-4]] and delta.B.tolist() == [-7]


def test_a_class_first_learned_during_a_sync_is_read_by_the_next(postgres_server: str) -> None:
    """PostgreSQL: a learner commits a model's first labels between the sync's read of the
    classes and its read of the token rows (each statement sees what was committed before it)."""
    url = fresh_postgres(postgres_server)
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    learner = Store.open(url).model("default")
    stats = Statistics(seed=model.ref.hash_seed)
    since = model.sync(stats, None)

    def learn_first(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if "token_stats" in statement and not learned:
            learned.append(True)
            learner.learn([LabelledTokens("m1", "spam", ["free", "cash"])], holdout_fraction=0)

    learned: list[bool] = []
    event.listen(store.engine, "before_cursor_execute", learn_first)
    since = model.sync(stats, since)
    event.remove(store.engine, "before_cursor_execute", learn_first)
    assert learned
    model.sync(stats, since)
    assert stats.canonical() == model.load()[0].canonical()
    assert int(stats.D.sum()) == 1
