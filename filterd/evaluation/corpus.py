"""Labelled corpora in the shared JSON Lines format: read, write, split.

One JSON object per line: `id`, `label` (or `labels` for multi-label corpora), `text`,
`format` ("text" | "email"), `order` (stream position), optional `split` ("train" | "test").
Files may be gzip-compressed. Reading and writing are thin I/O shells; splitting is pure.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

_GZIP_MAGIC = b"\x1f\x8b"
_FORMATS = ("text", "email")
_SPLITS = ("train", "test")


class CorpusError(Exception):
    """Unreadable or malformed corpus; the message names the file and the line number."""


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

    @property
    def label(self) -> str:
        """The single label; ValueError if the record has several."""
        if len(self.labels) != 1:
            raise ValueError(f"record {self.id!r} has {len(self.labels)} labels, not one")
        return self.labels[0]

    def message(self) -> dict[str, str]:
        """The record as a filterd message: {"id", "text", "format"} (no label)."""
        return {"id": self.id, "text": self.text, "format": self.format}


CORPUS_FILES = ("messages.jsonl.gz", "messages.jsonl")  # a corpus folder's file (../shared/corpora)


def corpus_file(path: str | os.PathLike[str]) -> Path:
    """`path` itself, or for a corpus folder the first of CORPUS_FILES in it (CorpusError if
    none)."""
    path = Path(path)
    if not path.is_dir():
        return path
    for name in CORPUS_FILES:
        if (path / name).is_file():
            return path / name
    raise CorpusError(f"{path}: a folder without {' or '.join(CORPUS_FILES)}")


def read_corpus(path: str | os.PathLike[str]) -> list[Record]:
    """All records of a .jsonl or .jsonl.gz file (gzip detected by its magic bytes), or of a
    corpus folder's file (`corpus_file`), sorted
    by `order` (ties keep file order). Empty lines are skipped.

    Raises CorpusError, naming the file and line, if the file is missing or unreadable,
    not gzip/JSON, or a record lacks id/text/label(s), has an invalid field, or repeats an id.
    """
    path = corpus_file(path)
    records: list[Record] = []
    seen: dict[str, int] = {}  # id -> line of first occurrence
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
            raise CorpusError(f"{path}:{lineno}: not valid JSON: {e}") from None
        try:
            record = replace(_record(obj, default_order=len(records) + 1), line=lineno)
        except ValueError as e:
            raise CorpusError(f"{path}:{lineno}: {e}") from None
        if record.id in seen:
            raise CorpusError(
                f"{path}:{lineno}: duplicate id {record.id!r} (first on line {seen[record.id]})"
            )
        seen[record.id] = lineno
        records.append(record)
    records.sort(key=lambda r: r.order)
    return records


def write_corpus(
    records: Iterable[Record | Mapping[str, Any]], path: str | os.PathLike[str]
) -> None:
    """Write records (Record objects or corpus-format dicts, as given) as JSON Lines;
    gzip-compressed if the path ends in .gz, with no name and mtime 0 so equal input
    gives equal bytes."""
    path = Path(path)
    lines = (json.dumps(_as_dict(r), ensure_ascii=False) + "\n" for r in records)
    if path.suffix == ".gz":
        with (
            open(path, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f,
        ):
            for line in lines:
                f.write(line.encode("utf-8"))
    else:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(lines)


def to_records(objects: Iterable[Mapping[str, Any]]) -> list[Record]:
    """Records from corpus-format dicts (e.g. `filterd.evaluation.synth.generate`), checked like
    a file's lines."""
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


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) pairs; open and read errors become CorpusError."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the `with raw` below
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such file") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot open: {e}") from None
    with raw:
        lineno = 0
        try:
            compressed = raw.read(2) == _GZIP_MAGIC
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
            for lineno, line in enumerate(f, start=1):
                yield lineno, line
        except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
            raise CorpusError(f"{path}:{lineno + 1}: unreadable: {e}") from None


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
                f"record {record_id!r}: missing or invalid 'label' "
                "(or 'labels'; a string without NUL)"
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
    return Record(record_id, labels, text, fmt, order, split)


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
    return d
