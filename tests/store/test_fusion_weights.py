"""A fusion model's weights in the store: learned by the calibration job from the component
scores feedback got on arrival, written with the τ chosen for them, on SQLite and PostgreSQL."""

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from filterd.bayes import fusion
from filterd.bayes.features import encode
from filterd.bayes.model import ModelSpec
from filterd.evaluation.calibration import recall_threshold
from filterd.evaluation.guardrails import GuardrailError
from filterd.evaluation.synth import SynthConfig, SynthRecord, generate
from filterd.jobs.calibrate import calibrate_model
from filterd.service.decide import scoring_model
from filterd.store.drift import Scored
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from tests.conftest import fresh_postgres

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STREAM = generate(
    SynthConfig(
        n_messages=3000, signal=0.2, mean_length=12, seed=4, class_priors={"ham": 0.6, "spam": 0.4}
    )
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fused_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModelStore]:
    """A fusion model that learned the first 1,000 messages (a tenth held out)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fused') / 'store.db'}"
    else:
        url = fresh_postgres(request.getfixturevalue("postgres_server"))
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec.parse("fusion"), seed=0)
    items = [LabelledTokens(r["id"], r["label"], r["text"].split()) for r in STREAM[:1000]]
    model.learn(items, 0.1, now=T0, target="spam")
    yield model
    store.close()


def scored_on_arrival(
    fused_store: ModelStore, records: list[SynthRecord], weights: Sequence[float] | None
) -> list[Scored]:
    """What the learner records: each record's component scores and their combination with
    the weights in force."""
    stats, _ = fused_store.load()
    model = fusion.with_weights(scoring_model(stats, ModelSpec.parse("fusion"), "spam"), weights)
    scores = model.score(encode([r["text"].split() for r in records], model.hasher))
    assert isinstance(scores, fusion.FusedScores)
    return [
        Scored(r["id"], r["label"], float(z), 1, tuple(c))
        for r, z, c in zip(records, scores.binary(), scores.components.tolist())
    ]


def test_the_weights_are_learned_from_the_window_and_written_with_their_threshold(
    fused_store: ModelStore,
) -> None:
    first_rows = scored_on_arrival(fused_store, STREAM[1000:2000], None)
    fused_store.record_scores("spam", first_rows, keep=5000, now=T0 + timedelta(minutes=30))
    first = calibrate_model(
        fused_store,
        "spam",
        0.95,
        source="adaptive",
        now=T0 + timedelta(hours=1),
        window=timedelta(days=1),
    )
    components = np.array([r.components for r in first_rows])
    spam = np.array([r.label == "spam" for r in first_rows])
    expected = fusion.fit_weights(components, spam)  # in arrival order
    assert first.weights == pytest.approx(expected)
    assert first.weights != fusion.INITIAL_WEIGHTS
    combined = fusion.combine(components, expected)
    # a first adaptive version: with the conservative bound
    assert first.conservative
    assert first.tau == recall_threshold(combined, spam, 0.95, conservative=True).tau
    written = fused_store.latest_threshold("spam")
    assert written is not None
    assert written.weights == pytest.approx(first.weights)  # through the JSON column
    from filterd.cli.calibration import render

    assert first.weights is not None
    assert f"bias {first.weights[0]:.3g}, components" in render(first)
    window = fused_store.prequential_window("spam", now=T0 + timedelta(hours=1))
    assert window.components is not None and window.components.shape == (1000, fusion.COLUMNS)
    assert window.components[:, -1].std() > 0  # the logistic component learned with the counts

    # the next window is scored with the weights in force; the previous τ is judged on those
    later_rows = scored_on_arrival(fused_store, STREAM[2000:3000], written.weights)
    fused_store.record_scores(
        "spam",
        later_rows,
        keep=5000,
        now=T0 + timedelta(hours=1, minutes=30),
    )
    second = calibrate_model(
        fused_store,
        "spam",
        0.95,
        source="adaptive",
        now=T0 + timedelta(hours=2),
        window=timedelta(days=1),
    )
    rows = first_rows + later_rows
    everything = np.array([r.components for r in rows])
    truth = np.array([r.label == "spam" for r in rows])
    assert second.weights == pytest.approx(fusion.fit_weights(everything, truth))
    previously = fusion.combine(everything, first.weights)  # the rows as the previous τ saw them
    assert second.previous_here is not None
    assert second.previous_here.recall == pytest.approx(np.mean(previously[truth] >= first.tau))
    assert second.in_force.n_pos == sum(r.label == "spam" for r in later_rows)

    # the holdout source re-scores with the weights in force, and writes them on
    from_holdout = calibrate_model(
        fused_store,
        "spam",
        0.95,
        source="holdout",
        now=T0 + timedelta(hours=3),
        force=True,
    )
    assert from_holdout.weights == pytest.approx(second.weights)


def test_rows_scored_by_another_release_s_components_take_no_part(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.db'}")
    store.upgrade()
    model = store.create_model("default", ModelSpec.parse("fusion"), seed=0)
    model.learn([LabelledTokens(r["id"], r["label"], r["text"].split()) for r in STREAM[:500]])
    rows = scored_on_arrival(model, STREAM[500:1000], None)
    shorter = [replace(r, components=r.components[:5] if r.components else None) for r in rows]
    model.record_scores("spam", shorter, keep=5000, now=T0 + timedelta(minutes=30))
    # the rows' 5 scores cannot be combined by today's weights: none is used, so a first τ
    # waits for rows scored by today's components
    with pytest.raises(GuardrailError, match="0 'spam' items in the window"):
        calibrate_model(
            model,
            "spam",
            0.95,
            source="adaptive",
            now=T0 + timedelta(hours=1),
            window=timedelta(days=1),
        )
    store.close()
