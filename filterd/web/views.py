"""What the workbench's pages show, read from the store: one function per page, each returning
the values its template renders (`filterd.web.pages` renders them).

The reads are those of the API (`filterd.web.reads`) and of the commands: the review queue
(`store.review`), the audit trail (`store.audit`), the model's report, threshold history and
drift (`reads.model_info`, `store.drift.drift_series`), and a calibration run as
`filterd calibrate` runs it (`jobs.calibrate`) — a dry run for the preview, a written version
for "apply", through the same guardrails. A message's token contributions are the scorer's
own (`Decider.contributions`), under the model this process holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from filterd.entities.lists import LIST_OUTCOMES
from filterd.entities.memory import window_name
from filterd.entities.rules import feature_names
from filterd.evaluation.calibration import CalibrationError
from filterd.jobs.calibrate import CalibrationReport, calibrate_configured
from filterd.service.decide import NotReady
from filterd.service.review import ReviewItem
from filterd.store.drift import DriftPoint
from filterd.store.labels import Event
from filterd.web import charts
from filterd.web.api import ListedEntity, ModelInfo, ReviewQuery, RuleInfo
from filterd.web.context import WebContext
from filterd.web.errors import Problem
from filterd.web.lists import listed, lists_page
from filterd.web.reads import model_info, queue_entries
from filterd.web.rules import rules_page, rules_reading

AUDIT_LIMIT = 200  # events on the audit page
SERIES_BUCKETS = 20  # points of the drift charts


@dataclass(frozen=True)
class QueueRow:
    entry: ReviewItem
    position: int  # in the queue as filtered and ordered: for j/k on the message page

    @property
    def title(self) -> str:
        """The subject, else the excerpt's first words."""
        e = self.entry
        if e.subject and e.subject.strip():
            return e.subject.strip()
        words = (e.excerpt or "").split()
        return " ".join(words[:12]) + (" …" if len(words) > 12 else "") if words else "(no text)"


@dataclass(frozen=True)
class QueueView:
    rows: list[QueueRow]
    query: ReviewQuery
    labels: list[str]
    target_class: str
    has_next: bool


def queue_view(context: WebContext, query: ReviewQuery) -> QueueView:
    """One page of the review queue as `query` filters and orders it."""
    config = context.config
    entries = queue_entries(context, query, limit=query.limit + 1)
    rows = [QueueRow(e, query.offset + i) for i, e in enumerate(entries[: query.limit])]
    return QueueView(
        rows,
        query,
        list(config.model.labels),
        config.decision.target_class,
        has_next=len(entries) > query.limit,
    )


@dataclass(frozen=True)
class Neighbours:
    previous: QueueRow | None
    next: QueueRow | None


@dataclass(frozen=True)
class MessageView:
    message_id: str
    item: ReviewItem | None  # the newest review item of the message, with its tokens
    provenance: tuple[str, int, int] | None  # topic, partition, offset
    events: list[Event]
    labels: list[str]
    target_class: str
    # under the model this process holds: (model version, τ, score, every selected token's
    # contribution), None when no model is loaded or no tokens are kept
    current: tuple[int, float, float, list[tuple[str, float]]] | None
    neighbours: Neighbours
    shortcuts: dict[str, str] = field(default_factory=dict)  # key → label


def message_view(
    context: WebContext, message_id: str, query: ReviewQuery, position: int | None
) -> MessageView:
    """Message `message_id`: its review item, where it was read, its labels, its tokens'
    contributions, and its neighbours at `position` in the queue `query` gives; a 404 Problem
    when the store knows nothing of it."""
    config, model = context.config, context.model
    newest = model.review_items(
        limit=1, include_labelled=True, order="newest", message_id=message_id
    )
    item = None
    if newest:
        assert newest[0].id is not None  # every item read back has its id
        item = model.review_item(newest[0].id)
    where = model.where_decided([message_id]).get(message_id)
    events = list(model.events(message_id=message_id, limit=AUDIT_LIMIT))
    if item is None and where is None and not events:
        raise Problem(
            404,
            f"no decision on message {message_id!r} is known to the store "
            "(none recorded, or pruned)",
            "id",
        )
    provenance = None if where is None else (config.topics.messages, where[0], where[1])
    current = None
    decider, threshold = context.scoring.decider, context.scoring.threshold
    if decider is not None and item is not None and item.tokens:
        found = decider.contributions(item.tokens, threshold)
        if found is not None:
            current = (decider.model_version, threshold.tau, *found)
    return MessageView(
        message_id,
        item,
        provenance,
        events,
        list(config.model.labels),
        config.decision.target_class,
        current,
        neighbours(context, query, position, message_id),
        shortcuts(config.model.labels),
    )


