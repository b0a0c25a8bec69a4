"""What does the scorer's entity memory cost a decision?

Seeded synthetic card payments (`filterd.evaluation.synth_transactions`: 2,000 customers, 4,000
terminals) through `filterd.daemon.entity_state.EntityState.evidence` with the shipped
`transactions.toml` (entities customer and terminal, four windows, counterparties), in the
scorer's batches of 500, on a SQLite store: what the memory adds to each batch the scorer
decides (the tokens, the words, the events and the record kept for the store), per payment.
The first `--warm` payments fill the memory first (a scorer that has run a while: its entities
have history), then `--payments` are timed batch by batch. Each batch's events go to the store
as the scorer's recorder writes them, and the state reads what was written since as the scorer
does between batches (`refresh`, every `SYNC_SECONDS`): both are timed apart from the memory.

    python bench/entity_cost.py [--payments 200000] [--warm 100000]

Prints the payments per second of the memory alone, and the per-payment cost: the mean, and the
median and 99th percentile over batches (a batch's time / its payments); and how much the
process's resident memory grew while the scorer's entity state filled (the entities' events
and labels, and the (message, entity) pairs it remembers having applied, up to `MAX_SEEN`); the
store writes per payment and the refreshes' mean time, and, for comparison, one read of every
row written within the overlap, this scorer's own included (what a refresh read before the rows
named their writer).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import structlog

from filterd.bayes.model import ModelSpec
from filterd.daemon.entity_state import SYNC_SECONDS, EntityState
from filterd.evaluation.synth_transactions import TransactionConfig, generate_transactions
from filterd.service.config import load as load_config
from filterd.service.records import Message
from filterd.store.entities import DecidedEvent
from filterd.store.handle import ModelStore, Store
from harness import own_status_kb

CONFIG = Path(__file__).resolve().parents[1] / "config" / "transactions.toml"
BATCH = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", type=int, default=200_000)
    parser.add_argument("--warm", type=int, default=100_000)
    args = parser.parse_args()
    total = args.warm + args.payments
    days = max(1, round(total / (2_000 * 2.0)))
    stream = generate_transactions(TransactionConfig(customers=2_000, terminals=4_000, days=days))
    messages = [
        Message(id=r["id"], attributes=r["attributes"], ts=datetime.fromisoformat(r["ts"]))
        for r in stream[:total]
    ]
    config = load_config(CONFIG, environ={})
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/filterd.db")
        store.upgrade()
        model = store.create_model("default", ModelSpec("mnb"))
        spec = config.entities.spec(config.decision.target_class)
        state = EntityState(model, spec, structlog.get_logger())
        state.refresh(force=True)
        resident = own_status_kb("VmRSS")
        for start in range(0, args.warm, BATCH):
            state.evidence(messages[start : start + BATCH])
            write(model, state)
        per_payment, refreshes = [], []
        timed = messages[args.warm :]
        seconds = writing = 0.0
        synced = time.perf_counter()
        for start in range(0, len(timed), BATCH):
            batch = timed[start : start + BATCH]
            t0 = time.perf_counter()
            state.evidence(batch)
            t1 = time.perf_counter()
            write(model, state)
            t2 = time.perf_counter()
            if t2 - synced >= SYNC_SECONDS:  # as often as the scorer reads the others' rows
                state.refresh(force=True)
                synced = time.perf_counter()
                refreshes.append(synced - t2)
            per_payment.append((t1 - t0) / len(batch))
            seconds, writing = seconds + t1 - t0, writing + t2 - t1
        grown = (own_status_kb("VmRSS") - resident) / 1024
        t0 = time.perf_counter()
        overlap = model.entity_events_written_since(datetime.now(UTC))
        unmarked = time.perf_counter() - t0
        store.close()
    per_payment.sort()
    p99 = per_payment[min(len(per_payment) - 1, round(0.99 * len(per_payment)))]
    print(
        f"entity memory ({len(timed):,} payments after {args.warm:,}, "
        f"{len(state.memory):,} entities): {len(timed) / seconds:,.0f} payments/s; "
        f"per payment {1e6 * seconds / len(timed):.0f} µs mean, "
        f"{1e6 * statistics.median(per_payment):.0f} µs median and {1e6 * p99:.0f} µs p99 "
        f"over batches of {BATCH}; the process's resident memory grew by {grown:.0f} MB while "
        "the memory filled"
    )
    print(
        f"the store: {1e6 * writing / len(timed):.0f} µs per payment to write its events; "
        f"{len(refreshes)} refreshes, {1e3 * statistics.mean(refreshes or [0.0]):.1f} ms mean; "
        f"one read of all {len(overlap):,} rows written within the overlap, this scorer's "
        f"own included: {1e3 * unmarked:.0f} ms"
    )


def write(model: ModelStore, state: EntityState) -> None:
    """The events the state took, written as the scorer's recorder writes them."""
    _, events = state.take()
    with model.transaction() as writing:
        decided = [DecidedEvent(m, event) for m, event in events]
        writing.record_entity_events(decided, datetime.now(UTC), state.marks.writer)


if __name__ == "__main__":
    main()
