"""The scorer: messages topic → decisions topic (one decision per message, keyed by its id),
bad records → dead-letter topic with the reason.

A record is dead-lettered when it is not a valid message (reasons of `filterd.service.records.decode`:
oversized, invalid_json, invalid_utf8, schema, too_deep) or when tokenizing it hit a limit that makes its
decision meaningless (`REJECTED_FLAGS`); a mail with minor MIME defects is still decided,
because spam often has them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Unpack

from filterd.daemon.loop import Loop, LoopSettings, Retry
from filterd.daemon.model_state import ModelState
from filterd.daemon.recent import RecentMessages
from filterd.kafka.consumer import Batch
from filterd.service.decide import Decider, ThresholdSetting, message_fields
from filterd.service.records import Content, Decision, Message, RecordError, decode, encode
from filterd.tokenize import Tokenizer
from filterd.tokenize.limits import BAD_MESSAGE, INTERNAL_ERROR, MAX_DEPTH, MAX_TOKENS

REJECTED_FLAGS = {
    MAX_TOKENS: "too_many_tokens",
    MAX_DEPTH: "too_deep",
    BAD_MESSAGE: "bad_message",
    INTERNAL_ERROR: "tokenizer_error",
}


def accepted_tokens(tokenizer: Tokenizer, message_id: str, content: Content) -> list[str]:
    """The tokens of a message, or RecordError when tokenizing it hit a limit in REJECTED_FLAGS."""
    result = tokenizer(message_fields(content))
    for flag, reason in REJECTED_FLAGS.items():
        if flag in result.flags:
            raise RecordError(
                reason, f"message {message_id!r}: tokenizer flags {sorted(result.flags)}"
            )
    return result.tokens


class Scorer(Loop):
    role = "scorer"

    def __init__(self, state: ModelState, recent: RecentMessages, decisions_topic: str, max_bytes: int,
                 **loop: Unpack[LoopSettings]) -> None:  # fmt: skip
        super().__init__(**loop)
        self.state, self.recent = state, recent
        self.decisions_topic, self.max_bytes = decisions_topic, max_bytes

    def on_idle(self) -> None:
        self.state.refresh()

    def process(self, batch: Batch) -> dict[str, int]:
        decider = self.state.decider
        if decider is None:
            raise Retry("no model loaded from the store yet")
        result = decide_payloads(
            decider, self.state.threshold, [r.value for r in batch.records], self.max_bytes
        )
        self.guard.check(result.dead)
        self.publisher.send_keyed(
            self.decisions_topic, [(d.message_id, encode(d)) for d in result.decisions]
        )
        for i, reason, error in result.failures:
            self.dead_letter(batch.records[i], reason, error)
        # before the flush: once a decision is out, feedback naming its message may follow at once
        self.recent.put([d.message_id for d in result.decisions], result.tokens)
        self.flush()
        self.metrics.decision_latency.observe(
            time.monotonic() - batch.polled_at, len(result.decisions)
        )
        for label, count in Counter(d.label for d in result.decisions).items():
            self.metrics.decisions.labels(label=label).inc(count)
        self.metrics.messages.labels(outcome="decided").inc(len(result.decisions))
        self.metrics.messages.labels(outcome="dead_lettered").inc(len(result.failures))
        return {"decided": len(result.decisions), "dead_lettered": len(result.failures)}


@dataclass
class Decided:
    """What a batch of raw records came to: decisions (with the tokens they rest on) and failures."""

    decisions: list[Decision]
    tokens: list[list[str]]
    failures: list[tuple[int, str, str]]  # (position in the batch, dead-letter reason, error)
    dead: list[bool]  # per record, in order


def decide_payloads(decider: Decider, threshold: ThresholdSetting, payloads: Sequence[bytes | None],
                    max_bytes: int) -> Decided:  # fmt: skip
    """Decode, validate, tokenize and decide raw message records (the daemon and `filterd score`)."""
    messages, tokens, failures, dead = [], [], [], []
    for i, payload in enumerate(payloads):
        try:
            message = decode(payload or b"", Message, max_bytes)
            message_tokens = accepted_tokens(decider.tokenizer, message.id, message)
        except RecordError as error:
            failures.append((i, error.reason, str(error)))
            dead.append(True)
            continue
        messages.append(message)
        tokens.append(message_tokens)
        dead.append(False)
    return Decided(decider.decide(messages, threshold, tokens), tokens, failures, dead)
