"""What does the analyst loop store: bytes per decided message, per card payment, per review item?

    .venv/bin/python bench/store_growth.py [--decisions 200000] [--items 5000] [--payments 100000]

- Decided messages (`decided_messages`): the scorer's one row per decision, written as the
  daemon writes them (`record_decided`, batches of 500), with random 36-character message ids.
  Reported: table + indexes per row, and what a deployment keeps at 1,000 and 15,000 messages a
  second for one day and for `feedback.resolve_ttl` (3 days, the default), after which
  `filterd db prune` deletes them.
- Card payments decided with the shipped `transactions.toml` (entity memory of customer and
  terminal, `feedback.keep_tokens_bytes` 512, `resolve_ttl` 120 days): seeded synthetic payments
  (`filterd.evaluation.synth_transactions`) through the scorer's entity memory
  (`EntityState`) and tokenizer, written as its recorder writes them: the decided message with
  its tokens and entity record, and the entity events with the decision. Reported: bytes a
  payment in `decided_messages` (kept for resolve_ttl) and in `entity_events` (kept for the
  longest window, 30 days), and what 1,000 payments a second keep.
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

import structlog
from sqlalchemy import Engine, text

from filterd.bayes.model import ROBINSON_FISHER_SPEC
from filterd.cli.corpus_files import read_corpus
from filterd.daemon.entity_state import EntityState
from filterd.daemon.scorer import fits
from filterd.evaluation.synth import SynthConfig, generate
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
from filterd.service.config import Review
from filterd.service.config import load as load_config
from filterd.service.decide import (
    Decider,
    ThresholdSetting,
    decide_payloads,
    message_fields,
    tokenizer_of,
)
from filterd.service.records import Message as MessageRecord
from filterd.service.records import encode
from filterd.service.review import queued_item
from filterd.store.entities import DecidedEvent
from filterd.store.handle import ModelStore, Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer
from harness import CORPORA, embedded_postgresql

EXAMPLES = Path(__file__).resolve().parents[1] / "config"
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


def payments_growth(model: ModelStore, n: int) -> tuple[float, float]:
    """Bytes a payment in `decided_messages` and in `entity_events` (table + indexes)."""
    config = load_config(EXAMPLES / "transactions.toml", environ={})
    spec = config.entities.spec(config.decision.target_class)
    state = EntityState(model, spec, structlog.get_logger())
    tokenizer = tokenizer_of(config)
    days = max(1, round(n / (2_000 * 2.0)))
    stream = generate_transactions(TransactionConfig(customers=2_000, terminals=4_000, days=days))
    messages = [
        MessageRecord(id=r["id"], attributes=r["attributes"], ts=datetime.fromisoformat(r["ts"]))
        for r in stream[:n]
    ]
    limit = config.feedback.keep_tokens_bytes
    now = datetime.now(UTC)
    for start in range(0, len(messages), 500):
        batch = messages[start : start + 500]
        state.evidence(batch)
        records, events = state.take()
        tokens = {m.id: tokenizer(message_fields(m)).tokens for m in batch}
        kept = {i: t for i, t in tokens.items() if fits(t, limit)}
        with model.transaction() as writing:
            rows = [(m.id, 0, start + i) for i, m in enumerate(batch)]
            writing.record_decided(rows, now, records, kept)
            # with a decision each, as the scorer writes them
            decided = [DecidedEvent(m, e, "legit", -3.25, "model") for m, e in events]
            writing.record_entity_events(decided, now)
    engine = model.store.engine
    _, decided_size = table_bytes(engine, "decided_messages")
    _, event_size = table_bytes(engine, "entity_events")
    return decided_size, event_size / len(messages)


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
    parser.add_argument("--payments", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, embedded_postgresql(Path(tmp) / "pg") as url:
        store = Store.open(url)
        store.upgrade()
        models = {
            name: store.create_model(name, ROBINSON_FISHER_SPEC, seed=1)
            for name in ("decided", "sms-spam", "spamassassin", "payments")
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
        _, before = table_bytes(engine, "decided_messages")
        decided_size, event_bytes = payments_growth(models["payments"], args.payments)
        decided_bytes = (decided_size - before) / args.payments
        print(
            f"card payments (transactions.toml): {decided_bytes:.0f} bytes a payment in "
            f"decided_messages (its tokens and entity record kept), {event_bytes:.0f} in "
            f"entity_events ({args.payments:,} payments)"
        )
        rate = 1_000
        print(
            f"  at {rate:,} payments/s: decided_messages {rate * DAY * decided_bytes / GB:.0f} "
            f"GB a day, {120 * rate * DAY * decided_bytes / GB:,.0f} GB kept over resolve_ttl = "
            f"120d; entity_events {30 * rate * DAY * event_bytes / GB:,.0f} GB kept over 30d"
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
