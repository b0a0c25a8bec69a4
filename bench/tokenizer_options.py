"""Do the tokenizer's word pairs (OSB) and character 4-grams help the default model?

    .venv/bin/python bench/tokenizer_options.py [--corpus NAME ...] [--enron-limit N]
                                                [--repeats R] [--chars N] [--no-raw]

For each corpus of ../shared/corpora (default: spamassassin and sms-spam; `--enron-limit N`
adds the first N messages of enron-spam in `order`), each tokenizer:
- default      `TokenizerConfig()`
- +osb         orthogonal sparse bigrams of the body's words (`osb=True`)
- +c4          the distinct character 4-grams of the first N characters of the subject and
               body text, decoded (`char_ngrams=True`, `char_ngram_chars=N`)
- +osb+c4      both
- +c4 raw      (e-mail corpora, unless --no-raw; not a tokenizer option) the default tokens,
               then the distinct 4-grams of the first N characters of the raw mail (all headers
               and the body encoded as it arrives, normalized as the option's) under the same
               `max_tokens` cut: Sculley & Cormack's TREC 2007 input, against the option's
               choice of decoded subject and body text.
Measured, each on one tokenization per corpus and tokenizer (`filterd.evaluation.protocols`,
the code path of `filterd evaluate`, with Robinson–Fisher, `ROBINSON_FISHER_SPEC`):
- tokens/msg: mean tokens per message as the tokenizer gives them (after `max_tokens`);
- msg/s: tokenizer throughput, messages over the median CPU time of R passes (passes of the
  tokenizers interleaved so that all meet the same machine load), and its ratio to default's;
- model size: the distinct tokens of the corpus (what the online protocol learns; the split's
  training part learns about 2/3 of the messages) and its ratio to default's;
- split: AUC and spec@R=1 (specificity at full recall) of the default model on the split;
- online: (1−AUC)% of the TREC immediate-feedback replay in `order`.
Prints one markdown table with the command, date and wall seconds.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.corpus import Record
from filterd.evaluation.protocols import Corpus, evaluate
from filterd.tokenize import Tokenizer, TokenizerConfig, Tokens
from filterd.tokenize.text import char_ngram_tokens
from harness import CORPORA

TokenizerFn = Callable[[Mapping[str, Any]], Tokens]


def raw_grams(chars: int) -> TokenizerFn:
    """The default tokens, then the 4-grams of the raw message's first `chars` characters."""
    base = Tokenizer()
    limit = base.config.max_tokens

    def tokenize(message: Mapping[str, Any]) -> Tokens:
        result = base(message)
        tokens = result.tokens
        if len(tokens) < limit:
            tokens = tokens + char_ngram_tokens((str(message.get("text") or ""),), chars)
        flags = result.flags | ({"max_tokens"} if len(tokens) > limit else set())
        return Tokens(tokens[:limit], result.truncated or len(tokens) > limit, frozenset(flags))

    return tokenize


def tokenizers(chars: int, email: bool, raw: bool) -> dict[str, TokenizerFn]:
    out: dict[str, TokenizerFn] = {
        "default": Tokenizer(),
        "+osb": Tokenizer(TokenizerConfig(osb=True)),
        "+c4": Tokenizer(TokenizerConfig(char_ngrams=True, char_ngram_chars=chars)),
        "+osb+c4": Tokenizer(TokenizerConfig(osb=True, char_ngrams=True, char_ngram_chars=chars)),
    }
    if email and raw:
        out["+c4 raw"] = raw_grams(chars)
    return out


def cpu_seconds(
    messages: list[dict[str, str]], tokenize: Mapping[str, TokenizerFn], repeats: int
) -> dict[str, float]:
    """The median CPU seconds of one pass over `messages`, by tokenizer; passes interleaved."""
    seconds: dict[str, list[float]] = {name: [] for name in tokenize}
    for _ in range(repeats):
        for name, t in tokenize.items():
            started = time.process_time()
            for m in messages:
                t(m)
            seconds[name].append(time.process_time() - started)
    return {name: statistics.median(s) for name, s in seconds.items()}


def measure(name: str, records: list[Record], args: argparse.Namespace) -> list[str]:
    email = any(r.format == "email" for r in records)
    tokenize = tokenizers(args.chars, email, not args.no_raw)
    n = len(records)
    cells: dict[str, list[float]] = {}
    for label, t in tokenize.items():
        # One tokenization, hashed and counted 100 messages at a time, token strings dropped:
        # tokens and distinct tokens are read off the counts (64-bit keys: no collision expected).
        corpus = Corpus.tokenize(records, t)
        split = evaluate(corpus, ROBINSON_FISHER_SPEC, "split")
        online = evaluate(corpus, ROBINSON_FISHER_SPEC, "online")
        tokens = int(corpus.batch.counts.sum())
        distinct = int(np.unique(corpus.batch.keys).size)
        cells[label] = [
            tokens / n,
            distinct,
            _number(split.auc),
            _number(split.spec_at_full_recall),
            _number(online.one_minus_auc_pct),
        ]
        print(f"{name} {label}: {cells[label]}", file=sys.stderr, flush=True)
        del corpus
    seconds = cpu_seconds([r.message() for r in records], tokenize, args.repeats)
    rows = []
    base_rate, base_size = n / seconds["default"], cells["default"][1]
    for label, (per_msg, size, auc, spec, online_pct) in cells.items():
        rate = n / seconds[label]
        rows.append(
            f"| {name} | {label} | {per_msg:,.0f} | {rate:,.0f} | {rate / base_rate:.2f} "
            f"| {size:,.0f} | {size / base_size:.1f} | {auc:.4f} | {spec:.3f} "
            f"| {online_pct:.3f} |"
        )
    return rows


def _number(value: float | None) -> float:
    return float("nan") if value is None else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus",
        action="append",
        metavar="NAME",
        help="a folder of ../shared/corpora (repeatable; default spamassassin, sms-spam)",
    )
    parser.add_argument(
        "--enron-limit", type=int, metavar="N", help="also the first N messages of enron-spam"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (default 3)")
    parser.add_argument(
        "--chars",
        type=int,
        default=TokenizerConfig.char_ngram_chars,
        help="characters read for 4-grams (default %(default)s)",
    )
    parser.add_argument("--no-raw", action="store_true", help="leave out the +c4 raw row")
    args = parser.parse_args()
    started = time.perf_counter()
    corpora = [(c, None) for c in args.corpus or ["spamassassin", "sms-spam"]]
    if args.enron_limit:
        corpora.append(("enron-spam", args.enron_limit))
    rows = []
    for name, limit in corpora:
        records = read_corpus(CORPORA / name)[:limit]
        label = name if limit is None else f"{name} (first {limit:,})"
        rows += measure(label, records, args)
    seconds = time.perf_counter() - started
    command = shlex.join([".venv/bin/python", "bench/tokenizer_options.py", *sys.argv[1:]])
    print(
        f"`{command}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {seconds:.0f} s, "
        f"{platform.machine()} {platform.python_implementation()} {platform.python_version()}; "
        f"default model {ROBINSON_FISHER_SPEC}; msg/s from the median CPU time of {args.repeats} "
        f"tokenizer passes, ×: against default in the same run.\n"
    )
    print(
        "| corpus | tokenizer | tokens/msg | tokenizer msg/s | × speed | distinct tokens "
        "| × size | split AUC | split spec@R=1 | online (1−AUC)% |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
