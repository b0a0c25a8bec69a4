"""`filterd demo`: the whole product in one process, on a labelled stream, with a live score.

    items, source = labelled_stream(options)
    demo = Demo(options, workdir, items, source, on_tick=show_snapshot, on_event=show_line)
    outcome = demo.run()  # blocks; KeyboardInterrupt stops everything cleanly, then re-raises

What `run` does, in order: start a local Kafka-protocol broker (`LocalBroker`, Tansu, memory
storage; its output in WORKDIR/broker.log); create the topics; start the daemon (`Daemon`, role
"all", store `sqlite:///WORKDIR/filterd.db`, its logs in WORKDIR/daemon.log) in a thread; send
the first message and wait for its decision, then its label and wait until the learner has
applied it (each of the daemon's consumer-group joins waits about half the session timeout on
Tansu; the replay clock starts after them); replay the rest of the labelled stream as
messages at `rate` per second, plus each message's label as feedback by id once
`feedback_delay` later messages have been sent; read the decisions and dead-letter topics and
compare the decisions with the true labels (`Scoreboard`); recalibrate the threshold every
`recalibrate_every` feedback records the learner has applied (`Calibrator`).

It returns once every message has a decision (or a dead letter), every feedback record has
been applied and a last calibration was tried — or when `timeout` seconds pass without that
after the replay, or the daemon stops on its own. Whatever happens, the daemon, the demo's
clients and the broker are stopped before `run` returns or raises: no thread or process of
the demo is left running, and the logging configuration is restored.

Feedback for message i is sent only once its decision has been read back: feedback by id
needs the scorer to have seen the message (else the learner dead-letters it as
`unknown_message`), and in a real deployment an analyst labels what was decided, too.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import IO, Any

import numpy as np
import structlog
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from prometheus_client import CollectorRegistry
from sqlalchemy.exc import SQLAlchemyError

from filterd.daemon import Daemon
from filterd.demo.broker import LocalBroker
from filterd.evaluation import ranking
from filterd.evaluation.calibration import CalibrationError
from filterd.evaluation.corpus import CorpusError, read_corpus
from filterd.evaluation.guardrails import GuardrailError
from filterd.evaluation.synth import SynthConfig, generate
from filterd.jobs.calibrate import calibrate_model
from filterd.kafka.admin import create_topics
from filterd.kafka.settings import client_settings
from filterd.observe.logs import configure_logging
from filterd.service.config import Config, ConfigError, load
from filterd.service.decide import UNDECIDED, NotReady
from filterd.store import database
from filterd.store.learning import UnknownModel

DB_FILE, DAEMON_LOG, BROKER_LOG = "filterd.db", "daemon.log", "broker.log"
# Tansu makes a consumer-group join wait about session_timeout_ms / 2 (filterd.demo.broker): a
# short session timeout keeps the daemon's joins short, where kafka-python's defaults would not.
FAST_GROUPS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000,
               "max_poll_interval_ms": 10000}  # fmt: skip
CREATED_BY = "filterd demo"
BROKER_STOP_SECONDS = 2.0  # then SIGKILL
SEND_CHUNK = 1000  # messages sent between two looks at feedback and the clock, at full speed
# A decision or a dead letter read back, as JSON decoding gives it: the values are whatever the
# record held (the daemon writes them; the demo reads only what it compares).
JsonObject = dict[str, Any]


class DemoError(RuntimeError):
    """The demo cannot run as asked (bad corpus, unknown target class, used work dir...)."""


@dataclass(frozen=True)
class DemoOptions:
    """What to replay and how; the defaults make a short run."""

    messages: int | None = None  # synthetic: 20,000; corpus: all of it (else its first N)
    spam_share: float = 0.15
    seed: int = 0
    corpus: Path | None = None
    rate: float = 400.0  # messages per second; 0: as fast as possible
    feedback_delay: int = 300  # message i's label is sent after message i + delay
    target: str = "spam"
    target_recall: float = 0.99
    recalibrate_every: int = 1000  # feedback records applied by the learner
    timeout: float = 60.0  # seconds to wait for the last decisions after the replay
    variant: str | None = None  # model.variant (None: the configuration's)
    select: str | None = None  # model.select
    config_path: Path | None = None  # a filterd.toml for everything else
    metrics_port: int = 0  # the daemon's /metrics, /healthz, /readyz (0: off)

    def __post_init__(self) -> None:
        if self.messages is not None and self.messages < 1:
            raise DemoError("--messages must be at least 1")
        if not 0.0 < self.spam_share < 1.0:
            raise DemoError("--spam-share must be between 0 and 1")
        if self.rate < 0 or self.feedback_delay < 0 or self.timeout <= 0:
            raise DemoError("--rate and --feedback-delay must not be negative, --timeout positive")
        if not 0.0 < self.target_recall <= 1.0:
            raise DemoError("--target-recall must be in (0, 1]")
        if self.recalibrate_every < 1:
            raise DemoError("--recalibrate-every must be at least 1")


# --- the labelled stream ----------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One message of the replay: its id, its true label and the message record to send."""

    id: str
    label: str
    payload: bytes


