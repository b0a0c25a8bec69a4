"""SQLite syncs read token rows a chunk at a time, each chunk one aggregated text
(`filterd.store.sync._SQLiteRows`): every row comes back once, whatever the chunk size."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine
from sqlalchemy.engine.interfaces import DBAPICursor

from filterd.store.bulk import driver_cursor
from filterd.store.sync import _SQLiteRows, _values

KEYS = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ROWS = st.lists(
    st.tuples(
        KEYS, st.integers(0, 3), st.integers(0, 10**12), st.integers(0, 9), st.integers(0, 9)
    ),
    max_size=60,
    unique_by=lambda r: (r[0], r[1]),
)


def table(rows: list[tuple[int, ...]], seqs: list[int]) -> DBAPICursor:
    cursor = driver_cursor(create_engine("sqlite://").connect())
    cursor.execute(
        "CREATE TABLE token_stats (model_id INTEGER, token_key BIGINT, class_id INTEGER, "
        "count BIGINT, doc_freq BIGINT, tfn BIGINT, seq BIGINT, "
        "PRIMARY KEY (model_id, token_key, class_id))"
    )
    for (key, cls, n, df, tf), seq in zip(rows, seqs, strict=True):
        cursor.execute(
            "INSERT INTO token_stats VALUES (1, ?, ?, ?, ?, ?, ?)", (key, cls, n, df, tf, seq)
        )
        cursor.execute("INSERT INTO token_stats VALUES (2, ?, ?, 1, 1, 1, 0)", (key, cls))
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
