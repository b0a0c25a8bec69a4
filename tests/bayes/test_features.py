import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from filterd.bayes import features
from filterd.bayes.features import (
    DocBatch,
    SpeedupsMismatch,
    checked_speedups,
    concat,
    encode,
    encode_python,
    select_docs,
)
from filterd.bayes.vocab import P1, P2, TokenHasher

hasher = TokenHasher(0)


def test_encode_counts_tokens_per_document() -> None:
    batch = encode([["a", "b", "a"], [], ["c"]], hasher)
    assert list(batch.indptr) == [0, 2, 2, 3]
    counts = {batch.token(i): int(batch.counts[i]) for i in range(batch.indptr[1])}
    assert counts == {"a": 2, "b": 1}
    assert batch.token(2) == "c" and batch.counts[2] == 1
    assert list(batch.doc_of_entry) == [0, 0, 2]


def test_keys_are_sorted_within_each_document() -> None:
    batch = encode([["z", "y", "x", "y"], ["q", "p"]], hasher)
    for i in range(len(batch)):
        part = batch.keys[batch.indptr[i] : batch.indptr[i + 1]]
        assert (np.diff(part) > 0).all()


def test_select_docs_keeps_the_chosen_documents_in_order() -> None:
    batch = encode([["a"], ["b", "b", "c"], ["d"]], hasher)
    sub = select_docs(batch, np.array([2, 1]))
    assert list(sub.indptr) == [0, 1, 3]
    assert [sub.token(i) for i in range(3)] == ["d", *sorted(["b", "c"], key=hasher.key)]
    assert list(sub.counts) == [1] + [2 if sub.token(i) == "b" else 1 for i in (1, 2)]


def test_repeated_tokens_across_documents_keep_their_first_occurrence() -> None:
    hasher = TokenHasher(seed=3)
    docs = [["b", "a", "b"], [], ["a", "c", "a", "b"]]
    batch = encode(docs, hasher)
    assert batch.indptr.tolist() == [0, 2, 2, 5]
    flat = [t for d in docs for t in d]
    for i, doc in enumerate(docs):
        lo, hi = batch.indptr[i], batch.indptr[i + 1]
        by_key = {hasher.key(t): t for t in doc}
        assert batch.keys[lo:hi].tolist() == sorted(by_key)
        assert batch.token_index is not None
        for entry in range(lo, hi):
            token = batch.token(entry)
            assert hasher.key(token) == batch.keys[entry]
            assert batch.counts[entry] == doc.count(token)
            offset = sum(len(d) for d in docs[:i])
            assert (
                batch.token_index[entry] == offset + doc.index(token)
                and flat[batch.token_index[entry]] == token
            )


def test_concat_equals_encoding_the_documents_together() -> None:
    docs = [["b", "a", "b"], [], ["a", "c"], ["c", "c", "d"], []]
    whole = encode(docs, hasher)
    for cut in ([2], [0, 3], [1, 2, 4], [5]):
        bounds = [0, *cut, len(docs)]
        joined = concat([encode(docs[lo:hi], hasher) for lo, hi in zip(bounds, bounds[1:])])
        assert joined.indptr.tolist() == whole.indptr.tolist()
        assert joined.keys.tolist() == whole.keys.tolist()
        assert joined.counts.tolist() == whole.counts.tolist()
        assert [joined.token(e) for e in range(len(joined.keys))] == [
            whole.token(e) for e in range(len(whole.keys))
        ]


def assert_same_batch(a: DocBatch, b: DocBatch) -> None:
    for field in ("indptr", "keys", "counts", "token_index"):
        assert getattr(a, field).tolist() == getattr(b, field).tolist(), field
    assert list(a.tokens) == list(b.tokens)


def test_the_c_loop_is_built_where_ci_runs() -> None:
    # setup.py builds it optionally, so that a machine without a compiler can still install
    # filterd; CI has one, and must not lose the accelerator unnoticed.
    if os.environ.get("CI") and features._speedups is None:
        pytest.fail("filterd._speedups was not built: encode runs in pure Python")


def test_a_c_loop_built_with_other_primes_is_refused_with_a_clear_error() -> None:
    assert checked_speedups(same := SimpleNamespace(P1=P1, P2=P2)) is same
    with pytest.raises(SpeedupsMismatch, match=r"filterd\._speedups was built with the primes"):
        checked_speedups(SimpleNamespace(P1=P1, P2=P2 + 2))
    # the check is code, not an assert: it holds under python -O too
    probe = (
        "from types import SimpleNamespace as N; from filterd.bayes import features as f; "
        "f.checked_speedups(N(P1=3, P2=5))"
    )
    result = subprocess.run(
        [sys.executable, "-O", "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "SpeedupsMismatch" in result.stderr, result.stderr


@pytest.mark.skipif(
    features._speedups is None, reason="filterd._speedups not built (no C compiler)"
)
@given(
    docs=st.lists(
        st.lists(
            st.text(min_size=1, max_size=12)
            | st.sampled_from(["a", "é", "a\x00", "\ud800", "x" * 41])
            | st.text(max_size=6).map(lambda t: "c4:" + t)  # the bucketed views
            | st.tuples(st.text(max_size=6), st.text(max_size=6)).map(" ".join)
        ),
        max_size=6,
    ),
    seed=st.integers(0, 2**32),  # tokens are never empty (Tokens), nor are they here
)
@example(
    docs=[["b", "a", "b"], [], ["a\x00b", "a\ufffdb"]], seed=0
)  # NUL hashes as U+FFFD: one key
@example(docs=[["\ud83d", "ok"]], seed=1)  # a lone surrogate: the pure-Python path
@example(docs=[[str(i % 50) for i in range(300)]], seed=2)  # past the C loop's insertion sort
def test_the_c_loop_counts_as_the_reference_does(docs: list[list[str]], seed: int) -> None:
    hasher = TokenHasher(seed)
    assert_same_batch(encode(docs, hasher), encode_python(docs, hasher))


def test_tokens_of_one_bucket_in_one_message_are_one_entry() -> None:
    by_key: dict[int, str] = {}
    for i in range(1 << 14):  # 2^13 buckets for pairs: a collision comes long before
        pair = f"w{i} v{i}"
        key = hasher.key(pair)
        if key in by_key:
            break
        by_key[key] = pair
    doc = [by_key[key], pair, "word", by_key[key]]
    for batch in (encode([doc], hasher), encode_python([doc], hasher)):
        assert sorted(batch.counts.tolist()) == [1, 3]
        assert batch.token_index is not None and 0 in batch.token_index.tolist()


def test_counting_alone_leaves_the_strings_out() -> None:
    docs = [["b", "a", "b"], ["c"]]
    bare = encode(docs, hasher, with_tokens=False)
    whole = encode(docs, hasher)
    assert (
        bare.keys.tolist() == whole.keys.tolist() and bare.counts.tolist() == whole.counts.tolist()
    )
    assert bare.token_index is None and len(bare.tokens) == 0
