"""The model store's tables (SQLAlchemy 2.x). Every table is keyed by a model id, so that
several models (per tenant, per channel) share one database.

models           one row per model: estimator spec, token-key seed, the change sequence `seq`,
                 and `pruned_seq`, the change at which tokens were last expired (deleted)
class_stats      per class: D_c (docs), N_c (tokens) and B_c (the logistic bias's share)
token_stats      per (token key, class): N, DF, T and W (fixed point), the `seq` of the last change
                 and the day it was last seen
feedback_ledger  per message id: the label learned, its source, its token counts and logistic step
                 (to unlearn)
holdout          labelled feedback kept out of learning, for calibration
thresholds       versions of the decision threshold
prequential      the score each feedback record got before it was learned (drift monitoring)
label_events     the audit trail: one row per label received, append-only (`filterd.store.audit`)
decided_messages per decision: the message's Kafka coordinates, to read it back for feedback by id,
                 and what the entity memory knew of its entities
entity_events    per (message, entity): a scorer's entity memory event, for the other scorers
                 and the next start (`filterd.store.entities`)
entity_labels    per (message, entity): a label of the target class, for the entity memory
list_entries     per entity on a list: allow, block or review, until when, why, by whom
list_changes     every change to the lists, append-only (`filterd.store.lists`)
rules            per rule: its condition as written, its outcome, why, by whom
rule_changes     every change to the rules, append-only (`filterd.store.rules`)
parked_feedback  feedback by id whose message is not known yet, retried until resolved or expired
review_items     decisions queued for an analyst's label, with what is needed to judge and learn it
undecodable_batches  record batches a daemon could not decode, and the operators' skips of them
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    # Every class here is mapped to a Table (DeclarativeBase types `__table__` as any FromClause).
    __table__: ClassVar[Table]


class ModelRow(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)  # variant, params, selection, set_of_words
    hash_seed: Mapped[int] = mapped_column(BigInteger)
    seq: Mapped[int] = mapped_column(
        BigInteger, default=0
    )  # last change; bumped under the row lock
    pruned_seq: Mapped[int] = mapped_column(
        BigInteger, default=0, server_default="0"
    )  # last token expiry
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ClassStats(Base):
    __tablename__ = "class_stats"
    __table_args__ = (
        CheckConstraint("docs >= 0 AND tokens >= 0", name="nonnegative"),
        Index(None, "model_id", "label", unique=True),
    )

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    class_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String(200))
    docs: Mapped[int] = mapped_column(BigInteger, default=0)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    # B[c]: the logistic steps of the class's documents (filterd.bayes.logistic), fixed point
    weight: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class TokenStats(Base):
    __tablename__ = "token_stats"
    __table_args__ = (
        CheckConstraint("count >= 0 AND doc_freq >= 0 AND tfn >= 0", name="nonnegative"),
        Index(None, "model_id", "seq"),
    )

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    token_key: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    class_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger)
    doc_freq: Mapped[int] = mapped_column(BigInteger)
    tfn: Mapped[int] = mapped_column(BigInteger)  # T in units of 2⁻²⁴
    # W[c,w] in units of 2⁻²⁴: the logistic steps, of either sign (filterd.bayes.logistic)
    weight: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    seq: Mapped[int] = mapped_column(BigInteger)
    last_seen: Mapped[int] = mapped_column(Integer)  # days since 1970-01-01


class FeedbackLedger(Base):
    __tablename__ = "feedback_ledger"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    label: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16))  # analyst | auto
    tokens: Mapped[bytes] = mapped_column(LargeBinary)  # packed token keys and counts
    # the logistic step the message took when it was learned, to unlearn it (fixed point)
    step: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    learned_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Holdout(Base):
    __tablename__ = "holdout"
    __table_args__ = (Index(None, "model_id", "ts"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    label: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(16))
    tokens: Mapped[bytes] = mapped_column(LargeBinary)
    ts: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Threshold(Base):
    __tablename__ = "thresholds"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    target_class: Mapped[str] = mapped_column(String(200))
    target_recall: Mapped[float] = mapped_column(Float)
    tau: Mapped[float] = mapped_column(Float)
    auc: Mapped[float | None] = mapped_column(Float, nullable=True)
    recall: Mapped[float | None] = mapped_column(Float, nullable=True)
    specificity: Mapped[float | None] = mapped_column(Float, nullable=True)
    precision: Mapped[float | None] = mapped_column(Float, nullable=True)
    n_pos: Mapped[int] = mapped_column(Integer)
    n_neg: Mapped[int] = mapped_column(Integer)
    window_start: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    window_end: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    conservative: Mapped[bool] = mapped_column(Boolean, default=False)
    forced: Mapped[bool] = mapped_column(Boolean, default=False)
    created_by: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # holdout | prequential | adaptive; None: written before sources were recorded
    source: Mapped[str | None] = mapped_column(String(20), nullable=True)
    # adaptive: the miss level α_t τ was chosen for (recall 1 − α_t); None otherwise
    level: Mapped[float | None] = mapped_column(Float, nullable=True)
    # a fusion model's weights, τ applies to the scores they combine; None for a single model
    weights: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)


class Prequential(Base):
    __tablename__ = "prequential"
    __table_args__ = (Index(None, "model_id", "scored_at"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    label: Mapped[str] = mapped_column(String(200))
    score: Mapped[float] = mapped_column(Float)  # decision score for the target class
    target_class: Mapped[str] = mapped_column(String(200))
    model_version: Mapped[int] = mapped_column(BigInteger)
    scored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # a fusion model's component scores, from which its weights are learned; None otherwise
    components: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)


# SQLite gives a table an autoincrementing rowid only through a column declared INTEGER PRIMARY
# KEY; PostgreSQL's bigint keeps the audit trail's ids from running out (they are never reused).
EventId = BigInteger().with_variant(Integer(), "sqlite")


class LabelEvent(Base):
    """One label as it was received and what it did: append-only, pruned by age only
    (`filterd db prune --audit-days`). Text columns are kept to what a reader needs; the
    tokens are not here (the ledger and the holdout have them)."""

    __tablename__ = "label_events"
    __table_args__ = (
        # Lookups by message and by analyst, and the log's order, --since and pruning by age.
        # (model_id, analyst) alone: PostgreSQL stores its repeated keys once (B-tree
        # deduplication), where adding applied_at would cost ~58 bytes an event.
        Index(None, "model_id", "message_id"),
        Index(None, "model_id", "analyst"),
        Index(None, "model_id", "applied_at"),
    )

    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(256))
    label: Mapped[str] = mapped_column(String(200))
    previous_label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    source: Mapped[str] = mapped_column(String(16))  # analyst | auto
    analyst: Mapped[str | None] = mapped_column(String(200), nullable=True)
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    applied_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # learned | relabelled | duplicate | held_out | kept_analyst_label | parked | expired |
    # forgotten
    outcome: Mapped[str] = mapped_column(String(24))
    # early (a warning: a customer's report) | final (a chargeback, a cleared dispute); None:
    # a label that says neither, taken as final
    stage: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # where the feedback record was read (none for `filterd learn`)
    kafka_topic: Mapped[str | None] = mapped_column(String(249), nullable=True)
    kafka_partition: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kafka_offset: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class DecidedMessage(Base):
    """Where a decided message can be read back: one compact row per decision, written by the
    scorer with the batch, so that feedback naming the message by id can be resolved by any
    learner (`filterd.daemon.resolver`) while the messages topic retains the record. Keyed by
    `id_hash` (`filterd.store.decided.id_hash`: 8 bytes of BLAKE2b of the id) rather than the id,
    which may be 256 characters: the learner checks the id of the record it reads back. The
    messages topic is the configured one (`topics.messages`). Pruned after
    `feedback.resolve_ttl`."""

    __tablename__ = "decided_messages"
    # BRIN on PostgreSQL: rows arrive in time order, so a range index of a few pages lets the
    # pruning find old rows without the ~30 bytes a row a B-tree would cost.
    __table_args__ = (Index(None, "decided_at", postgresql_using="brin"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    id_hash: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    partition: Mapped[int] = mapped_column(Integer)
    offset: Mapped[int] = mapped_column(BigInteger)
    decided_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # what the entity memory knew of the message's entities when it was decided
    # (`filterd.entities.record`), so that its label, however late, learns the same evidence
    entities: Mapped[str | None] = mapped_column(Text, nullable=True)
    # the message's tokens (`filterd.store.sql.pack_tokens`) when they are small
    # (`feedback.keep_tokens_bytes`): its label learns them without the messages topic
    tokens: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class EntityEvent(Base):
    """A message of an entity, as a scorer's entity memory recorded it (`filterd.store.entities`):
    written by the scorer with its batch's decided messages, read by the other scorers within
    seconds (by `written_at`) and by a scorer starting (by `at`, the longest window back).
    Keyed by message and entity key: a message decided twice is one event. Pruned past the
    longest window."""

    __tablename__ = "entity_events"
    # BRIN on PostgreSQL, as `decided_messages`': rows arrive in time order (by either clock),
    # and a B-tree on each time would cost more than the row itself. The model first: SQLite,
    # without statistics, would otherwise read all of a model's rows by its key.
    __table_args__ = (
        Index(None, "model_id", "written_at", postgresql_using="brin"),
        Index(None, "model_id", "at", postgresql_using="brin"),
        # an entity's messages, newest first (the workbench's entity page, the queue's filter)
        Index("ix_entity_events_entity", "model_id", "key", "value", "at"),
    )

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    id_hash: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))
    # the message's id (None: written before revision 0015), for an analyst's entity page
    message_id: Mapped[str | None] = mapped_column(String(256), nullable=True)
    at: Mapped[float] = mapped_column(Float)  # the stream's clock, seconds since the epoch
    amount: Mapped[float | None] = mapped_column(Float, nullable=True)
    party: Mapped[str | None] = mapped_column(String(200), nullable=True)
    written_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # the message's decision (None: written before revision 0016), for an analyst's entity page
    label: Mapped[str | None] = mapped_column(String(200), nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    decided_by: Mapped[str | None] = mapped_column(String(8), nullable=True)
    # the scorer process that wrote it (`filterd.store.entities.ReadMarks`; None: written
    # before revision 0018)
    writer: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class EntityLabel(Base):
    """A label of the target class for a message of an entity, written by the learner, read by
    the scorers (by `written_at`; at a start, the label window back by `at`, the message's
    time). A message relabelled out of the target class loses its rows."""

    __tablename__ = "entity_labels"
    __table_args__ = (Index(None, "model_id", "written_at", postgresql_using="brin"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    id_hash: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))
    at: Mapped[float] = mapped_column(Float)
    written_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ParkedFeedback(Base):
    """Feedback naming a message by id that could not be resolved yet (`filterd.daemon.resolver`):
    the feedback record as received, retried every `feedback.retry_seconds` and dead-lettered as
    `unresolved_message` once `feedback.resolve_ttl` has passed since `parked_at`. A newer label
    for the same message replaces the one parked (and restarts its clock)."""

    __tablename__ = "parked_feedback"
    __table_args__ = (Index(None, "model_id", "next_try_at"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(256), primary_key=True)
    payload: Mapped[bytes] = mapped_column(LargeBinary)  # the feedback record's value
    kafka_topic: Mapped[str | None] = mapped_column(String(249), nullable=True)
    kafka_partition: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kafka_offset: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    received_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    parked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    next_try_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer, default=0)


class ReviewItem(Base):
    """A decision queued for an analyst's label (`filterd.store.review`): what an analyst needs to
    judge it without the original system, and the message's tokens, so that a label given later
    is learned whatever Kafka retains. Bounded by `review.max_items` and `review.retention_days`."""

    __tablename__ = "review_items"
    __table_args__ = (
        Index(None, "model_id", "message_id"),
        Index(None, "model_id", "queued_at"),
        # the queue's order, most informative first (`store.review.list_items`): a page is read
        # from the index in order instead of sorting the whole queue (ties: by id, which SQLite
        # keeps in every index and PostgreSQL sorts within a run of equal distances)
        Index("ix_review_items_model_id_distance", "model_id", text("abs(score - threshold)")),
    )

    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(256))
    reason: Mapped[str] = mapped_column(String(8))  # band | random
    label: Mapped[str] = mapped_column(String(200))  # the decision's
    score: Mapped[float] = mapped_column(Float)
    threshold: Mapped[float] = mapped_column(Float)
    model_version: Mapped[int] = mapped_column(BigInteger)
    threshold_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    subject: Mapped[str | None] = mapped_column(String(200), nullable=True)
    excerpt: Mapped[str | None] = mapped_column(Text, nullable=True)  # the text's first characters
    sender: Mapped[str | None] = mapped_column(String(200), nullable=True)
    attributes: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    explanation: Mapped[list[Any]] = mapped_column(JSON)  # [[token, contribution], …]
    truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    tokens: Mapped[bytes] = mapped_column(LargeBinary)  # `filterd.store.sql.pack_tokens`
    queued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class UndecodableBatch(Base):
    """A record batch a consumer group could not decode (`filterd.store.undecodable`): where the
    group stands, what the batch spans, why it cannot be read, who found it — and, once an
    operator asks for it, who had it skipped, when and why, and when a daemon skipped it. Not
    keyed by model: a consumer group's offsets are the store's whatever model it serves."""

    __tablename__ = "undecodable_batches"
    __table_args__ = (
        UniqueConstraint(
            "consumer_group",
            "topic",
            "kafka_partition",
            "kafka_offset",
            name="uq_undecodable_batches_position",
        ),
    )

    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    consumer_group: Mapped[str] = mapped_column(String(249))
    topic: Mapped[str] = mapped_column(String(249))
    kafka_partition: Mapped[int] = mapped_column(Integer)
    kafka_offset: Mapped[int] = mapped_column(BigInteger)  # where the group stands, in the batch
    next_offset: Mapped[int] = mapped_column(BigInteger)  # the first offset past the batch
    records: Mapped[int] = mapped_column(Integer)  # the batch's records from kafka_offset on
    codec: Mapped[str] = mapped_column(String(32))
    problem: Mapped[str] = mapped_column(Text)
    found_by: Mapped[str] = mapped_column(String(200))
    found_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    skip_requested_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    skip_requested_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    skip_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    skipped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ListEntry(Base):
    """An entity on the allow, block or review list (`filterd.entities.lists`), until
    `expires_at` (None: until removed). One entry per entity: a new one replaces it."""

    __tablename__ = "list_entries"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(String(200), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(8))  # allow | block | review
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ListChange(Base):
    """One change to the lists, append-only: an entry `added` (or replaced) or `removed`, by
    whom, when, with what it said."""

    __tablename__ = "list_changes"
    __table_args__ = (Index(None, "model_id"),)

    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(8))  # added | removed
    key: Mapped[str] = mapped_column(String(200))
    value: Mapped[str] = mapped_column(String(200))
    outcome: Mapped[str | None] = mapped_column(String(8), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    analyst: Mapped[str | None] = mapped_column(String(200), nullable=True)
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Rule(Base):
    """A declarative rule (`filterd.entities.rules`): its condition as the analyst wrote it
    (parsed when read) and its outcome. One rule per name: a new one replaces it."""

    __tablename__ = "rules"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    expression: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(8))  # allow | block | review
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RuleChange(Base):
    """One change to the rules, append-only: a rule `added` (or replaced) or `removed`, by
    whom, when, with its condition and outcome."""

    __tablename__ = "rule_changes"
    __table_args__ = (Index(None, "model_id"),)

    id: Mapped[int] = mapped_column(EventId, primary_key=True, autoincrement=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(8))  # added | removed
    name: Mapped[str] = mapped_column(String(64))
    expression: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(8))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    analyst: Mapped[str | None] = mapped_column(String(200), nullable=True)
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
