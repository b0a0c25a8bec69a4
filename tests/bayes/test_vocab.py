import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from filterd.bayes.vocab import (
    CHAR_GRAM_PREFIX,
    P1,
    P2,
    VIEWS,
    TokenHasher,
    Vocabulary,
    key_runs,
    views_of,
)
from filterd.tokenize import Tokenizer, TokenizerConfig
from filterd.tokenize.text import GRAM_PREFIX


def reference_key(hasher: TokenHasher, token: str) -> int:
    """The documented formula, computed one byte at a time."""
    b1, b2 = hasher._bases
    data = token.encode("utf-8", "surrogatepass")
    h1 = sum((byte + 1) * pow(b1, i, P1) for i, byte in enumerate(data)) % P1
    h2 = sum((byte + 1) * pow(b2, i, P2) for i, byte in enumerate(data)) % P2
    view = 1 if token[:3] == "c4:" else 2 if " " in token and ":" not in token else 0
    bits = {0: 62, 1: 14, 2: 13}[view]  # words keep the hash; 2^14 and 2^13 buckets
    unsigned = (view << 62) | (((h1 << 31) | h2) % (1 << bits))
    return unsigned - (1 << 64) if unsigned >= 1 << 63 else unsigned


# every view: plain text, "c4:" grams and pairs (a space, with and without a ":")
TOKENS = st.one_of(
    st.text(min_size=1, max_size=60),
    st.text(max_size=8).map(lambda t: "c4:" + t),
    st.tuples(st.text(max_size=8), st.text(max_size=8)).map(" ".join),
)


@given(st.lists(TOKENS, min_size=1, max_size=30))
def test_batch_keys_follow_the_formula(tokens: list[str]) -> None:
    hasher = TokenHasher(seed=3)
    keys = hasher.keys(tokens)
    assert [int(k) for k in keys] == [
        reference_key(hasher, t.replace("\x00", "\ufffd")) for t in tokens
    ]


def test_each_token_family_of_the_tokenizer_has_its_own_view() -> None:
    assert GRAM_PREFIX == CHAR_GRAM_PREFIX
    tokenize = Tokenizer(TokenizerConfig(osb=True, char_ngrams=True))
    tokens = list(tokenize({"subject": "Win cash", "text": "claim your free prize now"}).tokens)
    views = [VIEWS[v] for v in views_of(TokenHasher(5).keys(tokens))]
    by_view = {view: [t for t, v in zip(tokens, views) if v == view] for view in VIEWS}
    assert by_view["chars"] == [t for t in tokens if t.startswith("c4:")] != []
    assert by_view["pairs"] == [t for t in tokens if " " in t] != []
    assert "free" in by_view["words"] and "subject:win" in by_view["words"]


def test_keys_are_stable_for_a_seed_and_differ_across_seeds() -> None:
    tokens = ["free", "money", "€100", "url:example.com", "x" * 500]
    assert (TokenHasher(1).keys(tokens) == TokenHasher(1).keys(tokens)).all()
    assert not (TokenHasher(1).keys(tokens) == TokenHasher(2).keys(tokens)).any()


def test_distinct_tokens_get_distinct_keys() -> None:
    tokens = [f"tok{i}" for i in range(100_000)] + ["ab", "ba", "a", "aa", "aaa"]
    assert len(np.unique(TokenHasher(0).keys(tokens))) == len(tokens)


def test_the_extra_views_fill_their_buckets_and_no_more() -> None:
    hasher = TokenHasher(0)
    grams = hasher.keys([f"c4:{i:05d}" for i in range(100_000)])
    pairs = hasher.keys([f"w{i} v{i}" for i in range(100_000)])
    assert 0.99 * (1 << 14) <= len(np.unique(grams)) <= 1 << 14
    assert 0.99 * (1 << 13) <= len(np.unique(pairs)) <= 1 << 13
    assert set(views_of(grams)) == {1} and set(views_of(pairs)) == {2}


def test_vocabulary_assigns_ids_in_order_of_first_appearance() -> None:
    vocab = Vocabulary()
    assert (vocab.add(np.array([50, 10, 50])) == [0, 1, 0]).all()
    assert (vocab.add(np.array([10, 7])) == [1, 2]).all()
    assert (vocab.lookup(np.array([7, 8, 50])) == [2, -1, 0]).all()
    assert (vocab.keys == [50, 10, 7]).all()


