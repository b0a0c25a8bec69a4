"""The three ways `bench/e2e.py` runs its phases: all five sections, the latency section alone
(--latency-only), and Kafka clients side by side (--clients)."""

from __future__ import annotations

import sys

from sqlalchemy import text

import kafka_ceiling
from endtoend.context import Context
from endtoend.cpu import CpuSnapshot, cpu_use
from endtoend.data import Sms, mean_bytes, message_values
from endtoend.learner import phase_learner
from endtoend.memory import phase_memory
from endtoend.options import KafkaSettings
from endtoend.results import ClientRuns, Report, Throughput, median_by
from endtoend.scorer import phase_latency, phase_latency_variant, phase_throughput
from filterd.bayes.model import ModelSpec
from filterd.store.database import connect


def run_all(
    context: Context, train: list[Sms], spec: ModelSpec, report: Report, big_build_s: float
) -> None:
    """Sections 1 to 5."""
    options, tmp, bootstrap = context.options, context.tmp, context.bootstrap
    print("1/5 client ceiling …", file=sys.stderr)
    cpu_start = CpuSnapshot.take(tmp)
    report.ceiling = kafka_ceiling.ceiling(
        bootstrap, n=options.ceiling_records, repeats=options.scorer_runs
    )
    report.ceiling_cpu = cpu_use(cpu_start, CpuSnapshot.take(tmp), None)
    runs: list[Throughput] = []
    for run in range(options.scorer_runs):
        print(f"2/5 scorer throughput, run {run + 1} of {options.scorer_runs} …", file=sys.stderr)
        measured, scorer, topics, reader = phase_throughput(context)
        runs.append(measured)
        if run < options.scorer_runs - 1:  # only the last run's scorer goes on to the latency run
            scorer.stop()
            reader.close()
    # a shared host's speed drifts: report the median run, and every run
    report.throughput = median_by(runs, lambda r: r.rate)
    report.message_bytes = report.throughput.message_bytes
    report.rates = [(r.rate, r.rate_metrics / max(r.cpu["daemon"], 1e-9)) for r in runs]
    try:
        print("3/5 latency …", file=sys.stderr)
        report.latency = [phase_latency(context, scorer, topics, reader)]
    finally:
        reader.close()
    report.scorer_memory = scorer.memory()
    report.model_tokens = vocabulary(context.model_url)
    report.scorer_exit = scorer.stop()
    if options.latency_variant:
        print(f"3/5 latency again, with {options.latency_variant} …", file=sys.stderr)
        report.latency.append(phase_latency_variant(context, options.latency_variant))
    if options.transactions:
        return  # sections 4 and 5 learn and decide SMS
    print("4/5 learner into PostgreSQL …", file=sys.stderr)
    report.feedback_bytes, report.learn, report.by_id = phase_learner(
        context, train + context.test, spec
    )
    print("5/5 memory …", file=sys.stderr)
    report.memory = phase_memory(context, big_build_s)


def run_latency_only(context: Context, report: Report) -> None:
    """Section 3 alone: the latency run in a fresh scorer, then with the variant's settings."""
    report.message_bytes = mean_bytes(message_values(context.bodies, 1000, "x"))
    variant = context.options.latency_variant
    runs: list[KafkaSettings] = [{}, variant] if variant else [{}]
    for n, kafka in enumerate(runs):
        print(f"latency run {n + 1}, {kafka or 'default client settings'} …", file=sys.stderr)
        report.latency.append(phase_latency_variant(context, kafka, name=f"scorer{n}"))


def run_clients(context: Context, report: Report) -> None:
    """Sections 1 to 3 for each client of --clients, side by side: the client's ceiling through
    filterd's own consumer and publisher (`kafka_ceiling.client_ceiling`), scorer throughput,
    then latency in the last throughput run's scorer. Runs alternate between the clients, run
    by run, so that a machine whose speed drifts favours none."""
    options = context.options
    report.message_bytes = mean_bytes(message_values(context.bodies, 1000, "x"))
    clients = {client: ClientRuns() for client in options.clients}
    report.clients = clients
    for run in range(options.scorer_runs):
        for client in options.clients:
            print(f"1/3 {client} ceiling, run {run + 1} …", file=sys.stderr)
            clients[client].ceilings.append(
                kafka_ceiling.client_ceiling(
                    context.bootstrap,
                    client,
                    n=options.ceiling_records,
                    partitions=options.partitions,
                    max_poll_records=options.poll_records,
                    client_config=options.kafka,
                )
            )
    last = options.scorer_runs - 1
    for run in range(options.scorer_runs):
        for client in options.clients:
            print(f"2/3 {client} scorer throughput, run {run + 1} …", file=sys.stderr)
            kafka: KafkaSettings = {**options.kafka, "client": client}
            measured, scorer, topics, reader = phase_throughput(
                context, kafka, f"scorer-{client}-{run}"
            )
            try:
                if run == last:
                    print(f"3/3 {client} latency …", file=sys.stderr)
                    clients[client].latency = phase_latency(
                        context, scorer, topics, reader, prefix=f"l{client[:2]}"
                    )
            finally:
                reader.close()
            clients[client].runs.append(measured)
            measured.exit = scorer.stop()


def vocabulary(url: str) -> int:
    """The distinct tokens of the model in the store at `url`."""
    engine = connect(url)
    with engine.connect() as conn:
        n = conn.execute(text("SELECT COUNT(DISTINCT token_key) FROM token_stats")).scalar()
    engine.dispose()
    return int(n or 0)
