"""The scorer: messages topic → decisions topic (one decision per message, keyed by its id, with
the message's topic, partition and offset), bad records → dead-letter topic with the reason.

A record is dead-lettered when it is not a valid message (reasons of
`filterd.service.records.decode`: oversized, invalid_json, invalid_utf8, schema, too_deep) or
when the tokenizer could not read it at all (`REJECTED_FLAGS`). A message that a limit cut short
(too many tokens, attributes nested too deeply, too many MIME parts) is decided on what was read
and flagged `truncated`; a mail with MIME defects is decided too, because spam often has them.
The dead-letter guard counts only records the daemon cannot decode (`UNDECODABLE`). The decoding,
tokenizing and deciding of a batch of raw records (`decide_payloads`) live in
`filterd.service.decide`, shared with `filterd score`, and with the HTTP API from the
tokenizing on (`decide_messages`).

The scorer marks for review the decisions an analyst's label would teach the most
(`filterd.service.review`: within `review.band` of τ, and a uniform `review.random_share`), and
hands its `Recorder` where each decided message was read and the review items, which it writes
to the store beside the scorer (`filterd.daemon.recorder`). With [entities] keys, each message is
decided with what the entity memory knows of its entities (`filterd.daemon.entity_state`), its
decision says it in words (`evidence`), and what the memory remembered goes to the store with
the batch's decided messages, and so do the tokens of a message that takes at most
`feedback.keep_tokens_bytes` (`fits`): its label by id learns it from there. An entity on the
allow or block list, or a block or allow rule, decides its message whatever the score; a
review entry or rule queues it (`filterd.daemon.override_state`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Unpack

from filterd.daemon.entity_state import EntityState
from filterd.daemon.loop import Loop, LoopSettings
from filterd.daemon.model_state import ModelState
from filterd.daemon.override_state import OverrideState
from filterd.daemon.recent import RecentMessages
from filterd.daemon.recorder import Recorder
from filterd.entities.memory import EntityEvent
from filterd.kafka.consumer import Batch
from filterd.kafka.processor import Processed, Retry
from filterd.service.config import Review
from filterd.service.decide import Decided, decide_payloads
from filterd.service.records import Decision, encode
from filterd.service.review import Reason, ReviewItem, queued_item, review_reasons
from filterd.store.entities import DecidedEvent

# At a stop, how long the recorder may take to write what is pending (it is usually caught up).
RECORDER_STOP_SECONDS = 0.5


class Scorer(Loop):
    role = "scorer"

    def __init__(
        self,
        state: ModelState,
        recent: RecentMessages,
        decisions_topic: str,
        max_bytes: int,
        queue: Review,
        entities: EntityState | None = None,
        keep_tokens_bytes: int = 0,
        overrides: OverrideState | None = None,
        **loop: Unpack[LoopSettings],
    ) -> None:
        super().__init__(**loop)
        self.state, self.recent, self.entities = state, recent, entities
        self.overrides = overrides
        self.keep_tokens_bytes = keep_tokens_bytes
        self.decisions_topic, self.max_bytes, self.queue = decisions_topic, max_bytes, queue
        self.recorder = Recorder(
            state.model,
            queue.max_items,
            self.health,
            self.metrics,
            self.log,
            entities.marks.writer if entities is not None else None,
        )

    def on_idle(self) -> None:
        self.state.refresh()
        if self.entities is not None:
            self.entities.refresh()
        if self.overrides is not None:
            self.overrides.refresh()
        self.recorder.start()

    def on_stop(self) -> None:
        self.recorder.stop(RECORDER_STOP_SECONDS)
        super().on_stop()

    def process(self, batch: Batch) -> Processed:
        decider = self.state.decider
        if decider is None:
            raise Retry("no model loaded from the store yet")
        entities = self.entities
        if entities is not None and not entities.loaded:
            raise Retry("no entity memory loaded from the store yet")
        records = batch.records
        result = decide_payloads(
            decider,
            self.state.threshold,
            [r.value for r in records],
            self.max_bytes,
            records,
            evidence=entities.evidence if entities is not None else None,
            overrides=self.overrides.overridden if self.overrides is not None else None,
        )
        self.guard.check(result.undecodable)
        entity_records, entity_events = entities.take() if entities is not None else ({}, [])
        written = self.recorder.put(
            [(d.message_id, d.partition, d.offset) for d in result.decisions],
            queue_for_review(result, self.queue),
            entity_records,
            with_decisions(entity_events, result.decisions),
            {
                d.message_id: t.tokens
                for d, t in zip(result.decisions, result.tokens)
                if fits(t.tokens, self.keep_tokens_bytes)
            },
        )
        self.publisher.send_keyed(
            self.decisions_topic, [(d.message_id, encode(d)) for d in result.decisions]
        )
        for i, reason, error in result.failures:
            self.dead_letter(batch.records[i], reason, error)
        # before the flush: once a decision is out, feedback naming its message may follow at once
        self.recent.put([d.message_id for d in result.decisions], [t.tokens for t in result.tokens])
        self.publisher.flush()
        self.metrics.decision_latency.observe(
            time.monotonic() - batch.polled_at, len(result.decisions)
        )
        for (label, by), count in Counter(
            (d.label, d.decided_by) for d in result.decisions
        ).items():
            self.metrics.decisions.labels(label=label, decided_by=by).inc(count)
        self.metrics.messages.labels(outcome="decided").inc(len(result.decisions))
        self.metrics.messages.labels(outcome="dead_lettered").inc(len(result.failures))
        counts = {"decided": len(result.decisions), "dead_lettered": len(result.failures)}
        return Processed(counts, written)


def fits(tokens: Sequence[str], limit: int) -> bool:
    """Whether `tokens` take at most `limit` bytes as kept: UTF-8, one byte between them.

    >>> fits(["win", "£5"], 7), fits(["win", "£5"], 6)
    (True, False)
    """
    if len(tokens) > limit or sum(map(len, tokens)) + len(tokens) - 1 > limit:
        return False  # a character is at least a byte: no need to encode
    return len("\x00".join(tokens).encode("utf-8", "surrogatepass")) <= limit


def with_decisions(
    events: Sequence[tuple[str, EntityEvent]], decisions: Sequence[Decision]
) -> list[DecidedEvent]:
    """A batch's entity events, each with its message's decision (what an analyst's entity page
    shows beside the message)."""
    decided = {d.message_id: (d.label, d.score, d.decided_by) for d in decisions}
    return [DecidedEvent(m, event, *decided.get(m, (None, None, None))) for m, event in events]


def queue_for_review(result: Decided, queue: Review) -> list[ReviewItem]:
    """The review items of a batch's decisions that `queue` takes (`review_reasons`, and those
    a review list entry or rule marked `review`: reason "list" or "rule"), each of those
    decisions marked `review`; none when the queue holds no items."""
    if not queue.max_items:
        return []
    reasons: list[Reason | None] = [None] * len(result.decisions)
    if queue.band or queue.random_share:
        reasons = review_reasons(result.decisions, queue.band, queue.random_share)
    items = []
    for i, (decision, reason) in enumerate(zip(result.decisions, reasons)):
        entry = result.overridden[i]
        if decision.review and entry is not None:  # a review list entry's or rule's
            reason = entry.decided_by
        if reason is not None:
            decision.review = True
            items.append(
                queued_item(
                    result.messages[i], decision, result.tokens[i], reason, queue.excerpt_chars
                )
            )
    return items