def neighbours(
    context: WebContext, query: ReviewQuery, position: int | None, message_id: str
) -> Neighbours:
    """The items before and after `position` in the queue, if the item there is still
    `message_id` (the queue moves as labels are learned)."""
    if position is None:
        return Neighbours(None, None)
    # two either side: the item may have moved by one since the link was made
    start = max(position - 2, 0)
    entries = queue_entries(context, query, start, position - start + 3)
    rows = [QueueRow(e, start + i) for i, e in enumerate(entries)]
    here = next((i for i, r in enumerate(rows) if r.entry.message_id == message_id), None)
    if here is None:  # labelled meanwhile: what is now at `position` comes next
        return Neighbours(
            rows[0] if position > 0 and rows else None,
            next((r for r in rows if r.position == position), None),
        )
    return Neighbours(
        rows[here - 1] if here > 0 else None, rows[here + 1] if here + 1 < len(rows) else None
    )


def shortcuts(labels: list[str]) -> dict[str, str]:
    """A one-key shortcut per label: its first letter not yet taken (not j, k, c or ?, which
    move, comment and help), else none.

    >>> shortcuts(["ham", "spam", "smishing"])
    {'h': 'ham', 's': 'spam', 'm': 'smishing'}
    """
    taken = set("jkc?")
    keys: dict[str, str] = {}
    for label in labels:
        key = next((ch for ch in label.lower() if ch.isalnum() and ch not in taken), None)
        if key is not None:
            keys[key] = label
            taken.add(key)
    return keys


@dataclass(frozen=True)
class ModelView:
    info: ModelInfo
    series: list[DriftPoint]
    tau_chart: str
    auc_chart: str
    recall_chart: str
    target_recall: float


def model_view(context: WebContext) -> ModelView:
    """The model page: `GET /v1/model`'s figures, and charts of τ over its versions and of the
    drift monitor's rolling AUC and recall."""
    info = model_info(context)
    config = context.config
    series = context.model.drift_series(
        config.decision.target_class,
        config.drift.window,
        SERIES_BUCKETS,
    )
    versions = [v for v in reversed(info.thresholds) if v.target_class == info.target_class]
    target = config.decision.target_recall
    return ModelView(
        info,
        series,
        tau_chart=charts.steps_svg(
            [v.created_at for v in versions], [v.tau for v in versions], label="τ by version"
        ),
        auc_chart=charts.series_svg(
            [p.end for p in series],
            [p.auc for p in series],
            label="rolling AUC",
            y_range=rate_range([p.auc for p in series]),
        ),
        recall_chart=charts.series_svg(
            [p.end for p in series],
            [p.recall for p in series],
            label="delivered recall",
            target=target,
            y_range=rate_range([p.recall for p in series], target),
        ),
        target_recall=target,
    )


def rate_range(values: list[float | None], *marks: float) -> tuple[float, float]:
    """The y range of a chart of rates: from a twentieth below the lowest to 1.

    >>> rate_range([0.97, None, 0.99], 0.95)
    (0.9, 1.0)
    >>> rate_range([])
    (0.0, 1.0)
    """
    seen = [v for v in [*values, *marks] if v is not None]
    if not seen:
        return 0.0, 1.0
    return max(0.0, math.floor(20 * min(seen) - 1e-9) / 20), 1.0


@dataclass(frozen=True)
class Calibrated:
    """A calibration's report and its ROC drawn, or why it was refused."""

    target_recall: float
    report: CalibrationReport | None
    roc: str
    refused: str | None  # the guardrail's or the model's message


def calibrate(context: WebContext, target_recall: float, analyst: str | None) -> Calibrated:
    """The configured calibration at `target_recall`: a dry run when `analyst` is None (the
    preview), else a written version created by "workbench:<analyst>". Refusals (guardrails,
    a model not ready, too few labels) are returned, not raised."""
    try:
        report = calibrate_configured(
            context.model,
            context.config,
            f"workbench:{analyst}",
            dry_run=analyst is None,
            target_recall=target_recall,
        )
    except CalibrationError as error:  # the guardrails' refusals among them
        return Calibrated(target_recall, None, "", str(error))
    except NotReady as error:
        return Calibrated(target_recall, None, "", f"the model is not ready: {error}")
    fpr, tpr, _ = report.roc
    new_point = (1.0 - report.specificity, report.recall)
    previous = report.previous_here
    old_point = None if previous is None else (1.0 - previous.specificity, previous.recall)
    roc = charts.roc_svg(
        fpr,
        tpr,
        tau_point=new_point,
        previous_point=old_point,
        label=f"ROC of the window ({report.n_pos} {report.target_class}, {report.n_neg} others)",
    )
    return Calibrated(target_recall, report, roc, None)


