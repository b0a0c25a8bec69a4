"""The HTTP API's request and response bodies, as msgspec structs: requests decode and validate
with them, responses encode from them, and the OpenAPI document (`filterd.web.openapi`) is
generated from them with the record types of `schemas/` (`filterd.service.records`).

Messages and decisions are the public records themselves (`Message`, `Decision`): a message
checked over HTTP is validated exactly as one read from the messages topic. A review item is the
one the scorer queued and the store keeps (`filterd.service.review.ReviewItem`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from filterd.entities.lists import ListOutcome
from filterd.entities.rules import MAX_NAME_LENGTH, MAX_RULE_LENGTH, NAME_PATTERN
from filterd.service.records import WITHOUT_NUL, Content, Decision, Id, Label, Message
from filterd.service.review import Reason, ReviewItem

CHECK_BATCH = 100  # messages per POST /v1/check, at most: a check is synchronous
REVIEW_LIMIT = 500  # items per GET /v1/review, at most
MAX_INT64 = 2**63 - 1  # the largest integer a store's column holds
MAX_OFFSET = (
    1_000_000  # items skipped by GET /v1/review, at most (the queue is bounded by review.max_items)
)

CheckRequest = (
    Message | Annotated[list[Message], msgspec.Meta(min_length=1, max_length=CHECK_BATCH)]
)
"""POST /v1/check: one message, or a list of up to CHECK_BATCH."""


class CheckResponse(msgspec.Struct, kw_only=True):
    """The decisions on the messages checked, in their order. Their `source_topic` is "http",
    `offset` the message's position in the request (from 0); nothing is learned or queued."""

    decisions: list[Decision]
    not_ready: str | None = None  # why the decisions say "unknown", if they do


class FeedbackRequest(Content, kw_only=True):
    """POST /v1/feedback: a label for a message, by id, optionally with the message's fields.
    The analyst is the credential's name; an `analyst` or `source` in the body is ignored."""

    message_id: Id
    label: Label
    comment: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=2000,
                pattern=WITHOUT_NUL,
                description="The analyst's note, kept on the audit trail.",
            ),
        ]
        | None
    ) = None


class FeedbackAccepted(msgspec.Struct, kw_only=True):
    """The label was acknowledged by the broker on the feedback topic; the learner applies it
    (`GET /v1/decisions/{id}` shows it on the audit trail once it has)."""

    message_id: str
    label: str
    analyst: str
    topic: str


FORGET_IDS = 1000  # message ids per POST /v1/forget, at most


class ForgetRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """POST /v1/forget: which labels to forget — every criterion given, together; at least one
    — and whether to: without `confirm`, the answer says how many would be forgotten, and
    nothing is. The operator on the audit trail is the credential's name."""

    analyst: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=WITHOUT_NUL)] | None
    ) = None
    source: Literal["analyst", "auto"] | None = None
    # of the messages from this address, domain or phone number
    sender: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=320, pattern=WITHOUT_NUL)] | None
    ) = None
    since: datetime | None = None  # learned (held out: labelled) at or after
    until: datetime | None = None  # … and before
    message_ids: Annotated[list[Id], msgspec.Meta(max_length=FORGET_IDS)] = []
    confirm: bool = False


class ForgetResult(msgspec.Struct, kw_only=True):
    """How many labels were forgotten (`confirmed`), or would be: learned labels unlearned and
    held-out labels dropped (`filterd feedback forget`)."""

    confirmed: bool
    learned: int
    held_out: int


class ReviewPage(msgspec.Struct, kw_only=True):
    """GET /v1/review: queued items, most informative first (or newest first)."""

    items: list[ReviewItem]


ENTITY_PATTERN = "^[^=\x00]{1,200}=[^\x00]{1,200}$"  # KEY=VALUE, as a list entry holds them


def entity_of(text: str) -> tuple[str, str]:
    """KEY=VALUE as (key, value): split at the first "=" (a key has none).

    >>> entity_of("customer=c=5")
    ('customer', 'c=5')
    """
    key, _, value = text.partition("=")
    return key, value


class ReviewQuery(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """GET /v1/review's query parameters."""

    label: Label | None = None
    reason: Reason | None = None
    min_score: float | None = None
    max_score: float | None = None
    since: datetime | None = None  # queued at or after
    until: datetime | None = None  # queued before
    model_version: Annotated[int, msgspec.Meta(ge=0, le=MAX_INT64)] | None = None
    # KEY=VALUE: the messages of an entity, as the entity memory recorded them
    entity: Annotated[str, msgspec.Meta(pattern=ENTITY_PATTERN, max_length=401)] | None = None
    include_labelled: bool = False
    order: Literal["closest", "newest"] = "closest"
    limit: Annotated[int, msgspec.Meta(ge=1, le=REVIEW_LIMIT)] = 50
    offset: Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)] = 0


class Provenance(msgspec.Struct, kw_only=True):
    """Where a decided message was read, as the scorer recorded it (kept for
    `feedback.resolve_ttl`)."""

    source_topic: str
    partition: int
    offset: int


class LabelEvent(msgspec.Struct, kw_only=True):
    """One event of the audit trail (`filterd feedback log`)."""

    label: str
    previous_label: str | None
    outcome: str
    source: str
    analyst: str | None
    comment: str | None
    applied_at: datetime | None


