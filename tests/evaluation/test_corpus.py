"""Parsing, serializing, relabelling and splitting labelled corpora (filterd.evaluation.corpus):
data in, data out. The files are tests/cli/test_corpus_files.py's."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from filterd.evaluation.corpus import (
    CorpusError,
    Record,
    corpus_lines,
    is_multilabel,
    parse_corpus,
    relabel,
    train_test_split,
)


def make_records(counts: dict[str, int]) -> list[Record]:
    """Single-label records, classes interleaved, order 1..n."""
    labels = [label for label, n in counts.items() for _ in range(n)]
    labels = labels[::2] + labels[1::2]
    return [
        Record(f"r{i}", (label,), f"text {i}", "text", i, None)
        for i, label in enumerate(labels, start=1)
    ]


# --- parsing and serializing ---------------------------------------------------------------


def test_lines_then_parse_round_trips_and_numbers_the_lines() -> None:
    records = [
        Record("a", ("ham",), "Hello there, £1.50 \u2014 caf\u00e9", "text", 1, None),
        Record("b", ("spam",), "From: x@y\n\nWIN NOW", "email", 2, "train"),
        Record("c", ("ham",), "", "text", 3, "test"),
    ]
    lines = list(corpus_lines(records))
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    parsed = parse_corpus([line.encode() for line in lines], "mem")
    assert parsed == records
    assert [r.line for r in parsed] == [1, 2, 3]
    assert parse_corpus(lines, "mem") == records  # str lines as well as bytes


def test_records_are_sorted_by_order_and_dicts_can_be_serialized() -> None:
    dicts = [
        {"id": "late", "label": "spam", "text": "b", "format": "text", "order": 9},
        {"id": "early", "label": "ham", "text": "a", "format": "text", "order": 2},
    ]
    records = parse_corpus(corpus_lines(dicts), "mem")
    assert [r.id for r in records] == ["early", "late"]
    assert records[0].label == "ham"
    assert records[0].message() == {"id": "early", "text": "a", "format": "text"}


def test_empty_lines_are_skipped() -> None:
    line = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    records = parse_corpus(["", line, "   "], "mem")
    assert [(r.id, r.line) for r in records] == [("a", 2)]


def test_multilabel_records() -> None:
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
    records = parse_corpus([json.dumps(d) for d in lines], "m.jsonl")
    assert records[0].labels == ("grain", "wheat")
    assert records[1].labels == ("cocoa",)
    assert records[1].label == "cocoa"
    with pytest.raises(ValueError):
        records[0].label
    assert is_multilabel(records)
    assert not is_multilabel(records[1:])
    assert parse_corpus(corpus_lines(records), "copy") == records


def test_a_line_is_a_message_plus_its_label() -> None:
    line = {
        "id": "tx-0",
        "label": "legit",
        "text": "",
        "format": "text",
        "ts": "2018-04-01T00:00:31Z",
        "attributes": {"customer": "c596", "terminal": "t3156", "amount": 57.16},
        "sender": "c596@bank.example",
        "subject": "card payment",
        "tenant": "eu",
        "order": 1,
        "scenario": 0,  # evaluation-only metadata: never part of the message
    }
    (record,) = parse_corpus([json.dumps(line)], "tx.jsonl")
    assert record.ts == datetime(2018, 4, 1, 0, 0, 31, tzinfo=UTC)
    assert record.message() == {
        "id": "tx-0",
        "text": "",
        "format": "text",
        "attributes": {"customer": "c596", "terminal": "t3156", "amount": 57.16},
        "sender": "c596@bank.example",
        "subject": "card payment",
        "tenant": "eu",
        "ts": "2018-04-01T00:00:31+00:00",
    }
    assert parse_corpus(corpus_lines([record]), "copy") == [record]
    # a time without a zone is UTC, as the daemon reads a message's
    naive = parse_corpus([json.dumps(line | {"ts": "2018-04-01T00:00:31"})], "tx.jsonl")
    assert naive[0].ts == record.ts


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("ts", "yesterday", "'ts' must be an ISO 8601 time"),
        ("ts", 1522540831, "'ts' must be an ISO 8601 time"),
        ("attributes", ["amount", 5], "'attributes' must be a JSON object, got list"),
        ("sender", 7, "'sender' must be a string"),
        ("tenant", {"id": 1}, "'tenant' must be a string"),
    ],
)
def test_a_bad_message_field_names_the_line(field: str, value: object, error: str) -> None:
    line = {"id": "m", "label": "ham", "text": "t", field: value}
    with pytest.raises(CorpusError, match=rf"^f\.jsonl:1: record 'm': {error}"):
        parse_corpus([json.dumps(line)], "f.jsonl")


# --- errors --------------------------------------------------------------------------


def test_bad_json_line_names_source_and_line() -> None:
    good = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    with pytest.raises(CorpusError, match=r"^bad\.jsonl:3: not valid JSON"):
        parse_corpus([good, "", '{"id": "b", "label": '], "bad.jsonl")


def test_an_error_of_the_lines_themselves_propagates() -> None:
    def lines() -> Iterator[str]:
        yield json.dumps({"id": "a", "label": "ham", "text": "t"})
        raise CorpusError("f.jsonl:2: unreadable")

    with pytest.raises(CorpusError, match=r"^f\.jsonl:2: unreadable$"):
        parse_corpus(lines(), "f.jsonl")


def test_duplicate_id_raises() -> None:
    line = json.dumps({"id": "same", "label": "ham", "text": "t", "format": "text", "order": 1})
    with pytest.raises(CorpusError, match=r"dup\.jsonl:2: duplicate id 'same'"):
        parse_corpus([line, line], "dup.jsonl")


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
def test_malformed_record_raises(record: object, problem: str) -> None:
    with pytest.raises(CorpusError, match=problem) as info:
        parse_corpus([json.dumps(record)], "c.jsonl")
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
