import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from filterd.store.database import connect
from filterd.store.handle import Store
from filterd.store.schema import Base

TABLES = {
    "models",
    "class_stats",
    "token_stats",
    "feedback_ledger",
    "holdout",
    "thresholds",
    "prequential",
    "label_events",
    "decided_messages",
    "parked_feedback",
    "review_items",
    "undecodable_batches",
    "entity_events",
    "entity_labels",
    "list_entries",
    "list_changes",
    "rules",
    "rule_changes",
}


def tables(url: str) -> set[str]:
    return set(inspect(connect(url)).get_table_names()) - {"alembic_version"}


def test_upgrade_from_empty_then_down_to_base_and_up_again(empty_url: str) -> None:
    store = Store.open(empty_url)
    assert store.revision() is None
    store.upgrade()
    assert store.revision() == Store.head() and tables(empty_url) == TABLES
    store.downgrade("base")
    assert store.revision() is None and tables(empty_url) == set()
    store.upgrade()
    assert tables(empty_url) == TABLES


def test_models_match_the_migrations(empty_url: str) -> None:
    Store.open(empty_url).upgrade()
    with connect(empty_url).connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert differences == []


def test_robinson_fisher_scores_move_to_log_odds_and_back(empty_url: str) -> None:
    """0007: a robinson_fisher model's stored τ, scores on arrival and review-queue scores go
    from S − H to logit((1 + S − H)/2); another model's stay; the downgrade restores them."""
    import math
    from datetime import UTC, datetime

    from sqlalchemy import text

    from filterd.bayes.model import ROBINSON_FISHER_SPEC, ModelSpec

    store = Store.open(empty_url)
    store.upgrade("0006")
    engine = store.engine
    fisher = store.create_model("fisher", ROBINSON_FISHER_SPEC, seed=1).id
    other = store.create_model("other", ModelSpec("mnb"), seed=1).id
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        for model_id in (fisher, other):
            conn.execute(
                text(
                    "INSERT INTO thresholds (model_id, version, target_class, target_recall, "
                    "tau, n_pos, n_neg, conservative, forced, created_by, created_at) VALUES "
                    "(:m, 1, 'spam', 0.99, -0.5, 100, 100, false, false, 't', :now)"
                ),
                {"m": model_id, "now": now},
            )
            conn.execute(
                text(
                    "INSERT INTO prequential (model_id, message_id, label, score, target_class, "
                    "model_version, scored_at) VALUES (:m, 'a', 'spam', 1.0, 'spam', 1, :now)"
                ),
                {"m": model_id, "now": now},
            )
            conn.execute(
                text(
                    "INSERT INTO review_items (model_id, message_id, reason, label, score, "
                    "threshold, model_version, explanation, truncated, tokens, queued_at) VALUES "
                    "(:m, 'a', 'band', 'spam', 0.25, -0.5, 1, '[]', false, :tokens, :now)"
                ),
                {"m": model_id, "now": now, "tokens": b""},
            )

    def stored(model_id: int) -> tuple[float, float, tuple[float, ...]]:
        with engine.connect() as conn:
            return (
                conn.execute(
                    text("SELECT tau FROM thresholds WHERE model_id = :m"), {"m": model_id}
                ).scalar_one(),
                conn.execute(
                    text("SELECT score FROM prequential WHERE model_id = :m"), {"m": model_id}
                ).scalar_one(),
                tuple(
                    conn.execute(
                        text("SELECT score, threshold FROM review_items WHERE model_id = :m"),
                        {"m": model_id},
                    ).one()
                ),
            )

    store.upgrade("0007")
    tau, score, (review_score, review_tau) = stored(fisher)
    assert tau == pytest.approx(math.log(0.25 / 0.75)) == review_tau  # p = (1 − 0.5)/2
    assert score == pytest.approx(math.log1p(1 - 2**-53) - math.log1p(-(1 - 2**-53)))  # S − H = 1
    assert math.isfinite(score) and score > 36
    assert review_score == pytest.approx(math.log(0.625 / 0.375))
    assert stored(other) == (-0.5, 1.0, (0.25, -0.5))
    store.downgrade("0006")
    back = stored(fisher)
    assert back[0] == pytest.approx(-0.5) and back[2] == pytest.approx((0.25, -0.5))
    assert back[1] == pytest.approx(1.0)
    store.close()
