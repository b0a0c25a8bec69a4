from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Canonical
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.store.schema import ClassStats, TokenStats

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LATER = T0 + timedelta(days=30)


def nonempty(canonical: Canonical) -> Canonical:
    return {label: (d, rows) for label, (d, rows) in canonical.items() if d or rows}


def tokens_of(model: ModelStore) -> set[str]:
    stats, _ = model.load()
    keys = {
        stats.hasher.key(t): t for t in ["rare", "old", "common", "fresh", "ham1", "spam1", "again"]
    }
    return {
        keys[k] for rows in (v[1] for v in stats.canonical().values()) for k in rows if k in keys
    }


def consistent(engine: Engine) -> bool:
    """Class totals are the sums of the token rows, and nothing is negative."""
    with engine.connect() as conn:
        sums = dict(
            conn.execute(
                select(TokenStats.class_id, func.sum(TokenStats.count)).group_by(
                    TokenStats.class_id
                )
            ).all()
        )
        totals = dict(conn.execute(select(ClassStats.class_id, ClassStats.tokens)).all())
        negative = conn.execute(
            select(func.count()).select_from(TokenStats).where(TokenStats.count < 0)
        ).scalar_one()
    return all(sums.get(c, 0) == t for c, t in totals.items()) and negative == 0


@pytest.fixture
def model(store: Store) -> ModelStore:
    model = store.create_model("default", ModelSpec("mnb"), seed=1)
    model.learn(
        [
            LabelledTokens("a", "spam", ["rare", "common", "common"]),
            LabelledTokens("b", "ham", ["old", "old", "common", "ham1"]),
        ],
        holdout_fraction=0,
        now=T0,
    )
    model.learn(
        [LabelledTokens("c", "spam", ["fresh", "common", "spam1"])],
        holdout_fraction=0,
        now=LATER,
    )
    return model


def test_prune_drops_rare_tokens_unseen_for_long_and_keeps_totals_consistent(
    model: ModelStore, engine: Engine
) -> None:
    result = model.prune_tokens(unseen_days=10, max_count=1, now=LATER)
    # rare (1, old day) and ham1 (1, old day) go; old (2) is too frequent; common, fresh, spam1
    # were seen lately
    assert (result.tokens, result.counts_removed) == (2, 2)
    assert tokens_of(model) == {"old", "common", "fresh", "spam1"}
    assert consistent(engine)


def test_a_dry_run_changes_nothing(model: ModelStore) -> None:
    before = nonempty(model.load()[0].canonical())
    assert model.prune_tokens(unseen_days=10, max_count=1, now=LATER, dry_run=True).tokens == 2
    assert nonempty(model.load()[0].canonical()) == before


def test_a_scorer_synced_before_the_prune_catches_up_exactly(model: ModelStore) -> None:
    scorer, since = model.load()
    model.prune_tokens(unseen_days=10, max_count=5, now=LATER)
    model.sync(scorer, since)
    assert nonempty(scorer.canonical()) == nonempty(model.load()[0].canonical())


def test_relabelling_a_message_whose_tokens_expired_stays_consistent(
    model: ModelStore, engine: Engine
) -> None:
    model.prune_tokens(unseen_days=10, max_count=1, now=LATER)
    model.learn([LabelledTokens("d", "ham", ["rare"])], holdout_fraction=0, now=LATER)  # re-learned
    result = model.learn(
        [LabelledTokens("a", "ham", ["rare", "common", "common"])],
        holdout_fraction=0,
        now=LATER,
    )
    assert result.relabelled == 1
    assert consistent(engine)
