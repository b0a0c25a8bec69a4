"""What does the analyst loop store: bytes per decided message and per review item?

    .venv/bin/python bench/store_growth.py [--decisions 200000] [--items 5000]

- Decided messages (`decided_messages`): the scorer's one row per decision, written as the
  daemon writes them (`record_decided`, batches of 500), with random 36-character message ids.
  Reported: table + indexes per row, and what a deployment keeps at 1,000 and 15,000 messages a
  second for one day and for `feedback.resolve_ttl` (3 days, the default), after which
  `filterd db prune` deletes them.
- Review items (`review_items`): messages of the SMS Spam and SpamAssassin corpora of
  ../shared/corpora (synthetic texts without them) decided by a model learned from the rest of
  the corpus, queued as the scorer queues them (`queued_item`, `queue_review`), with the default
  excerpt of 500 characters. Reported: table + indexes (+ TOAST) per item, and at the default
  `review.max_items` (100,000), the most the queue holds per model.
Sizes are PostgreSQL's own (`pg_total_relation_size`) after VACUUM ANALYZE, on an embedded
PostgreSQL server; one line each is printed.
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, text

from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.cli.corpus_files import read_corpus
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.config import Review
from filterd.service.decide import Decider, ThresholdSetting, decide_payloads
from filterd.service.records import Message as MessageRecord
from filterd.service.records import encode
from filterd.service.review import queued_item
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer
from harness import CORPORA, embedded_postgresql

DAY = 86_400
GB = 1e9


def table_bytes(engine: Engine, table: str) -> tuple[int, int]:
    """(rows, bytes of the table with its indexes and TOAST) after VACUUM ANALYZE."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"VACUUM ANALYZE {table}"))
        rows = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
        size = conn.execute(text(f"SELECT pg_total_relation_size('{table}')")).scalar_one()
    return rows, size


def decided_growth(model: ModelStore, n: int) -> float:
    now = datetime.now(UTC)
    for start in range(0, n, 500):
        batch = [
            (str(uuid.uuid4()), i % 12, 10_000_000 + i) for i in range(start, min(n, start + 500))
        ]
        with model.transaction() as writing:
            writing.record_decided(batch, now)
    rows, size = table_bytes(model.store.engine, "decided_messages")
    return size / rows


def corpus(name: str) -> list[dict[str, str]]:
    path = CORPORA / name / "messages.jsonl.gz"
    if not path.exists():
        return [
            {"id": r["id"], "label": r["label"], "text": r["text"], "format": "text"}
            for r in generate(SynthConfig(n_messages=6000, seed=5))
        ]
    return [
        {"id": r.id, "label": r.label, "text": r.text, "format": r.format}
        for r in read_corpus(path)
    ]


def review_growth(model: ModelStore, records: list[dict[str, str]], n: int) -> None:
    """Queue `n` messages of `records`, decided by a model learned from the others."""
    tokenize = Tokenizer()
    train, queued = records[n:], records[:n]
    model.learn(
        [LabelledTokens(r["id"], r["label"], tokenize(r).tokens) for r in train],
        holdout_fraction=0,
    )
    decider = Decider(ROBINSON_FISHER_SPEC, "spam", tokenizer=tokenize)
    decider.update(model.load()[0], 1)
    payloads = [
        encode(
            MessageRecord(
                id=r["id"], text=r["text"], format="email" if r["format"] == "email" else "text"
            )
        )
        for r in queued
    ]
    decided = decide_payloads(decider, ThresholdSetting(), payloads, 10_000_000)
    excerpt = Review().excerpt_chars
    items = [
        queued_item(m, d, t, "band", excerpt)
        for m, d, t in zip(decided.messages, decided.decisions, decided.tokens)
    ]
    with model.transaction() as writing:
        for start in range(0, len(items), 500):
            writing.queue_review(items[start : start + 500], datetime.now(UTC))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--items", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, embedded_postgresql(Path(tmp) / "pg") as url:
        store = Store.open(url)
        store.upgrade()
        models = {
            name: store.create_model(name, ROBINSON_FISHER_SPEC, seed=1)
            for name in ("decided", "sms-spam", "spamassassin")
        }
        engine = store.engine
        per_row = decided_growth(models["decided"], args.decisions)
        print(
            f"decided_messages: {per_row:.0f} bytes a decision "
            f"(table + indexes, {args.decisions:,} rows)"
        )
        ttl_days = 3
        for rate in (1_000, 15_000):
            day = rate * DAY * per_row / GB
            print(
                f"  at {rate:,} msg/s: {day:.1f} GB a day, "
                f"{ttl_days * day:.0f} GB kept over resolve_ttl = 3d"
            )
        done = 0
        for name in ("sms-spam", "spamassassin"):
            _, before = table_bytes(engine, "review_items")
            review_growth(models[name], corpus(name), args.items)
            rows, after = table_bytes(engine, "review_items")
            per_item = (after - before) / (rows - done)
            done = rows
            print(
                f"review_items, {name}: {per_item:,.0f} bytes an item "
                f"(table + indexes + TOAST, {args.items:,} items); "
                f"at review.max_items = 100,000: {per_item * 1e5 / GB:.2f} GB"
            )
        store.close()


if __name__ == "__main__":
    main()
