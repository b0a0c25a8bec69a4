"""The options of `bench/e2e.py`, parsed and checked once."""

from __future__ import annotations

import argparse
import secrets
from dataclasses import dataclass

from filterd.kafka.settings import KAFKA_CLIENTS
from filterd.service.passwords import hash_secret

# a [kafka] client setting's value, as KEY=VALUE on the command line gives it
KafkaValue = str | int | float | bool
KafkaSettings = dict[str, KafkaValue]

WORKBENCH_USER = "analyst"


@dataclass(frozen=True)
class Workbench:
    """--workbench: the analysts' requests/s in total, how many analysts share them, and the one
    user they log in as: its password and the scorers' `[http] users` entry for it."""

    rate: float
    analysts: int
    password: str
    users: dict[str, str]


@dataclass(frozen=True)
class Options:
    """What one invocation measures and how; `--help` says what each is."""

    messages: int
    rate: float
    seconds: float
    feedback: int
    tokens: int
    memory_messages: int
    ceiling_records: int
    scorer_runs: int
    partitions: int
    poll_records: int
    variant: str | None  # None: the configuration's
    select: str | None
    observer: bool  # a live consumer of the decisions during the latency runs
    kafka: KafkaSettings  # more [kafka] settings for every daemon
    latency_variant: KafkaSettings  # the second latency run's [kafka] settings ({}: no such run)
    latency_only: bool
    clients: list[str]  # --clients, in order ([]: the whole run)
    workbench: Workbench | None
    transactions: bool  # card payments with entity memory instead of SMS (sections 1 to 3)


def parse(argv: list[str] | None, description: str) -> Options:
    """The options of `argv` (the command line's when None); exits with a usage error on a bad
    one."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--messages", type=int, default=100_000, help="messages for the throughput run"
    )
    parser.add_argument("--rate", type=float, default=2000.0, help="messages/s of the latency run")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of the latency run")
    parser.add_argument(
        "--feedback", type=int, default=50_000, help="feedback records for the learner run"
    )
    parser.add_argument(
        "--tokens", type=int, default=1_000_000, help="distinct tokens of the memory run's model"
    )
    parser.add_argument(
        "--memory-messages",
        type=int,
        default=100_000,
        help="messages the memory run's scorer decides (100,000 fills its recent-messages cache)",
    )
    parser.add_argument("--ceiling-records", type=int, default=50_000)
    parser.add_argument(
        "--scorer-runs",
        type=int,
        default=3,
        help="scorer throughput runs (section 2) and ceiling runs (section 1); the medians are "
        "reported",
    )
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--poll-records", type=int, default=500, help="the scorer's batches.poll_records"
    )
    parser.add_argument(
        "--variant",
        default=None,
        help="model variant of the scorers' model (default: the configuration's, with its "
        "parameters)",
    )
    parser.add_argument(
        "--select",
        default=None,
        help="selection of the scorers' model (default: the variant's as `filterd run` reads it)",
    )
    parser.add_argument(
        "--no-observer",
        dest="observer",
        action="store_false",
        help="no live consumer of the decisions during the latency runs (it takes CPU the daemon "
        "could use on a small machine); the decisions are read afterwards",
    )
    parser.add_argument(
        "--kafka",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [kafka] client setting for every daemon (repeatable), e.g. check_crcs=false",
    )
    parser.add_argument(
        "--latency-variant",
        default="fetch_max_wait_ms=10",
        metavar="KEY=VALUE[,…]",
        help="[kafka] settings of a second latency run in a fresh scorer ('' to skip; "
        "default %(default)s: Tansu holds an empty fetch for fetch_max_wait_ms)",
    )
    parser.add_argument(
        "--latency-only",
        action="store_true",
        help="only section 3: the latency runs, each in a fresh scorer",
    )
    parser.add_argument(
        "--clients",
        default="",
        metavar="CLIENT,CLIENT",
        help="compare Kafka clients side by side (e.g. kafka-python,confluent): sections 1 to 3 "
        "for each, alternating, instead of the whole run",
    )
    parser.add_argument(
        "--workbench",
        action="store_true",
        help="the scorers with [http] enabled, and analysts using the workbench during every "
        "measured window of sections 2 and 3 (the baseline: the same command without it)",
    )
    parser.add_argument(
        "--workbench-rate",
        type=float,
        default=20.0,
        help="the analysts' page and API requests/s in total (--workbench)",
    )
    parser.add_argument(
        "--workbench-analysts",
        type=int,
        default=4,
        help="analysts (threads, each logged in, one request at a time) sharing --workbench-rate",
    )
    parser.add_argument(
        "--transactions",
        action="store_true",
        help="sections 1 to 3 on card payments (the card-transactions corpus; synthetic payments "
        "if it is absent) with config/transactions.toml's entity memory, instead of SMS",
    )
    args = parser.parse_args(argv)
    if args.scorer_runs < 1:
        parser.error("--scorer-runs must be at least 1")
    if args.transactions and args.workbench:
        parser.error("--workbench sends SMS to /v1/check: not with --transactions")
    workbench = None
    if args.workbench:
        if args.workbench_rate <= 0 or args.workbench_analysts < 1:
            parser.error("--workbench-rate must be positive, --workbench-analysts at least 1")
        password = secrets.token_urlsafe(16)
        hashed = hash_secret(password, "pbkdf2_sha256", rounds=1000)
        workbench = Workbench(
            args.workbench_rate, args.workbench_analysts, password, {WORKBENCH_USER: hashed}
        )
    kafka = settings(args.kafka)
    clients = [client.strip() for client in args.clients.split(",") if client.strip()]
    if unknown := set(clients) - set(KAFKA_CLIENTS):
        parser.error(f"--clients: unknown {sorted(unknown)}; known: {', '.join(KAFKA_CLIENTS)}")
    return Options(
        messages=args.messages,
        rate=args.rate,
        seconds=args.seconds,
        feedback=args.feedback,
        tokens=args.tokens,
        memory_messages=args.memory_messages,
        ceiling_records=args.ceiling_records,
        scorer_runs=args.scorer_runs,
        partitions=args.partitions,
        poll_records=args.poll_records,
        variant=args.variant,
        select=args.select,
        observer=args.observer,
        kafka=kafka,
        latency_variant=settings(
            [item for item in args.latency_variant.split(",") if item.strip()]
        ),
        latency_only=args.latency_only,
        clients=clients,
        workbench=workbench,
        transactions=args.transactions,
    )


def settings(items: list[str]) -> KafkaSettings:
    """KEY=VALUE strings as [kafka] settings (ints, floats and true/false converted).

    >>> settings(["fetch_max_wait_ms=10", "check_crcs=false", "client=confluent"])
    {'fetch_max_wait_ms': 10, 'check_crcs': False, 'client': 'confluent'}
    """
    out: KafkaSettings = {}
    for item in items:
        key, sep, raw = item.strip().partition("=")
        if not sep or not key:
            raise SystemExit(f"not KEY=VALUE: {item!r}")
        out[key.strip()] = _value(raw)
    return out


def _value(raw: str) -> KafkaValue:
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw
