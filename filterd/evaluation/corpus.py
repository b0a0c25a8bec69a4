"""Labelled corpora in the shared JSON Lines format, as data: parse, serialize, relabel, split.

One JSON object per line: `id`, `label` (or `labels` for multi-label corpora), `text`,
`format` ("text" | "email"), `order` (stream position), optional `split` ("train" | "test").
A line is a filterd message plus its label: it may carry any other field of a message (`ts`, an
ISO 8601 time; `attributes`, a JSON object; `sender`, `subject`, `tenant`, strings), which the
record keeps and hands on as the message. Other keys (a corpus's evaluation-only metadata, such
as card-transactions' `scenario`) are ignored: never part of the message, never tokenized.
Pure: this module takes and returns lines and records; opening, decompressing and writing
files is `filterd.cli.corpus_files`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

_FORMATS = ("text", "email")
_SPLITS = ("train", "test")
# message fields a line may carry besides id, text and format: handed on as they are
_STRING_FIELDS = ("sender", "subject", "tenant")


class CorpusError(Exception):
    """Unreadable or malformed corpus; the message names the source (a file) and the line."""


@dataclass(frozen=True, slots=True)
class Record:
    """One labelled message of a corpus."""

    id: str
    labels: tuple[str, ...]  # one for single-label corpora, one or more for multi-label
    text: str
    format: str  # "text" | "email"
    order: int  # stream position; records are read sorted by it
    split: str | None  # "train" | "test" | None
    # the line of the file it was read from, for messages about it (None: not read from a file)
    line: int | None = field(default=None, compare=False)
    ts: datetime | None = None  # when the message was sent (timezone-aware; naive read as UTC)
    # the message's other fields as read: `attributes` (a dict), `sender`, `subject`, `tenant`
    fields: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def label(self) -> str:
        """The single label; ValueError if the record has several."""
        if len(self.labels) != 1:
            raise ValueError(f"record {self.id!r} has {len(self.labels)} labels, not one")
        return self.labels[0]

    def message(self) -> dict[str, Any]:
        """The record as a filterd message (no label): {"id", "text", "format"}, its other
        fields, and `ts` in ISO 8601.

        >>> message = Record("t1", ("fraud",), "", "text", 1, None,
        ...     ts=datetime(2018, 4, 1, tzinfo=UTC), fields={"attributes": {"amount": 5.0}}
        ... ).message()
        >>> message["attributes"], message["ts"]
        ({'amount': 5.0}, '2018-04-01T00:00:00+00:00')
        """
        message: dict[str, Any] = {"id": self.id, "text": self.text, "format": self.format}
        message.update(self.fields)
        if self.ts is not None:
            message["ts"] = self.ts.isoformat()
        return message


def parse_corpus(lines: Iterable[bytes | str], source: str) -> list[Record]:
    """The records of a corpus's lines (line 1 first), sorted by `order` (ties keep line
    order); empty lines are skipped.

    Raises CorpusError, naming `source` and the line, if a line is not JSON or a record lacks
    id/text/label(s), has an invalid field, or repeats an id. An error the iteration over
    `lines` raises propagates unchanged.
    """
    records: list[Record] = []
    seen: dict[str, int] = {}  # id -> line of first occurrence
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
            raise CorpusError(f"{source}:{lineno}: not valid JSON: {e}") from None
        try:
            record = replace(_record(obj, default_order=len(records) + 1), line=lineno)
        except ValueError as e:
            raise CorpusError(f"{source}:{lineno}: {e}") from None
        if record.id in seen:
            raise CorpusError(
                f"{source}:{lineno}: duplicate id {record.id!r} (first on line {seen[record.id]})"
            )
        seen[record.id] = lineno
        records.append(record)
    records.sort(key=lambda r: r.order)
    return records


def corpus_lines(records: Iterable[Record | Mapping[str, Any]]) -> Iterator[str]:
    """Records (Record objects or corpus-format dicts, as given) as JSON Lines, each ending
    in a newline."""
    return (json.dumps(_as_dict(r), ensure_ascii=False) + "\n" for r in records)


def to_records(objects: Iterable[Mapping[str, Any]]) -> list[Record]:
    """Records from corpus-format dicts (e.g. `filterd.evaluation.synth.generate`), checked
    like a corpus's lines."""
    records = []
    for position, obj in enumerate(objects, start=1):
        try:
            records.append(_record(dict(obj), position))
        except ValueError as e:
            raise CorpusError(f"record {position}: {e}") from None
    return sorted(records, key=lambda r: r.order)


def is_multilabel(records: Iterable[Record]) -> bool:
    """True if any record has more than one label."""
    return any(len(r.labels) > 1 for r in records)


