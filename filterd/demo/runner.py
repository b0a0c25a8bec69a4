"""`filterd demo`: the whole product on this machine, on a labelled stream, with a live score.

    items, source = labelled_stream(options, records)  # records: options.corpus's, or None
    demo = Demo(options, workdir, items, source, on_tick=show_snapshot, on_event=show_line)
    outcome = demo.run()  # blocks; KeyboardInterrupt stops everything cleanly, then re-raises

What `run` does, in order: start a local Kafka-protocol broker (`LocalBroker`, Tansu, memory
storage; its output in WORKDIR/broker.log); create the topics; start the daemon as a scorer
process and a learner process (`Daemons`; store `sqlite:///WORKDIR/filterd.db`, their logs in
WORKDIR/daemon.log); send the first message and wait for its decision, then its label and
wait until the learner has applied it (each of the daemon's consumer-group joins waits about
half the session timeout on Tansu; the replay clock starts after them); replay the rest of the
labelled stream as messages at `rate` per second, plus each message's label as feedback by id
once `feedback_delay` later messages have been sent; read the decisions and dead-letter topics
and compare the decisions with the true labels (`Scoreboard`); recalibrate the threshold every
`recalibrate_every` feedback records the learner has applied (`Calibrator`).

It returns once every message has a decision (or a dead letter), every feedback record has
been applied and a last calibration was tried — or when `timeout` seconds pass without that
after the replay, or the daemon stops on its own. Whatever happens, the daemon, the demo's
clients and the broker are stopped before `run` returns or raises: no thread or process of
the demo is left running, and the logging configuration is restored.

Feedback for message i is sent only once its decision has been read back, as an analyst labels
what was decided (feedback by id sent earlier would wait, parked, until the message is decided).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

import structlog
from kafka import KafkaProducer

from filterd.demo.broker import LocalBroker
from filterd.demo.calibrator import Calibrator, ThresholdInfo
from filterd.demo.daemon_process import Daemons
from filterd.demo.options import (
    BROKER_LOG,
    DAEMON_LOG,
    DemoError,
    DemoOptions,
    check_workdir,
    demo_config,
)
from filterd.demo.scoreboard import Collector, Quality, Scoreboard
from filterd.demo.stream import Item
from filterd.kafka.admin import create_topics
from filterd.kafka.settings import client_settings
from filterd.observe.logs import configure_logging
from filterd.service.config import ConfigError
from filterd.service.decide import UNDECIDED

BROKER_STOP_SECONDS = 2.0  # then SIGKILL


SEND_CHUNK = 1000  # messages sent between two looks at feedback and the clock, at full speed


@dataclass(frozen=True)
class Snapshot:
    """Everything the live summary shows, at one moment."""

    elapsed: float
    source: str
    total: int
    sent: int
    decided: int
    dead_lettered: int
    rate_now: float  # decisions per second over the last few seconds
    rate_mean: float  # decisions per second since the replay began (to the last one, at the end)
    labels: dict[str, int]
    target: str
    target_recall: float
    quality: Quality
    threshold: ThresholdInfo | None
    threshold_note: str
    feedback_sent: int
    feedback_pending: int  # labels not sent yet
    feedback: dict[str, int]  # the learner's outcomes: learned, held_out, duplicates...
    model_ready: bool
    model_note: str  # why the model is not ready, or its version
    finished: bool = False


@dataclass(frozen=True)
class Outcome:
    """How the run ended: `status` "done", "timeout", "daemon stopped" or "daemon not
    deciding", with `detail`; the last snapshot; seconds per step."""

    status: str
    detail: str
    snapshot: Snapshot
    seconds: dict[str, float] = field(default_factory=dict)  # start-up, replay, drain, shutdown


class Watchdog:
    """Says a run is stalled once its progress (any comparable value) has not changed for
    `timeout` seconds: a daemon that keeps deciding and learning, however far behind, is waited
    for.

    >>> dog = Watchdog(timeout=10.0, now=0.0)
    >>> [dog.stalled(progress, now) for progress, now in [(1, 5.0), (2, 14.0), (3, 23.0)]]
    [False, False, False]
    >>> dog.stalled(3, 33.0), dog.stalled(3, 33.5)
    (False, True)
    """

    def __init__(self, timeout: float, now: float) -> None:
        self.timeout = timeout
        self._progress: object = None
        self._since = now

    def stalled(self, progress: object, now: float) -> bool:
        if progress != self._progress:
            self._progress, self._since = progress, now
            return False
        return now - self._since > self.timeout


