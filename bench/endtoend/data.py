"""What the end-to-end run sends, and the models its scorers load: SMS records (or, with
--transactions, card payments), the message and feedback records made of them, and the stores
learned before a daemon starts."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, NamedTuple

import kafka_ceiling
from filterd.bayes.model import ModelSpec
from filterd.cli.corpus_files import read_corpus
from filterd.entities import EntityMemory
from filterd.evaluation.corpus import Record, parse_corpus, train_test_split
from filterd.evaluation.protocols import EntityReplay, entity_tokens
from filterd.evaluation.synth import SynthConfig, generate
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
from filterd.service.config import DEFAULTS, Config
from filterd.service.decide import tokenizer_of
from filterd.store.decided import id_hash
from filterd.store.entities import SYNC_OVERLAP, DecidedEvent, EntityLabelled
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from harness import CORPORA
from store import synthetic_token_feedback

SMS = CORPORA / "sms-spam" / "messages.jsonl.gz"
CARDS = CORPORA / "card-transactions" / "messages.jsonl.gz"
# payments before the measured ones: what the model and the entity memory have learned
PAYMENTS_LEARNED = 100_000

# (key, value) of a record to produce
KeyValue = tuple[bytes, bytes]
# a message record without its id
Body = dict[str, Any]


class Sms(NamedTuple):
    """One labelled SMS message."""

    id: str
    label: str
    text: str


def sms_parts() -> tuple[list[Sms], list[Sms], str]:
    """(training records, test records, where they come from)."""
    if SMS.exists():
        train, test = train_test_split(read_corpus(SMS))
        return (
            [Sms(r.id, r.label, r.text) for r in train],
            [Sms(r.id, r.label, r.text) for r in test],
            f"SMS corpus ({SMS.parent.name}), split 66/34 seed 0",
        )
    records = [Sms(r["id"], r["label"], r["text"]) for r in generate(SynthConfig(n_messages=5000))]
    cut = int(len(records) * 0.66)
    return records[:cut], records[cut:], "synthetic messages (the SMS corpus is absent)"


def payment_parts(n: int) -> tuple[list[Record], list[Record], str]:
    """(the payments learned before, the `n` after them, where they come from): the
    card-transactions corpus in its order, or seeded synthetic payments when it is absent."""
    if CARDS.exists():
        records, source = read_corpus(CARDS), "card-transactions corpus"
    else:
        days = max(1, round((PAYMENTS_LEARNED + n) / (2_000 * 2.0)))
        config = TransactionConfig(customers=2_000, terminals=4_000, days=days)
        lines = [json.dumps(r) for r in generate_transactions(config)]
        records, source = parse_corpus(lines, "synthetic"), "synthetic payments"
    cut = min(PAYMENTS_LEARNED, len(records) // 2)
    source += f", {cut:,} payments learned before the {min(n, len(records) - cut):,} decided"
    return records[:cut], records[cut : cut + n], source


def sms_body(text: str) -> Body:
    return {"text": text}


def payment_body(record: Record) -> Body:
    """A payment as a message: its time and attributes (no text)."""
    return {"ts": record.ts.isoformat() if record.ts else None, **record.fields}


def message_values(bodies: list[Body], n: int, prefix: str) -> list[KeyValue]:
    """`n` message records of `bodies` in turn, with the ids `prefix`0000000, `prefix`0000001,
    …"""
    out = []
    for i in range(n):
        mid = f"{prefix}{i:07d}"
        out.append((mid.encode(), json.dumps({"id": mid, **bodies[i % len(bodies)]}).encode()))
    return out


def feedback_values(records: list[Sms], n: int, prefix: str) -> list[KeyValue]:
    """`n` feedback records with text, of `records` in turn, for message ids as
    `message_values`'."""
    out = []
    for i in range(n):
        r = records[i % len(records)]
        mid = f"{prefix}{i:07d}"
        value = {"message_id": mid, "label": r.label, "text": r.text}
        out.append((mid.encode(), json.dumps(value).encode()))
    return out


