"""Labelled corpora on disk: a .jsonl or .jsonl.gz file, or a corpus folder holding one.

The file I/O around the pure `filterd.evaluation.corpus`: this module opens, decompresses and
writes; parsing, checking and serializing the records is done there.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from filterd.evaluation.corpus import CorpusError, Record, corpus_lines, parse_corpus

CORPUS_FILES = ("messages.jsonl.gz", "messages.jsonl")  # a corpus folder's file (../shared/corpora)
_GZIP_MAGIC = b"\x1f\x8b"


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
    corpus folder's file (`corpus_file`), as `parse_corpus` gives them: sorted by `order`.

    Raises CorpusError, naming the file and line, if the file is missing or unreadable,
    not gzip/JSON, or a record is malformed (`parse_corpus`).
    """
    path = corpus_file(path)
    return parse_corpus(_lines(path), str(path))


def write_corpus(
    records: Iterable[Record | Mapping[str, Any]], path: str | os.PathLike[str]
) -> None:
    """Write records (Record objects or corpus-format dicts, as given) as JSON Lines;
    gzip-compressed if the path ends in .gz, with no name and mtime 0 so equal input
    gives equal bytes."""
    path = Path(path)
    lines = corpus_lines(records)
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


def _lines(path: Path) -> Iterator[bytes]:
    """The file's raw lines; open and read errors become CorpusError naming the line."""
    try:
        with open(path, "rb") as raw:
            yield from _decompressed(path, raw)
    except FileNotFoundError:
        raise CorpusError(f"{path}: no such file") from None
    except OSError as e:
        raise CorpusError(f"{path}: cannot open: {e}") from None


def _decompressed(path: Path, raw: BinaryIO) -> Iterator[bytes]:
    lineno = 0  # the lines read whole
    try:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        f = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        for line in f:
            lineno += 1
            yield line
    except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
        raise CorpusError(f"{path}:{lineno + 1}: unreadable: {e}") from None