def relabel(records: Iterable[Record], mapping: Mapping[str, str]) -> list[Record]:
    """The records with every label OLD in `mapping` replaced by mapping[OLD], in one pass (no
    chaining: {a: b, b: c} turns a into b, not c); labels not in `mapping` are kept. Several OLD
    may map to one NEW: a record's labels keep their first-seen order without repeats. Other
    fields are unchanged; the input is not modified.

    >>> records = [Record("1", ("smishing",), "win", "text", 1, None),
    ...            Record("2", ("spam", "smishing", "promo"), "win", "text", 2, None)]
    >>> [r.labels for r in relabel(records, {"smishing": "spam"})]
    [('spam',), ('spam', 'promo')]
    """
    return [
        replace(r, labels=tuple(dict.fromkeys(mapping.get(label, label) for label in r.labels)))
        for r in records
    ]


def train_test_split(
    records: Iterable[Record], *, test_fraction: float = 0.34, seed: int = 0
) -> tuple[list[Record], list[Record]]:
    """(train, test), each sorted by `order`. Deterministic.

    If every record has a `split`, that split is used as is (test_fraction and seed are
    ignored). Otherwise the split is stratified by first label: each class puts
    round(test_fraction * n_class) of its records, chosen with numpy default_rng(seed),
    into test.
    """
    if not 0 <= test_fraction <= 1:
        raise ValueError(f"test_fraction must lie in [0, 1], got {test_fraction}")
    records = sorted(records, key=lambda r: r.order)
    if records and all(r.split is not None for r in records):
        return (
            [r for r in records if r.split == "train"],
            [r for r in records if r.split == "test"],
        )

    by_class: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        by_class.setdefault(r.labels[0], []).append(i)
    rng = np.random.default_rng(seed)
    in_test = np.zeros(len(records), dtype=bool)
    for members in by_class.values():
        n_test = round(test_fraction * len(members))
        in_test[rng.choice(members, size=n_test, replace=False)] = True
    return (
        [r for r, t in zip(records, in_test) if not t],
        [r for r, t in zip(records, in_test) if t],
    )


def _record(obj: object, default_order: int) -> Record:
    """A Record from one decoded JSON line; ValueError says what is wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    record_id = obj.get("id")
    if not isinstance(record_id, str) or not record_id or "\x00" in record_id:
        raise ValueError("missing or invalid 'id' (a non-empty string without NUL)")
    text = obj.get("text")
    if not isinstance(text, str):
        raise ValueError(f"record {record_id!r}: missing or invalid 'text' (a string)")

    if "label" in obj and "labels" in obj:
        raise ValueError(f"record {record_id!r}: has both 'label' and 'labels'")
    if "labels" in obj:
        labels = obj["labels"]
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(x, str) and x and "\x00" not in x for x in labels)
        ):
            raise ValueError(
                f"record {record_id!r}: 'labels' must be a non-empty list of strings without NUL"
            )
        labels = tuple(labels)
    else:
        label = obj.get("label")
        if not isinstance(label, str) or not label or "\x00" in label:
            raise ValueError(
                f"record {record_id!r}: missing or invalid 'label' (or 'labels'; a string "
                "without NUL)"
            )
        labels = (label,)

    fmt = obj.get("format", "text")
    if fmt not in _FORMATS:
        raise ValueError(f"record {record_id!r}: 'format' must be one of {_FORMATS}, got {fmt!r}")
    order = obj.get("order", default_order)
    if not isinstance(order, int) or isinstance(order, bool):
        raise ValueError(f"record {record_id!r}: 'order' must be an integer, got {order!r}")
    split = obj.get("split")
    if split is not None and split not in _SPLITS:
        raise ValueError(f"record {record_id!r}: 'split' must be one of {_SPLITS}, got {split!r}")
    return Record(
        record_id, labels, text, fmt, order, split, ts=_ts(obj, record_id), fields=_fields(obj)
    )


def _ts(obj: dict[str, Any], record_id: str) -> datetime | None:
    """The line's `ts` as an aware datetime (naive is UTC, as the daemon reads a message's)."""
    ts = obj.get("ts")
    if ts is None:
        return None
    try:
        if not isinstance(ts, str):
            raise ValueError
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        raise ValueError(
            f"record {record_id!r}: 'ts' must be an ISO 8601 time, e.g. 2018-04-01T00:00:31Z, "
            f"got {ts!r}"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The line's other message fields, checked as the message schema checks them."""
    fields: dict[str, Any] = {}
    record_id = obj["id"]
    attributes = obj.get("attributes")
    if attributes is not None:
        if not isinstance(attributes, dict):
            raise ValueError(
                f"record {record_id!r}: 'attributes' must be a JSON object, got "
                f"{type(attributes).__name__}"
            )
        fields["attributes"] = attributes
    for name in _STRING_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"record {record_id!r}: {name!r} must be a string, got {value!r}")
        fields[name] = value
    return fields


def _as_dict(record: Record | Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(record, Record):
        return record
    d: dict[str, Any] = {"id": record.id}
    if len(record.labels) == 1:
        d["label"] = record.labels[0]
    else:
        d["labels"] = list(record.labels)
    d.update(text=record.text, format=record.format, order=record.order)
    if record.split is not None:
        d["split"] = record.split
    if record.ts is not None:
        d["ts"] = record.ts.isoformat()
    d.update(record.fields)
    return d
