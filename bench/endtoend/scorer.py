"""Sections 2 and 3: the scorer's throughput on messages produced beforehand, and its latency on
messages sent at a steady rate."""

from __future__ import annotations

import json
import time

from kafka import KafkaProducer

from endtoend.analysts import start_workbench
from endtoend.context import Context
from endtoend.cpu import CpuSnapshot, cpu_use
from endtoend.daemon import Daemon, Topics
from endtoend.data import mean_bytes, message_values, produce
from endtoend.decisions import DecisionReader, LiveReader, quantiles_ms
from endtoend.metrics import decided, decision_latency, histogram_delta, total
from endtoend.options import KafkaSettings
from endtoend.results import Latency, Throughput
from filterd.kafka.admin import create_topics

TICK = 0.005  # the latency run's load generator sends every 5 ms


def scorer(context: Context, tag: str, name: str, kafka: KafkaSettings) -> tuple[Daemon, Topics]:
    """A scorer (not started) of the run's model, on fresh topics, with more [kafka] settings
    `kafka` and, with --workbench, the workbench served."""
    options, tmp = context.options, context.tmp
    topics = Topics.fresh(tag)
    create_topics({"bootstrap_servers": context.bootstrap}, topics.names(), options.partitions)
    daemon = Daemon(
        tmp,
        name,
        "scorer",
        context.bootstrap,
        topics,
        context.model_url,
        context.model,
        context.spec,
        poll_records=options.poll_records,
        kafka=kafka,
        http_users=options.workbench.users if options.workbench else None,
        labels=context.labels,
        settings=context.settings,
    )
    return daemon, topics


def phase_throughput(
    context: Context, kafka: KafkaSettings | None = None, name: str = "scorer"
) -> tuple[Throughput, Daemon, Topics, DecisionReader]:
    """`options.messages` messages produced beforehand, then a scorer started on them and
    measured until it decided them all; its decisions are read back. The scorer goes on
    running."""
    options, tmp, bootstrap = context.options, context.tmp, context.bootstrap
    daemon, topics = scorer(context, "score", name, dict(options.kafka if kafka is None else kafka))
    values = message_values(context.bodies, options.messages, "m")
    preproduce_rate = produce(bootstrap, topics.messages, values)
    context.started(daemon)
    # the analysts log in once the daemon's HTTP server answers
    workbench = start_workbench(options.workbench, daemon, context.texts)
    try:
        t_first, m_first = daemon.wait(lambda m: decided(m) > 0, 120, "a first decision")
        cpu_start = CpuSnapshot.take(tmp)
        t_end, m_end = daemon.wait(
            lambda m: decided(m) >= options.messages, 600, f"{options.messages:,} decisions"
        )
        cpu = cpu_use(cpu_start, CpuSnapshot.take(tmp), daemon.pid)
    finally:
        if workbench is not None:
            workbench.stop()
    reader = DecisionReader(bootstrap, topics.decisions)
    ids = {key.decode() for key, _ in values}
    reader.read_until(ids, 120)
    missing = ids - reader.seen.keys()
    got = [reader.seen[i] for i in ids if i in reader.seen]
    first_scored = min(scored for _, _, scored, _ in got)
    # CreateTime: the daemon's send()
    last_sent = max(timestamp for timestamp, _, _, _ in got) / 1000
    n = options.messages
    measured = Throughput(
        message_bytes=mean_bytes(values),
        preproduce_rate=preproduce_rate,
        startup_s=t_first - daemon.started_at,
        rate=n / (last_sent - first_scored),
        rate_metrics=(n - decided(m_first)) / (t_end - t_first),
        window_s=last_sent - first_scored,
        missing=len(missing),
        duplicates=reader.records - len(reader.seen),
        hist=histogram_delta({}, m_end, "scorer"),
        dead_lettered=total(m_end, "filterd_messages_total", outcome="dead_lettered"),
        cpu=cpu,
        decision_bytes=reader.bytes / max(reader.records, 1),
        workbench=workbench.summary(t_first, t_end) if workbench is not None else None,
    )
    return measured, daemon, topics, reader


