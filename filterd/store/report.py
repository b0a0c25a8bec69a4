"""A model's summary as the store holds it: what `filterd model stats` prints and the HTTP API's
`GET /v1/model` answers (drift aside: `filterd.store.drift`); and every model's in a few
figures, for `filterd model list`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import Engine, func, select

from filterd.bayes.statistics import not_ready
from filterd.store.models import ModelRef
from filterd.store.schema import (
    ClassStats,
    FeedbackLedger,
    Holdout,
    ModelRow,
    Threshold,
    TokenStats,
)


class ClassReport(TypedDict):
    label: str
    docs: int
    tokens: int


class ThresholdReport(TypedDict):
    version: int
    tau: float
    target_class: str
    target_recall: float
    created_at: datetime
    source: str | None  # holdout | prequential | adaptive; None: not recorded
    level: float | None  # adaptive: the miss level τ was chosen for


class ModelReport(TypedDict):
    """What `filterd model stats` shows of a model, drift aside (its JSON output, in order)."""

    model: str
    spec: str
    variant: str
    params: dict[str, Any]
    selection: str
    set_of_words: bool
    created_at: datetime
    seq: int
    classes: list[ClassReport]
    distinct_tokens: int
    holdout: int
    ledger: int
    last_learn: datetime | None
    ready: bool
    not_ready: str | None
    threshold: ThresholdReport | None


class ModelSummary(TypedDict):
    """One model in a few figures: what `filterd model list` shows of it."""

    model: str
    created_at: datetime
    documents: dict[str, int]  # learned documents per class
    distinct_tokens: int
    ready: bool
    not_ready: str | None


def model_summaries(engine: Engine, min_docs: int) -> list[ModelSummary]:
    """Every model of the store, by name: documents per class, distinct tokens, and whether
    every class has `min_docs` learned documents."""
    with engine.connect() as conn:
        models = conn.execute(
            select(ModelRow.id, ModelRow.name, ModelRow.created_at).order_by(ModelRow.name)
        ).all()
        classes = conn.execute(
            select(ClassStats.model_id, ClassStats.label, ClassStats.docs).order_by(
                ClassStats.model_id, ClassStats.class_id
            )
        ).all()
        distinct = func.count(func.distinct(TokenStats.token_key))
        counted = (
            select(TokenStats.model_id, distinct)
            .where(TokenStats.doc_freq > 0)
            .group_by(TokenStats.model_id)
        )
        # a list of pairs: a result has keys(), which dict() would take for a mapping's
        tokens = dict(conn.execute(counted).all())
    documents: dict[int, dict[str, int]] = {}
    for row in classes:
        documents.setdefault(row.model_id, {})[row.label] = row.docs
    summaries: list[ModelSummary] = []
    for model in models:
        docs = documents.get(model.id, {})
        reason = not_ready(list(docs), list(docs.values()), min_docs)
        summaries.append(
            {
                "model": model.name,
                "created_at": model.created_at,
                "documents": docs,
                "distinct_tokens": tokens.get(model.id, 0),
                "ready": reason is None,
                "not_ready": reason,
            }
        )
    return summaries


def model_report(
    engine: Engine, model: ModelRef, min_docs: int, distinct_tokens: int | None = None
) -> ModelReport:
    """What the store says of `model`: its spec, classes, counts, the newest threshold version,
    and whether every class has `min_docs` learned documents. `distinct_tokens`, when the
    caller holds the model loaded, is its count of tokens, taken instead of counting the
    store's rows (a scan of them all: most of a report's cost for a large model)."""
    with engine.connect() as conn:
        row = conn.execute(
            select(ModelRow.created_at, ModelRow.seq).where(model.row())
        ).one_or_none()
        if row is None:
            raise model.gone()
        classes = conn.execute(
            select(ClassStats.label, ClassStats.docs, ClassStats.tokens)
            .where(ClassStats.model_id == model.id)
            .order_by(ClassStats.class_id)
        ).all()

        def count(table: type[Holdout | FeedbackLedger]) -> int:
            return conn.execute(
                select(func.count()).select_from(table).where(table.model_id == model.id)
            ).scalar_one()

        distinct = distinct_tokens
        if distinct is None:
            distinct = conn.execute(
                select(func.count(func.distinct(TokenStats.token_key))).where(
                    TokenStats.model_id == model.id, TokenStats.doc_freq > 0
                )
            ).scalar_one()
        last = conn.execute(
            select(func.max(FeedbackLedger.learned_at)).where(FeedbackLedger.model_id == model.id)
        ).scalar()
        threshold = conn.execute(
            select(Threshold.__table__)
            .where(Threshold.model_id == model.id)
            .order_by(Threshold.version.desc())
            .limit(1)
        ).one_or_none()
        reason = not_ready([c.label for c in classes], [c.docs for c in classes], min_docs)
        spec = model.spec
        return {
            "model": model.name,
            "spec": str(spec),
            "variant": spec.variant,
            "params": dict(spec.params),
            "selection": str(spec.selection),
            "set_of_words": spec.set_of_words,
            "created_at": row.created_at,
            "seq": row.seq,
            "classes": [{"label": c.label, "docs": c.docs, "tokens": c.tokens} for c in classes],
            "distinct_tokens": distinct,
            "holdout": count(Holdout),
            "ledger": count(FeedbackLedger),
            "last_learn": last,
            "ready": reason is None,
            "not_ready": reason,
            "threshold": None
            if threshold is None
            else {
                "version": threshold.version,
                "tau": threshold.tau,
                "target_class": threshold.target_class,
                "target_recall": threshold.target_recall,
                "created_at": threshold.created_at,
                "source": threshold.source,
                "level": threshold.level,
            },
        }


def class_documents(engine: Engine, model_id: int) -> list[tuple[str, int]]:
    """The model's classes with their learned documents, in class order."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(ClassStats.label, ClassStats.docs)
            .where(ClassStats.model_id == model_id)
            .order_by(ClassStats.class_id)
        ).all()
    return [(label, docs) for label, docs in rows]