def labelled_stream(options: DemoOptions) -> tuple[list[Item], str]:
    """The items to replay, in stream order, and a one-line description of where they come from.

    Synthetic (`filterd.evaluation.synth`, ham and spam) unless `options.corpus`, read in its `order`.
    DemoError for an unreadable or multi-label corpus, or a target class absent from the stream.
    """
    if options.corpus is None:
        n = options.messages or 20_000
        priors = {"ham": 1.0 - options.spam_share, "spam": options.spam_share}
        generated = generate(SynthConfig(n_messages=n, class_priors=priors, seed=options.seed))
        items = [Item(r["id"], r["label"], _payload(r["id"], r["text"], r["format"]))
                 for r in generated]  # fmt: skip
        source = (f"synthetic stream: {n:,} messages, {options.spam_share:.0%} spam, "
                  f"seed {options.seed}")  # fmt: skip
    else:
        try:
            records = read_corpus(options.corpus)
        except CorpusError as error:
            raise DemoError(str(error)) from None
        if not records:
            raise DemoError(f"{options.corpus}: the corpus is empty")
        multi = next((r for r in records if len(r.labels) != 1), None)
        if multi is not None:
            raise DemoError(f"{options.corpus}: record {multi.id!r} has {len(multi.labels)} labels;"
                            " the demo replays single-label corpora")  # fmt: skip
        records = records[: options.messages] if options.messages else records
        items = [Item(r.id, r.label, _payload(r.id, r.text, r.format)) for r in records]
        source = (f"corpus {options.corpus.parent.name}/{options.corpus.name}: {len(items):,} "
                  "messages in corpus order")  # fmt: skip
    labels = Counter(item.label for item in items)
    if options.target not in labels:
        raise DemoError(f"target class {options.target!r} does not occur in the stream "
                        f"(labels: {', '.join(sorted(labels))})")  # fmt: skip
    if len(labels) < 2:
        raise DemoError(
            f"the stream holds only {options.target!r} messages; it needs another class"
        )
    return items, source


def _payload(message_id: str, text: str, fmt: str) -> bytes:
    # "id" first: a dead letter's payload is cut at a size limit, and the id must survive it.
    return json.dumps({"id": message_id, "text": text, "format": fmt}).encode()


