"""The demo's scoreboard: the decisions and dead letters read back, compared with the true
labels."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from kafka import KafkaConsumer, TopicPartition

from filterd.demo.options import DemoError
from filterd.demo.stream import Item, payload_id
from filterd.evaluation import ranking
from filterd.kafka.settings import client_settings
from filterd.service.config import Config
from filterd.service.decide import UNDECIDED

# A decision or a dead letter read back, as JSON decoding gives it: the values are whatever the
# record held (the daemon writes them; the demo reads only what it compares).
JsonObject = dict[str, Any]


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
            return  # the feedback topic's: the scoreboard counts messages
        message_id = payload_id(record.get("payload"))
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
