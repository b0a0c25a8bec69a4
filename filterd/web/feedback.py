"""POST /v1/feedback: an analyst's label, published to the feedback topic.

The learner stays the one writer of statistics: the API only publishes the feedback record,
as `filterd review label` does, and answers once the broker has acknowledged it. The record's
`analyst` is the name of the credential the request was authenticated with, whatever the body
says, and its `source` is "analyst". A label outside `model.labels` is refused here (422), where
the learner would dead-letter it. A broker that does not take the label within
`http.publish_seconds` is a 503 with Retry-After, which says whether the label was sent
(`filterd.web.labels`).
"""

from __future__ import annotations

import math

import msgspec
from starlette.concurrency import run_in_threadpool

from filterd.kafka.producer import NotSent, PublishError
from filterd.service.records import Feedback, RecordError, decode, encode
from filterd.web.api import FeedbackAccepted, FeedbackRequest
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body


async def send_feedback(context: WebContext, body: bytes, analyst: str) -> FeedbackAccepted:
    """Publish the label of `body` as given by `analyst`, or a Problem: 400 not JSON, 422 a
    field that does not validate or a label not configured, 503 the broker did not take it."""
    request: FeedbackRequest = await run_in_threadpool(decode_body, body, FeedbackRequest)
    (accepted,) = await publish_labels(context, [request], analyst)
    return accepted


async def publish_labels(
    context: WebContext, requests: list[FeedbackRequest], analyst: str
) -> list[FeedbackAccepted]:
    """Publish `requests` as given by `analyst`, in one batch (the workbench's forms come here
    too), or a Problem: 422 a label not configured or a record the learner would refuse (none
    is sent then), 503 or 504 the brokers did not take them (`unpublished`)."""
    records = await run_in_threadpool(feedback_records, context, requests, analyst)
    topic = context.config.topics.feedback
    try:
        await context.labels.publish(topic, [(r.message_id, value) for r, value in records])
    except PublishError as error:
        raise unpublished(error, context.labels.seconds) from None
    return [
        FeedbackAccepted(message_id=r.message_id, label=r.label, analyst=analyst, topic=topic)
        for r, _ in records
    ]


def feedback_records(
    context: WebContext, requests: list[FeedbackRequest], analyst: str
) -> list[tuple[Feedback, bytes]]:
    """The feedback records of `requests`, encoded, each checked as the learner will read it:
    a 422 Problem for a label not configured or a record it would dead-letter."""
    config = context.config
    labels = config.model.labels
    records = []
    for request in requests:
        if labels and request.label not in labels:
            configured = ", ".join(labels)
            error = f"label {request.label!r} is not one of {configured} (model.labels)"
            raise Problem(422, error, "$.label")
        # the request's fields (the label, its comment, the message's fields) as they are
        fields = msgspec.structs.asdict(request)
        record = Feedback(**fields, source="analyst", analyst=analyst)
        value = encode(record)
        try:  # as the learner will read it: a record it would dead-letter is refused now
            decode(value, Feedback, config.limits.max_bytes)
        except RecordError as error:
            raise Problem(422, str(error)) from None
        records.append((record, value))
    return records


def unpublished(error: PublishError, seconds: float) -> Problem:
    """The answer to labels the brokers did not acknowledge within `seconds`, with Retry-After:
    503 when none was sent (none will be recorded; `Busy` and `NotSent`), 504 when they were
    sent (they may still be recorded; sending them again is harmless)."""
    retry = {"Retry-After": str(math.ceil(seconds))}
    if isinstance(error, NotSent):
        return Problem(503, f"not recorded: {error}. Send the label again later", headers=retry)
    outcome = "it may still be recorded when they recover; sending it again is harmless"
    text = f"the brokers did not acknowledge the label within {seconds:g} s ({error}): {outcome}"
    return Problem(504, text, headers=retry)
