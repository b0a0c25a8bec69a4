"""Labelled corpora on disk (filterd.cli.corpus_files): files, gzip, corpus folders and the
errors that name the file and the line."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from filterd.cli.corpus_files import read_corpus, write_corpus
from filterd.evaluation.corpus import CorpusError, Record, is_multilabel

SHARED_CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
SMS_CORPUS = SHARED_CORPORA / "sms-spam" / "messages.jsonl.gz"

RECORDS = [
    Record("a", ("ham",), "Hello there, £1.50 \u2014 caf\u00e9", "text", 1, None),
    Record("b", ("spam", "fraud"), "From: x@y\n\nWIN NOW", "email", 2, "train"),
    Record("c", ("ham",), "", "text", 3, "test"),
]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz"])
def test_write_then_read_round_trips(tmp_path: Path, name: str) -> None:
    write_corpus(RECORDS, tmp_path / name)
    records = read_corpus(tmp_path / name)
    assert records == RECORDS
    assert [r.line for r in records] == [1, 2, 3]


def test_gzip_output_is_reproducible_and_detected_by_magic_bytes(tmp_path: Path) -> None:
    write_corpus(RECORDS, tmp_path / "one.jsonl.gz")
    write_corpus(RECORDS, tmp_path / "two.jsonl.gz")
    data = (tmp_path / "one.jsonl.gz").read_bytes()
    assert data == (tmp_path / "two.jsonl.gz").read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip header mtime
    # A gzip file without the .gz suffix is still read as gzip.
    (tmp_path / "misnamed.jsonl").write_bytes(data)
    assert read_corpus(tmp_path / "misnamed.jsonl") == RECORDS


def test_dicts_are_written_as_given(tmp_path: Path) -> None:
    dicts = [
        {"id": "late", "label": "spam", "text": "b", "format": "text", "order": 9},
        {"id": "early", "label": "ham", "text": "a", "format": "text", "order": 2},
    ]
    write_corpus(dicts, tmp_path / "c.jsonl")
    lines = (tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == dicts
    assert [r.id for r in read_corpus(tmp_path / "c.jsonl")] == ["early", "late"]


@pytest.mark.parametrize("name", ["messages.jsonl.gz", "messages.jsonl"])
def test_a_corpus_folder_reads_its_messages_file(tmp_path: Path, name: str) -> None:
    write_corpus(RECORDS, tmp_path / name)
    assert read_corpus(tmp_path) == RECORDS


def test_a_folder_without_a_messages_file_raises(tmp_path: Path) -> None:
    (tmp_path / "other.jsonl").write_text("")
    with pytest.raises(CorpusError, match="a folder without messages.jsonl.gz or messages.jsonl"):
        read_corpus(tmp_path)


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"nope\.jsonl: no such file"):
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
    good = json.dumps({"id": "a", "label": "ham", "text": "t", "format": "text", "order": 1})
    path = tmp_path / "broken.jsonl.gz"
    path.write_bytes(gzip.compress((good + "\n").encode())[:-8])  # its trailer cut off
    with pytest.raises(CorpusError, match=r"broken\.jsonl\.gz:2: unreadable"):
        read_corpus(path)


def test_reads_the_real_sms_corpus() -> None:
    if not SMS_CORPUS.exists():
        pytest.skip(f"{SMS_CORPUS}: shared corpora absent")
    records = read_corpus(SMS_CORPUS)
    assert len(records) == 5574
    assert Counter(r.label for r in records) == {"ham": 4827, "spam": 747}
    assert not is_multilabel(records)
    assert [r.order for r in records] == sorted(r.order for r in records)
