"""`filterd demo`: a local broker, a store and the daemon, a labelled stream replayed through
them, and a live one-screen summary (`filterd.demo.runner` does the work; this is the screen).

On a terminal the summary is redrawn in place about once a second, with notable moments (model
ready, threshold written, calibration refused) printed above it; otherwise (a pipe, a log) it
is one line every few seconds. Exit status: 0 when every message was decided and every label
applied, 1 on a timeout, a daemon failure or a bad option, 130 after Ctrl-C (or SIGTERM) during the
replay; with `--workbench-port`, Ctrl-C after the replay ends the kept-up workbench with 0.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

import click
from kafka.errors import KafkaError

from filterd.cli.common import setting_type
from filterd.cli.corpus_files import read_corpus
from filterd.demo.broker import BrokerError, free_port
from filterd.demo.options import (
    BROKER_LOG,
    DAEMON_LOG,
    DB_FILE,
    DEMO_ANALYST,
    DemoError,
    DemoOptions,
    check_workdir,
)
from filterd.demo.runner import Demo, Outcome, Snapshot
from filterd.demo.stream import labelled_stream
from filterd.evaluation.corpus import CorpusError
from filterd.service.config import DEFAULTS

WIDTH = 96  # of the summary's wrapped lines
INDENT = " " * 11  # where the summary's values begin
PLAIN_EVERY = 5.0  # seconds between two summary lines when not on a terminal
CLEAR_BLOCK = "\x1b[{n}F\x1b[J"  # cursor to the start of the line n lines up, clear below


# --- the text ---------------------------------------------------------------------------------


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f} %"


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _others(s: Snapshot) -> str:
    """What the non-target messages are called: ham when the target is spam."""
    return "ham" if s.target == "spam" else f"not {s.target}"


def _indented(text: str) -> list[str]:
    """`text` wrapped under the summary's values (a guardrail's reason can be long)."""
    return textwrap.wrap(text, WIDTH, initial_indent=INDENT, subsequent_indent=INDENT)


def render(s: Snapshot) -> list[str]:
    """The summary block: one line per subject, at most about 100 characters each."""
    q = s.quality
    labels = " · ".join(f"{label} {n:,}" for label, n in sorted(s.labels.items())) or "none yet"
    rates = f"{s.rate_now:,.0f} msg/s ({s.rate_mean:,.0f} average)"
    if s.finished:
        rates = f"{s.rate_mean:,.0f} msg/s on average"
    kept = f"{_others(s)} kept"
    lines = [
        f"filterd demo · {s.elapsed:.1f} s · {s.source}",
        (
            f"messages   sent {s.sent:,} of {s.total:,} · decided {s.decided:,} · "
            f"dead-lettered {s.dead_lettered:,} · {rates}"
        ),
        f"decisions  {labels}",
        (
            f"ranking    AUC {_num(q.auc)} · {kept} {_pct(q.spec_at_recall)} at {s.target} recall "
            f"{s.target_recall:.4g} (τ in hindsight) · over {q.n_ready:,} ready decisions"
        ),
    ]
    if q.n_thresholded:
        lines.append(
            f"delivered  {s.target} caught {_pct(q.recall_at_tau)} against the target "
            f"{s.target_recall:.4g} · {kept} {_pct(q.spec_at_tau)} · over "
            f"{q.n_thresholded:,} decisions with a threshold"
        )
    t = s.threshold
    if t is not None:
        line = (
            f"threshold  v{t.version}: τ = {t.tau:.4g} · on its window: {t.n_pos:,} "
            f"{s.target} / {t.n_neg:,} {_others(s)}, AUC {t.auc:.4f}, {kept} "
            f"{_pct(t.specificity)}"
        )
        lines.append(line)
        if s.threshold_note:
            lines += _indented(f"last attempt: {s.threshold_note}")
    else:
        lines.append("threshold  none yet: decisions use τ = 0, the Bayes decision")
        lines += _indented(s.threshold_note)
    f = s.feedback
    applied = f.get("learned", 0) + f.get("relabelled", 0)
    other = {k: v for k, v in f.items() if k not in ("learned", "relabelled", "held_out") and v}
    extra = "".join(f" · {k.replace('_', ' ')} {v:,}" for k, v in sorted(other.items()))
    lines.append(
        f"feedback   sent {s.feedback_sent:,} · learned {applied:,} · held out "
        f"{f.get('held_out', 0):,}{extra} · waiting to be sent "
        f"{s.feedback_pending:,}"
    )
    state = "ready · " if s.model_ready else "not ready: "
    lines.append(f"model      {state}{s.model_note}")
    return lines


def one_line(s: Snapshot) -> str:
    """The summary as one line, for pipes and logs."""
    q, t = s.quality, s.threshold
    threshold = f"threshold v{t.version} τ={t.tau:.4g}" if t else "no threshold yet"
    return (
        f"[{s.elapsed:5.1f} s] sent {s.sent:,}/{s.total:,} · decided {s.decided:,} "
        f"({s.rate_now:,.0f}/s) · AUC {_num(q.auc)} · {_others(s)} kept "
        f"{_pct(q.spec_at_recall)} at recall {s.target_recall:.4g} · {threshold} · "
        f"feedback {s.feedback_sent:,} sent, {s.feedback.get('learned', 0):,} learned, "
        f"{s.feedback.get('held_out', 0):,} held out"
    )


# --- the screen -------------------------------------------------------------------------------


class Screen:
    """Live summary on `out`: redrawn in place on a terminal, periodic lines otherwise.
    Thread-safe: events come from the calibration thread."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out, self.live = out, live
        self._lock = threading.Lock()
        self._block: list[str] = []
        self._last_plain = -PLAIN_EVERY

    def _width(self) -> int:
        return max(40, shutil.get_terminal_size((100, 24)).columns - 1)

    def _clip(self, lines: list[str]) -> list[str]:
        # A wrapped line would break the cursor arithmetic of the redraw.
        width = self._width()
        return [line if len(line) <= width else line[: width - 1] + "…" for line in lines]

    def _erase(self) -> None:
        if self._block:
            self.out.write(CLEAR_BLOCK.format(n=len(self._block)))
            self._block = []

    def tick(self, snapshot: Snapshot) -> None:
        with self._lock:
            if self.live:
                self._erase()
                self._block = self._clip(render(snapshot))
                self.out.write("\n".join(self._block) + "\n")
            elif snapshot.elapsed - self._last_plain >= PLAIN_EVERY:
                self._last_plain = snapshot.elapsed
                self.out.write(one_line(snapshot) + "\n")
            self.out.flush()

    def event(self, line: str) -> None:
        with self._lock:
            block = self._block
            self._erase()
            stamp = time.strftime("%H:%M:%S")
            self.out.write(f"{stamp} {line}\n")
            if block:
                self._block = block
                self.out.write("\n".join(block) + "\n")
            self.out.flush()

    def final(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._erase()
            self.out.write("\n".join(render(snapshot)) + "\n")
            self.out.flush()


# --- the command ------------------------------------------------------------------------------


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT stop the demo as Ctrl-C does (in the main thread only: signals need it).
    SIGINT is set explicitly: a process started in the background by a non-interactive shell
    inherits it ignored, and Python then installs no KeyboardInterrupt for it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {
        signum: signal.signal(signum, interrupt) for signum in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@click.command(name="demo")
@click.option(
    "--messages",
    type=click.IntRange(1),
    metavar="N",
    help="Messages to replay (default: 20,000 synthetic; with --corpus, all of it).",
)
@click.option(
    "--spam-share",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.15,
    show_default=True,
    help="Share of spam in the synthetic stream.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Of the synthetic stream.")
@click.option(
    "--corpus",
    type=click.Path(dir_okay=True, path_type=Path),
    metavar="PATH",
    help="Replay a labelled corpus (JSON Lines, e.g. ../shared/corpora/sms-spam/"
    "messages.jsonl.gz) in its order instead of a synthetic stream.",
)
@click.option(
    "--rate",
    type=click.FloatRange(0),
    default=400.0,
    show_default=True,
    help="Messages per second (0: as fast as possible).",
)
@click.option(
    "--feedback-delay",
    type=click.IntRange(0),
    default=300,
    show_default=True,
    metavar="N",
    help="The label of message i is sent after message i+N.",
)
@click.option(
    "--target",
    default=DEFAULTS.decision.target_class,
    show_default=True,
    help="The class the threshold is calibrated for.",
)
@click.option(
    "--target-recall",
    type=setting_type("decision.target_recall"),
    default=DEFAULTS.decision.target_recall,
    show_default=True,
    help="Recall the threshold is calibrated for; the first τ needs 1/(1-R) target messages "
    "among the labels the daemon scored before learning them.",
)
@click.option(
    "--recalibrate-every",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    metavar="K",
    help="Recalibrate after every K feedback records applied (every K/10 until a first τ).",
)
@click.option(
    "--variant",
    help="Model variant (overrides model.variant; default: the configuration's, "
    f"{DEFAULTS.model.variant}).",
)
@click.option(
    "--select", help="Feature selection (overrides model.select; default: the configuration's)."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A filterd.toml for other settings (model, limits, batches); the demo sets "
    "the broker, the store and the intervals itself.",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Keep the store and the logs here (default: a temporary directory, removed at exit "
    "unless the run failed).",
)
@click.option(
    "--metrics-port",
    type=setting_type("observe.metrics_port"),
    default=0,
    show_default=True,
    help="Serve the scorer's /metrics, /healthz and /readyz on this port and the learner's on "
    "the next (0: off).",
)
@click.option(
    "--workbench-port",
    type=click.IntRange(0, 65535),
    default=None,
    metavar="PORT",
    help="Serve the analysts' workbench and the HTTP API on this port (0: a free one) and keep "
    "them up after the replay until Ctrl-C; log in as 'demo' with the password printed.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=60.0,
    show_default=True,
    help="After the replay, give up once the daemon has decided no message and applied no "
    "label for this many seconds.",
)
def demo_command(
    workdir: Path | None,
    messages: int | None,
    spam_share: float,
    seed: int,
    corpus: Path | None,
    rate: float,
    feedback_delay: int,
    target: str,
    target_recall: float,
    recalibrate_every: int,
    variant: str | None,
    select: str | None,
    config_path: Path | None,
    metrics_port: int,
    workbench_port: int | None,
    timeout: float,
) -> None:
    """Run broker, store and daemon locally and replay a labelled stream through them.

    A local Kafka-protocol broker (Tansu, memory storage), a SQLite store, the daemon (scorer
    and learner), messages plus delayed feedback by id, recalibration of the threshold (the
    `[calibration]` source, adaptive by default), and a live summary: decisions per second, AUC
    and specificity at the target recall so far, the threshold in force and the recall it
    delivered against the target. Ctrl-C stops everything cleanly: exit status 130 during the
    replay, 0 once the replay is done (with --workbench-port, the workbench stays up until then)."""
    context = click.get_current_context()
    if corpus is not None:
        for name in ("spam_share", "seed"):
            if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                raise click.UsageError(
                    f"--{name.replace('_', '-')} is for the synthetic stream, not --corpus"
                )
    temporary = workdir is None
    directory = (
        workdir.resolve() if workdir is not None else Path(tempfile.mkdtemp(prefix="filterd-demo-"))
    )
    out = sys.stdout
    screen = Screen(out, live=out.isatty())
    try:
        # Every check that can fail fast does, before a broker or a daemon is started.
        options = DemoOptions(
            messages=messages,
            spam_share=spam_share,
            seed=seed,
            corpus=corpus,
            rate=rate,
            feedback_delay=feedback_delay,
            target=target,
            target_recall=target_recall,
            recalibrate_every=recalibrate_every,
            timeout=timeout,
            variant=variant,
            select=select,
            config_path=config_path,
            metrics_port=metrics_port,
            workbench_port=free_port() if workbench_port == 0 else workbench_port,
            workbench_password=secrets.token_urlsafe(9),
        )
        check_workdir(directory)
        records = None if corpus is None else read_corpus(corpus)
        items, source = labelled_stream(options, records)
        demo = Demo(options, directory, items, source, on_tick=screen.tick, on_event=screen.event)
    except (DemoError, CorpusError) as error:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        raise click.ClickException(str(error)) from None
    click.echo(
        f"filterd demo: {source}" + (f" ({options.corpus.resolve()})" if options.corpus else "")
    )
    click.echo(
        f"  broker {demo.broker.bootstrap_servers} (Tansu, memory storage) · store "
        f"sqlite:///{directory / DB_FILE}"
    )
    click.echo(
        f"  logs {directory / DAEMON_LOG}, {directory / BROKER_LOG}"
        + (
            " (temporary: removed at exit unless the run fails; --workdir DIR keeps them)"
            if temporary
            else ""
        )
    )
    if demo.workbench_url is not None:
        click.echo(
            f"  workbench {demo.workbench_url} · log in as {DEMO_ANALYST}, password "
            f"{options.workbench_password} · up until Ctrl-C after the replay"
        )
    # a temporary work dir is removed after a run that ended well, or was interrupted; after a
    # failure it is kept, for the logs the error points to
    try:
        with _sigterm_as_interrupt():
            outcome = demo.run()
    except KeyboardInterrupt:
        screen.final(demo.snapshot())
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)
        kept = "removed the temporary work dir" if temporary else f"work dir kept: {directory}"
        click.echo(f"interrupted: replay, daemon and broker stopped cleanly; {kept}", err=True)
        sys.exit(130)
    except (DemoError, BrokerError) as error:
        raise click.ClickException(f"{error}{_kept(directory, temporary)}") from None
    except KafkaError as error:
        raise click.ClickException(
            f"the local broker failed: {error!r}{_kept(directory, temporary)}"
        ) from None
    if temporary and outcome.status == "done":
        shutil.rmtree(directory, ignore_errors=True)
    _report(screen, outcome, directory, temporary)


def _kept(directory: Path, temporary: bool) -> str:
    """What an error adds about the temporary work dir it leaves behind."""
    return f" (the temporary work dir is kept for its logs: {directory})" if temporary else ""


def _report(screen: Screen, outcome: Outcome, directory: Path, temporary: bool) -> None:
    screen.final(outcome.snapshot)
    timings = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in outcome.seconds.items())
    done = outcome.status == "done"
    where = (
        "temporary work dir removed (--workdir DIR keeps the store and logs)"
        if temporary and done
        else f"kept in {directory}: {DB_FILE}, {DAEMON_LOG}, {BROKER_LOG}"
    )
    if done:
        click.echo(f"done: every message decided, every label applied ({timings}); {where}")
        return
    click.echo(f"stopped early ({timings}); {where}")
    raise click.ClickException(f"{outcome.status}: {outcome.detail}")
