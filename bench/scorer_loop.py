"""Where does the scorer's time go, without a broker?

    .venv/bin/python bench/scorer_loop.py [--transactions] [--messages 40000] [--runs 3]

The daemon's scorer loop in this process, the real one (`filterd.daemon.scorer.Scorer`,
configured as `filterd run` configures it), over the in-memory broker (`filterd.kafka.memory`)
and a SQLite store, its model learned as `bench/e2e.py` learns it (`endtoend.data`): SMS with
the default configuration, the model learned from the SMS corpus's training part (seeded
synthetic messages without the corpus); with `--transactions`, card payments with
config/transactions.toml, the model and the entity memory's history learned from the first
100,000 payments of the card-transactions corpus (synthetic payments without it). Each run is
a fresh scorer deciding `--messages` messages.

Prints, per run: the steady rate (from the 2,000th decision to the last), the process's CPU per
message while the loop runs, and the same scorer with its recorder's writes left out (its
`write` a no-op, everything taken as written): what the store's writes, from the recorder's
thread, cost the scorer's. Without Kafka's clients this is not the daemon's rate
(`bench/e2e.py`), but it shows how the scorer spends a decision, run after run on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import structlog

from endtoend.data import (
    Body,
    learn_payment_model,
    learn_sms_model,
    message_values,
    payment_body,
    payment_parts,
    sms_body,
    sms_parts,
)
from filterd.daemon.entity_state import EntityState
from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.model_state import ModelState
from filterd.daemon.override_state import OverrideState
from filterd.daemon.recent import RecentMessages
from filterd.daemon.recorder import Recorder
from filterd.daemon.scorer import Scorer
from filterd.kafka.memory import MemoryBroker, MemoryConsumer, MemoryPublisher
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import Config, load
from filterd.store.handle import Store
from harness import cpu_model

EXAMPLE = Path(__file__).resolve().parents[1] / "config" / "transactions.toml"
STEADY_FROM = 2_000  # decisions before the rate is measured (the model's load, the first batches)
TOPICS = {"messages": 4, "decisions": 4, "dead-letter": 1}


def sms_store(url: str) -> tuple[Config, list[Body]]:
    """A store whose default model learned the SMS training part, and the test part's bodies."""
    config = load(None, environ={}, overrides={"database.url": url})
    train, test, _ = sms_parts()
    learn_sms_model(url, config.model.name, config.model.spec, train)
    return config, [sms_body(r.text) for r in test]


def payments_store(url: str, n: int) -> tuple[Config, list[Body]]:
    """A store whose default model and entity history learned payments, and the next `n`."""
    config = load(EXAMPLE, environ={}, overrides={"database.url": url})
    learned, decided, _ = payment_parts(n)
    learn_payment_model(url, config.model.name, config.model.spec, config, learned)
    return config, [payment_body(r) for r in decided]


def scorer(config: Config, broker: MemoryBroker, publisher: MemoryPublisher) -> Scorer:
    """A scorer as `filterd run --role scorer` makes it, over `broker`."""
    log = structlog.get_logger()
    model = Store.open(config.database.url).model(config.model.name)
    metrics, health = Metrics(), Health()
    entities = config.entities.spec(config.decision.target_class)
    d = config.dead_letter
    return Scorer(
        ModelState(model, config, metrics, health, log),
        RecentMessages(
            config.recent.max_messages, config.recent.max_bytes, config.recent.ttl_seconds
        ),
        "decisions",
        config.limits.max_bytes,
        config.review,
        EntityState(model, entities, log) if entities.enabled else None,
        config.feedback.keep_tokens_bytes,
        OverrideState(model, entities, log),
        kafka={},
        topic="messages",
        group="scorers",
        max_records=config.batches.poll_records,
        publisher=publisher,
        guard=DeadLetterGuard(d.max_ratio, d.window, d.max_consecutive),
        dead_letter_topic="dead-letter",
        payload_limit=d.payload_bytes,
        metrics=metrics,
        health=health,
        log=log,
        connect=lambda: MemoryConsumer(broker, "messages", "scorers"),
    )


class Unwritten(Recorder):
    """A recorder that takes what the scorer gives it as written, and writes none of it."""

    def write(self) -> bool:
        with self._wake:
            self._rows, self._items, self._entity_events = [], [], []
            self._entity_records, self._tokens = {}, {}
            self.recorded = self.tickets
        return True


def run(config: Config, bodies: list[Body], n: int, recorder: bool) -> tuple[float, float]:
    """(messages a second, the process's CPU µs a message), from the STEADY_FROM-th decision to
    the last, of a fresh scorer deciding `n` messages."""
    broker = MemoryBroker(dict(TOPICS))
    for key, value in message_values(bodies, n, "m"):
        broker.produce("messages", key, value)
    publisher = MemoryPublisher(broker)
    loop = scorer(config, broker, publisher)
    if not recorder:
        held = loop.recorder
        loop.recorder = Unwritten(
            held.model, held.max_items, loop.health, loop.metrics, loop.log, held.writer
        )
    stop, marks = threading.Event(), list[tuple[float, float, int]]()

    def decisions() -> int:
        return sum(len(log) for tp, log in list(broker.records.items()) if tp.topic == "decisions")

    def watch() -> None:
        while (decided := decisions()) < n:
            if not marks and decided >= STEADY_FROM:
                marks.append((time.perf_counter(), time.process_time(), decided))
            time.sleep(0.005)
        marks.append((time.perf_counter(), time.process_time(), decided))
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    loop.run(stop)
    (t1, cpu1, n1), (t2, cpu2, n2) = marks
    return (n2 - n1) / (t2 - t1), (cpu2 - cpu1) / (n2 - n1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", action="store_true", help="card payments")
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    with tempfile.TemporaryDirectory() as work:
        url = f"sqlite:///{work}/filterd.db"
        if args.transactions:
            config, bodies = payments_store(url, args.messages)
        else:
            config, bodies = sms_store(url)
        what = "card payments (transactions.toml)" if args.transactions else "SMS (defaults)"
        print(f"# the scorer's loop in process: {what}, {args.messages:,} messages a run")
        print(f"- {cpu_model()}; model {config.model.spec}")
        rates: dict[bool, list[float]] = {True: [], False: []}
        for i in range(args.runs):
            for recorder in (
                True,
                False,
            ):  # alternating, so that the machine's drift favours neither
                rate, cpu = run(config, bodies, args.messages, recorder)
                rates[recorder].append(rate)
                name = "with its recorder" if recorder else "recorder's writes left out"
                print(f"- run {i + 1}, {name}: {rate:,.0f} msg/s, {cpu:.0f} µs of CPU a message")
        with_, without = (statistics.median(rates[r]) for r in (True, False))
        print(f"median: {with_:,.0f} msg/s with the recorder, {without:,.0f} without it")


if __name__ == "__main__":
    main()
