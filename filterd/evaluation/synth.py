"""Seeded generator of labelled message streams, for tests and demos (pure: no I/O).

Model: a Zipf background distribution over a vocabulary of pseudo-words shared by all
classes, plus, for each class, a disjoint set of indicative words with its own Zipf
distribution. Each word of a message comes from its class's indicative words with
probability `signal`, otherwise from the background. With `drift` > 0 some indicative
words of each class are replaced, one at a time and evenly over the stream, by other
vocabulary words.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TypedDict

import numpy as np

from filterd.bayes.arrays import FloatArray, Int64Array

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]
# English function words the syllable scheme can spell: rejected so that a tokenizer
# with a stop-word list still gets back every generated word.
_ENGLISH = frozenset(
    [
        "before",
        "done",
        "fire",
        "five",
        "give",
        "more",
        "mine",
        "move",
        "name",
        "nine",
        "none",
        "same",
        "some",
        "sometime",
    ]
)


def _n_indicative(config: SynthConfig) -> int:
    return max(1, round(config.class_vocab_fraction * config.vocab_size))


def _n_replaced(config: SynthConfig, k: int) -> int:
    return round(config.drift * k)


@dataclass(frozen=True)
class SynthConfig:
    """Parameters of a synthetic stream; validated on construction (ValueError)."""

    n_messages: int = 2000
    # Relative weights; normalised, so they need not sum to 1. Classes with weight 0 are absent.
    class_priors: Mapping[str, float] = field(default_factory=lambda: {"ham": 0.85, "spam": 0.15})
    vocab_size: int = 5000
    zipf_exponent: float = 1.1  # background word probability ~ rank^-s
    class_vocab_fraction: float = 0.05  # indicative words per class, as a fraction of vocab_size
    signal: float = 0.3  # probability that a word comes from the class's indicative words
    mean_length: int = 20  # mean words per message (geometric, at least 1)
    drift: float = 0.0  # fraction of each class's indicative words replaced by the end
    seed: int = 0

    def __post_init__(self) -> None:
        if any(p < 0 for p in self.class_priors.values()) or sum(self.class_priors.values()) <= 0:
            raise ValueError("class_priors must be non-negative with a positive sum")
        n_classes = sum(1 for p in self.class_priors.values() if p > 0)
        if self.n_messages < n_classes:
            raise ValueError(f"n_messages must be at least the number of classes ({n_classes})")
        if self.mean_length < 1:
            raise ValueError("mean_length must be >= 1")
        if self.zipf_exponent < 0:
            raise ValueError("zipf_exponent must be >= 0")
        if not 0 <= self.signal <= 1 or not 0 <= self.drift <= 1:
            raise ValueError("signal and drift must lie in [0, 1]")
        if not 0 < self.class_vocab_fraction <= 1:
            raise ValueError("class_vocab_fraction must lie in (0, 1]")
        k = _n_indicative(self)
        needed = n_classes * (k + _n_replaced(self, k))
        if needed > self.vocab_size:
            raise ValueError(
                f"vocab_size {self.vocab_size} too small for {n_classes} classes x "
                f"{k} indicative words (+ drift replacements): need {needed}"
            )

    @property
    def tag(self) -> str:
        """8 hex digits that name the stream these parameters make: equal parameters, equal
        tags; others, another tag (but for one chance in 2^32), so that two streams learned
        into one store do not share message ids.

        >>> SynthConfig(seed=1).tag == SynthConfig(seed=1).tag != SynthConfig(seed=2).tag
        True
        """
        fields = json.dumps(
            asdict(self) | {"class_priors": dict(self.class_priors)}, sort_keys=True
        )
        return hashlib.sha256(fields.encode()).hexdigest()[:8]


class SynthRecord(TypedDict):
    """One generated record, in the corpus format (filterd.evaluation.corpus)."""

    id: str
    label: str
    text: str
    format: str
    order: int


def generate(config: SynthConfig = SynthConfig()) -> list[SynthRecord]:
    """All records of the stream: exactly `config.n_messages` corpus-format dicts.

    Each is {"id": "synth-TAG-000001", "label": ..., "text": ..., "format": "text", "order": 1}
    (order is 1-based, as in the shared corpora; TAG is `config.tag`, so that the ids of two
    streams differ). Same config gives identical output.
    """
    return list(stream(config))


def stream(config: SynthConfig = SynthConfig()) -> Iterator[SynthRecord]:
    """The records of `generate(config)`, lazily, in stream order."""
    model = _Model(config)
    rng = np.random.default_rng(np.random.SeedSequence([config.seed, 2]))
    labels = _label_sequence(model.classes, model.priors, config.n_messages, rng)
    prefix = f"synth-{config.tag}-"
    for i, c in enumerate(labels):
        words = model.sample_message(c, i, rng)
        yield {
            "id": f"{prefix}{i + 1:06d}",
            "label": model.classes[c],
            "text": " ".join(words),
            "format": "text",
            "order": i + 1,
        }


def indicative_words(config: SynthConfig, index: int = 0) -> dict[str, list[str]]:
    """The indicative words of each class at message `index` (0-based) of the stream.

    Ground truth for tests and demos; with drift = 0 it does not depend on `index`.
    """
    model = _Model(config)
    return {
        name: [model.vocab[w] for w in model.indicative_at(c, index)]
        for c, name in enumerate(model.classes)
    }


class _Model:
    """The word distributions implied by a config (everything except the message sequence)."""

    def __init__(self, config: SynthConfig) -> None:
        self.n_messages = config.n_messages
        self.signal = config.signal
        self.mean_length = config.mean_length
        # Sorted, so equal mappings in a different insertion order give the same stream.
        named = sorted((name, p) for name, p in config.class_priors.items() if p > 0)
        self.classes = [name for name, _ in named]
        priors = np.array([p for _, p in named], dtype=float)
        self.priors = priors / priors.sum()

        # Separate seed streams, so the vocabulary does not depend on n_messages etc.
        vocab_rng = np.random.default_rng(np.random.SeedSequence([config.seed, 0]))
        model_rng = np.random.default_rng(np.random.SeedSequence([config.seed, 1]))
        # vocab[r] has background rank r; words are random, so rank carries no pattern.
        self.vocab = _pseudo_words(config.vocab_size, vocab_rng)
        self.background_cdf = _zipf_cdf(config.vocab_size, config.zipf_exponent)

        k = _n_indicative(config)
        m = _n_replaced(config, k)
        chosen = model_rng.permutation(config.vocab_size)[: len(self.classes) * (k + m)]
        self.indicative_cdf = _zipf_cdf(k, config.zipf_exponent)
        self.indicative: list[Int64Array] = []  # per class: word index for each of the k slots
        # per class: (slot, new word index), in replacement order
        self.replacements: list[list[tuple[int, int]]] = []
        for c in range(len(self.classes)):
            block = chosen[c * (k + m) : (c + 1) * (k + m)]
            slots = model_rng.permutation(k)[:m]
            self.indicative.append(block[:k])
            self.replacements.append(list(zip(slots.tolist(), block[k:].tolist())))

    def indicative_at(self, c: int, index: int) -> Int64Array:
        """Class c's indicative word indices at message `index`: replacements happen evenly,
        so that by the last message all of them are in place."""
        replaced = self.replacements[c]
        if not replaced:
            return self.indicative[c]
        done = len(replaced) * index // max(1, self.n_messages - 1)
        words = self.indicative[c].copy()
        for slot, new in replaced[:done]:
            words[slot] = new
        return words

    def sample_message(self, c: int, index: int, rng: np.random.Generator) -> list[str]:
        length = int(rng.geometric(1 / self.mean_length))
        from_class = rng.random(length) < self.signal
        words = np.empty(length, dtype=np.int64)
        n_class = int(from_class.sum())
        words[from_class] = self.indicative_at(c, index)[_draw(self.indicative_cdf, n_class, rng)]
        words[~from_class] = _draw(self.background_cdf, length - n_class, rng)
        return [self.vocab[w] for w in words]


def _draw(cdf: FloatArray, size: int, rng: np.random.Generator) -> Int64Array:
    """Indices drawn from the distribution with this cumulative sum (faster than rng.choice,
    which rebuilds the cdf on every call)."""
    points: FloatArray = rng.random(size) * cdf[-1]
    return np.searchsorted(cdf, points, side="right")


def _zipf_cdf(n: int, exponent: float) -> FloatArray:
    weights: FloatArray = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return np.cumsum(weights)


def _label_sequence(
    classes: list[str], priors: FloatArray, n: int, rng: np.random.Generator
) -> Int64Array:
    """Class indices with exact counts (largest remainder, at least one per class), shuffled."""
    quota = priors * n
    counts = np.floor(quota).astype(int)
    shortfall = n - int(counts.sum())
    counts[np.argsort(-(quota - counts), kind="stable")[:shortfall]] += 1
    for c in range(len(classes)):
        if counts[c] == 0:  # a tiny prior still gets its one message, taken from the largest class
            counts[c] = 1
            counts[np.argmax(counts)] -= 1
    return rng.permutation(np.repeat(np.arange(len(classes)), counts))


def _pseudo_words(n: int, rng: np.random.Generator) -> list[str]:
    """n distinct lowercase ASCII pseudo-words of 4 to 9 letters: 2 to 4 consonant-vowel
    syllables, sometimes closed by a consonant."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < n:
        batch = 2 * (n - len(words)) + 16
        n_syllables = rng.integers(2, 5, size=batch)
        syllables = rng.integers(0, len(_SYLLABLES), size=(batch, 4))
        closers = rng.integers(0, 2 * len(_CONSONANTS), size=batch)  # half the time: none
        for count, row, closer in zip(n_syllables, syllables, closers):
            word = "".join(_SYLLABLES[s] for s in row[:count])
            if closer < len(_CONSONANTS):
                word += _CONSONANTS[closer]
            if word not in seen and word not in _ENGLISH:
                seen.add(word)
                words.append(word)
                if len(words) == n:
                    break
    return words
