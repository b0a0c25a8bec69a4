"""`filterd run`, `filterd score`: the daemon and its batch twin."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import BinaryIO, TextIO

import click
import structlog
from structlog.typing import FilteringBoundLogger

from filterd.cli.common import broker_override, config_option, load_config, setting_type
from filterd.cli.store import store_errors
from filterd.daemon.model_state import ModelState
from filterd.daemon.override_state import OverrideState
from filterd.daemon.supervisor import ROLES, Daemon, StartupError, prepare_store
from filterd.kafka.publisher import dead_letter_of
from filterd.observe.health import Health
from filterd.observe.logs import configure_logging
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import Decider, OverridesOf, ThresholdSetting, decide_payloads
from filterd.service.records import encode
from filterd.store import database

db_override = click.option(
    "--db", "database__url", metavar="URL", help="Database URL (overrides database.url)."
)
model_override = click.option(
    "--model", "model__name", metavar="NAME", help="Model name (overrides model.name)."
)
create_store_option = click.option(
    "--create-store",
    is_flag=True,
    help="Create the store's schema if the database has none (else: refuse, and say to run "
    "`filterd db upgrade` first, so that a mistyped --db does not start an empty store).",
)
metrics_port_override = click.option(
    "--metrics-port",
    "observe__metrics_port",
    type=setting_type("observe.metrics_port"),
    help="Port of /metrics, /healthz, /readyz (0: off; overrides observe.metrics_port).",
)
log_format_override = click.option(
    "--log-format",
    "observe__log_format",
    type=setting_type("observe.log_format"),
    help="Log lines as JSON or for a terminal (overrides observe.log_format).",
)


@click.command(name="run")
@config_option
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="all",
    show_default=True,
    help="scorer: messages → decisions; learner: feedback → store; all: both in one process.",
)
@db_override
@model_override
@broker_override
@metrics_port_override
@log_format_override
@create_store_option
def run_command(
    config_path: str | None, role: str, create_store: bool, **overrides: object
) -> None:
    """Score the messages topic and learn from the feedback topic until stopped.

    SIGTERM or Ctrl-C finishes the in-flight batches, commits them and exits 0; a second one
    exits at once. Exit status 3: the dead-letter guard stopped the daemon."""
    config = load_config(config_path, **overrides)
    check_store_file(config, writes=True)
    configure_logging(config.observe.log_format)
    daemon = Daemon(config, role, create_store=create_store)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if daemon.stopping:
            os._exit(128 + signum)  # a second signal: at once, without cleanup
        daemon.stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        status = daemon.run()
    except StartupError as error:
        raise click.ClickException(str(error)) from None
    sys.exit(status)


@click.command(name="score")
@config_option
@db_override
@model_override
@click.option(
    "--dead-letter",
    "dead_letter_path",
    type=click.Path(allow_dash=True),
    metavar="FILE",
    help="Write the lines that cannot be decided to FILE, as dead-letter JSON lines "
    "(default, or -: stderr).",
)
@create_store_option
def score_command(
    config_path: str | None, dead_letter_path: str | None, create_store: bool, **overrides: object
) -> None:
    """Decide on message JSON lines from stdin; decisions as JSON lines on stdout, and nothing
    else. The daemon's scoring without a broker: the same validation, model and threshold.

    A line that cannot be decided becomes a dead-letter JSON line on stderr (or --dead-letter
    FILE), and the exit status is 1 once every line was read."""
    config = load_config(config_path, **overrides)
    check_store_file(config, writes=create_store)
    configure_logging(config.observe.log_format)
    log: FilteringBoundLogger = structlog.get_logger("filterd")
    state = loaded_model(config, log, create_store)
    decider = state.decider
    if decider is None:
        raise click.ClickException("could not load the model from the store (see the log above)")
    if decider.not_ready:
        log.warning("model not ready: decisions say 'unknown'", reason=decider.not_ready)
    # the allow, block and review lists and the rules, as the scorer's
    kept = OverrideState(state.model, config.entities.spec(config.decision.target_class), log)
    kept.refresh(force=True)
    with _dead_letters(dead_letter_path) as dead_letter:
        lines, rejected = _score_lines(
            decider, state.threshold, config, dead_letter, kept.overridden
        )
    if rejected:
        where = "stderr" if dead_letter_path in (None, "-") else dead_letter_path
        raise click.ClickException(
            f"{rejected} of {lines} lines could not be decided: their dead letters are on {where}"
        )


@contextlib.contextmanager
def _dead_letters(path: str | None) -> Iterator[TextIO]:
    """Where `filterd score` writes its dead letters: the file at `path` (one line naming it
    if it cannot be written), else stderr (also for -: stdout is the decisions')."""
    if path is None or path == "-":
        yield sys.stderr
        return
    with contextlib.ExitStack() as stack:
        try:
            file = stack.enter_context(open(path, "w", encoding="utf-8"))
        except OSError as error:
            raise click.ClickException(f"--dead-letter {path}: {error.strerror or error}") from None
        yield file


def _score_lines(
    decider: Decider,
    threshold: ThresholdSetting,
    config: Config,
    dead_letter: TextIO,
    overrides: OverridesOf,
) -> tuple[int, int]:
    """Decide on the lines of stdin in batches; (lines that were not blank, lines rejected)."""
    out = sys.stdout.buffer
    batch: list[_StdinRecord] = []
    lines = rejected = 0
    for number, line in enumerate(sys.stdin.buffer, start=1):
        if line.strip():  # blank lines are skipped, and counted: offsets stay line numbers
            batch.append(_StdinRecord(line.rstrip(b"\r\n"), number))
        if len(batch) >= config.batches.poll_records:
            rejected += _score_batch(decider, threshold, config, batch, out, dead_letter, overrides)
            lines, batch = lines + len(batch), []
    if batch:
        rejected += _score_batch(decider, threshold, config, batch, out, dead_letter, overrides)
        lines += len(batch)
    return lines, rejected


def check_store_file(config: Config, writes: bool) -> None:
    """The store's URL and SQLite file checked before start-up (`database.check_file`): one
    line naming a path that cannot work. A missing file is left to `prepare_store`, which
    says how to create a store."""
    with store_errors():
        database.check_file(config.database.url, missing_ok=True, writes=writes)


def loaded_model(
    config: Config,
    log: FilteringBoundLogger,
    create_store: bool,
    metrics: Metrics | None = None,
    health: Health | None = None,
) -> ModelState:
    """The model of the store (`state.model`), the store checked as the daemon checks it at
    start-up, the model loaded as a scorer loads it (`filterd score`, `filterd serve`), its
    gauges and readiness in `metrics` and `health` when given; one-line errors."""
    with store_errors():
        try:
            model = prepare_store(config, log, create=create_store)
        except StartupError as error:
            raise click.ClickException(str(error)) from None
        state = ModelState(model, config, metrics or Metrics(), health or Health(), log)
        state.refresh(force=True)
    return state


def _score_batch(
    decider: Decider,
    threshold: ThresholdSetting,
    config: Config,
    batch: list[_StdinRecord],
    out: BinaryIO,
    dead_letter: TextIO,
    overrides: OverridesOf,
) -> int:
    """Decide on `batch`: decisions to `out`, dead letters to `dead_letter`; the number of
    dead letters."""
    payloads = [r.value for r in batch]
    result = decide_payloads(
        decider, threshold, payloads, config.limits.max_bytes, batch, overrides=overrides
    )
    for decision in result.decisions:
        out.write(encode(decision) + b"\n")
    out.flush()
    for i, reason, error in result.failures:
        letter = dead_letter_of(batch[i], reason, error, config.dead_letter.payload_bytes)
        dead_letter.write(encode(letter).decode() + "\n")
    dead_letter.flush()
    return len(result.failures)


@dataclass(frozen=True, slots=True)
class _StdinRecord:
    """A line of stdin, addressed like a Kafka record (topic "stdin", partition 0, offset = its
    line number, from 1): in its decision or its dead letter."""

    value: bytes
    offset: int
    topic: str = "stdin"
    partition: int = 0
