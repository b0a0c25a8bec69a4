"""The seeded synthetic stream generator (filterd.evaluation.synth)."""

from __future__ import annotations

import re
from collections import Counter
from itertools import islice
from typing import Any

import pytest

from filterd.evaluation.synth import SynthConfig, SynthRecord, generate, indicative_words, stream


def indicative_rate(records: list[SynthRecord], words: set[str]) -> float:
    """Fraction of the word occurrences in these records that are in `words`."""
    tokens = [w for r in records for w in r["text"].split()]
    return sum(w in words for w in tokens) / len(tokens)


def by_label(records: list[SynthRecord]) -> dict[str, list[SynthRecord]]:
    groups: dict[str, list[SynthRecord]] = {}
    for r in records:
        groups.setdefault(r["label"], []).append(r)
    return groups


def test_same_config_gives_identical_output() -> None:
    config = SynthConfig(n_messages=300, seed=7)
    assert generate(config) == generate(SynthConfig(n_messages=300, seed=7))
    assert generate(config) != generate(SynthConfig(n_messages=300, seed=8))


def test_stream_is_the_lazy_form_of_generate() -> None:
    config = SynthConfig(n_messages=200, seed=3)
    assert list(islice(stream(config), 50)) == generate(config)[:50]


def test_records_are_in_corpus_format() -> None:
    records = generate(SynthConfig(n_messages=1234))
    assert len(records) == 1234
    assert records[0]["id"] == f"synth-{SynthConfig(n_messages=1234).tag}-000001"
    assert len({r["id"] for r in records}) == 1234
    assert [r["order"] for r in records] == list(range(1, 1235))
    for r in records:
        assert set(r) == {"id", "label", "text", "format", "order"}
        assert r["format"] == "text"
        assert r["label"] in {"ham", "spam"}


def test_text_is_space_separated_lowercase_ascii_words() -> None:
    for r in generate(SynthConfig(n_messages=500, seed=11)):
        words = r["text"].split(" ")
        assert words == r["text"].split()  # single spaces, no empty tokens
        assert all(re.fullmatch(r"[a-z]{3,10}", w) for w in words), r["text"]


def test_indicative_words_are_distinct_and_disjoint_between_classes() -> None:
    # Two classes taking half the vocabulary each: every vocabulary word is used once.
    config = SynthConfig(n_messages=10, vocab_size=3000, class_vocab_fraction=0.5)
    words = indicative_words(config)
    assert len(words["ham"]) == len(words["spam"]) == 1500
    assert len(set(words["ham"]) | set(words["spam"])) == 3000


def test_class_counts_follow_the_priors() -> None:
    priors = {"ham": 0.80, "spam": 0.15, "fraud": 0.04, "rare": 0.01}
    records = generate(SynthConfig(n_messages=10_000, class_priors=priors))
    counts = Counter(r["label"] for r in records)
    assert sum(counts.values()) == 10_000
    for label, p in priors.items():
        assert abs(counts[label] / 10_000 - p) < 0.02, label
    assert counts["rare"] >= 50


def test_every_class_with_a_positive_prior_appears() -> None:
    priors = {"ham": 0.999, "spam": 0.001, "never": 0.0}
    counts = Counter(r["label"] for r in generate(SynthConfig(n_messages=50, class_priors=priors)))
    assert counts == {"ham": 49, "spam": 1}


def test_indicative_words_are_more_frequent_in_their_class() -> None:
    config = SynthConfig(n_messages=3000)
    groups = by_label(generate(config))
    truth = indicative_words(config)
    for label, words in truth.items():
        others = [r for other, rs in groups.items() if other != label for r in rs]
        assert indicative_rate(groups[label], set(words)) > 3 * indicative_rate(others, set(words))


def test_signal_zero_gives_no_class_signal() -> None:
    config = SynthConfig(n_messages=3000, signal=0.0, class_priors={"ham": 0.5, "spam": 0.5})
    groups = by_label(generate(config))
    for label, words in indicative_words(config).items():
        other = "spam" if label == "ham" else "ham"
        own = indicative_rate(groups[label], set(words))
        assert own == pytest.approx(indicative_rate(groups[other], set(words)), rel=0.25, abs=0.003)


def test_drift_replaces_indicative_words_over_the_stream() -> None:
    config = SynthConfig(n_messages=4000, drift=0.5, class_priors={"ham": 0.5, "spam": 0.5})
    first = indicative_words(config, 0)
    last = indicative_words(config, config.n_messages - 1)
    for label in first:
        assert len(set(first[label]) - set(last[label])) == round(0.5 * len(first[label]))

    # The new words show up in the class's late messages, not its early ones.
    spam = by_label(generate(config))["spam"]
    new_words = set(last["spam"]) - set(first["spam"])
    early, late = spam[: len(spam) // 5], spam[-len(spam) // 5 :]
    assert indicative_rate(late, new_words) > 3 * indicative_rate(early, new_words)

    stationary = SynthConfig(n_messages=4000)
    assert indicative_words(stationary, 0) == indicative_words(stationary, 3999)


@pytest.mark.parametrize(
    "changes",
    [
        {"class_priors": {"ham": 0.0}},
        {"class_priors": {"ham": 1.0, "spam": -0.1}},
        {"n_messages": 1},  # two classes need two messages
        {"signal": 1.5},
        {"drift": -0.1},
        {"vocab_size": 100, "class_vocab_fraction": 0.6},  # classes' word sets cannot be disjoint
    ],
)
def test_invalid_configs_are_rejected(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SynthConfig(**changes)
