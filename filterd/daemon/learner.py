"""The learner: feedback topic → the store, one transaction per batch.

Feedback that carries the message is tokenized; feedback that names a message by id only is
resolved by `Resolver` (the messages scored recently in this process, the review queue, or the
message read back from the messages topic where any scorer recorded it). Feedback it cannot
resolve yet is parked in the store in the batch's transaction (`filterd.store.parking`), tried
again every `feedback.retry_seconds` by whichever learner comes first, and dead-lettered as
`unresolved_message` once `feedback.resolve_ttl` has passed: it is not bad input, so the
dead-letter guard does not count it. Dead-lettered at once: invalid records, labels outside
`model.labels` (when set), and messages the scorer would reject. When the store is unavailable
the batch is read again after a back-off, and its offsets are not committed until it has been
applied.

With an entity memory ([entities] keys), a message is learned with the entity tokens it was
decided on (kept with its decided message: `filterd.store.entities`), and a label of the target
class counts for its entities in every scorer's memory (`entity_labels`). A label that comes
before its message's record is written (the scorer writes it within a second or so of the
decision), or once the record was pruned with its decided message (`feedback.resolve_ttl`),
learns the message without its entity tokens.

Each item carries what the audit trail records of it: the feedback's analyst and comment, and
the record's topic, partition, offset and timestamp (when filterd received it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import NoReturn, Unpack

from filterd.daemon.loop import Loop, LoopSettings
from filterd.daemon.monitor import Monitor
from filterd.daemon.resolver import Resolver
from filterd.entities.memory import EntitySpec, entity_values
from filterd.entities.record import EntityRecord
from filterd.kafka.consumer import Batch, ConsumedRecord
from filterd.kafka.processor import Processed, Retry
from filterd.kafka.producer import PublishError
from filterd.kafka.settings import LEARNER_CONSUMER_DEFAULTS
from filterd.service.decide import accepted_tokens
from filterd.service.records import Feedback, RecordError, decode
from filterd.store.decided import id_hash
from filterd.store.entities import EntityLabelled
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore
from filterd.store.labels import Event, LabelledTokens, Origin, Outcome
from filterd.store.learning import Applied
from filterd.store.parking import Parked
from filterd.store.sql import as_utc
from filterd.tokenize import Tokenizer

# metric outcome ← `Applied` field
OUTCOMES = {
    "learned": "learned",
    "relabelled": "relabelled",
    "duplicate": "duplicates",
    "held_out": "held_out",
    "kept_analyst_label": "kept_analyst_label",
}
UNRESOLVED = "unresolved_message"
RETRY_ROUND_SECONDS = 2.0  # a retry round claims again while it finds more due, this long at most


@dataclass(frozen=True)
class StoredRecord:
    """A parked feedback record as a `ConsumedRecord`, for its dead letter."""

    topic: str
    partition: int
    offset: int
    value: bytes | None


class Learner(Loop):
    role = "learner"
    consumer_defaults = LEARNER_CONSUMER_DEFAULTS

    def __init__(
        self,
        model: ModelStore,
        tokenizer: Tokenizer,
        resolver: Resolver,
        monitor: Monitor,
        labels: list[str],
        holdout_fraction: float,
        max_bytes: int,
        resolve_within: timedelta,
        retry_seconds: float,
        entities: EntitySpec | None = None,
        **loop: Unpack[LoopSettings],
    ) -> None:
        super().__init__(**loop)
        self.model, self.tokenizer, self.resolver = model, tokenizer, resolver
        self.entities = entities
        self.monitor = monitor
        self.labels, self.holdout_fraction, self.max_bytes = (
            set(labels),
            holdout_fraction,
            max_bytes,
        )
        self.resolve_within, self.retry_seconds = resolve_within, retry_seconds
        self._retry_due = time.monotonic() + retry_seconds

    def process(self, batch: Batch) -> Processed:
        failures, dead = [], []
        received: list[tuple[Feedback, ConsumedRecord, list[str] | None]] = []
        for record in batch.records:
            try:
                feedback = decode(record.value or b"", Feedback, self.max_bytes)
                received.append((feedback, record, self._tokens(feedback)))
            except RecordError as error:
                failures.append((record, error.reason, str(error)))
                dead.append(True)
                continue
            dead.append(False)
        self.guard.check(dead)
        # by id: the batch's own messages first (feedback with the message, for the same id)
        known = {f.message_id: t for f, _, t in received if t is not None}
        wanted = [f.message_id for f, _, t in received if t is None and f.message_id not in known]
        try:
            known |= self.resolver.resolve(wanted) if wanted else {}
        except StoreError as error:
            self._store_failed(error)
        items = [
            labelled(f, r, known[f.message_id]) for f, r, _ in received if f.message_id in known
        ]
        waiting = [(f, r) for f, r, _ in received if f.message_id not in known]
        try:
            items, entity_labels = self._with_entities(items, [f for f, _, _ in received])
        except StoreError as error:
            self._store_failed(error)
        scored = self.monitor.score(items)
        now = datetime.now(UTC)
        try:
            with self.model.transaction() as writing:
                applied = Applied()
                if items:
                    applied = writing.learn(items, self.holdout_fraction, now, self.monitor.target)
                    writing.unpark([item.message_id for item in items])
                    writing.record_entity_labels(*entity_labels, now)
                if waiting:
                    writing.park(
                        [parked(f, r) for f, r in waiting],
                        now,
                        now + timedelta(seconds=self.retry_seconds),
                    )
                    writing.record_events([event(f, r, "parked") for f, r in waiting], now)
        except StoreError as error:
            self._store_failed(error)
        self.health.set_ready("feedback store", True)
        self.monitor.record(scored)
        for record, reason, message in failures:
            self.dead_letter(record, reason, message)
        self.publisher.flush()
        counts = {outcome: getattr(applied, field) for outcome, field in OUTCOMES.items()}
        counts |= {"parked": len(waiting), "dead_lettered": len(failures)}
        for key, value in counts.items():
            self.metrics.feedback.labels(outcome=key).inc(value)
        return Processed(counts)

    def on_idle(self) -> None:
        self.monitor.on_idle()
        if time.monotonic() >= self._retry_due:
            try:
                self.retry_parked()
            except (StoreError, PublishError) as error:
                self.repeats.warning(self.log, "parked feedback not retried", error=str(error))
            self._retry_due = time.monotonic() + self.retry_seconds

    def retry_parked(self, now: datetime | None = None) -> dict[str, int]:
        """Try the parked feedback that is due again, `max_records` at a time for at most
        RETRY_ROUND_SECONDS: apply what resolves, dead-letter what has waited longer than
        `feedback.resolve_ttl`. Returns the counts."""
        total: dict[str, int] = {}
        started = time.monotonic()
        while True:
            counts, claimed = self._retry_round(now or datetime.now(UTC))
            for key, value in counts.items():
                total[key] = total.get(key, 0) + value
            if claimed < self.max_records or time.monotonic() - started > RETRY_ROUND_SECONDS:
                break
        self.metrics.parked_feedback.set(self.model.count_parked())
        if total:
            self.log.info("parked feedback retried", **total)
        return total

    def _retry_round(self, now: datetime) -> tuple[dict[str, int], int]:
        """One claim of due parked feedback, tried: the counts, and how many were claimed."""
        claimed = self.model.claim_parked(
            now, now + timedelta(seconds=self.retry_seconds), self.max_records
        )
        if not claimed:
            return {}, 0
        feedback, unreadable = {}, []
        for p in claimed:
            try:
                feedback[p.message_id] = decode(p.payload, Feedback, self.max_bytes)
            except RecordError as error:  # parked by a version that read records differently
                self.dead_letter(stored_record(p), error.reason, str(error))
                unreadable.append(p)
        known = self.resolver.resolve(list(feedback))
        resolved = [p for p in claimed if p.message_id in known]
        expired = [
            p
            for p in claimed
            if p.message_id in feedback
            and p.message_id not in known
            and as_utc(p.parked_at or now) + self.resolve_within <= now
        ]
        for p in expired:
            self.dead_letter(
                stored_record(p),
                UNRESOLVED,
                f"feedback for message {p.message_id!r} carries no text, "
                "and no message with this id "
                f"was found within feedback.resolve_ttl ({self.resolve_within}) of its arrival",
            )
        self.publisher.flush()
        with self.model.transaction() as writing:
            # what a newer label replaced (or made moot) meanwhile is left to it
            still = set(writing.release(resolved + expired + unreadable))
            items = [
                labelled(
                    feedback[p.message_id], stored_record(p), known[p.message_id], p.received_at
                )
                for p in resolved
                if p.message_id in still
            ]
            items, entity_labels = self._with_entities(items, list(feedback.values()))
            # scored on their arrival here, as a batch's labels are: the calibration window
            # needs a backlog's labels as much as a stream's
            scored = self.monitor.score(items)
            applied = (
                writing.learn(items, self.holdout_fraction, now, self.monitor.target)
                if items
                else Applied()
            )
            writing.record_entity_labels(*entity_labels, now)
            writing.record_events(
                [
                    event(feedback[p.message_id], stored_record(p), "expired", p.received_at)
                    for p in expired
                    if p.message_id in still
                ],
                now,
            )
        self.monitor.record(scored)
        counts = {outcome: getattr(applied, field) for outcome, field in OUTCOMES.items()}
        counts |= {"claimed": len(claimed), "unresolved": len(expired)}
        for key, value in counts.items():
            if key != "claimed":
                self.metrics.feedback.labels(outcome=key).inc(value)
        return counts, len(claimed)

    def on_stop(self) -> None:
        self.resolver.close()
        super().on_stop()

    def _store_failed(self, error: StoreError) -> NoReturn:
        detail = str(error)
        self.health.set_ready("feedback store", False, detail)
        self.metrics.store_errors.labels(role=self.role).inc()
        raise Retry(f"store unavailable: {detail}") from None

    def _with_entities(
        self, items: list[LabelledTokens], feedback: Sequence[Feedback]
    ) -> tuple[list[LabelledTokens], tuple[list[EntityLabelled], list[int]]]:
        """With an entity memory: each item with the entity tokens its message was decided on
        (its `EntityRecord`, kept with its decided message), and the target labels of its
        entities (by the record, else by the entities the feedback's own message names), and
        the messages (id hashes) relabelled out of the target. Without: as they are."""
        spec = self.entities
        if spec is None or not items:
            return items, ([], [])
        stored = self.model.decided_entities([item.message_id for item in items])
        carried = {f.message_id: f for f in feedback if f.has_message}
        out, targets, others = [], [], []
        for item in items:
            text = stored.get(item.message_id)
            record = EntityRecord.loads(text) if text is not None else None
            key = id_hash(item.message_id)
            if record is not None:
                item = replace(item, tokens=[*item.tokens, *record.tokens(spec)])
            out.append(item)
            if item.label != spec.target:
                others.append(key)
            elif record is not None:
                targets += [EntityLabelled(key, f.key, f.value, record.at) for f in record.features]
            elif (message := carried.get(item.message_id)) is not None:
                at = (message.ts or datetime.now(UTC)).timestamp()
                fields = {"attributes": message.attributes, "sender": message.sender}
                targets += [EntityLabelled(key, k, v, at) for k, v in entity_values(fields, spec)]
        return out, (targets, others)

    def _tokens(self, feedback: Feedback) -> list[str] | None:
        """The tokens of the message the feedback carries (None: by id only), or RecordError with
        the dead-letter reason."""
        if self.labels and feedback.label not in self.labels:
            raise RecordError(
                "invalid_label",
                f"label {feedback.label!r} is not one of "
                f"{', '.join(sorted(self.labels))} (model.labels)",
            )
        if not feedback.has_message:
            return None
        return list(accepted_tokens(self.tokenizer, feedback.message_id, feedback).tokens)


def origin(feedback: Feedback, record: ConsumedRecord, received: datetime | None = None) -> Origin:
    """Where a label came from, as the audit trail records it: the analyst and comment of
    `feedback`, when filterd received it (`received`, else the Kafka timestamp of `record`),
    and where `record` was read. The one construction of the learner's items and events."""
    return Origin(
        analyst=feedback.analyst,
        comment=feedback.comment,
        received_at=received or received_at(record),
        kafka_topic=record.topic,
        kafka_partition=record.partition,
        kafka_offset=record.offset,
        stage=feedback.stage,
    )


def labelled(
    feedback: Feedback,
    record: ConsumedRecord,
    tokens: Sequence[str],
    received: datetime | None = None,
) -> LabelledTokens:
    """The store's item for a feedback record read at `record` (received then, if known)."""
    where = origin(feedback, record, received)
    return LabelledTokens(
        feedback.message_id, feedback.label, tokens, feedback.source, feedback.ts, **vars(where)
    )


def event(
    feedback: Feedback, record: ConsumedRecord, outcome: Outcome, received: datetime | None = None
) -> Event:
    """The audit event of feedback that learned nothing (parked, expired)."""
    where = origin(feedback, record, received)
    return Event(
        feedback.message_id, feedback.label, outcome, source=feedback.source, **vars(where)
    )


def parked(feedback: Feedback, record: ConsumedRecord) -> Parked:
    """The parked feedback of a record read at `record`: where and when, as its `origin`."""
    where = origin(feedback, record)
    return Parked(
        feedback.message_id,
        record.value or b"",
        where.kafka_topic,
        where.kafka_partition,
        where.kafka_offset,
        where.received_at or datetime.now(UTC),
    )


def stored_record(p: Parked) -> StoredRecord:
    return StoredRecord(
        p.kafka_topic or "",
        p.kafka_partition or 0,
        -1 if p.kafka_offset is None else p.kafka_offset,
        p.payload,
    )


def received_at(record: ConsumedRecord) -> datetime | None:
    """The record's Kafka timestamp (its producer's time, or the broker's with LogAppendTime),
    or None where it has none: the in-memory broker's records, a timestamp of -1."""
    millis = getattr(record, "timestamp", None)  # kafka-python's ConsumerRecord has one
    if not isinstance(millis, int) or millis < 0:
        return None
    return datetime.fromtimestamp(millis / 1000, UTC)
