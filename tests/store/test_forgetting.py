"""Forgetting labels by selector (`filterd.store.forgetting`): unlearned exactly, held-out labels
dropped, the audit trail told, on SQLite and PostgreSQL."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import select

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.bayes.vocab import TokenHasher
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.forgetting import Selector
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens, Source
from filterd.store.ledger import pack
from filterd.store.schema import FeedbackLedger
from filterd.store.sql import HoldsBytes, bytes_param
from filterd.tokenize import Tokenizer, TokenizerConfig
from tests.store.conftest import DOCS, SEED, learned_directly, nonempty, store_statistics

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def fb(message_id: str, label: str, analyst: str, source: Source = "analyst") -> LabelledTokens:
    return LabelledTokens(message_id, label, DOCS[message_id].split(), source, analyst=analyst)


@pytest.fixture
def model(store: Store) -> ModelStore:
    return store.create_model("default", ModelSpec("mnb"), seed=SEED)


def test_an_analysts_labels_are_unlearned_and_others_kept(model: ModelStore) -> None:
    model.learn([fb("m1", "spam", "mallory"), fb("m2", "ham", "alice")], 0, now=T0)
    model.learn([fb("m3", "spam", "mallory")], 0, now=T0)
    model.learn([fb("m3", "ham", "alice")], 0, now=T0)  # alice's label now
    forgotten = model.forget(Selector(analyst="mallory"), operator="oscar")
    assert (forgotten.learned, forgotten.held_out) == (("m1",), ())
    assert store_statistics(model) == learned_directly([("m2", "ham"), ("m3", "ham")])
    (event,) = list(model.events(analyst="oscar"))
    assert (event.message_id, event.outcome, event.label) == ("m1", "forgotten", "spam")
    assert event.comment == "forgotten by selector: analyst=mallory"
    # labelled again, it is learned as new
    assert model.learn([fb("m1", "spam", "alice")], 0).learned == 1


def test_a_source_a_time_range_and_ids_select(model: ModelStore) -> None:
    model.learn([fb("m1", "spam", "a", "auto"), fb("m2", "ham", "b")], 0, now=T0)
    model.learn([fb("m3", "spam", "c")], 0, now=T0 + timedelta(days=2))
    model.learn([fb("m4", "ham", "d")], 0, now=T0 + timedelta(days=4))
    assert model.forget(Selector(source="auto")).learned == ("m1",)
    window = Selector(since=T0 + timedelta(days=1), until=T0 + timedelta(days=3))
    assert model.forget(window).learned == ("m3",)
    assert model.forget(Selector(message_ids=("m4", "nope"))).learned == ("m4",)
    assert store_statistics(model) == learned_directly([("m2", "ham")])


def test_held_out_labels_are_dropped_and_a_dry_run_changes_nothing(model: ModelStore) -> None:
    model.learn([fb(m, "spam", "mallory") for m in DOCS], holdout_fraction=0.3, now=T0)
    before = store_statistics(model)
    trial = model.forget(Selector(analyst="mallory"), dry_run=True)
    assert set(trial.learned) == {"m1", "m2", "m3", "m4"} and set(trial.held_out) == {"h3", "h4"}
    assert store_statistics(model) == before and model.forget(Selector(analyst="x")).learned == ()
    assert model.forget(Selector(analyst="mallory")) == trial
    assert store_statistics(model) == {}
    assert model.learn([fb("h3", "spam", "a")], holdout_fraction=0.3).held_out == 1  # anew


def test_forgetting_needs_a_selector() -> None:
    with pytest.raises(ValueError, match="needs a selector"):
        Selector()


def test_a_fusion_models_logistic_steps_are_taken_back(store: Store) -> None:
    stream = generate(SynthConfig(n_messages=120, signal=0.3, mean_length=8, seed=11))
    model = store.create_model("default", ModelSpec.parse("fusion"), seed=5)
    items = [
        LabelledTokens(r["id"], r["label"], r["text"].split(), analyst=f"a{i % 2}")
        for i, r in enumerate(stream)
    ]
    for part in np.array_split(np.arange(len(items)), 4):
        model.learn([items[i] for i in part], holdout_fraction=0.0, target="spam")
    assert model.load()[0].logistic_weights()[1]
    model.forget(Selector(analyst="a0"), target="spam")
    model.forget(Selector(analyst="a1"), target="spam")
    stats = model.load()[0]
    assert stats.logistic_weights() == (0, {}) and nonempty(stats.canonical()) == {}


def sent(message_id: str, label: str, sender: str) -> LabelledTokens:
    """A label for a message from `sender`, with the tokens the tokenizer gives it."""
    tokens = Tokenizer(TokenizerConfig())({"text": DOCS[message_id], "sender": sender}).tokens
    return LabelledTokens(message_id, label, tokens, analyst="a")


def test_a_senders_and_a_domains_labels_are_found_by_their_tokens(model: ModelStore) -> None:
    model.learn([sent("m1", "spam", "Mallory <mallory@evil.example>")], 0, now=T0)
    model.learn([sent("m2", "spam", "eve@evil.example"), sent("m3", "ham", "bob@good.example")], 0)
    model.learn([sent("m4", "ham", "+44 7700 900123")], 0)
    model.learn([sent(m, "spam", "mallory@evil.example") for m in ("h3", "h4")], 0.3)  # held out
    trial = model.forget(Selector(sender="MALLORY@evil.example"), dry_run=True)
    assert (trial.learned, trial.held_out) == (("m1",), ("h3", "h4"))
    recent = model.forget(Selector(sender="evil.example", since=T0 + timedelta(days=1)))
    assert (recent.learned, recent.held_out) == (("m2",), ("h3", "h4"))  # held out: just now
    assert model.forget(Selector(sender="+447700900123")).learned == ("m4",)
    assert model.forget(Selector(sender="nobody.example")).learned == ()
    forgotten = model.forget(Selector(sender="evil.example"), operator="oscar")
    assert (forgotten.learned, forgotten.held_out) == (("m1",), ())
    kept = Statistics(seed=SEED)
    kept.learn(sent("m3", "ham", "bob@good.example").tokens, "ham")
    assert store_statistics(model) == nonempty(kept.canonical())
    (event, *_) = list(model.events(analyst="oscar"))
    assert event.comment == "forgotten by selector: sender=evil.example"


@pytest.mark.parametrize("sender", ["", "a@", "@@", "  "])
def test_a_sender_that_is_none_is_refused(sender: str) -> None:
    with pytest.raises(ValueError, match="not an address, a domain or a sender id"):
        Selector(sender=sender)


def test_the_database_keeps_the_rows_whose_bytes_hold_a_key(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"), seed=SEED)
    model.learn([sent("m1", "spam", "a@evil.example"), sent("m2", "ham", "b@good.example")], 0)
    key = TokenHasher(SEED).keys(["from:evil.example"])
    found = select(FeedbackLedger.message_id).where(
        HoldsBytes(FeedbackLedger.tokens, bytes_param(pack(key, key[:0])))
    )
    with store.engine.connect() as conn:
        assert list(conn.execute(found).scalars()) == ["m1"]
