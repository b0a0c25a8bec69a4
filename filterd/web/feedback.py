"""POST /v1/feedback: an analyst's label, published to the feedback topic.

The learner stays the one writer of statistics: the API only publishes the feedback record,
as `filterd review label` does, and answers once the broker has acknowledged it. The record's
`analyst` is the name of the credential the request was authenticated with, whatever the body
says, and its `source` is "analyst". A label outside `model.labels` is refused here (422), where
the learner would dead-letter it.
"""

from __future__ import annotations

from filterd.kafka.producer import PublishError
from filterd.service.records import Feedback, RecordError, decode, encode
from filterd.web.api import FeedbackAccepted, FeedbackRequest
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body


def send_feedback(context: WebContext, body: bytes, analyst: str) -> FeedbackAccepted:
    """Publish the label of `body` as given by `analyst`, or a Problem: 400 not JSON, 422 a
    field that does not validate or a label not configured, 503 the broker did not take it."""
    return publish_label(context, decode_body(body, FeedbackRequest), analyst)


def publish_label(context: WebContext, request: FeedbackRequest, analyst: str) -> FeedbackAccepted:
    """Publish `request` as given by `analyst` (the workbench's forms come here too), or a
    Problem: 422 a label not configured or a record the learner would refuse, 503 the broker
    did not take it."""
    config = context.config
    labels = config.model.labels
    if labels and request.label not in labels:
        raise Problem(422, f"label {request.label!r} is not one of {', '.join(labels)} "
                           "(model.labels)", "$.label")  # fmt: skip
    record = Feedback(message_id=request.message_id, label=request.label, source="analyst",
                      analyst=analyst, comment=request.comment, text=request.text,
                      subject=request.subject, sender=request.sender, format=request.format,
                      attributes=request.attributes, ts=request.ts)  # fmt: skip
    value = encode(record)
    try:  # as the learner will read it: a record it would dead-letter is refused now
        decode(value, Feedback, config.limits.max_bytes)
    except RecordError as error:
        raise Problem(422, str(error)) from None
    topic = config.topics.feedback
    try:
        context.labels.send(topic, record.message_id, value)
    except PublishError as error:
        raise Problem(503, f"the brokers did not acknowledge the label: {error}") from None
    return FeedbackAccepted(message_id=record.message_id, label=record.label, analyst=analyst,
                            topic=topic)  # fmt: skip
