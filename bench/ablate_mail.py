"""What each family of mail tokens costs in tokenizer time and gives in accuracy.

    .venv/bin/python bench/ablate_mail.py [--corpus ../shared/corpora/spamassassin] [--repeats 3]

For the full mail tokenizer and then without one family at a time (received: the relays of the
Received headers; value_headers: Message-ID, X-Mailer, User-Agent, …; header_names; recipients:
To/Cc; senders: From/Reply-To/Return-Path; html_links: the tokens of HTML link targets), prints
the tokenizer's CPU seconds over the corpus (median of `--repeats` passes) and the default
model's split spec@R=1 and online (1−AUC)%, through `filterd evaluate`'s code path. A family is
dropped by replacing its function in `filterd.tokenize.mail` inside this process only.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from filterd.corpus import read_corpus
from filterd.evaluate import Corpus, evaluate
from filterd.model import DEFAULT_SPEC
from filterd.tokenize import Tokenizer, mail

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "spamassassin"

# family → (name in filterd.tokenize.mail, what stands in for it)
FAMILIES: dict[str, tuple[str, object]] = {
    "received": ("received_tokens", lambda value, max_length: []),
    "value_headers": ("VALUE_HEADERS", ()),
    "header_names": ("header_name_tokens", lambda names: []),
    "recipients": ("recipient_tokens", lambda value, prefix, max_length: []),
    "senders": ("sender_tokens", lambda value, prefix, max_length: []),
    "html_links": ("_link_tokens", lambda link, max_length: ()),
}


def measure(records, repeats: int) -> str:
    tokenizer = Tokenizer()
    messages = [r.message() for r in records]
    seconds = []
    for _ in range(repeats + 1):  # the first pass warms up
        started = time.process_time()
        for message in messages:
            tokenizer(message)
        seconds.append(time.process_time() - started)
    corpus = Corpus.tokenize(records, tokenizer)
    split, online = evaluate(corpus, DEFAULT_SPEC, "split"), evaluate(corpus, DEFAULT_SPEC, "online")
    return (f"tokenizer {statistics.median(seconds[1:]):5.2f} s | split spec@R=1 {split.spec_at_full_recall:.5f}"
            f" | online (1−AUC)% {online.one_minus_auc_pct:.3f}")  # fmt: skip


def without(family: str, run: Callable[[], str]) -> str:
    name, stand_in = FAMILIES[family]
    original = getattr(mail, name)
    setattr(mail, name, stand_in)
    try:
        return run()
    finally:
        setattr(mail, name, original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    records = read_corpus(args.corpus)
    print(f"{args.corpus.name}: {len(records):,} messages, default model {DEFAULT_SPEC}")
    print(f"  {'all tokens':<22} {measure(records, args.repeats)}", flush=True)
    for family in FAMILIES:
        print(f"  {'without ' + family:<22} {without(family, lambda: measure(records, args.repeats))}", flush=True)


if __name__ == "__main__":
    main()
