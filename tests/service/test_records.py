import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import msgspec
import pytest

from filterd.service.records import (
    RECORDS,
    DeadLetter,
    Decision,
    Feedback,
    Message,
    RecordError,
    decode,
    encode,
    schemas,
)

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def test_the_schema_files_are_generated_from_the_record_types() -> None:
    on_disk = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")}
    assert on_disk == schemas(), (
        "schemas/ is stale: run `python -m filterd.service.records schemas`"
    )


def test_a_message_decodes_with_defaults_and_ignores_unknown_fields() -> None:
    message = decode(
        b'{"id": "m1", "text": "free cash", "ts": "2026-11-21T12:00:00Z", "extra": 1}', Message
    )
    assert (message.id, message.format, message.ts) == ("m1", "text", NOW)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b'{"text": "no id"}', "schema"),
        (b'{"id": ""}', "schema"),
        (b'{"id": "m\\u0000", "text": "an id no database can store"}', "schema"),
        (b'{"id": "m1", "format": "fax"}', "schema"),
        (b'{"id": "m1", "text": "unterminated', "invalid_json"),
        (b"\xff\xfe not utf-8", "invalid_utf8"),
        (b'{"id": "m1", "text": "\xff\xfe"}', "invalid_utf8"),  # whatever msgspec's version says
        (b"not json", "invalid_json"),
        (b'{"id": "m1", "attributes": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001, "too_deep"),
    ],
)
def test_bad_records_are_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(RecordError) as refused:
        decode(data, Message, max_bytes=10_000_000)
    assert refused.value.reason == reason and str(refused.value)


def test_oversized_records_are_refused_before_decoding() -> None:
    with pytest.raises(RecordError, match="exceeds the limit") as refused:
        decode(b'{"id": "m1", "text": "' + b"x" * 2000 + b'"}', Message, max_bytes=1000)
    assert refused.value.reason == "oversized"


def test_feedback_knows_whether_it_carries_the_message() -> None:
    assert not decode(b'{"message_id": "m1", "label": "spam"}', Feedback).has_message
    assert decode(b'{"message_id": "m1", "label": "spam", "text": "hi"}', Feedback).has_message
    with pytest.raises(RecordError):
        decode(b'{"message_id": "m1", "label": "spam", "source": "robot"}', Feedback)


DECISION = Decision(
    message_id="m1",
    label="spam",
    score=3.2,
    threshold=1.5,
    target_recall=0.99,
    model_version=7,
    threshold_version=None,
    explanation=[("free", 1.2), ("cash", 0.7)],
    scored_at=NOW,
    source_topic="filterd.messages",
    partition=2,
    offset=1041,
)


def examples() -> Iterator[tuple[str, msgspec.Struct]]:
    yield (
        "message",
        Message(id="m1", text="free", attributes={"amount": 250.5, "tags": ["a"]}, ts=NOW),
    )
    yield "feedback", Feedback(message_id="m1", label="spam", analyst="kim", ts=NOW)
    yield "decision", DECISION
    yield (
        "dead-letter",
        DeadLetter(
            source_topic="messages",
            partition=0,
            offset=42,
            error="not JSON",
            reason="invalid_json",
            payload="{oops",
            payload_truncated=False,
            failed_at=NOW,
        ),
    )


@pytest.mark.parametrize("name, record", list(examples()))
def test_encoded_records_validate_against_their_schema_file(
    name: str, record: msgspec.Struct
) -> None:
    schema = json.loads((SCHEMAS / f"{name}.v1.json").read_text())
    jsonschema.validate(json.loads(encode(record)), schema)
    assert decode(encode(record), RECORDS[name]) == record


def test_the_schema_files_reject_what_decoding_rejects() -> None:
    schema = json.loads((SCHEMAS / "decision.v1.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"message_id": "m1", "label": "spam", "score": 1.0}, schema)


def test_a_decision_carries_its_messages_coordinates_under_the_dead_letters_names() -> None:
    encoded = json.loads(encode(DECISION))
    coordinates = encoded["source_topic"], encoded["partition"], encoded["offset"]
    assert coordinates == ("filterd.messages", 2, 1041)
    assert encoded["review"] is False  # until the review queue marks it
    letter = json.loads((SCHEMAS / "dead-letter.v1.json").read_text())["properties"]
    assert {"source_topic", "partition", "offset"} <= letter.keys()
    marked = msgspec.structs.replace(DECISION, review=True)
    assert decode(encode(marked), Decision).review is True


@pytest.mark.parametrize("missing", ["source_topic", "partition", "offset"])
def test_a_decision_without_its_coordinates_is_refused(missing: str) -> None:
    record = json.loads(encode(DECISION))
    del record[missing]
    schema = json.loads((SCHEMAS / "decision.v1.json").read_text())
    with pytest.raises(jsonschema.ValidationError, match=missing):
        jsonschema.validate(record, schema)
    with pytest.raises(RecordError, match=missing):
        decode(json.dumps(record).encode(), Decision)


@pytest.mark.parametrize(
    "feedback",
    [{"message_id": "m\x00", "label": "spam"}, {"message_id": "m1", "label": "sp\x00am"}],
)
def test_feedback_whose_id_or_label_no_database_can_store_is_refused(
    feedback: dict[str, str],
) -> None:
    with pytest.raises(RecordError) as refused:
        decode(json.dumps(feedback).encode(), Feedback)
    assert refused.value.reason == "schema"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(feedback, json.loads((SCHEMAS / "feedback.v1.json").read_text()))