def audit_view(
    context: WebContext, analyst: str | None, message_id: str | None, since: datetime | None
) -> list[Event]:
    """The newest label events (AUDIT_LIMIT), by `analyst`, of `message_id`, since `since`."""
    return list(
        context.model.events(message_id=message_id, analyst=analyst, since=since, limit=AUDIT_LIMIT)
    )


@dataclass(frozen=True)
class Change:
    """A change to the lists or the rules, as the page shows it."""

    changed_at: datetime
    what: str  # "list: customer c596", "rule huge: amount > 5000"
    action: str  # added | removed
    outcome: str | None
    analyst: str | None
    reason: str | None


@dataclass(frozen=True)
class RulesView:
    """The lists and rules page: what is in force, and the newest changes to either."""

    entries: list[ListedEntity]
    rules: list[RuleInfo]
    changes: list[Change]
    features: list[str]  # the entity features a rule may name (the configuration's)
    outcomes: tuple[str, ...]


def rules_view(context: WebContext) -> RulesView:
    config, model = context.config, context.model
    changes = [
        Change(c.changed_at, f"list: {c.key} {c.value}", c.action, c.outcome, c.analyst, c.reason)
        for c in model.list_changes(AUDIT_LIMIT)
    ] + [
        Change(c.changed_at, f"rule {c.name}: {c.when}", c.action, c.outcome, c.analyst, c.reason)
        for c in model.rule_changes(AUDIT_LIMIT)
    ]
    changes.sort(key=lambda c: c.changed_at, reverse=True)
    return RulesView(
        entries=lists_page(context).entries,
        rules=rules_page(context).rules,
        changes=changes[:AUDIT_LIMIT],
        features=feature_names(config.entities.spec(config.decision.target_class)),
        outcomes=LIST_OUTCOMES,
    )


ENTITY_MESSAGES = 200  # an entity's newest messages on its page, and labelled at once


@dataclass(frozen=True)
class EntityRow:
    """One of an entity's messages on its page."""

    message_id: str
    at: datetime  # the stream's time
    amount: float | None
    party: str | None
    label: str | None  # the label last received, if any
    # its decision while the store keeps it (None: pruned, or decided before it was kept)
    decided: str | None
    score: float | None
    decided_by: str | None


@dataclass(frozen=True)
class EntityView:
    """An entity's page: its messages, velocities and labels as the store keeps them, its list
    entry and the rules that read its key."""

    key: str
    value: str
    counts: list[tuple[str, int]]  # (window, messages within it before the stream's time)
    labelled: int  # messages labelled the target class within the label window
    label_window: str
    target_class: str
    entry: ListedEntity | None
    rules: list[RuleInfo]
    messages: list[EntityRow]


def entity_view(context: WebContext, key: str, value: str) -> EntityView:
    config, model = context.config, context.model
    spec = config.entities.spec(config.decision.target_class)
    now = model.latest_entity_event()
    counts = (
        [0] * len(spec.windows)
        if now is None
        else model.entity_counts(key, value, now, spec.windows)
    )
    found = model.entity_messages(key, value, ENTITY_MESSAGES)
    labels = model.latest_labels([m.message_id for m in found])
    (entry,) = model.list_entries(key, value) or (None,)
    return EntityView(
        key=key,
        value=value,
        counts=[(window_name(w), n) for w, n in zip(spec.windows, counts)],
        labelled=model.entity_labelled(key, value),
        label_window=window_name(spec.label_window),
        target_class=config.decision.target_class,
        entry=None if entry is None else listed(entry, datetime.now(UTC)),
        rules=rules_reading(context, key),
        messages=[
            EntityRow(
                m.message_id,
                datetime.fromtimestamp(m.at, UTC),
                m.amount,
                m.party,
                labels.get(m.message_id),
                m.label,
                m.score,
                m.decided_by,
            )
            for m in found
        ],
    )


def template_values(view: Any) -> dict[str, Any]:
    """A view's fields as a template's variables."""
    return {name: getattr(view, name) for name in view.__dataclass_fields__}