def phase_latency(
    context: Context,
    daemon: Daemon,
    topics: Topics,
    reader: DecisionReader,
    prefix: str = "lat",
) -> Latency:
    """`options.rate` messages/s for `options.seconds` s into a running, joined scorer;
    per-message latencies."""
    options, bodies = context.options, context.bodies
    before = daemon.metrics()
    base = decided(before)
    producer = KafkaProducer(
        bootstrap_servers=context.bootstrap, enable_idempotence=False, linger_ms=0, acks=1
    )
    producer.partitions_for(topics.messages)
    live = LiveReader(reader)
    if options.observer:
        live.start()
    sent: dict[str, tuple[int, float]] = {}
    workbench = start_workbench(options.workbench, daemon, context.texts)
    if workbench is not None:
        workbench.wait_ready(60)  # logged in: the window starts with the analysts at work
    cpu_start = CpuSnapshot.take(daemon.directory)
    try:
        start = time.time()
        i = ticks = 0
        # every TICK s, the messages due by then in a tight loop: few, small produce requests
        # (linger_ms=0), so that the load generator takes little of the CPU the daemon needs
        while (elapsed := time.time() - start) < options.seconds:
            due = int(elapsed * options.rate)
            while i < due:
                mid = f"{prefix}{i:07d}"
                value = json.dumps({"id": mid, **bodies[i % len(bodies)]}).encode()
                t = time.time()
                ts = int(t * 1000)
                producer.send(topics.messages, key=mid.encode(), value=value, timestamp_ms=ts)
                sent[mid] = (ts, t)
                i += 1
            ticks += 1
            time.sleep(max(0.0, start + ticks * TICK - time.time()))
        producer.flush()
        send_seconds = time.time() - start
        cpu = cpu_use(cpu_start, CpuSnapshot.take(daemon.directory), daemon.pid)
        if workbench is not None:
            workbench.stop()
        daemon.wait(lambda m: decided(m) >= base + len(sent), 120, "every paced message decided")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not sent.keys() <= reader.seen.keys():
            if options.observer:
                time.sleep(0.05)
            else:
                reader.poll()
    finally:
        if live.is_alive():
            live.halt.set()
            live.join()
        if workbench is not None and workbench.is_alive():
            workbench.stop()
        producer.close()
    after = daemon.metrics()
    got = [mid for mid in sent if mid in reader.seen]
    record_ts = [(reader.seen[mid][0] - sent[mid][0]) / 1000 for mid in got]
    scored_at = [reader.seen[mid][2] - sent[mid][1] for mid in got]
    visible = [reader.seen[mid][3] - sent[mid][1] for mid in got]
    return Latency(
        sent=len(sent),
        rate=len(sent) / send_seconds,
        missing=len(sent) - len(got),
        window=(start, start + send_seconds),
        timestamp_type=reader.seen[got[0]][1] if got else None,
        record=quantiles_ms(record_ts),
        scored=quantiles_ms(scored_at),
        visible=quantiles_ms(visible) if options.observer else None,
        hist=histogram_delta(before, after, "scorer"),
        kafka=dict(daemon.kafka),
        cpu=cpu,
        daemon=decision_latency(before, after),
        workbench=workbench.summary(start, start + send_seconds) if workbench else None,
    )


def phase_latency_variant(context: Context, kafka: KafkaSettings, name: str = "scorer2") -> Latency:
    """The latency run again, into a fresh scorer with more [kafka] client settings."""
    daemon, topics = scorer(context, "latency", name, {**context.options.kafka, **kafka})
    context.started(daemon)
    # joins the group and warms the process up
    warm = message_values(context.bodies, 2000, "w")
    produce(context.bootstrap, topics.messages, warm)
    daemon.wait(lambda m: decided(m) >= len(warm), 120, "the warm-up messages decided")
    reader = DecisionReader(context.bootstrap, topics.decisions)
    try:
        reader.read_until({key.decode() for key, _ in warm}, 60)
        result = phase_latency(context, daemon, topics, reader, prefix="lv")
    finally:
        reader.close()
    result.exit = daemon.stop()
    return result