_LEADING_ID = re.compile(r'\A\s*\{\s*"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def _payload_id(payload: object) -> str | None:
    """The message id at the start of a dead letter's payload (possibly cut short), or None."""
    if not isinstance(payload, str):
        return None
    match = _LEADING_ID.match(payload)
    try:
        message_id = json.loads(match.group(1)) if match else None
    except ValueError:
        return None
    return message_id if isinstance(message_id, str) else None


def check_workdir(workdir: Path) -> None:
    """DemoError if `workdir` holds a store already: the demo starts from an empty model, and
    a store of an earlier run would turn its labels into duplicates."""
    if (Path(workdir) / DB_FILE).exists():
        raise DemoError(f"{Path(workdir) / DB_FILE} exists: the demo needs a fresh store "
                        "(remove it, or give another --workdir)")  # fmt: skip


# --- configuration ----------------------------------------------------------------------------


def demo_config(options: DemoOptions, workdir: Path, bootstrap_servers: str) -> Config:
    """The daemon's configuration: the file's (if any, environment ignored) under the demo's own
    broker, store, target and quick intervals. ConfigError names a bad key."""
    overrides = {
        "database.url": f"sqlite:///{workdir / DB_FILE}",
        "observe.metrics_port": options.metrics_port,
        "observe.log_format": "json",
        # A demo is short: the scorer should see what the learner learned within a second.
        "intervals.sync_seconds": 1.0,
        "intervals.threshold_reload_seconds": 0.5,
        "decision.target_class": options.target,
        "decision.target_recall": options.target_recall,
        "model.variant": options.variant,
        "model.select": options.select,
    }
    # The environment is ignored so that a FILTERD_DATABASE_URL meant for production is never
    # touched by a demo; a --config file is an explicit choice.
    config = load(options.config_path, environ={}, overrides=overrides)
    kafka = {"bootstrap_servers": bootstrap_servers, **FAST_GROUPS,
             "auto_offset_reset": "earliest", "enable_idempotence": False}  # fmt: skip
    return replace(config, kafka=kafka)


# --- comparing decisions with the truth -------------------------------------------------------


@dataclass(frozen=True)
class Quality:
    """Decisions compared with the true labels (None where the figure is undefined yet)."""

    n_ready: int  # decisions taken by a ready model (label is not "unknown")
    auc: float | None
    spec_at_recall: float | None  # specificity at the target recall, over the same decisions
    n_thresholded: int  # decisions taken with a threshold version
    recall_at_tau: float | None  # share of target messages the decisions flagged
    spec_at_tau: float | None  # share of the others they did not flag (ham kept)


class Scoreboard:
    """The true labels, and the decisions and dead letters read back; thread-safe.

    A decision read twice (at-least-once delivery) counts once: the first one is kept.
    """

    def __init__(self, items: Sequence[Item], target: str, target_recall: float) -> None:
        self.truth = {item.id: item.label for item in items}
        self.target, self.target_recall = target, target_recall
        self._lock = threading.Lock()
        self._decided: set[str] = set()
        self._dead: set[str] = set()
        self.dead_unparsed = 0  # dead letters of the messages topic whose id we cannot read
        self.feedback_dead = 0  # dead letters of the feedback topic
        self.labels: Counter[str] = Counter()
        self.duplicates = 0
        self.first_ready: int | None = None  # decisions read before the first by a ready model
        self.last_arrival: float | None = None  # time.monotonic() of the last new decision
        # Parallel lists (appending is cheap; arrays are built per snapshot).
        self._scores: list[float] = []
        self._positive: list[bool] = []
        self._thresholded: list[bool] = []
        self._flagged: list[bool] = []

    def decision(self, record: JsonObject) -> None:
        message_id = record.get("message_id")
        if not isinstance(message_id, str) or message_id not in self.truth:
            return  # not ours (a topic shared with something else)
        with self._lock:
            if message_id in self._decided:
                self.duplicates += 1
                return
            self._decided.add(message_id)
            self.last_arrival = time.monotonic()
            label = record.get("label", UNDECIDED)
            self.labels[label] += 1
            if label == UNDECIDED:
                return
            if self.first_ready is None:
                self.first_ready = len(self._decided)
            self._scores.append(float(record.get("score", 0.0)))
            self._positive.append(self.truth[message_id] == self.target)
            self._thresholded.append(record.get("threshold_version") is not None)
            self._flagged.append(label == self.target)

    def dead_letter(self, record: JsonObject, messages_topic: str) -> None:
        if record.get("source_topic") != messages_topic:
            with self._lock:
                self.feedback_dead += 1
            return
        message_id = _payload_id(record.get("payload"))
        with self._lock:
            if message_id is None:
                self.dead_unparsed += 1
            elif message_id in self.truth:
                self._dead.add(message_id)

    def decided(self, message_id: str) -> bool:
        with self._lock:
            return message_id in self._decided

    def dead(self, message_id: str) -> bool:
        with self._lock:
            return message_id in self._dead

    def counts(self) -> tuple[int, int]:
        """(messages decided, messages dead-lettered)."""
        with self._lock:
            return len(self._decided), len(self._dead - self._decided) + self.dead_unparsed

    def complete(self) -> bool:
        decided, dead = self.counts()
        return decided + dead >= len(self.truth)

    def quality(self) -> Quality:
        with self._lock:
            scores = np.array(self._scores, dtype=float)
            positive = np.array(self._positive, dtype=bool)
            thresholded = np.array(self._thresholded, dtype=bool)
            flagged = np.array(self._flagged, dtype=bool)
        auc = spec = recall_tau = spec_tau = None
        if positive.any() and (~positive).any():
            auc = ranking.auc(scores, positive)
            spec = ranking.specificity_at_recall(scores, positive, self.target_recall)
        pos_t, neg_t = positive & thresholded, ~positive & thresholded
        if pos_t.any():
            recall_tau = float(flagged[pos_t].mean())
        if neg_t.any():
            spec_tau = float(1.0 - flagged[neg_t].mean())
        return Quality(len(scores), auc, spec, int(thresholded.sum()), recall_tau, spec_tau)


class Collector:
    """Reads the decisions and dead-letter topics from their beginning into a Scoreboard, in a
    thread. Partitions are assigned, not subscribed: no consumer-group join to wait for."""

    def __init__(self, kafka: dict[str, Any], config: Config, board: Scoreboard) -> None:
        self.kafka, self.topics, self.board = kafka, config.topics, board
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="filterd-demo-collector", daemon=True
        )
        self.error: BaseException | None = None
        settings = client_settings(kafka, KafkaConsumer)
        settings.pop("group_id", None)
        self._consumer = KafkaConsumer(**settings)
        partitions = []
        for topic in (self.topics.decisions, self.topics.dead_letter):
            partitions += [TopicPartition(topic, p) for p in sorted(self._partitions(topic))]
        self._consumer.assign(partitions)
        self._consumer.seek_to_beginning()

    def _partitions(self, topic: str, timeout: float = 10.0) -> set[int]:
        deadline = time.monotonic() + timeout
        while True:
            found: set[int] | None = self._consumer.partitions_for_topic(topic)
            if found:
                return found
            if time.monotonic() > deadline:
                raise DemoError(f"the broker does not know topic {topic!r}")
            time.sleep(0.1)

    def start(self) -> Collector:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for tp, records in self._consumer.poll(timeout_ms=200).items():
                    for record in records:
                        self._read(tp.topic, record.value)
        except BaseException as error:  # noqa: BLE001 - reported by the demo, not lost in a thread
            self.error = error
        finally:
            self._consumer.close(autocommit=False)

    def _read(self, topic: str, value: bytes | None) -> None:
        try:
            record = json.loads(value or b"")
        except ValueError:
            return
        if not isinstance(record, dict):
            return
        if topic == self.topics.decisions:
            self.board.decision(record)
        else:
            self.board.dead_letter(record, self.topics.messages)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10.0)


