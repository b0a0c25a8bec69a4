import numpy as np
from hypothesis import given, strategies as st

from filterd.vocab import P1, P2, TokenHasher, Vocabulary


def reference_key(hasher: TokenHasher, token: str) -> int:
    """The documented formula, computed one byte at a time."""
    b1, b2 = hasher._bases
    data = token.encode("utf-8", "surrogatepass")
    h1 = sum((byte + 1) * pow(b1, i, P1) for i, byte in enumerate(data)) % P1
    h2 = sum((byte + 1) * pow(b2, i, P2) for i, byte in enumerate(data)) % P2
    return (h1 << 31) | h2


@given(st.lists(st.text(min_size=1, max_size=60), min_size=1, max_size=30))
def test_batch_keys_follow_the_formula(tokens):
    hasher = TokenHasher(seed=3)
    keys = hasher.keys(tokens)
    assert [int(k) for k in keys] == [reference_key(hasher, t.replace("\x00", "\ufffd")) for t in tokens]


def test_keys_are_stable_for_a_seed_and_differ_across_seeds():
    tokens = ["free", "money", "€100", "url:example.com", "x" * 500]
    assert (TokenHasher(1).keys(tokens) == TokenHasher(1).keys(tokens)).all()
    assert not (TokenHasher(1).keys(tokens) == TokenHasher(2).keys(tokens)).any()


def test_distinct_tokens_get_distinct_keys():
    tokens = [f"tok{i}" for i in range(100_000)] + ["ab", "ba", "a", "aa", "aaa"]
    assert len(np.unique(TokenHasher(0).keys(tokens))) == len(tokens)


def test_vocabulary_assigns_ids_in_order_of_first_appearance():
    vocab = Vocabulary()
    assert (vocab.add(np.array([50, 10, 50])) == [0, 1, 0]).all()
    assert (vocab.add(np.array([10, 7])) == [1, 2]).all()
    assert (vocab.lookup(np.array([7, 8, 50])) == [2, -1, 0]).all()
    assert (vocab.keys == [50, 10, 7]).all()


def test_snapshot_is_frozen_while_the_vocabulary_grows():
    vocab = Vocabulary()
    vocab.add(np.array([5, 3]))
    snapshot = vocab.snapshot()
    vocab.add(np.array([4, 1]))
    assert (snapshot.lookup(np.array([5, 3, 4])) == [0, 1, -1]).all()
    assert (vocab.lookup(np.array([4, 1])) == [2, 3]).all()


def test_in_ranges_lists_the_keys_of_each_range_in_order():
    vocab = Vocabulary()
    vocab.add(np.array([40, 10, 25, 11, 30]))
    which, keys, ids = vocab.in_ranges(np.array([10, 26, 100]), np.array([26, 41, 200]))
    assert which.tolist() == [0, 0, 0, 1, 1]
    assert keys.tolist() == [10, 11, 25, 30, 40]
    assert ids.tolist() == [1, 3, 2, 4, 0]