class Demo:
    """One run of the demo (see the module docstring). `on_tick(snapshot)` is called about
    every `tick` seconds from the calling thread; `on_event(line)` for notable moments (model
    ready, threshold written, calibration refused) from any thread."""

    def __init__(
        self,
        options: DemoOptions,
        workdir: Path,
        items: Sequence[Item],
        source: str,
        on_tick: Callable[[Snapshot], None] = lambda s: None,
        on_event: Callable[[str], None] = lambda line: None,
        tick: float = 1.0,
    ) -> None:
        self.options, self.workdir, self.items, self.source = options, Path(workdir), items, source
        self.on_tick, self.on_event, self.tick = on_tick, on_event, tick
        self.board = Scoreboard(items, options.target, options.target_recall)
        # The port is chosen here, so the configuration is checked before anything starts.
        self.broker = LocalBroker(log_path=self.workdir / BROKER_LOG)
        try:
            self.config = demo_config(
                options, self.workdir, self.broker.bootstrap_servers, [i.label for i in items]
            )
        except ConfigError as error:
            raise DemoError(f"invalid configuration: {error}") from None
        self.daemon: Daemons | None = None
        self._collector: Collector | None = None
        self._calibrator: Calibrator | None = None
        self._producer: KafkaProducer | None = None
        self._log_file: IO[str] | None = None
        self._saved_logging: tuple[dict[str, Any], int, int] | None = None
        self._started = time.monotonic()
        self._sent = 0
        self._feedback_sent = 0
        self._pending: deque[int] = deque()  # indices whose label is not sent yet, in order
        self._history: deque[tuple[float, int]] = deque(maxlen=16)  # (time, decided) per tick
        self._replay_started: float | None = None
        self._ready_announced = False

    # -- the steps -----------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Start, replay, drain, stop; see the module docstring. Re-raises KeyboardInterrupt
        after stopping everything."""
        check_workdir(self.workdir)
        seconds: dict[str, float] = {}
        try:
            self._start()
            seconds["start-up"] = time.monotonic() - self._started
            step = time.monotonic()
            failure = self._warm_up()
            seconds["first decision and label"] = time.monotonic() - step
            if failure:
                status, detail = "daemon not deciding", failure
            else:
                step = time.monotonic()
                status, detail = self._replay()
                seconds["replay and drain"] = time.monotonic() - step
                if status == "done" and self.options.workbench_port is not None:
                    self._hold()
            snapshot = self.snapshot(finished=True)
        finally:
            stopping = time.monotonic()
            self._stop_all()
            seconds["shutdown"] = time.monotonic() - stopping
        return Outcome(status, detail, snapshot, seconds)

    def _start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.broker.start()
        kafka, topics = self.config.kafka, self.config.topics
        create_topics(
            kafka, [topics.messages, topics.decisions, topics.feedback, topics.dead_letter]
        )
        # Every log line of the daemon and of kafka-python goes to the file, never to the screen.
        # What is replaced is restored at the end: the demo may run inside a longer process.
        self._saved_logging = (
            structlog.get_config(),
            logging.getLogger().level,
            logging.getLogger("kafka").level,
        )
        # closed in _stop_parts()
        self._log_file = open(self.workdir / DAEMON_LOG, "a", encoding="utf-8")  # noqa: SIM115
        configure_logging("json", stream=self._log_file)
        self.daemon = Daemons(self.config, self.workdir / DAEMON_LOG)
        self.daemon.start()
        self._collector = Collector(kafka, self.config, self.board).start()
        self._calibrator = Calibrator(
            self.config, self.options.recalibrate_every, self._feedback_applied, self.on_event
        ).start()
        self._producer = KafkaProducer(**client_settings(kafka, KafkaProducer))

    def _warm_up(self) -> str:
        """Send the first message and wait for its decision, then its label and wait until the
        learner has applied it: the replay clock starts once both of the daemon's consumers
        consume (each consumer-group join takes seconds), so that the rate holds and the model
        learns from the start. Returns why it failed, or ""."""
        assert self._producer is not None
        first = self.items[0]
        self._producer.send(self.config.topics.messages, key=first.id.encode(), value=first.payload)
        self._producer.flush()
        self._pending.append(0)
        self._sent = 1
        started = time.monotonic()
        failure = self._wait_for(
            lambda: self.board.decided(first.id) or self.board.dead(first.id),
            "no decision",
            started,
        )
        if failure:
            return failure
        state, times = "deciding", f"first decision {time.monotonic() - started:.1f} s"
        if self.board.decided(first.id):  # a dead-lettered first message has no label to learn
            self._pending.popleft()
            self._send_label(self.config.topics.feedback, first)
            self._producer.flush()
            failure = self._wait_for(
                lambda: self._feedback_applied() >= 1, "no label applied", started
            )
            if failure:
                return failure
            applied = time.monotonic() - started
            state, times = "deciding and learning", f"{times}, first label applied {applied:.1f} s"
        self.on_event(
            f"the daemon is {state}: {times} after the first message (consumer-group joins)"
        )
        return ""

    def _wait_for(self, done: Callable[[], bool], missing: str, started: float) -> str:
        """Tick until `done()`; why it failed ("MISSING from the daemon ..."), or ""."""
        self._last_tick = time.monotonic()
        while not done():
            now = time.monotonic()
            if now - self._last_tick >= self.tick:
                self._last_tick = now
                self.on_tick(self.snapshot())
            failure = self._failure()
            if failure:
                return failure
            if now - started > self.options.timeout:
                return (
                    f"{missing} from the daemon {self.options.timeout:g} s after its start "
                    f"(see {self.workdir / DAEMON_LOG})"
                )
            time.sleep(0.02)
        return ""

    def _hold(self) -> None:
        """Keep the daemon, and so the workbench, up after the replay until Ctrl-C or SIGTERM
        (a KeyboardInterrupt here ends the demo as done) or until the daemon stops."""
        self.on_event(f"replay done: the workbench stays up at {self.workbench_url} until Ctrl-C")
        try:
            while not self._failure():
                self.on_tick(self.snapshot())
                time.sleep(self.tick)
        except KeyboardInterrupt:
            return

    @property
    def workbench_url(self) -> str | None:
        """Where the workbench is served, with `workbench_port` (else None)."""
        port = self.options.workbench_port
        return None if port is None else f"http://127.0.0.1:{port}/"

    def _replay(self) -> tuple[str, str]:
        """Send messages and feedback, tick, until done, timed out or the daemon stopped."""
        assert self._producer is not None
        topics, rate, n = self.config.topics, self.options.rate, len(self.items)
        started = self._last_tick = self._replay_started = time.monotonic()
        first = self._sent
        watchdog: Watchdog | None = None  # from the end of the replay
        while True:
            now = time.monotonic()
            if self._sent < n:
                due = n if rate == 0 else min(n, first + int((now - started) * rate) + 1)
                for i in range(self._sent, min(due, self._sent + SEND_CHUNK)):
                    item = self.items[i]
                    self._producer.send(topics.messages, key=item.id.encode(), value=item.payload)
                    self._pending.append(i)
                    self._sent = i + 1
            self._send_feedback(topics.feedback)
            if now - self._last_tick >= self.tick:
                self._last_tick = now
                self.on_tick(self.snapshot())
            if self._sent == n and watchdog is None:
                self._producer.flush()
                watchdog = Watchdog(self.options.timeout, time.monotonic())
            failure = self._failure()
            if failure:
                return "daemon stopped", failure
            if watchdog is not None:
                if self._drained():
                    assert self._calibrator is not None
                    self._calibrator.finish(timeout=self.options.timeout)
                    return "done", ""
                # A busy machine may leave the daemon far behind the replay: wait while it
                # catches up.
                if watchdog.stalled((self.board.counts(), self._feedback_applied()), now):
                    return "timeout", self._missing()
            if self._sent < n and rate == 0:
                continue
            time.sleep(0.005 if self._sent < n else 0.05)

    def _send_feedback(self, topic: str) -> None:
        """Send the labels that are due, in stream order (see the module docstring)."""
        assert self._producer is not None
        delay, n = self.options.feedback_delay, len(self.items)
        while self._pending:
            i = self._pending[0]
            if self._sent < n and i + delay >= self._sent:
                return  # message i + delay is not sent yet
            item = self.items[i]
            if self.board.dead(item.id):
                self._pending.popleft()  # nothing to label: the scorer never saw it
                continue
            if not self.board.decided(item.id):
                if not self.board.complete():
                    return
                # Every message is accounted for, this one by a dead letter we could not
                # attribute: nothing to label.
                self._pending.popleft()
                continue
            self._pending.popleft()
            self._send_label(topic, item)

    def _send_label(self, topic: str, item: Item) -> None:
        assert self._producer is not None
        value = json.dumps({"message_id": item.id, "label": item.label}).encode()
        self._producer.send(topic, key=item.id.encode(), value=value)
        self._feedback_sent += 1

    def _feedback_applied(self) -> int:
        """Feedback records the learner has finished with (any outcome), from its ranking."""
        return sum(self._feedback_outcomes().values())

    def _feedback_outcomes(self) -> dict[str, int]:
        return {} if self.daemon is None else dict(self.daemon.report().feedback)

    def _drained(self) -> bool:
        """Every message decided or dead-lettered, every label sent and applied."""
        if self._pending:
            return False
        if not self.board.complete():
            return False
        if self._producer is not None:
            self._producer.flush()
        return self._feedback_applied() >= self._feedback_sent

    def _missing(self) -> str:
        decided, dead = self.board.counts()
        missing = len(self.items) - decided - dead
        unapplied = self._feedback_sent - self._feedback_applied()
        return (
            f"no progress for {self.options.timeout:g} s: {max(0, missing):,} messages without a "
            "decision, "
            f"{len(self._pending) + max(0, unapplied):,} labels not applied"
        )

    def _failure(self) -> str:
        if self.daemon is not None and not self.daemon.alive:
            error = self.daemon.report().error
            why = f": {error}" if error else ""
            return (
                f"the daemon stopped with status {self.daemon.exitcode}{why} "
                f"(see {self.workdir / DAEMON_LOG})"
            )
        if self._collector is not None and not self._collector.alive:
            return f"reading the decisions failed: {self._collector.error!r}"
        return ""

    def _stop_all(self) -> None:
        """Stop everything that was started, in order; safe after any partial start."""
        with _second_interrupt_exits():
            self._stop_parts()

    def _stop_parts(self) -> None:
        if self._producer is not None:
            # A producer whose broker is gone may fail to close; it is dropped either way.
            with contextlib.suppress(Exception):
                self._producer.close(timeout=2)
        if self._calibrator is not None:
            self._calibrator.stop()
        if self.daemon is not None:
            self.daemon.stop()
        if self._collector is not None:
            self._collector.stop()
        # Tansu can be slow to exit on SIGTERM while a group join it holds is pending (a stop
        # during the daemon's start-up); memory storage has nothing to flush, so do not wait.
        self.broker.stop(timeout=BROKER_STOP_SECONDS)
        if self._log_file is not None:
            root = logging.getLogger()
            for handler in list(root.handlers):
                if getattr(handler, "stream", None) is self._log_file:
                    root.removeHandler(handler)
            self._log_file.close()
            if self._saved_logging is not None:  # saved before the log file was opened
                structlog_config, root_level, kafka_level = self._saved_logging
                structlog.configure(**structlog_config)
                root.setLevel(root_level)
                logging.getLogger("kafka").setLevel(kafka_level)

    # -- the figures ---------------------------------------------------------------------------

    def snapshot(self, finished: bool = False) -> Snapshot:
        now = time.monotonic()
        decided, dead = self.board.counts()
        self._history.append((now, decided))
        then, before = self._history[0]
        rate_now = (decided - before) / (now - then) if now - then > 0.5 else 0.0
        end = self.board.last_arrival if finished and self.board.last_arrival else now
        span = end - self._replay_started if self._replay_started is not None else 0.0
        rate_mean = decided / span if span > 0.5 else 0.0
        ready, note = self._model_state()
        if ready and not self._ready_announced and self.board.first_ready is not None:
            self._ready_announced = True
            self.on_event(
                f"model ready: {self.board.first_ready - 1:,} decisions said "
                f"'{UNDECIDED}' before the first by a trained model"
            )
        calibrator = self._calibrator
        return Snapshot(
            elapsed=now - self._started,
            source=self.source,
            total=len(self.items),
            sent=self._sent,
            decided=decided,
            dead_lettered=dead,
            rate_now=rate_now,
            rate_mean=rate_mean,
            labels=dict(self.board.labels),
            target=self.options.target,
            target_recall=self.options.target_recall,
            quality=self.board.quality(),
            threshold=calibrator.threshold if calibrator else None,
            threshold_note=calibrator.note if calibrator else "",
            feedback_sent=self._feedback_sent,
            feedback_pending=len(self._pending),
            feedback=self._feedback_outcomes(),
            model_ready=ready,
            model_note=note,
            finished=finished,
        )

    def _model_state(self) -> tuple[bool, str]:
        if self.daemon is None:
            return False, "starting"
        report = self.daemon.report()
        ok, body, version = report.ready, report.readiness, report.model_version
        if ok:
            return True, f"statistics version {int(version or 0):,} (store changes synced)"
        failing = body.get("failing") or {}
        why = failing.get("model") or "; ".join(f"{k}: {v}" for k, v in failing.items())
        return False, why or body.get("detail", "starting")


@contextlib.contextmanager
def _second_interrupt_exits() -> Iterator[None]:
    """While stopping, a second Ctrl-C exits at once (the broker dies with us: PDEATHSIG)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_now(signum: int, _frame: FrameType | None) -> None:
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGINT, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
