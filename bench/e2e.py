"""Does the daemon meet its throughput, latency and memory targets, through a real broker?

    .venv/bin/python bench/e2e.py [--messages 100000] [--rate 2000 --seconds 20]
        [--feedback 50000] [--tokens 1000000] [--memory-messages 100000]
        [--ceiling-records 50000] [--scorer-runs 3] [--kafka KEY=VALUE ...]
        [--latency-variant KEY=VALUE[,...] | ''] [--latency-only]
        [--workbench [--workbench-rate 20] [--workbench-analysts 4]]
        [--clients kafka-python,confluent] [--transactions]

One invocation starts a local Tansu broker (memory storage) and, for the learner, an embedded
PostgreSQL 18, runs `python -m filterd run` as child processes (one process per role,
configuration defaults but for the group timeouts, as in production) and prints, in markdown,
every figure against its target, then:

1. the kafka-python ceiling on the same broker (`kafka_ceiling.ceiling`, medians of
   `--scorer-runs` runs): consume + publish + flush + commit per poll() batch of 500 with
   acks=all through the daemon's own `filterd.kafka.publisher.Publisher`, as the daemon does
   (and through KafkaProducer, for reference); the daemon's rates are also given as a ratio of
   it;
2. scorer throughput: a model learned from the SMS corpus's training part (synthetic messages if
   the corpus is absent) in SQLite, `--messages` SMS-size messages produced beforehand (the test
   part repeated under new ids), then `filterd run --role scorer`. Window: from the first
   decision's `scored_at` (its batch, just after the first poll returned) to the last decision's
   record timestamp (CreateTime: the daemon's send(); its acknowledgement follows within the
   batch's flush, a few ms). All decisions are read back and their ids compared. The
   batch latency histogram (poll returned → offsets committed) is the daemon's own, from
   /metrics. `--scorer-runs` runs (3), each a fresh scorer on fresh topics; the median run is
   reported with every run's rate, because a shared host's speed drifts from minute to minute;
3. latency: `--rate` messages/s for `--seconds` s (sent every 5 ms, linger_ms=0) into the same
   warm scorer. The target (p99 consume-to-publish ≤ 50 ms) is judged on the daemon's own
   `filterd_decision_latency_seconds` (from /metrics before and after the run): per decision,
   from the return of the poll() that delivered the message to the return of the producer flush
   that confirmed the decision's acknowledgement; p50/p90/p99 interpolated inside its buckets
   and the exact share within 50 ms (a bucket bound). For reference, through the broker: per
   message, the decision record's timestamp (CreateTime, set by the daemon's producer at send();
   Tansu ignores LogAppendTime) minus the message record's CreateTime; the decision's scored_at
   minus the send time; and the time an observer thread here received the decision minus the
   send time (this includes the daemon's flush and the observer's fetch). Then the same again in
   a fresh scorer with the `--latency-variant` client settings (default fetch_max_wait_ms=10:
   Tansu answers a fetch that finds no data only after fetch_max_wait_ms, even when records
   arrive meanwhile);
4. learner throughput: `--feedback` feedback records with text produced beforehand, then
   `filterd run --role learner` against an embedded PostgreSQL (schema and model created by the
   daemon, holdout 10 %): records/s between scrapes of the metrics, from the first batch
   applied to the last scrape before the final one (`counted_rate`; section 5 likewise);
   4b. the same with `--feedback` labels by id only, for as many messages that a scorer process
   (`--role scorer`, on the same PostgreSQL) decided beforehand: the learner, a process of its
   own, reads each message back from the messages topic at the coordinates the scorer recorded;
5. memory: a model of `--tokens` distinct tokens × 2 classes in SQLite (built as bench/store.py
   builds it); a scorer process loads it and decides `--memory-messages` messages (100,000
   fills its recent-messages cache); VmRSS after loading and after scoring, and VmHWM (the peak,
   which a container's memory limit must also allow), from /proc/PID/status.

`--latency-only` runs section 3 alone (both runs in fresh scorers).

`--transactions` runs sections 1 to 3 on card payments instead of SMS: the scorers configured as
the shipped config/transactions.toml (entity memory on customer and terminal, four windows,
labels legit and fraud), their model learned from the first 100,000 payments of the
card-transactions corpus in its order (seeded synthetic payments if it is absent) with their
entities' tokens, and the entity memory's history in the store (every payment's events, the
frauds' labels) as the scorers load it; the messages decided are the payments after those, each
`{"id", "ts", "attributes"}`.

`--clients kafka-python,confluent` compares Kafka clients (`[kafka] client`) side by side in one
run instead: for each client, its ceiling through filterd's own consumer and publisher
(`kafka_ceiling.client_ceiling`, section 1's pipeline), scorer throughput (section 2) and, in
the last run's scorer, latency (section 3), the runs alternating between the clients; one table
row per client: ceiling, throughput, their ratio, the daemon's CPU per message, latency p99 and
the share within 50 ms.

`--workbench` runs sections 2 and 3 with analysts using the workbench: every scorer there has
`[http] enabled = true` (a free port, one analyst user with a pbkdf2_sha256 hash), and during
each measured window `--workbench-analysts` threads of this process (the bench pins no CPU;
their CPU counts as this process's) log in once each (GET /login, POST /login) and then send,
at `--workbench-rate` requests/s in total, in turn GET /queue, /queue?label=spam, /messages/<an
id from a queue page>, /model, /audit and POST /v1/check of one SMS (basic auth). The review
settings stay the defaults, so the scorer's Kafka work is the baseline's; each section prints a
table of the requests (count, non-200 count, p50/p99/max by page). The baseline is the same
command without `--workbench`, which measures exactly what it measured before.

The machine may be shared: for every measured window the CPU used by the daemon, the broker,
this process, PostgreSQL and everything else (from /proc) is printed, and daemon rates also per
CPU-second of the daemon. Nothing is left running: daemons get SIGTERM (then SIGKILL, and they
die with this process), the broker and PostgreSQL are stopped, temporary files removed.

The parts are in `endtoend/`, one job a module.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import tempfile
import tomllib
from pathlib import Path

from endtoend.context import Context, model_name, store_url
from endtoend.data import (
    Sms,
    build_big_model,
    learn_payment_model,
    learn_sms_model,
    payment_body,
    payment_parts,
    sms_body,
    sms_parts,
)
from endtoend.options import parse
from endtoend.report import print_report
from endtoend.results import Report
from endtoend.runs import run_all, run_clients, run_latency_only
from filterd.demo.broker import LocalBroker
from filterd.service.config import load
from harness import load_average

TRANSACTIONS = Path(__file__).resolve().parents[1] / "config" / "transactions.toml"


def main() -> None:
    options = parse(None, __doc__.splitlines()[0])
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    command = shlex.join([os.path.relpath(sys.executable), *sys.argv])
    # as `filterd run` reads [model]: the variant takes its own parameters and selection
    named = {"model.variant": options.variant, "model.select": options.select}
    overrides = {key: value for key, value in named.items() if value is not None}
    config = load(TRANSACTIONS if options.transactions else None, environ={}, overrides=overrides)
    spec = config.model.spec
    if options.transactions:
        learned, decided, source = payment_parts(options.messages)
        train: list[Sms] = []
        test: list[Sms] = []
        bodies = [payment_body(r) for r in decided]
        with TRANSACTIONS.open("rb") as file:
            settings = tomllib.load(file)
    else:
        train, test, source = sms_parts()
        bodies, settings = [sms_body(r.text) for r in test], {}
    report = Report(spec=str(spec), source=source, load_start=load_average())
    with tempfile.TemporaryDirectory(prefix="filterd-e2e-") as name:
        tmp = Path(name)
        context: Context | None = None
        model = model_name(options)
        try:
            url = store_url(tmp, options)
            if options.transactions:
                learn_payment_model(url, model, spec, config, learned)
            else:
                learn_sms_model(url, model, spec, train)
            big_build_s = 0.0
            if not (options.latency_only or options.clients or options.transactions):
                print(f"building the {options.tokens:,}-token model …", file=sys.stderr)
                big_build_s = build_big_model(f"sqlite:///{tmp}/big.db", "big", options.tokens)
            with LocalBroker(log_path=tmp / "tansu.log") as broker:
                context = Context(
                    options,
                    tmp,
                    broker.bootstrap_servers,
                    bodies,
                    test,
                    spec,
                    tuple(config.model.labels),
                    settings,
                )
                banner = (tmp / "tansu.log").read_text(errors="replace")
                report.tansu = (banner.splitlines() or ["Tansu"])[0].strip()
                if options.clients:
                    run_clients(context, report)
                elif options.latency_only:
                    run_latency_only(context, report)
                else:
                    run_all(context, train, spec, report, big_build_s)
        finally:
            for daemon in context.daemons if context else []:
                daemon.stop()
    report.load_end = load_average()
    print_report(options, report, command)


if __name__ == "__main__":
    main()
