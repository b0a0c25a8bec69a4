"""The learner: feedback topic → the store, one `apply_feedback` transaction per batch.

Feedback that carries the message is tokenized; feedback that names a message by id only
takes its tokens from the messages scored recently in this process. Dead-lettered: invalid
records, labels outside `model.labels` (when set), ids of messages not seen recently, and
messages the scorer would reject. When the store is unavailable the batch is read again
after a back-off, and its offsets are not committed until it has been applied.

Each item carries what the audit trail records of it: the feedback's analyst and comment, and
the record's topic, partition, offset and timestamp (when filterd received it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Unpack

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from filterd.daemon.loop import Loop, LoopSettings, Retry
from filterd.daemon.monitor import Monitor
from filterd.daemon.recent import RecentMessages
from filterd.daemon.scorer import accepted_tokens
from filterd.kafka.consumer import Batch, ConsumedRecord
from filterd.kafka.settings import LEARNER_CONSUMER_DEFAULTS
from filterd.service.records import Feedback, RecordError, decode
from filterd.store import learning
from filterd.store.database import error_detail
from filterd.tokenize import Tokenizer

# metric outcome ← `learning.Applied` field
OUTCOMES = {"learned": "learned", "relabelled": "relabelled", "duplicate": "duplicates", "held_out": "held_out",
            "kept_analyst_label": "kept_analyst_label"}  # fmt: skip


class Learner(Loop):
    role = "learner"
    consumer_defaults = LEARNER_CONSUMER_DEFAULTS

    def __init__(self, engine: Engine, model: str, tokenizer: Tokenizer, recent: RecentMessages, monitor: Monitor,
                 labels: list[str], holdout_fraction: float, max_bytes: int,
                 **loop: Unpack[LoopSettings]) -> None:  # fmt: skip
        super().__init__(**loop)
        self.engine, self.model, self.tokenizer, self.recent = engine, model, tokenizer, recent
        self.monitor = monitor
        self.labels, self.holdout_fraction, self.max_bytes = (
            set(labels),
            holdout_fraction,
            max_bytes,
        )

    def process(self, batch: Batch) -> dict[str, int]:
        items, failures, dead = [], [], []
        for record in batch.records:
            try:
                item = self._item(decode(record.value or b"", Feedback, self.max_bytes), record)
            except RecordError as error:
                failures.append((record, error.reason, str(error)))
                dead.append(True)
                continue
            items.append(item)
            dead.append(False)
        self.guard.check(dead)
        scored = self.monitor.score(items)
        try:
            applied = (learning.apply_feedback(self.engine, self.model, items, self.holdout_fraction)
                       if items else learning.Applied())  # fmt: skip
        except SQLAlchemyError as error:
            detail = error_detail(error)
            self.health.set_ready("feedback store", False, detail)
            self.metrics.store_errors.labels(role=self.role).inc()
            raise Retry(f"store unavailable: {detail}") from None
        self.health.set_ready("feedback store", True)
        self.monitor.record(scored)
        for record, reason, message in failures:
            self.dead_letter(record, reason, message)
        self.flush()
        counts = {outcome: getattr(applied, field) for outcome, field in OUTCOMES.items()}
        for key, value in counts.items():
            self.metrics.feedback.labels(outcome=key).inc(value)
        self.metrics.feedback.labels(outcome="dead_lettered").inc(len(failures))
        return {**counts, "dead_lettered": len(failures)}

    def on_idle(self) -> None:
        self.monitor.on_idle()

    def _item(self, feedback: Feedback, record: ConsumedRecord) -> learning.LabelledTokens:
        """The store's feedback item, or RecordError with the dead-letter reason."""
        if self.labels and feedback.label not in self.labels:
            raise RecordError("invalid_label", f"label {feedback.label!r} is not one of "
                                               f"{', '.join(sorted(self.labels))} (model.labels)")  # fmt: skip
        if feedback.has_message:
            tokens = accepted_tokens(self.tokenizer, feedback.message_id, feedback).tokens
        else:
            recent = self.recent.get(feedback.message_id)
            if recent is None:
                raise RecordError("unknown_message", f"feedback for message {feedback.message_id!r} carries no "
                                  "text, and no message with this id was scored recently by this process")  # fmt: skip
            tokens = recent
        return learning.LabelledTokens(
            feedback.message_id, feedback.label, tokens, feedback.source, feedback.ts,
            analyst=feedback.analyst, comment=feedback.comment, received_at=received_at(record),
            kafka_topic=record.topic, kafka_partition=record.partition, kafka_offset=record.offset,
        )  # fmt: skip


def received_at(record: ConsumedRecord) -> datetime | None:
    """The record's Kafka timestamp (its producer's time, or the broker's with LogAppendTime),
    or None where it has none: the in-memory broker's records, a timestamp of -1."""
    millis = getattr(record, "timestamp", None)  # kafka-python's ConsumerRecord has one
    if not isinstance(millis, int) or millis < 0:
        return None
    return datetime.fromtimestamp(millis / 1000, UTC)
