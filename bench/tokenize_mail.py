"""Does the tokenizer still produce the same tokens, and how fast does it tokenize raw e-mail?

Prints the tokenizer's speed and a hash of every token, so that a speed-up can show it changed
no output.

    PYTHONPATH=. .venv/bin/python bench/tokenize_mail.py                      # this tree
    PYTHONPATH=. .venv/bin/python bench/tokenize_mail.py --baseline HEAD~3    # and a revision
    PYTHONPATH=. .venv/bin/python bench/tokenize_mail.py --profile 30

Tokenizes every mail of the corpus (default: SpamAssassin in ../shared/corpora) once to warm
up, then `--repeats` times, and prints mails/s and µs/mail from the median pass, and the
SHA-256 over every message's tokens, `truncated` and sorted flags, in corpus order: two
versions that print the same hash gave the same tokens in the same order with the same flags
for every message. Time is the CPU time of the tokenizing process, which other jobs on a
shared machine disturb less than wall time.

With `--baseline REV`, the tree's `filterd` and git revision REV's run in two worker
processes whose passes alternate, so that both meet the same machine load; the ratio is
of their medians. `--profile N` prints cProfile's top N functions by own time for one pass.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import importlib
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from harness import CORPORA

if TYPE_CHECKING:
    from filterd.evaluation.corpus import Record
    from filterd.tokenize import Tokens

ROOT = Path(__file__).resolve().parents[1]
CORPUS = CORPORA / "spamassassin" / "messages.jsonl.gz"


def token_hash(results: Iterable[Tokens]) -> str:
    """SHA-256 over each result's tokens, truncated and sorted flags, as one JSON line each."""
    digest = hashlib.sha256()
    for r in results:
        line = json.dumps([r.tokens, r.truncated, sorted(r.flags)], ensure_ascii=False)
        digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


# where read_corpus lives, newest first: a --baseline revision may be older than the move
READERS = ("filterd.cli.corpus_files", "filterd.evaluation.corpus", "filterd.corpus")


def baseline_reader() -> Callable[[str], Iterable[Record]]:
    """The read_corpus of the filterd on sys.path, wherever its revision keeps it."""
    for name in READERS:
        try:
            reader: Callable[[str], Iterable[Record]] = importlib.import_module(name).read_corpus
        except (ImportError, AttributeError):
            continue
        return reader
    raise ImportError(f"no read_corpus in any of {', '.join(READERS)}")


def worker(corpus: str) -> None:
    """Load the corpus, tokenize it once, print the hash, then time one pass per input line."""
    from filterd.tokenize import Tokenizer

    read_corpus = baseline_reader()

    messages = [r.message() for r in read_corpus(corpus)]
    tokenizer = Tokenizer()
    results = [tokenizer(m) for m in messages]
    print(
        json.dumps(
            {
                "mails": len(messages),
                "tokens": sum(len(r.tokens) for r in results),
                "hash": token_hash(results),
                "c": sys.modules.get("filterd._speedups") is not None,
            }
        ),
        flush=True,
    )
    del results
    for _ in sys.stdin:
        started = time.process_time()
        for m in messages:
            tokenizer(m)
        print(time.process_time() - started, flush=True)


class Worker:
    """A worker process on the `filterd` found under `root`."""

    def __init__(self, root: Path, corpus: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(root))
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", corpus],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self.process.stdin is None or self.process.stdout is None:
            raise RuntimeError("the worker's pipes are missing")
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.info = json.loads(self.stdout.readline())
        self.times: list[float] = []

    def run(self) -> None:
        self.stdin.write("\n")
        self.stdin.flush()
        self.times.append(float(self.stdout.readline()))

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()

    def report(self, name: str) -> float:
        n = self.info["mails"]
        seconds = statistics.median(self.times)
        build = "with the C loops" if self.info.get("c") else "pure Python"
        print(
            f"{name} ({build}): {n} mails, {self.info['tokens']:,} tokens, "
            f"{n / seconds:,.0f} mails/s, "
            f"{seconds / n * 1e6:.0f} µs/mail (CPU s per pass: "
            f"{', '.join(f'{t:.2f}' for t in self.times)})"
        )
        print(f"{name}: token hash {self.info['hash']}")
        return seconds


def export(revision: str, into: str) -> Path:
    """The `filterd` package of git `revision`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "filterd"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    build_speedups(Path(into))
    return Path(into)


def build_speedups(root: Path) -> None:
    """Compile the exported revision's optional C loops (filterd/_speedups.c) in place, as an
    installation with a compiler would: else the revision runs its pure-Python references and
    the comparison is not like for like. Without a compiler, it stays pure Python."""
    if not (root / "filterd" / "_speedups.c").exists():
        return
    script = (
        "from setuptools import Extension, setup; setup(name='baseline', script_args=["
        "'build_ext', '--inplace', '-q'], ext_modules=[Extension('filterd._speedups', "
        "['filterd/_speedups.c'], optional=True)])"
    )
    subprocess.run([sys.executable, "-c", script], cwd=root, check=False, capture_output=True)


def profile(corpus: str, top: int) -> None:
    from filterd.cli.corpus_files import read_corpus
    from filterd.tokenize import Tokenizer

    messages = [r.message() for r in read_corpus(corpus)]
    tokenizer = Tokenizer()
    for m in messages:
        tokenizer(m)
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [tokenizer(m) for m in messages])
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=str(CORPUS), help="a .jsonl(.gz) corpus")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes (default 5)")
    parser.add_argument("--baseline", metavar="REV", help="also time git revision REV")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile one pass, print top N")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.corpus)
    if args.profile:
        return profile(args.corpus, args.profile)
    with tempfile.TemporaryDirectory() as tmp:
        workers = {"this tree": Worker(ROOT, args.corpus)}
        if args.baseline:
            workers[args.baseline] = Worker(export(args.baseline, tmp), args.corpus)
        for _ in range(args.repeats):
            for w in workers.values():
                w.run()
        for w in workers.values():
            w.close()
        seconds = {name: w.report(name) for name, w in workers.items()}
    if args.baseline:
        same = len({w.info["hash"] for w in workers.values()}) == 1
        print(
            f"speed-up {seconds[args.baseline] / seconds['this tree']:.2f}x; "
            f"tokens {'identical' if same else 'DIFFER'}"
        )


if __name__ == "__main__":
    main()
