"""POST /v1/check: decide on one message or a batch, synchronously, without learning.

The body decodes as the scorer decodes a record of the messages topic: the same `Message` type,
validated by msgspec; the request's size is bounded by `limits.max_bytes` before it is read
(`filterd.web.app`). The messages are tokenized and decided through the scorer's own path
(`decide_messages`, with the API's own tokenizer, configured as the scorer's: a message the
tokenizer cannot read at all is refused) by the scorer's `Decider` with the threshold in
force, and in `filterd run` the scorer's entity memory (read, not added to), so a message gets
the score it would get on the messages topic. Nothing is published, queued for review or
recorded.
"""

from __future__ import annotations

from filterd.service.decide import Position, decide_messages
from filterd.service.records import Message
from filterd.web.api import CheckRequest, CheckResponse
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body

SOURCE_TOPIC = "http"  # the decisions' `source_topic`: the message came over HTTP
# a body up to this size is checked on the event loop (a few messages: less work than a thread
# hop); a larger one in the thread pool, so that a big batch does not hold up other requests
INLINE_BYTES = 16_384


def check(context: WebContext, body: bytes) -> CheckResponse:
    """The decisions on the message(s) of `body`, in order, or a Problem: 400 not JSON, 422 a
    field that does not validate or a message the tokenizer refuses, 503 no model loaded yet."""
    messages, single = decode_messages(body)
    scoring = context.scoring
    # read once: the scorer's thread may replace either meanwhile, and a decision must use one
    decider, threshold = scoring.decider, scoring.threshold
    if decider is None:
        raise Problem(503, "no model loaded from the store yet: try again shortly")
    where = [Position(i, SOURCE_TOPIC) for i in range(len(messages))]
    decided = decide_messages(
        decider,
        threshold,
        messages,
        where,
        context.tokenizer,
        evidence=context.evidence,
        overrides=context.overrides,
    )
    for i, reason, error in decided.failures[:1]:
        raise Problem(422, f"{reason}: {error}", "$" if single else f"$[{i}]")
    return CheckResponse(decisions=decided.decisions, not_ready=decider.not_ready)


def decode_messages(body: bytes) -> tuple[list[Message], bool]:
    """The messages of a check's body, and whether it was a single one (not a list)."""
    decoded: Message | list[Message] = decode_body(body, CheckRequest)
    if isinstance(decoded, Message):
        return [decoded], True
    return decoded, False