def label_values(records: list[Sms], n: int, prefix: str) -> list[KeyValue]:
    """`n` feedback records by id (a label, no text) of `records` in turn, for message ids as
    `message_values`'."""
    out = []
    for i in range(n):
        mid = f"{prefix}{i:07d}"
        value = {"message_id": mid, "label": records[i % len(records)].label}
        out.append((mid.encode(), json.dumps(value).encode()))
    return out


def mean_bytes(values: list[KeyValue]) -> float:
    """The mean size of the records' values."""
    return sum(len(v) for _, v in values) / len(values)


def produce(bootstrap: str, topic: str, records: list[KeyValue]) -> float:
    """Send all records (acks=1) and flush; returns records/s."""
    return kafka_ceiling.produce(
        {"bootstrap_servers": bootstrap}, topic, records, acks=1, batch_size=256 * 1024
    )


def learn_sms_model(url: str, model: str, spec: ModelSpec, train: list[Sms]) -> float:
    """The training part into a fresh store; returns seconds."""
    started = time.perf_counter()
    tokenize = tokenizer_of(DEFAULTS, specs=[spec])  # the views the daemon's model reads
    items = [LabelledTokens(r.id, r.label, tokenize({"text": r.text}).tokens) for r in train]
    learned_store(url, model, spec, items).close()
    return time.perf_counter() - started


def learned_store(url: str, model: str, spec: ModelSpec, items: list[LabelledTokens]) -> Store:
    """A fresh store at `url` whose model `model` has learned `items` (none held out)."""
    store = Store.open(url)
    store.upgrade()
    held = store.create_model(model, spec)
    for i in range(0, len(items), 2000):
        held.learn(items[i : i + 2000], holdout_fraction=0)
    return store


def learn_payment_model(
    url: str, model: str, spec: ModelSpec, config: Config, train: list[Record]
) -> float:
    """The payments of `train` into a fresh store as `filterd run` with `config` would have
    learned them (their tokens and their entities' tokens, each label at once), and the entity
    memory's history the scorers load: every payment's events and the frauds' labels; returns
    seconds."""
    started = time.perf_counter()
    entity_spec = config.entities.spec(config.decision.target_class)
    tokenize = tokenizer_of(config, specs=[spec])
    remembered = entity_tokens(train, EntityReplay(entity_spec))
    items = [
        LabelledTokens(r.id, r.label, tokenize(r.message()).tokens + extra)
        for r, extra in zip(train, remembered)
    ]
    memory = EntityMemory(entity_spec)
    events, labels = [], []
    for r in train:
        for event in memory.events(r.fields, r.ts.timestamp() if r.ts else None):
            events.append(DecidedEvent(r.id, event, r.label))
            if r.label == entity_spec.target:
                labels.append(EntityLabelled(id_hash(r.id), event.key, event.value, event.at))
    store = learned_store(url, model, spec, items)
    # written before the scorers' refreshes look back (SYNC_OVERLAP), as a deployment's history
    # was: else each refresh of a scorer's first seconds would read all of it again
    now = datetime.now(UTC) - 2 * SYNC_OVERLAP
    with store.model(model).transaction() as writing:
        for i in range(0, len(events), 10_000):
            writing.record_entity_events(events[i : i + 10_000], now)
        writing.record_entity_labels(labels, [], now)
    store.close()
    return time.perf_counter() - started


# the big model's estimator, the one the documented memory figure was measured with
BIG_SPEC = ModelSpec("mnb")


def build_big_model(url: str, model: str, tokens: int) -> float:
    """`tokens` distinct tokens × 2 classes (bench/store.py's synthetic documents); seconds."""
    started = time.perf_counter()
    store = Store.open(url)
    store.upgrade()
    held = store.create_model(model, BIG_SPEC, seed=2)
    big = synthetic_token_feedback(tokens)
    for i in range(0, len(big), 1000):
        held.learn(big[i : i + 1000], holdout_fraction=0)
    store.close()
    return time.perf_counter() - started