# --- recalibration ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ThresholdInfo:
    """The threshold version the demo's last successful calibration wrote."""

    version: int
    tau: float
    auc: float
    n_pos: int
    n_neg: int
    recall: float
    specificity: float


class Calibrator:
    """Runs `calibrate_model` in a thread every `every` feedback records the learner applied,
    and once more on request at the end. Refusals (too little holdout, model not ready) are
    kept as `note`; they are the normal state early in the stream."""

    def __init__(self, config: Config, every: int, applied: Callable[[], int],
                 on_event: Callable[[str], None]) -> None:  # fmt: skip
        self.config, self.every, self.applied, self.on_event = config, every, applied, on_event
        self.next_at = every
        self.last_at = 0
        self.threshold: ThresholdInfo | None = None
        self.note = f"first calibration after {every:,} feedback records"
        self.attempts = self.written = 0
        self._kind = ""  # the kind of the last refusal ("waiting for holdout"...), "" after success
        self._final = threading.Event()
        self._final_done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="filterd-demo-calibrator", daemon=True
        )

    def start(self) -> Calibrator:
        self._thread.start()
        return self

    def _run(self) -> None:
        self._engine = database.connect(self.config.database.url)
        try:
            while not self._stop.wait(0.2):
                applied = self.applied()
                if applied >= self.next_at:
                    self._attempt(applied)
                    self.next_at = (applied // self.every + 1) * self.every
                elif self._final.is_set() and not self._final_done.is_set():
                    if applied > self.last_at:
                        self._attempt(applied)
                    self._final_done.set()
        finally:
            self._engine.dispose()
            self._final_done.set()

    def _attempt(self, applied: int) -> None:
        self.attempts += 1
        self.last_at = applied
        c = self.config
        try:
            report = calibrate_model(self._engine, c.model.name, c.decision.target_class,
                                     c.decision.target_recall, min_docs=c.model.min_docs,
                                     created_by=CREATED_BY)  # fmt: skip
        except GuardrailError as error:
            waiting = any(r.startswith("too_few") or r == "unreachable" for r in error.reasons)
            self._refused("waiting for holdout" if waiting else "not recalibrated", _short(error))
            return
        except CalibrationError as error:
            self._refused("waiting for holdout", _short(error))
            return
        except NotReady as error:
            self._refused("waiting for the model", str(error))
            return
        except (UnknownModel, SQLAlchemyError) as error:
            self._refused("store not ready", str(error).splitlines()[0])
            return
        except Exception as error:  # noqa: BLE001 - a failed calibration must not end the demo
            self._refused("calibration failed", repr(error))
            return
        self.written += 1
        assert report.version is not None  # not a dry run: the version was written
        self.threshold = ThresholdInfo(report.version, report.tau, report.auc, report.n_pos,
                                       report.n_neg, report.recall, report.specificity)  # fmt: skip
        self.note = self._kind = ""
        others = "ham" if report.target_class == "spam" else f"not {report.target_class}"
        self.on_event(f"threshold v{report.version}: τ = {report.tau:.4g} (holdout "
                      f"{report.n_pos:,} {report.target_class} / {report.n_neg:,} {others}, AUC "
                      f"{report.auc:.4f}, {others} kept {report.specificity:.1%}), after "
                      f"{applied:,} labels")  # fmt: skip

    def _refused(self, kind: str, why: str) -> None:
        # The reason is refreshed on screen every time, but printed as an event only when it
        # changes kind: "too few positives: 41", "…: 52", … would scroll the screen away.
        if kind != self._kind:
            self.on_event(f"{kind}: {why}")
        self.note, self._kind = f"{kind}: {why}", kind

    def finish(self, timeout: float) -> None:
        """Try a last calibration on everything applied so far, and wait for it."""
        self._final.set()
        self._final_done.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(60.0)  # a calibration in progress finishes its transaction


# --- the run ----------------------------------------------------------------------------------


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
    next_calibration: int | None
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


class Demo:
    """One run of the demo (see the module docstring). `on_tick(snapshot)` is called about
    every `tick` seconds from the calling thread; `on_event(line)` for notable moments (model
    ready, threshold written, calibration refused) from any thread."""

    def __init__(self, options: DemoOptions, workdir: Path, items: Sequence[Item], source: str,
                 on_tick: Callable[[Snapshot], None] = lambda s: None,
                 on_event: Callable[[str], None] = lambda line: None,
                 tick: float = 1.0) -> None:  # fmt: skip
        self.options, self.workdir, self.items, self.source = options, Path(workdir), items, source
        self.on_tick, self.on_event, self.tick = on_tick, on_event, tick
        self.board = Scoreboard(items, options.target, options.target_recall)
        # The port is chosen here, so the configuration is checked before anything starts.
        self.broker = LocalBroker(log_path=self.workdir / BROKER_LOG)
        try:
            self.config = demo_config(options, self.workdir, self.broker.bootstrap_servers)
        except ConfigError as error:
            raise DemoError(f"invalid configuration: {error}") from None
        self.daemon: Daemon | None = None
        self._daemon_thread: threading.Thread | None = None
        self._daemon_status: int | None = None
        self._daemon_error: BaseException | None = None
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
        create_topics(kafka, [topics.messages, topics.decisions, topics.feedback,
                                     topics.dead_letter])  # fmt: skip
        # Every log line of the daemon and of kafka-python goes to the file, never to the screen.
        # What is replaced is restored at the end: the demo may run inside a longer process.
        self._saved_logging = (structlog.get_config(), logging.getLogger().level,
                               logging.getLogger("kafka").level)  # fmt: skip
        self._log_file = open(self.workdir / DAEMON_LOG, "a", encoding="utf-8")  # noqa: SIM115
        configure_logging("json", stream=self._log_file)
        self.daemon = Daemon(self.config, role="all")
        self._daemon_thread = threading.Thread(target=self._run_daemon, name="filterd-demo-daemon",
                                               daemon=True)  # fmt: skip
        self._daemon_thread.start()
        self._collector = Collector(kafka, self.config, self.board).start()
        self._calibrator = Calibrator(self.config, self.options.recalibrate_every,
                                      self._feedback_applied, self.on_event).start()  # fmt: skip
        self._producer = KafkaProducer(**client_settings(kafka, KafkaProducer))

    def _run_daemon(self) -> None:
        assert self.daemon is not None
        try:
            self._daemon_status = self.daemon.run()
        except BaseException as error:  # noqa: BLE001 - reported by the demo
            self._daemon_error = error
            self._daemon_status = 1

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
        failure = self._wait_for(lambda: self.board.decided(first.id) or self.board.dead(first.id),
                                 "no decision", started)  # fmt: skip
        if failure:
            return failure
        state, times = "deciding", f"first decision {time.monotonic() - started:.1f} s"
        if self.board.decided(first.id):  # a dead-lettered first message has no label to learn
            self._pending.popleft()
            self._send_label(self.config.topics.feedback, first)
            self._producer.flush()
            failure = self._wait_for(lambda: self._feedback_applied() >= 1, "no label applied",
                                     started)  # fmt: skip
            if failure:
                return failure
            applied = time.monotonic() - started
            state, times = "deciding and learning", f"{times}, first label applied {applied:.1f} s"
        self.on_event(f"the daemon is {state}: {times} after the first message "
                      "(consumer-group joins)")  # fmt: skip
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
                return (f"{missing} from the daemon {self.options.timeout:g} s after its start "
                        f"(see {self.workdir / DAEMON_LOG})")  # fmt: skip
            time.sleep(0.02)
        return ""

    def _replay(self) -> tuple[str, str]:
        """Send messages and feedback, tick, until done, timed out or the daemon stopped."""
        assert self._producer is not None
        topics, rate, n = self.config.topics, self.options.rate, len(self.items)
        started = self._last_tick = self._replay_started = time.monotonic()
        first = self._sent
        replayed_at: float | None = None
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
            if self._sent == n and replayed_at is None:
                self._producer.flush()
                replayed_at = time.monotonic()
            failure = self._failure()
            if failure:
                return "daemon stopped", failure
            if replayed_at is not None:
                if self._drained():
                    assert self._calibrator is not None
                    left = self.options.timeout - (now - replayed_at)
                    self._calibrator.finish(timeout=max(1.0, left))
                    return "done", ""
                if now - replayed_at > self.options.timeout:
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
        if self.daemon is None:
            return {}
        out: dict[str, int] = {}
        for metric in self.daemon.metrics.registry.collect():
            for sample in metric.samples:
                if sample.name == "filterd_feedback_total" and sample.value:
                    out[sample.labels["outcome"]] = int(sample.value)
        return out

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
        return (f"after {self.options.timeout:g} s: {max(0, missing):,} messages without a "
                "decision, "
                f"{len(self._pending) + max(0, unapplied):,} labels not applied")  # fmt: skip

    def _failure(self) -> str:
        if self._daemon_thread is not None and not self._daemon_thread.is_alive():
            why = f": {self._daemon_error}" if self._daemon_error else ""
            return (f"the daemon stopped with status {self._daemon_status}{why} "
                    f"(see {self.workdir / DAEMON_LOG})")  # fmt: skip
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
        if self._daemon_thread is not None and self._daemon_thread.is_alive():
            self._daemon_thread.join(30.0)
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
            self.on_event(f"model ready: {self.board.first_ready - 1:,} decisions said "
                          f"'{UNDECIDED}' before the first by a trained model")  # fmt: skip
        calibrator = self._calibrator
        return Snapshot(
            elapsed=now - self._started, source=self.source, total=len(self.items),
            sent=self._sent, decided=decided, dead_lettered=dead, rate_now=rate_now,
            rate_mean=rate_mean, labels=dict(self.board.labels), target=self.options.target,
            target_recall=self.options.target_recall, quality=self.board.quality(),
            threshold=calibrator.threshold if calibrator else None,
            threshold_note=calibrator.note if calibrator else "",
            next_calibration=calibrator.next_at if calibrator else None,
            feedback_sent=self._feedback_sent, feedback_pending=len(self._pending),
            feedback=self._feedback_outcomes(), model_ready=ready, model_note=note,
            finished=finished,
        )  # fmt: skip

    def _model_state(self) -> tuple[bool, str]:
        if self.daemon is None:
            return False, "starting"
        ok, body = self.daemon.health.ready()
        version = _gauge(self.daemon.metrics.registry, "filterd_model_version")
        if ok:
            return True, f"statistics version {int(version or 0):,} (store changes synced)"
        failing = body.get("failing") or {}
        why = failing.get("model") or "; ".join(f"{k}: {v}" for k, v in failing.items())
        return False, why or body.get("detail", "starting")


def _short(error: Exception) -> str:
    """A guardrail's message without what the screen does not need (its class, the CLI hint)."""
    text = str(error).removesuffix(" (--force to override)")
    prefix, sep, rest = text.partition(": ")
    return rest if sep and prefix.startswith("refused for ") else text


def _gauge(registry: CollectorRegistry, name: str) -> float | None:
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name:
                value: float = sample.value
                return value
    return None


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
