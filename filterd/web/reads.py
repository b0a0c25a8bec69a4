"""The API's reads of the store: GET /v1/review, /v1/decisions/{id} and /v1/model.

Each is what a command prints, as JSON: `filterd review list` (the queue, most informative
first), `filterd review show` and `filterd feedback log --message` (one message's review items
and labels, with where the scorer read it), `filterd model stats` (readiness, classes, the
threshold in force and its history, drift and what the thresholds delivered). They read the
store only; store errors become 503 in `filterd.web.app`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from filterd.service.review import ReviewItem
from filterd.store.drift import Delivered
from filterd.store.sql import as_utc
from filterd.store.thresholds import ThresholdVersion
from filterd.web.api import (
    ClassCount,
    DecisionInfo,
    DeliveredInfo,
    DriftInfo,
    LabelEvent,
    ModelInfo,
    Provenance,
    ReviewPage,
    ReviewQuery,
    Scoring,
    ThresholdInfo,
    entity_of,
)
from filterd.web.context import WebContext
from filterd.web.errors import Problem, invalid

HISTORY = 20  # threshold versions in GET /v1/model
EVENTS = 100  # label events in GET /v1/decisions/{id}


def review_query(params: Mapping[str, str]) -> ReviewQuery:
    """The query string as a ReviewQuery, or a 422 Problem naming the parameter (a time that
    is not between years 1 and 9999 in UTC among them)."""
    try:
        query = msgspec.convert(dict(params), ReviewQuery, strict=False)
    except msgspec.ValidationError as error:
        problem = invalid(error)
        # "$.limit" → "limit": a query parameter is named as it is written
        problem.field = problem.field.removeprefix("$.") if problem.field else None
        raise problem from None
    for key in ("since", "until"):
        moment = getattr(query, key)
        try:  # as the store compares it
            as_utc(moment)
        except OverflowError:
            raise Problem(422, "a time between years 1 and 9999 in UTC", key) from None
    return query


def review_page(context: WebContext, query: ReviewQuery) -> ReviewPage:
    """The review queue of the configured model as `query` filters and orders it."""
    return ReviewPage(items=queue_entries(context, query))


def queue_entries(
    context: WebContext, query: ReviewQuery, offset: int | None = None, limit: int | None = None
) -> list[ReviewItem]:
    """The queue's items as `query` filters and orders them: `limit` of them from `offset`
    (the query's own, unless given)."""
    return context.model.review_items(
        limit=query.limit if limit is None else limit,
        reason=query.reason,
        include_labelled=query.include_labelled,
        order=query.order,
        label=query.label,
        min_score=query.min_score,
        max_score=query.max_score,
        since=query.since,
        until=query.until,
        model_version=query.model_version,
        entity=None if query.entity is None else entity_of(query.entity),
        offset=query.offset if offset is None else offset,
    )


def decision_info(context: WebContext, message_id: str) -> DecisionInfo:
    """What the store knows of message `message_id`'s decision; a 404 Problem if nothing."""
    config, model = context.config, context.model
    coordinates = model.where_decided([message_id]).get(message_id)
    items = model.review_items(
        limit=None, include_labelled=True, order="newest", message_id=message_id
    )
    events = list(model.events(message_id=message_id, limit=EVENTS))
    if coordinates is None and not items and not events:
        raise Problem(
            404,
            f"no decision on message {message_id!r} is known to the store "
            "(none recorded, or pruned after feedback.resolve_ttl)",
            "id",
        )
    provenance = None
    if coordinates is not None:
        partition, offset = coordinates
        provenance = Provenance(
            source_topic=config.topics.messages, partition=partition, offset=offset
        )
    labels = [
        LabelEvent(
            label=e.label,
            previous_label=e.previous_label,
            outcome=e.outcome,
            source=e.source,
            analyst=e.analyst,
            comment=e.comment,
            applied_at=e.applied_at,
        )
        for e in events
    ]
    return DecisionInfo(
        message_id=message_id,
        provenance=provenance,
        review=items,
        labels=labels,
    )


def model_info(context: WebContext) -> ModelInfo:
    """The configured model's summary, its threshold history, drift, and the model this process
    checks with."""
    config = context.config
    name, target = config.model.name, config.decision.target_class
    scoring = context.scoring
    decider, threshold = scoring.decider, scoring.threshold  # read once: the scorer replaces them
    # the count of the model this process holds (synced from the store), not a scan of the store
    held = None if decider is None else decider.distinct_tokens
    model = context.model
    report = model.report(config.model.min_docs, distinct_tokens=held)
    history = [threshold_info(v) for v in model.threshold_history(HISTORY)]
    in_force = next((v for v in history if v.target_class == target), None)
    drift = model.drift_report(target, config.drift.window)
    return ModelInfo(
        model=name,
        spec=report["spec"],
        seq=report["seq"],
        ready=report["ready"],
        not_ready=report["not_ready"],
        classes=[ClassCount(**c) for c in report["classes"]],
        distinct_tokens=report["distinct_tokens"],
        ledger=report["ledger"],
        holdout=report["holdout"],
        last_learn=report["last_learn"],
        target_class=target,
        threshold=in_force,
        thresholds=history,
        drift=DriftInfo(
            n=drift.n,
            auc=drift.auc,
            recall=drift.recall,
            specificity=drift.specificity,
            tau=drift.tau,
            delivered=delivered_info(drift.delivered),
            in_force=delivered_info(drift.in_force),
            in_force_since=drift.in_force_since,
        ),
        scoring=Scoring(
            loaded=decider is not None,
            model_version=None if decider is None else decider.model_version,
            threshold_version=threshold.version,
            tau=threshold.tau,
            target_recall=threshold.target_recall,
        ),
    )


def threshold_info(version: ThresholdVersion) -> ThresholdInfo:
    fields: dict[str, Any] = {f: getattr(version, f) for f in ThresholdInfo.__struct_fields__}
    return ThresholdInfo(**fields)


def delivered_info(delivered: Delivered) -> DeliveredInfo:
    return DeliveredInfo(**delivered.as_dict())
