"""Many-row inserts and upserts, on SQLite and PostgreSQL: values of any content come back as
given."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, select

from filterd.bayes.model import ModelSpec
from filterd.store.bulk import insert_rows
from filterd.store.handle import Store
from filterd.store.schema import FeedbackLedger, Prequential

AWKWARD_IDS = [
    "plain",
    "a,b",
    "{braces}",
    '"quoted"',
    "back\\slash",
    "NULL",
    "",
    "ünïcødé 🙂",
    "new\nline",
]
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_rows_with_awkward_values_round_trip(store: Store, engine: Engine) -> None:
    model_id = store.create_model("m", ModelSpec("mnb")).id
    rows = [
        {
            "model_id": model_id,
            "message_id": m,
            "label": f"label {i}",
            "source": "analyst",
            "tokens": bytes([0, 255, i, 92, 44]),
            "learned_at": NOW + timedelta(seconds=i),
        }
        for i, m in enumerate(AWKWARD_IDS)
    ]
    with engine.begin() as conn:
        insert_rows(conn, FeedbackLedger.__table__, rows)
        insert_rows(conn, FeedbackLedger.__table__, [])
    with engine.connect() as conn:
        stored = conn.execute(
            select(
                FeedbackLedger.message_id,
                FeedbackLedger.label,
                FeedbackLedger.tokens,
                FeedbackLedger.learned_at,
            )
        ).all()
    as_read = {
        m: (label, tokens, at.replace(tzinfo=UTC) if at.tzinfo is None else at)
        for m, label, tokens, at in stored
    }
    assert as_read == {r["message_id"]: (r["label"], r["tokens"], r["learned_at"]) for r in rows}


def test_an_upsert_replaces_only_the_named_columns_of_existing_rows(
    store: Store, engine: Engine
) -> None:
    model_id = store.create_model("m", ModelSpec("mnb")).id

    def row(message_id: str, label: str, score: float, version: int) -> dict[str, object]:
        return {
            "model_id": model_id,
            "message_id": message_id,
            "label": label,
            "score": score,
            "target_class": "spam",
            "model_version": version,
            "scored_at": NOW,
        }

    upsert = {"conflict": ("model_id", "message_id"), "update": ("label", "score")}
    with engine.begin() as conn:
        insert_rows(
            conn,
            Prequential.__table__,
            [row("a,1", "ham", -1.5, 1), row("b", "spam", 2.0, 1)],
            **upsert,
        )
        insert_rows(
            conn,
            Prequential.__table__,
            [row("a,1", "spam", 0.25, 9), row("c", "ham", -3.0, 9)],
            **upsert,
        )
    with engine.connect() as conn:
        stored = conn.execute(
            select(
                Prequential.message_id,
                Prequential.label,
                Prequential.score,
                Prequential.model_version,
            )
        ).all()
    assert sorted(stored) == [
        ("a,1", "spam", 0.25, 1),
        ("b", "spam", 2.0, 1),
        ("c", "ham", -3.0, 9),
    ]
