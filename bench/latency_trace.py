"""Where a message's time goes at a steady rate: the daemon traced batch by batch.

    .venv/bin/python bench/latency_trace.py [--rate 2000] [--seconds 15] [--kafka KEY=VALUE ...]

Runs the latency run of bench/e2e.py (section 3: a fresh `python -m filterd run --role scorer`
child process, warmed up with 2,000 messages, then `--rate` messages/s for `--seconds` s) with
a tracer in the daemon, loaded through a `sitecustomize` module written to a temporary
directory put first on PYTHONPATH; filterd itself is not changed. The tracer wraps
`Batch.poll`, `decide_payloads`, `Publisher.flush` and `Loop._commit` and kafka-python's
fetch-response handler, and timestamps full garbage collections; the events are written as
JSON when the daemon exits. Printed, for the batches polled in the paced window: per message,
message CreateTime → poll() returned and poll() returned → flush returned (the decision
acknowledged); per batch, the wait in poll(), scoring, sending, the flush, the commit, back to
poll(); the fetch round trips (request built → response handled in the daemon); beside the
daemon's own `filterd_decision_latency_seconds` and the CPU each process used.

What the 2026-11-23 runs showed is in bench/README.md ("Where the latency goes").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e  # noqa: E402

from filterd.broker import LocalBroker  # noqa: E402
from filterd.estimators import parse_params  # noqa: E402
from filterd.model import ModelSpec  # noqa: E402
from filterd.select import Selection  # noqa: E402

TRACE_ENV = "LATENCY_TRACE_FILE"  # not FILTERD_…: e2e.Daemon drops those from the child's environment

# Runs in the daemon process at start-up (sitecustomize): only for `filterd run` with TRACE_ENV set.
TRACER = '''
import os, sys
if os.environ.get("LATENCY_TRACE_FILE") and "filterd" in sys.orig_argv and "run" in sys.orig_argv:
    import atexit, gc, json, time
    from kafka.consumer import fetcher
    from filterd import stream
    from filterd.daemon import loop, scorer

    events = []  # (kind, epoch seconds at the end, {details})
    atexit.register(lambda: json.dump(events, open(os.environ["LATENCY_TRACE_FILE"], "w")))

    def timed(kind, function, details=lambda result: {}):
        def wrapper(*args, **kwargs):
            started = time.time()
            result = function(*args, **kwargs)
            events.append((kind, time.time(), {"started": started, **details(result)}))
            return result
        return wrapper

    poll = timed("poll", stream.Batch.poll.__func__,
                 lambda batch: {"timestamps": [r.timestamp for r in batch.records]})
    stream.Batch.poll = classmethod(poll)
    scorer.decide_payloads = timed("decide", scorer.decide_payloads)
    stream.Publisher.flush = timed("flush", stream.Publisher.flush)
    loop.Loop._commit = timed("commit", loop.Loop._commit)

    handle = fetcher.Fetcher._handle_fetch_response
    def handled(self, node_id, fetch_offsets, send_time, response):
        sent = time.time() - (time.monotonic() - send_time)
        events.append(("fetch", time.time(), {"started": sent}))
        return handle(self, node_id, fetch_offsets, send_time, response)
    fetcher.Fetcher._handle_fetch_response = handled

    def collected(phase, info):
        if info.get("generation") == 2:
            events.append(("gc2-" + phase, time.time(), {}))
    gc.callbacks.append(collected)
'''


def batches(events: list, start: float, end: float) -> list[dict]:
    """One dict per traced batch polled in [start, end]: the end times of each step."""
    out, current = [], None
    for kind, at, details in events:
        if kind == "poll" and details["timestamps"]:
            current = {"poll_called": details["started"], "polled": at, "timestamps": details["timestamps"]}
        elif current is not None and kind in ("decide", "flush", "commit"):
            current[kind + "_started"], current[kind] = details["started"], at
            if kind == "commit":
                out.append(current)
                current = None
    return [b for b in out if start <= b["polled"] <= end and "flush" in b]


def ms(values: list[float]) -> str:
    a = np.asarray(values, dtype=float) * 1000
    if not len(a):
        return "—"
    return " | ".join(f"{np.percentile(a, q):.1f}" for q in (50, 90, 99)) + f" | {a.mean():.1f}"


def report(events: list, window: tuple[float, float]) -> list[str]:
    """Markdown: per message, per batch and per fetch, for the batches polled in `window`."""
    start, end = window
    bs = batches(events, start, end)
    steps = [("poll() blocked", "poll_called", "polled"), ("poll() returned → scoring starts", "polled", "decide_started"),
             ("scoring (decode, tokenize, score, explain)", "decide_started", "decide"),
             ("sending the decisions and dead letters", "decide", "flush_started"),
             ("flush (acks=all round trip)", "flush_started", "flush"), ("commit and metrics", "flush", "commit")]  # fmt: skip
    lines = [f"{len(bs):,} batches, {np.mean([len(b['timestamps']) for b in bs]):.1f} messages per batch on average",
             "", "| ms | p50 | p90 | p99 | mean |", "|---|---:|---:|---:|---:|",
             f"| per message: message CreateTime → poll() returned | "
             f"{ms([b['polled'] - ts / 1000 for b in bs for ts in b['timestamps']])} |",
             f"| per message: poll() returned → flush returned | "
             f"{ms([b['flush'] - b['polled'] for b in bs for _ in b['timestamps']])} |"]  # fmt: skip
    lines += [f"| per batch: {label} | {ms([b[to] - b[fro] for b in bs])} |" for label, fro, to in steps]
    lines.append(f"| per batch: commit → next poll() | {ms([b['poll_called'] - a['commit'] for a, b in zip(bs, bs[1:])])} |")
    fetches = [at - details["started"] for kind, at, details in events if kind == "fetch" and start <= at <= end]
    lines.append(f"| fetch round trip ({len(fetches) / (end - start):.0f}/s) | {ms(fetches)} |")
    pauses = [b[1] - a[1] for a, b in zip(events, events[1:]) if a[0] == "gc2-start" and b[0] == "gc2-stop"
              and start <= a[1] <= end]  # fmt: skip
    lines += ["", f"full garbage collections in the window: {len(pauses)}"
              + (f", {', '.join(f'{1000 * p:.1f}' for p in pauses)} ms" if pauses else "")]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--poll-records", type=int, default=500)
    parser.add_argument("--no-observer", dest="observer", action="store_false")
    parser.add_argument("--kafka", action="append", default=[], metavar="KEY=VALUE",
                        help="a [kafka] client setting of the daemon (repeatable)")
    args = parser.parse_args()
    kafka = e2e.settings(args.kafka)
    args.kafka = {}  # e2e's settings for every daemon; this one's are `kafka`
    train, test, source = e2e.sms_parts()
    with tempfile.TemporaryDirectory(prefix="filterd-trace-") as name:
        tmp = Path(name)
        e2e.MARKER = str(tmp)
        (tmp / "site").mkdir()
        (tmp / "site" / "sitecustomize.py").write_text(TRACER)
        trace = tmp / "trace.json"
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp / "site"), os.environ.get("PYTHONPATH")]))
        os.environ[TRACE_ENV] = str(trace)
        e2e.learn_sms_model(f"sqlite:///{tmp}/sms.db", "sms", ModelSpec("mnb", parse_params("mnb", {}),
                            Selection.parse("none")), train)  # fmt: skip
        daemons: list = []
        with LocalBroker(log_path=tmp / "tansu.log") as broker:
            try:
                lat = e2e.phase_latency_variant(args, tmp, broker.bootstrap_servers, test, kafka, daemons)
            finally:
                for daemon in daemons:
                    daemon.stop()
        events = json.loads(trace.read_text())
    d, cpu = lat["daemon"], lat["cpu"]
    print(f"# Latency trace: {lat['sent']:,} messages at {lat['rate']:,.0f} msg/s, {kafka or 'default client settings'}")
    print()
    print(f"- the daemon's filterd_decision_latency_seconds: p50 {d['p50']:.1f} ms, p99 {d['p99']:.1f} ms, "
          f"{d['within']:.2%} within 50 ms; end to end (CreateTime to CreateTime) p50 {lat['record']['p50']:.1f} ms, "
          f"p99 {lat['record']['p99']:.1f} ms")
    print(f"- {e2e.cpu_line(cpu)}")
    print()
    print("\n".join(report(events, lat["window"])))


if __name__ == "__main__":
    main()
