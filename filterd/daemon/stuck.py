"""Partitions whose next record batch the consumer cannot decode: found, held, reported, and
moved on only when an operator asks (docs/operations.md, "Runbook: undecodable record batch").

kafka-python raises out of poll() when a partition's next batch cannot be decoded (a codec
whose library is missing or that no client knows, a corrupt batch), without saying which
partition; and its consumer must not fetch that partition at that offset again: kafka-python
3.0 then loops inside poll() for ever. So after such an error `found` reads the batch at the
position of each partition the consumer holds, as the broker has it
(`filterd.kafka.batches.batch_at`), and pauses those it cannot decode. The others go on being
consumed. For each stuck partition: one error line in the log (codec or corruption, topic,
partition, offsets, records), readiness condition "<role> input" false, the gauge
`filterd_undecodable_batches{role, topic, partition}` at 1, and a row in the store
(`filterd.store.undecodable`). Nothing of it is committed past the batch.

`due` (between polls, every CHECK_SECONDS) finds the skips operators requested in the store
(`filterd topics skip`); the loop commits the offset past each batch once the batches before it
are complete, then reads on with a new consumer (`skipped` records it, and says so).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from filterd.kafka.batches import BatchAt, batch_at
from filterd.kafka.consumer import Consumer
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.store.errors import StoreError
from filterd.store.handle import Store
from filterd.store.undecodable import Undecodable

CHECK_SECONDS = 5.0  # between looks in the store for skips requested
INSPECT_SECONDS = 5.0  # bounds the read of one partition's batch

BatchReader = Callable[[Mapping[str, Any], TopicPartition, int, float], BatchAt | None]


@dataclass
class Stuck:
    """A partition held at a batch it cannot decode; `reported`: in the store."""

    batch: Undecodable
    held: bool = True  # assigned to this consumer (a rebalance may take it away and back)
    reported: bool = False


class StuckPartitions:
    """The partitions of one loop's consumer held at an undecodable batch."""

    def __init__(
        self,
        role: str,
        group: str,
        kafka: Mapping[str, Any],
        store: Store | None,
        metrics: Metrics,
        health: Health,
        log: FilteringBoundLogger,
        read: BatchReader = batch_at,
    ) -> None:
        """`store`: the store that records the batches and the skips (None: not recorded,
        and never skipped); `read`: how a partition's batch is read (`batch_at`)."""
        self.role, self.group, self.kafka, self.store = role, group, kafka, store
        self.metrics, self.health, self.log, self.read = metrics, health, log, read
        self.condition = f"{role} input"
        self.found_by = f"{role} {socket.gethostname()}:{os.getpid()}"
        # What this consumer's fetch state holds broken: kept while the consumer lives, also
        # across rebalances, since kafka-python keeps it for the partition too.
        self._stuck: dict[TopicPartition, Stuck] = {}
        self._check_due = 0.0
        self._shown: set[TopicPartition] = set()  # the partitions the gauge shows
        self._was_held = False  # readiness condition set

    def found(self, consumer: Consumer, error: BaseException) -> int:
        """After poll() raised `error` reading records: pause and report the partitions held
        whose batch at their position cannot be decoded here. Returns how many; 0 means none
        was found, and the consumer must not be polled again (the caller makes a new one)."""
        found = 0
        for tp in sorted(consumer.assignment() - set(self._stuck)):
            position = consumer.position(tp, timeout_ms=0)
            end = consumer.highwater(tp)
            if position is None or (end is not None and position >= end):
                continue  # nothing fetched, or nothing to read: not the partition that failed
            try:
                at = self.read(self.kafka, tp, position, INSPECT_SECONDS)
            except KafkaError as read_error:
                self.log.warning(
                    "cannot read the batch a poll failed on",
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=position,
                    error=repr(read_error),
                )
                return 0
            if at is not None and at.problem is not None:
                consumer.pause(tp)
                self._hold(tp, at, error)
                found += 1
        self._check_due = 0.0  # a skip may be requested already
        return found

    def _hold(self, tp: TopicPartition, at: BatchAt, error: BaseException) -> None:
        batch = Undecodable(
            self.group,
            tp.topic,
            tp.partition,
            at.offset,
            at.next_offset,
            at.records,
            at.codec,
            at.problem or "",
            self.found_by,
            datetime.now(UTC),
        )
        self._stuck[tp] = Stuck(batch)
        self._say_held(batch, error=str(error))
        self._show()

    def _say_held(self, batch: Undecodable, **more: str) -> None:
        """The one error line that says a partition is held, and how to skip its batch."""
        self.log.error(
            "undecodable record batch: partition held until the batch is skipped",
            topic=batch.topic,
            partition=batch.kafka_partition,
            offset=batch.kafka_offset,
            last_offset=batch.next_offset - 1,
            records=batch.records,
            codec=batch.codec,
            problem=batch.problem,
            group=self.group,
            skip=skip_command(batch),
            **more,
        )

    def _show(self) -> None:
        """Readiness and the gauge as the partitions held stand."""
        held = {tp: s for tp, s in self._stuck.items() if s.held}
        for tp in self._shown - set(held):
            self.metrics.undecodable_batches.remove(self.role, tp.topic, str(tp.partition))
        for tp in held:
            self.metrics.undecodable_batches.labels(self.role, tp.topic, str(tp.partition)).set(1)
        self._shown = set(held)
        if held:
            detail = "; ".join(
                f"{tp.topic}[{tp.partition}] offset {s.batch.kafka_offset}: {s.batch.problem}"
                for tp, s in sorted(held.items())
            )
            self.health.set_ready(
                self.condition, False, f"undecodable record batch at {detail} (filterd topics skip)"
            )
        elif self._was_held:
            self.health.set_ready(self.condition, True)
        self._was_held = self._was_held or bool(held)

    def forget(self) -> None:
        """The consumer was replaced: its successor starts with a clean fetch state."""
        self._stuck.clear()
        self._show()

    def assigned(self, consumer: Consumer, partitions: Collection[TopicPartition]) -> None:
        """A rebalance gave `partitions` (in the poll that is running): pause again those whose
        batch this consumer failed on, before the poll fetches them."""
        again = [tp for tp in partitions if tp in self._stuck]
        if again:
            consumer.pause(*again)

    def revoked(self, partitions: Collection[TopicPartition]) -> None:
        """A rebalance took `partitions`: whoever gets them reports their batch."""
        for tp in partitions:
            if tp in self._stuck:
                self._stuck[tp].held = False
        self._show()

    def due(self, consumer: Consumer) -> tuple[list[Undecodable], bool]:
        """Every CHECK_SECONDS while partitions are held: report to the store what is not yet,
        and look for the skips operators asked for. Returns the batches to skip, and whether
        the consumer must be replaced (a partition a rebalance gave back no longer stands at
        its batch). Past a batch, only a new consumer reads the partition: kafka-python keeps
        the batch's fetch state for the consumer's life, fetching the partition no more."""
        now = time.monotonic()
        if not self._stuck or now < self._check_due:
            return [], False
        self._check_due = now + CHECK_SECONDS
        renew = self._regained(consumer)
        requested: list[Undecodable] = []
        for tp, s in sorted(self._stuck.items()):
            if not s.held or self.store is None:
                continue
            try:
                if not s.reported:
                    s.batch, s.reported = self.store.report_undecodable(s.batch), True
                if s.batch.skip_requested_at is None:
                    s.batch = (
                        self.store.find_undecodable(
                            self.group, tp.topic, tp.partition, s.batch.kafka_offset
                        )
                        or s.batch
                    )
            except StoreError as error:
                self.log.warning(
                    "undecodable batch not checked in the store",
                    topic=tp.topic,
                    partition=tp.partition,
                    error=str(error),
                )
                continue
            if s.batch.skip_requested_at is not None:
                requested.append(s.batch)
        return requested, renew

    def skipped(self, batches: list[Undecodable]) -> None:
        """The group's offsets were committed past `batches`: record it and say so."""
        for batch in batches:
            if self.store is not None:
                try:
                    self.store.mark_skipped(batch)
                except StoreError as error:
                    self.log.warning("skip not recorded in the store", error=str(error))
            self.log.warning(
                "undecodable record batch skipped",
                topic=batch.topic,
                partition=batch.kafka_partition,
                offset=batch.kafka_offset,
                next_offset=batch.next_offset,
                records=batch.records,
                codec=batch.codec,
                group=self.group,
                requested_by=batch.skip_requested_by,
                reason=batch.skip_reason,
            )
            self._stuck.pop(TopicPartition(batch.topic, batch.kafka_partition), None)
        self._show()

    def _regained(self, consumer: Consumer) -> bool:
        """Partitions a rebalance took and gave back (paused by `assigned`): held again at the
        batch if the group stands there. True if one stands elsewhere (another member skipped
        the batch): only a new consumer fetches it."""
        assigned, renew = consumer.assignment(), False
        for tp, s in list(self._stuck.items()):
            if s.held or tp not in assigned:
                continue
            position = consumer.position(tp, timeout_ms=0)
            if position is None:
                continue  # not known yet: the next check
            if position == s.batch.kafka_offset:
                self._stuck[tp] = replace(s, held=True)
                self._say_held(s.batch)
            else:
                renew = True
        self._show()
        return renew


def skip_command(batch: Undecodable) -> str:
    """The command that asks the daemons to skip `batch`."""
    return (
        f"filterd topics skip {batch.topic} {batch.kafka_partition} {batch.kafka_offset} "
        f"--group {batch.consumer_group} --reason '…' --yes"
    )