def test_snapshot_is_frozen_while_the_vocabulary_grows() -> None:
    vocab = Vocabulary()
    vocab.add(np.array([5, 3]))
    snapshot = vocab.snapshot()
    vocab.add(np.array([4, 1]))
    assert (snapshot.lookup(np.array([5, 3, 4])) == [0, 1, -1]).all()
    assert (vocab.lookup(np.array([4, 1])) == [2, 3]).all()


def test_in_ranges_lists_the_keys_of_each_range_in_order() -> None:
    vocab = Vocabulary()
    vocab.add(np.array([40, 10, 25, 11, 30]))
    which, keys, ids = vocab.in_ranges(np.array([10, 26, 100]), np.array([26, 41, 200]))
    assert which.tolist() == [0, 0, 0, 1, 1]
    assert keys.tolist() == [10, 11, 25, 30, 40]
    assert ids.tolist() == [1, 3, 2, 4, 0]


def reference_ids(batches: list[list[int]]) -> list[list[int]]:
    """Ids by first appearance, one key at a time."""
    ids: dict[int, int] = {}
    return [[ids.setdefault(int(k), len(ids)) for k in batch] for batch in batches]


keys_with_near_neighbours = st.lists(
    st.one_of(
        st.integers(-(1 << 63), (1 << 63) - 1),
        st.integers(0, 40),
        st.integers((1 << 62) - 40, 1 << 62),
    ),
    max_size=60,
)


@given(st.lists(keys_with_near_neighbours, max_size=4))
def test_ids_follow_first_appearance_for_any_int64_keys(batches: list[list[int]]) -> None:
    # keys that differ in their low bits only (and negative ones) take the exact sort's path
    vocab = Vocabulary()
    got = [vocab.add(np.array(b, dtype=np.int64)).tolist() for b in batches]
    assert got == reference_ids(batches)
    everything = [k for b in batches for k in b]
    assert vocab.keys.tolist() == list(dict.fromkeys(everything))


def test_large_batches_add_and_look_up_like_small_ones() -> None:
    # ≥ 2¹⁴ keys into a vocabulary of ≥ 2¹⁴: the sorted lookups; pair-like keys (id·2²⁰ + class)
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, 1 << 62, size=30_000)
    pairs = (rng.integers(0, 5_000, size=40_000) << 20) | rng.integers(0, 3, size=40_000)
    for keys in (tokens[rng.integers(0, len(tokens), size=100_000)], pairs):
        first, second = keys[: len(keys) // 2], keys[len(keys) // 2 :]
        vocab = Vocabulary()
        got = [vocab.add(first), vocab.add(second)]
        assert [g.tolist() for g in got] == reference_ids([first.tolist(), second.tolist()])
        probe = np.concatenate([second, rng.integers(0, 1 << 62, size=20_000)])
        one_by_one = np.concatenate(
            [vocab.lookup(probe[i : i + 1000]) for i in range(0, len(probe), 1000)]
        )
        assert (vocab.lookup(probe) == one_by_one).all()


@given(keys_with_near_neighbours)
def test_exact_key_runs_are_the_stable_argsort(keys: list[int]) -> None:
    array = np.array(keys, dtype=np.int64)
    order, ordered, starts = key_runs(array, exact=True)
    assert (
        order.tolist() == np.argsort(array, kind="stable").tolist()
        and ordered.tolist() == array[order].tolist()
    )
    assert starts.tolist() == [
        i for i in range(len(array)) if i == 0 or ordered[i] != ordered[i - 1]
    ]


@given(
    learned=st.lists(TOKENS, max_size=40),
    asked=st.lists(TOKENS, max_size=40),
    old=st.lists(st.integers(1 << 14, (1 << 62) - 1), max_size=5),
)
def test_a_bucketed_view_is_looked_up_by_its_table_as_by_search(
    learned: list[str], asked: list[str], old: list[int]
) -> None:
    hasher = TokenHasher(11)
    vocab = Vocabulary()
    # keys of the 4-gram view past its buckets, as a release before them learned
    unbucketed = np.array([(1 << 62) | k for k in old], dtype=np.int64)
    vocab.add(np.concatenate([hasher.keys(learned), unbucketed]))
    needles = np.concatenate([hasher.keys(asked + learned), unbucketed, unbucketed & 0x3FFF])
    for view in range(len(VIEWS)):
        snapshot = vocab.snapshot(view)
        assert snapshot.lookup(needles).tolist() == snapshot.lookup_sorted(needles).tolist()