class DecisionInfo(msgspec.Struct, kw_only=True):
    """GET /v1/decisions/{id}: what the store knows of a message's decision: where it was read,
    its review items (the decision as queued), and its labels (the audit trail, newest first)."""

    message_id: str
    provenance: Provenance | None
    review: list[ReviewItem]
    labels: list[LabelEvent]


class ClassCount(msgspec.Struct, kw_only=True):
    label: str
    docs: int
    tokens: int


class ThresholdInfo(msgspec.Struct, kw_only=True):
    """One threshold version (`filterd.store.thresholds`)."""

    version: int
    target_class: str
    target_recall: float
    tau: float
    auc: float | None
    recall: float | None
    specificity: float | None
    n_pos: int
    n_neg: int
    source: str | None
    level: float | None
    forced: bool
    created_by: str
    created_at: datetime


class DeliveredInfo(msgspec.Struct, kw_only=True):
    """What the thresholds in force delivered on feedback scored before it was learned."""

    n_pos: int
    caught: int
    n_neg: int
    passed: int
    recall: float | None
    specificity: float | None


class DriftInfo(msgspec.Struct, kw_only=True):
    """The rolling figures of the last `drift.window` feedback records scored before learning."""

    n: int
    auc: float | None
    recall: float | None
    specificity: float | None
    tau: float
    delivered: DeliveredInfo
    in_force: DeliveredInfo
    in_force_since: datetime | None


class Scoring(msgspec.Struct, kw_only=True):
    """The model and threshold POST /v1/check decides with, in this process."""

    loaded: bool
    model_version: int | None
    threshold_version: int | None
    tau: float
    target_recall: float


class ModelInfo(msgspec.Struct, kw_only=True):
    """GET /v1/model: readiness, counts per class, the threshold in force and its history, and
    what the thresholds delivered (`filterd model stats`)."""

    model: str
    spec: str
    seq: int
    ready: bool
    not_ready: str | None
    classes: list[ClassCount]
    distinct_tokens: int
    ledger: int
    holdout: int
    last_learn: datetime | None
    target_class: str
    threshold: ThresholdInfo | None  # the version in force for the target class
    thresholds: list[ThresholdInfo]  # the newest versions, newest first
    drift: DriftInfo
    scoring: Scoring


EntityText = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=WITHOUT_NUL)]
ReasonText = Annotated[str, msgspec.Meta(max_length=2000, pattern=WITHOUT_NUL)]  # why, as written


# a list entry's or a rule's outcome (`filterd.entities.lists.ListOutcome`)
Outcome = Annotated[
    ListOutcome,
    msgspec.Meta(
        description="block: decided the target class, allow: decided not the target class, "
        "whatever the score; review: decided by the model and queued."
    ),
]


class ListRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """POST /v1/lists: put an entity on a list, replacing its entry if it has one. The analyst
    is the credential's name."""

    key: Annotated[
        EntityText,
        msgspec.Meta(description='An attribute key, dotted if nested, or "sender" or "tenant".'),
    ]
    value: EntityText
    outcome: Outcome
    expires_at: Annotated[
        datetime | None,
        msgspec.Meta(description="Until when (with a time zone); none: until removed."),
    ] = None
    reason: ReasonText | None = None


class ListedEntity(msgspec.Struct, kw_only=True):
    """An entity on a list; `active` false once past `expires_at` (it applies no more)."""

    key: str
    value: str
    outcome: str
    expires_at: datetime | None
    reason: str | None
    created_by: str | None
    active: bool


class ListsPage(msgspec.Struct, kw_only=True):
    """GET /v1/lists: every entry, by key and value."""

    entries: list[ListedEntity]


class RuleRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """POST /v1/rules: add a rule, replacing the rule of its name if there is one. The analyst
    is the credential's name."""

    name: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_NAME_LENGTH,
            pattern=NAME_PATTERN,
            description="Lower-case letters, digits, '_', '.' or '-'.",
        ),
    ]
    when: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_RULE_LENGTH,
            pattern=WITHOUT_NUL,
            description='The condition, e.g. "amount > 5000 and customer:count_1h >= 3".',
        ),
    ]
    outcome: Outcome
    reason: ReasonText | None = None


class RuleInfo(msgspec.Struct, kw_only=True):
    """A rule: its condition as written, its outcome, why, by whom."""

    name: str
    when: str
    outcome: str
    reason: str | None
    created_by: str | None


class RulesPage(msgspec.Struct, kw_only=True):
    """GET /v1/rules: every rule, by name."""

    rules: list[RuleInfo]


class ApiError(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Every 4xx and 5xx answer: what is wrong, and the field of the request it is about
    ("$.messages[0].id" style paths of the body, or the query parameter's name)."""

    error: str
    field: str | None = None


RESPONSES: tuple[type[msgspec.Struct], ...] = (
    CheckResponse,
    FeedbackAccepted,
    ForgetResult,
    ReviewPage,
    DecisionInfo,
    ModelInfo,
    ListedEntity,
    ListsPage,
    RuleInfo,
    RulesPage,
    ApiError,
)
