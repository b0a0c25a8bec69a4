"""The public record types: message, feedback, decision, dead-letter (docs/architecture.md,
"Record contracts").

Typed structs are the one source of truth: decoding a record validates it, and the JSON Schema
files in the top-level `schemas/` are generated from them
(`python -m filterd.service.records schemas/`; a test fails while the files are stale). Unknown
fields are ignored, so producers may add some.
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from filterd.tokenize import TokenizerConfig

VERSION = 1
# PostgreSQL text cannot hold NUL: an id or label with one could never be stored, and feedback
# carrying one would be retried forever instead of dead-lettered.
WITHOUT_NUL = "^[^\x00]*$"
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=WITHOUT_NUL)]
Label = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=WITHOUT_NUL)]
Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


def id_digest(message_id: str, person: bytes = b"", signed: bool = False) -> int:
    """8 bytes of the BLAKE2b hash of a message id as an integer: what the holdout share, the
    review queue's random share (each with its own `person`, so they are independent) and the
    decided messages' row key rest on. Stable across processes and runs.

    >>> id_digest("m1") == id_digest("m1") != id_digest("m2")
    True
    >>> 0 <= id_digest("m1") < 2**64 and -(2**63) <= id_digest("m1", signed=True) < 2**63
    True
    """
    digest = hashlib.blake2b(
        message_id.encode("utf-8", "surrogatepass"), digest_size=8, person=person
    )
    return int.from_bytes(digest.digest(), "big", signed=signed)


class Content(msgspec.Struct, kw_only=True):
    """What a message says: the fields the tokenizer reads. Raw RFC 822 mail goes in `text`
    with `format: email`."""

    text: str | None = None
    subject: str | None = None
    sender: str | None = None
    format: Literal["text", "email"] = "text"
    attributes: dict[str, Any] | None = None
    ts: datetime | None = None


class Message(Content, kw_only=True):
    """A message to decide on. Raw RFC 822 mail goes in `text` with `format: email`."""

    id: Id
    tenant: str | None = None


class Feedback(Content, kw_only=True):
    """A label for a message, new or corrected; without message fields it names a decided
    message by id (the learner finds it, or keeps the label until it can)."""

    message_id: Id
    label: Label
    source: Literal["analyst", "auto"] = "analyst"
    stage: Annotated[
        Literal["early", "final"] | None,
        msgspec.Meta(
            description="early: a first word that may change (a customer's fraud report, a "
            "dispute opened), learned at once; final: the settled label (a confirmed "
            "chargeback, a dispute cleared), which replaces an early one that differs. Kept "
            "on the audit trail; none: final."
        ),
    ] = None
    analyst: Annotated[str, msgspec.Meta(max_length=200, pattern=WITHOUT_NUL)] | None = None
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

    @property
    def has_message(self) -> bool:
        return any(v is not None for v in (self.text, self.subject, self.sender, self.attributes))


class Decision(msgspec.Struct, kw_only=True):
    """The filter's decision on one message, with the tokens it rested on and where the message
    was read (its provenance)."""

    message_id: Id
    label: Label
    score: float
    threshold: float
    target_recall: Probability
    model_version: int
    threshold_version: int | None
    explanation: list[tuple[str, float]]
    scored_at: datetime
    truncated: Annotated[
        bool,
        msgspec.Meta(
            description="A limit (limits.max_bytes, limits.max_tokens, the MIME or attribute "
            "bounds) cut the message short; it was decided on what was read."
        ),
    ] = False
    # Where the message was read, named as in the dead-letter record (`source_topic`,
    # `partition`, `offset`): a message's coordinates have the same keys in both records.
    # Required: every decision filterd makes has them, so readers can rely on them.
    source_topic: Annotated[
        str,
        msgspec.Meta(
            description='The topic the message was read from ("stdin" for `filterd score`). '
            "With `partition` and `offset`, the message's coordinates, under the same names as "
            "in the dead-letter record."
        ),
    ]
    partition: Annotated[
        int,
        msgspec.Meta(
            description="The partition of `source_topic` the message was read from (0 for "
            "`filterd score`); named as in the dead-letter record. Not the partition of this "
            "decision in the decisions topic."
        ),
    ]
    offset: Annotated[
        int,
        msgspec.Meta(
            description="The message's offset in its partition of `source_topic` (for "
            "`filterd score`: its line number on stdin, from 1); named as in the dead-letter "
            "record. Not the offset of this decision in the decisions topic."
        ),
    ]
    review: Annotated[
        bool,
        msgspec.Meta(
            description="Queued for an analyst's review: the score is within review.band of "
            "the threshold, or the message is in the review queue's random share."
        ),
    ] = False
    decided_by: Annotated[
        Literal["model", "list", "rule"],
        msgspec.Meta(
            description='"list": an allow or block list entry of one of the message\'s '
            'entities decided the label, whatever the score; "rule": a block or allow rule '
            "over its attributes and entity features did (the entry or rule is the first line "
            "of `evidence`); such decisions are counted apart from the model's. "
            '"model": the score against the threshold.'
        ),
    ] = "model"
    evidence: Annotated[
        list[str],
        msgspec.Meta(
            description="What the entity memory knew of the message's entities when it was "
            'decided, in words ("7 messages of customer c596 in the last 1h"): what stands '
            "out of the entity tokens it was decided on. Empty without [entities] keys."
        ),
    ] = msgspec.field(default_factory=list)


class DeadLetter(msgspec.Struct, kw_only=True):
    """A record that could not be processed, with the reason and where it came from."""

    source_topic: str
    partition: int
    offset: int
    error: str
    reason: str
    payload: str  # as received (decoded with replacement), cut at `payload_limit` bytes
    payload_truncated: bool
    failed_at: datetime


RECORDS: dict[str, type[msgspec.Struct]] = {
    "message": Message,
    "feedback": Feedback,
    "decision": Decision,
    "dead-letter": DeadLetter,
}
T = TypeVar("T", bound=msgspec.Struct)


class RecordError(ValueError):
    """A record that cannot be accepted; `reason` is a short code for metrics and dead letters."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def decode(data: bytes, kind: type[T], max_bytes: int = TokenizerConfig.max_bytes) -> T:
    """Decode and validate one JSON record, or raise RecordError (reasons: oversized,
    invalid_json, invalid_utf8, schema, too_deep)."""
    if len(data) > max_bytes:
        raise RecordError(
            "oversized", f"record of {len(data)} bytes exceeds the limit of {max_bytes}"
        )
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as error:
        raise RecordError("schema", f"not a valid {kind.__name__.lower()}: {error}") from None
    except msgspec.DecodeError as error:
        # msgspec before 0.23 raised UnicodeDecodeError for bad UTF-8 in a string, later
        # versions a DecodeError: the reason is the bytes', whichever version decoded them.
        if (utf8 := _utf8_error(data)) is not None:
            raise RecordError("invalid_utf8", f"not UTF-8: {utf8}") from None
        raise RecordError("invalid_json", f"not JSON: {error}") from None
    except UnicodeDecodeError as error:
        raise RecordError("invalid_utf8", f"not UTF-8: {error}") from None
    except RecursionError:
        raise RecordError("too_deep", "nested too deeply") from None


def _utf8_error(data: bytes) -> UnicodeDecodeError | None:
    """Why `data` is not UTF-8, or None if it is.

    >>> _utf8_error(b'{"text": "caf\\xc3\\xa9"}') is None
    True
    >>> _utf8_error(b'{"text": "\\xff"}').start
    10
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return error
    return None


def encode(record: msgspec.Struct) -> bytes:
    return msgspec.json.encode(record)


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each record type, by file name."""
    out = {}
    for name, kind in RECORDS.items():
        schema = msgspec.json.schema(kind)
        definition = schema["$defs"][kind.__name__]
        definition.update(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$id": f"urn:filterd:schema:{name}:v{VERSION}",
                "description": " ".join((kind.__doc__ or "").split()),
            }
        )
        defs = {k: v for k, v in schema["$defs"].items() if k != kind.__name__}
        if defs:
            definition["$defs"] = defs
        out[f"{name}.v{VERSION}.json"] = definition
    return out


def write_schemas(directory: str | Path) -> list[Path]:
    written = []
    for file_name, schema in schemas().items():
        path = Path(directory) / file_name
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas(sys.argv[1] if len(sys.argv) > 1 else "schemas"):
        print(path)
