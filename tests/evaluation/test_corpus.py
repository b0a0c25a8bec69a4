"""Reading, writing and splitting labelled corpora (filterd.evaluation.corpus)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from filterd.evaluation.corpus import (
    CorpusError,
    Record,
    is_multilabel,
    read_corpus,
    relabel,
    train_test_split,
    write_corpus,
)

SHARED_CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
SMS_CORPUS = SHARED_CORPORA / "sms-spam" / "messages.jsonl.gz"


def make_records(counts: dict[str, int]) -> list[Record]:
    """Single-label records, classes interleaved, order 1..n."""
    labels = [label for label, n in counts.items() for _ in range(n)]
    labels = labels[::2] + labels[1::2]
    return [
        Record(f"r{i}", (label,), f"text {i}", "text", i, None)
        for i, label in enumerate(labels, start=1)
    ]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# --- reading and writing ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz"])
def test_write_then_read_round_trips(tmp_path: Path, name: str) -> None:
    records = [
        Record("a", ("ham",), "Hello there, £1.50 \u2014 caf\u00e9", "text", 1, None),
        Record("b", ("spam",), "From: x@y\n\nWIN NOW", "email", 2, "train"),
        Record("c", ("ham",), "", "text", 3, "test"),
    ]
    write_corpus(records, tmp_path / name)
    assert read_corpus(tmp_path / name) == records


def test_gzip_output_is_reproducible_and_detected_by_magic_bytes(tmp_path: Path) -> None:
    records = make_records({"ham": 3, "spam": 2})
    write_corpus(records, tmp_path / "one.jsonl.gz")
    write_corpus(records, tmp_path / "two.jsonl.gz")
    data = (tmp_path / "one.jsonl.gz").read_bytes()
    assert data == (tmp_path / "two.jsonl.gz").read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip header mtime
    # A gzip file without the .gz suffix is still read as gzip.
    (tmp_path / "misnamed.jsonl").write_bytes(data)
    assert read_corpus(tmp_path / "misnamed.jsonl") == records


def test_records_are_sorted_by_order_and_dicts_can_be_written(tmp_path: Path) -> None:
    dicts = [
        {"id": "late", "label": "spam", "text": "b", "format": "text", "order": 9},
        {"id": "early", "label": "ham", "text": "a", "format": "text", "order": 2},
    ]
    path = tmp_path / "c.jsonl"
    write_corpus(dicts, path)
    records = read_corpus(path)
    assert [r.id for r in records] == ["early", "late"]
    assert records[0].label == "ham"
    assert records[0].message() == {"id": "early", "text": "a", "format": "text"}


def test_empty_lines_are_skipped(tmp_path: Path) -> None:
    line = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    path = write_lines(tmp_path / "c.jsonl", ["", line, "   "])
    assert [r.id for r in read_corpus(path)] == ["a"]


def test_multilabel_records(tmp_path: Path) -> None:
    lines = [
        {
            "id": "1",
            "labels": ["grain", "wheat"],
            "text": "x",
            "format": "text",
            "order": 1,
            "split": "train",
        },
        {
            "id": "2",
            "labels": ["cocoa"],
            "text": "y",
            "format": "text",
            "order": 2,
            "split": "test",
        },
    ]
    path = write_lines(tmp_path / "m.jsonl", [json.dumps(d) for d in lines])
    records = read_corpus(path)
    assert records[0].labels == ("grain", "wheat")
    assert records[1].labels == ("cocoa",)
    assert records[1].label == "cocoa"
    with pytest.raises(ValueError):
        records[0].label
    assert is_multilabel(records)
    assert not is_multilabel(records[1:])

    write_corpus(records, tmp_path / "copy.jsonl.gz")
    assert read_corpus(tmp_path / "copy.jsonl.gz") == records


# --- errors --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["messages.jsonl.gz", "messages.jsonl"])
def test_a_corpus_folder_reads_its_messages_file(tmp_path: Path, name: str) -> None:
    records = make_records({"ham": 2, "spam": 1})
    write_corpus(records, tmp_path / name)
    assert read_corpus(tmp_path) == records


def test_a_folder_without_a_messages_file_raises(tmp_path: Path) -> None:
    (tmp_path / "other.jsonl").write_text("")
    with pytest.raises(CorpusError, match="a folder without messages.jsonl.gz or messages.jsonl"):
        read_corpus(tmp_path)


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="nope.jsonl"):
        read_corpus(tmp_path / "nope.jsonl")


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    path = write_lines(tmp_path / "bad.jsonl", [good, "", '{"id": "b", "label": '])
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3\b"):
        read_corpus(path)


def test_bad_json_line_in_gzip_names_line(tmp_path: Path) -> None:
    good = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress((good + "\nnot json\n").encode()))
    with pytest.raises(CorpusError, match=r"bad\.jsonl\.gz:2\b"):
        read_corpus(path)


def test_corrupt_gzip_raises(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"id": "a"}\n' * 1000)[:50])  # truncated
    with pytest.raises(CorpusError, match="broken.jsonl.gz"):
        read_corpus(path)


def test_duplicate_id_raises(tmp_path: Path) -> None:
    line = json.dumps({"id": "same", "label": "ham", "text": "t", "format": "text", "order": 1})
    path = write_lines(tmp_path / "dup.jsonl", [line, line])
    with pytest.raises(CorpusError, match=r"dup\.jsonl:2: duplicate id 'same'"):
        read_corpus(path)


@pytest.mark.parametrize(
    "record, problem",
    [
        ({"id": "a", "text": "t", "format": "text", "order": 1}, "label"),
        ({"id": "a", "labels": [], "text": "t", "format": "text", "order": 1}, "labels"),
        ({"label": "ham", "text": "t", "format": "text", "order": 1}, "id"),
        ({"id": "a", "label": "ham", "format": "text", "order": 1}, "text"),
        ({"id": "a", "label": "ham", "text": "t", "format": "html", "order": 1}, "format"),
        ({"id": "a", "label": "ham", "text": "t", "order": 1, "split": "dev"}, "split"),
        ({"id": "a", "label": "x", "labels": ["y"], "text": "t", "order": 1}, "both"),
        ({"id": "a\x00", "label": "ham", "text": "t"}, "without NUL"),
        ({"id": "a", "label": "h\x00m", "text": "t"}, "without NUL"),
        ({"id": "a", "labels": ["ham", "\x00"], "text": "t"}, "without NUL"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_malformed_record_raises(tmp_path: Path, record: object, problem: str) -> None:
    path = write_lines(tmp_path / "c.jsonl", [json.dumps(record)])
    with pytest.raises(CorpusError, match=problem) as info:
        read_corpus(path)
    assert "c.jsonl:1:" in str(info.value)


# --- relabelling ---------------------------------------------------------------------


def test_relabel_maps_labels_and_keeps_the_rest_of_each_record() -> None:
    records = [
        Record("a", ("ham",), "hi", "text", 1, None),
        Record("b", ("smishing",), "your parcel", "text", 2, "test"),
        Record("c", ("spam",), "sale", "email", 3, "train"),
    ]
    mapped = relabel(records, {"smishing": "spam"})
    assert [r.labels for r in mapped] == [("ham",), ("spam",), ("spam",)]
    assert [(r.id, r.text, r.format, r.order, r.split) for r in mapped] == [
        (r.id, r.text, r.format, r.order, r.split) for r in records
    ]
    assert records[1].labels == ("smishing",)  # the input is left alone


def test_relabel_merges_several_labels_into_one_and_deduplicates_multilabel_records() -> None:
    record = Record("m", ("smishing", "promo", "spam", "news"), "t", "text", 1, None)
    (mapped,) = relabel([record], {"smishing": "spam", "promo": "spam"})
    assert mapped.labels == ("spam", "news")  # first-seen order, each label once


def test_relabel_keeps_unmapped_labels_and_does_not_chain() -> None:
    records = make_records({"ham": 2, "spam": 1, "fraud": 1})
    mapped = relabel(records, {"spam": "fraud", "fraud": "other", "absent": "x"})
    assert Counter(r.label for r in mapped) == {"ham": 2, "fraud": 1, "other": 1}
    assert relabel(records, {}) == records


# --- splitting -----------------------------------------------------------------------


def test_own_split_is_honoured() -> None:
    records = [
        Record(str(i), ("ham",), "t", "text", i, "test" if i % 3 == 0 else "train")
        for i in range(10, 0, -1)
    ]
    train, test = train_test_split(records, test_fraction=0.9, seed=5)
    assert [r.order for r in train] == [1, 2, 4, 5, 7, 8, 10]
    assert [r.order for r in test] == [3, 6, 9]


def test_stratified_split_keeps_class_proportions() -> None:
    counts = {"ham": 483, "spam": 75, "fraud": 7, "rare": 1}
    records = make_records(counts)
    train, test = train_test_split(records, test_fraction=0.34, seed=1)

    assert {r.id for r in train}.isdisjoint({r.id for r in test})
    assert len(train) + len(test) == len(records)
    assert [r.order for r in train] == sorted(r.order for r in train)
    assert [r.order for r in test] == sorted(r.order for r in test)
    test_counts = Counter(r.label for r in test)
    for label, n in counts.items():
        assert abs(test_counts[label] - 0.34 * n) <= 1, label
    assert test_counts == {"ham": 164, "spam": 26, "fraud": 2}  # round(0.34 * n) each


def test_stratified_split_is_deterministic_and_seeded() -> None:
    records = make_records({"ham": 200, "spam": 50})
    first = train_test_split(records, seed=3)
    assert train_test_split(list(reversed(records)), seed=3) == first
    assert train_test_split(records, seed=4) != first


def test_partial_own_split_falls_back_to_stratified() -> None:
    records = make_records({"ham": 20, "spam": 10})
    records[0] = Record("x", ("ham",), "t", "text", 0, "test")
    _train, test = train_test_split(records, test_fraction=0.5)
    assert Counter(r.label for r in test) == {"ham": 10, "spam": 5}


# --- the real corpus (optional) ------------------------------------------------------


def test_reads_the_real_sms_corpus() -> None:
    if not SMS_CORPUS.exists():
        pytest.skip(f"{SMS_CORPUS}: shared corpora absent")
    records = read_corpus(SMS_CORPUS)
    assert len(records) == 5574
    assert Counter(r.label for r in records) == {"ham": 4827, "spam": 747}
    assert not is_multilabel(records)
    assert [r.order for r in records] == sorted(r.order for r in records)
