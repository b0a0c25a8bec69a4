"""The consume loop both roles share: poll a batch → process it → commit its offsets.

`process` publishes or stores everything the batch causes before returning, or hands it to
something that completes it beside the loop (`ticket`, `completed`: the scorer's recorder);
only then are the offsets committed (at-least-once, docs/architecture.md, "Reliability
contract"). A `Retry` from `process`
(store or broker unavailable) rewinds the consumer to the batch's first offsets and backs off,
so the batch is read and processed again — its effects are idempotent. A stop request is
honoured between batches: the in-flight batch is finished, flushed and committed first —
within bounds, so that a stop takes seconds whatever the broker's state: a publish gives up
`STOP_PUBLISH_SECONDS` after the request, the last commit and the consumer's close share
`CLOSE_SECONDS`, and what is not committed by then is read again at the next start.

Logged along the way: "joining group", "group joined" (the partitions, the seconds it took),
then "partitions assigned" / "partitions revoked" at each rebalance, and "stopped".
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from typing import Any, NotRequired, TypedDict

from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from filterd.daemon.guard import DeadLetterGuard
from filterd.daemon.stuck import StuckPartitions
from filterd.kafka.batches import DECODING_ERRORS, UNDECODABLE_ERRORS
from filterd.kafka.consumer import Batch, ConsumedRecord, Consumer, subscribed_consumer
from filterd.kafka.producer import PublishError
from filterd.kafka.publisher import Publishing, dead_letter_of
from filterd.kafka.settings import CONSUMER_DEFAULTS
from filterd.observe.health import Health
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.records import DeadLetter, encode
from filterd.store.handle import Store
from filterd.store.undecodable import Undecodable

POLL_TIMEOUT_MS = 500
BACKOFF_FIRST, BACKOFF_MAX = 0.2, 5.0
# After a stop request: how long the in-flight batch's publish may still wait for the broker,
# then how long the last commit and the consumer's close may take together. With a poll
# (POLL_TIMEOUT_MS) they keep a stop under 5 s.
STOP_PUBLISH_SECONDS = 1.5
CLOSE_SECONDS = 1.0
# A LeaveGroup sent while this member's own JoinGroup is pending is answered only once the join
# completes (Tansu holds a join for about session_timeout_ms / 2): not worth waiting for, as the
# broker drops the member after session_timeout_ms anyway.
LEAVE_WHILE_JOINING_MS = 100
LAG_SECONDS = 5.0  # between updates of the consumer lag gauge


class Retry(RuntimeError):
    """The batch could not be completed now (store or broker unavailable); read it again."""


class Backoff:
    """Waits that double from `first` up to `most`, until `reset()`."""

    def __init__(self, first: float = BACKOFF_FIRST, most: float = BACKOFF_MAX) -> None:
        self.first, self.most = first, most
        self.delay = first

    def next(self) -> float:
        delay, self.delay = self.delay, min(2 * self.delay, self.most)
        return delay

    def reset(self) -> None:
        self.delay = self.first


class LoopSettings(TypedDict):
    """What every loop is made with: the keyword arguments of `Loop` that subclasses pass on."""

    kafka: Mapping[str, Any]
    topic: str
    group: str
    max_records: int
    publisher: Publishing
    guard: DeadLetterGuard
    dead_letter_topic: str
    payload_limit: int
    metrics: Metrics
    health: Health
    log: FilteringBoundLogger
    connect: NotRequired[Callable[[], Consumer]]
    store: NotRequired[Store | None]


class Loop:
    """One consumer group member: subclasses define `role`, `topic`, `group` and `process`."""

    role = "loop"
    consumer_defaults: dict[str, Any] = CONSUMER_DEFAULTS  # under the [kafka] settings

    def __init__(
        self,
        kafka: Mapping[str, Any],
        topic: str,
        group: str,
        max_records: int,
        publisher: Publishing,
        guard: DeadLetterGuard,
        dead_letter_topic: str,
        payload_limit: int,
        metrics: Metrics,
        health: Health,
        log: FilteringBoundLogger,
        connect: Callable[[], Consumer] | None = None,
        store: Store | None = None,
    ) -> None:
        """`connect` makes the consumer (default: one subscribed to `topic` in `group` through
        the `kafka` settings); KafkaError from it is an unreachable broker, retried. `store`
        records the record batches the consumer cannot decode, and the skips operators ask for
        (`filterd.daemon.stuck`; None: such a batch holds its partition until a restart)."""
        self.kafka, self.topic, self.group, self.max_records = kafka, topic, group, max_records
        self.publisher, self.guard = publisher, guard
        self.dead_letter_topic, self.payload_limit = dead_letter_topic, payload_limit
        self.metrics, self.health = metrics, health
        self.log = log.bind(role=self.role)
        self.connect = connect or self._subscribe
        self.stuck = StuckPartitions(self.role, group, kafka, store, metrics, health, self.log)
        self._consumer: Consumer | None = None  # the one `run` polls, for the rebalance callbacks
        self.batches = 0
        self.repeats = Repeats()
        self.joined = False  # the group gave this member its first assignment
        self._in_group = False  # assigned, and no rebalance begun since
        self._join_started: float | None = None
        self._lag_due = 0.0
        self._lag_shown: set[TopicPartition] = set()  # partitions the lag gauge has a value for
        self._last_summary = 0.0
        self._summary: dict[str, int] = {}
        # partition → offset committed asynchronously, not yet confirmed
        self._uncommitted: dict[TopicPartition, OffsetAndMetadata] = {}
        # (ticket, offsets) of the batches processed but not complete yet (`ticket`), in order
        self._awaiting: deque[tuple[int, dict[TopicPartition, OffsetAndMetadata]]] = deque()

    def process(self, batch: Batch) -> dict[str, int]:
        """Handle one batch completely (or raise Retry); returns counts for the batch summary."""
        raise NotImplementedError

    def on_idle(self) -> None:
        """Called between polls (model sync and threshold reload in the scorer)."""

    def on_stop(self) -> None:
        """Called once the loop has stopped, before its consumer closes: release what it holds."""

    def ticket(self) -> int:
        """What must be complete before the batch just processed may be committed, as a number
        that `completed` reaches once it is. The default: nothing beyond `process` itself."""
        return 0

    def completed(self) -> int:
        """The highest `ticket` complete (a scorer's recorder: written to the store)."""
        return 0

    def run(self, stop: threading.Event) -> None:
        self.health.register_loop(self.role, stall_seconds=60.0)
        consumer = self._connect(stop)
        if consumer is None:
            self.health.unregister_loop(self.role)
            return
        retry, unreachable = Backoff(), Backoff()
        try:
            while not stop.is_set():
                self.health.beat(self.role)
                # the scorer's first loads the model, before the group assigns it work
                self.on_idle()
                self._commit_completed(consumer)
                skips, renew = self.stuck.due(consumer)
                if skips or renew:
                    consumer = self._skip(consumer, skips, stop)
                self.repeats.flush()
                if self._join_started is None:
                    self._join_started = time.monotonic()
                    self.log.info("joining group", topic=self.topic, group=self.group)
                try:
                    batch = Batch.poll(consumer, POLL_TIMEOUT_MS, self.max_records)
                except DECODING_ERRORS as error:
                    if isinstance(error, KafkaError) and not isinstance(error, UNDECODABLE_ERRORS):
                        # kafka-python lets some errors of an outage out of poll() (a coordinator
                        # lookup whose connection is refused); a later poll recovers
                        self._broker_unreachable(error, unreachable.next(), stop)
                    elif not self.stuck.found(consumer, error):
                        consumer = self._reconnect(consumer, error, unreachable.next(), stop)
                    continue
                unreachable.reset()
                self._polled(consumer)
                if not batch:
                    continue
                started = time.perf_counter()
                try:
                    counts = self.process(batch)
                except Retry as error:
                    batch.rewind(consumer)
                    delay = retry.next()
                    self.repeats.warning(
                        self.log,
                        "batch not completed, will read it again",
                        error=str(error),
                        backoff_seconds=delay,
                        **_position(batch),
                    )
                    stop.wait(delay)
                    continue
                retry.reset()
                self._awaiting.append((self.ticket(), batch.offsets()))
                self._commit_completed(consumer)
                self.metrics.batch_seconds.labels(role=self.role).observe(
                    time.perf_counter() - started
                )
                self._summarize(counts)
        finally:
            self.health.unregister_loop(self.role)
            self._close(consumer)

    def _connect(self, stop: threading.Event) -> Consumer | None:
        """The consumer, once the brokers answer (None if stopped before): an unreachable broker at
        start-up is an outage like any other, retried with back-off."""
        backoff = Backoff()
        while not stop.is_set():
            self.health.beat(self.role)
            try:
                consumer = self.connect()
            except KafkaError as error:
                self.health.set_ready(f"{self.role} broker", False, str(error))
                self._broker_unreachable(error, backoff.next(), stop)
                continue
            self.health.set_ready(f"{self.role} broker", True)
            # it reads on from the committed offsets: the batches the last consumer read and did
            # not commit are read again, and committed by this one (committing the old ones too
            # would move a partition back, to where this one has read)
            self._awaiting.clear()
            self._consumer = consumer
            return consumer
        return None

    def _skip(
        self, consumer: Consumer, skips: list[Undecodable], stop: threading.Event
    ) -> Consumer:
        """Commit the offsets past the batches `skips` and read on with a new consumer (the only
        one that fetches those partitions again), once the batches before are complete; until
        then (a store that is slow to record them), the skips wait for a later check."""
        if self._awaiting:
            return consumer
        past = {
            TopicPartition(b.topic, b.kafka_partition): OffsetAndMetadata(b.next_offset, "", -1)
            for b in skips
        }
        offsets = {**self._uncommitted, **past}
        try:
            if offsets:
                consumer.commit(offsets, timeout_ms=int(CLOSE_SECONDS * 1000))
        except KafkaError as error:
            self.repeats.warning(
                self.log,
                "undecodable batch not skipped yet: offsets not committed",
                error=repr(error),
            )
            return consumer
        self._uncommitted.clear()
        self.stuck.skipped(skips)
        consumer.close(autocommit=False, timeout_ms=LEAVE_WHILE_JOINING_MS)
        self.stuck.forget()
        self._in_group, self._join_started = False, None
        return self._connect(stop) or consumer

    def _reconnect(
        self, consumer: Consumer, error: Exception, delay: float, stop: threading.Event
    ) -> Consumer:
        """A new consumer in place of one whose poll() failed reading records where no batch was
        found undecodable (the broker sent it corrupt, or the client failed otherwise): after
        such a failure kafka-python's consumer must not be polled again. What it did not commit
        is read again."""
        self.repeats.warning(
            self.log,
            "reading records failed, and no undecodable batch was found: making a new consumer",
            error=repr(error),
            retry_seconds=delay,
        )
        self._commit_completed(consumer)
        consumer.close(autocommit=False, timeout_ms=LEAVE_WHILE_JOINING_MS)
        self.stuck.forget()
        self._in_group, self._join_started = False, None
        stop.wait(delay)
        return self._connect(stop) or consumer

    def _broker_unreachable(self, error: KafkaError, delay: float, stop: threading.Event) -> None:
        self.repeats.warning(
            self.log,
            "broker unreachable, retrying",
            bootstrap_servers=self.kafka.get("bootstrap_servers"),
            error=str(error),
            retry_seconds=delay,
        )
        stop.wait(delay)

    def _subscribe(self) -> Consumer:
        return subscribed_consumer(
            self.kafka,
            self.topic,
            self.group,
            self.max_records,
            self._assigned,
            self._revoked,
            self.consumer_defaults,
        )

    def _assigned(self, partitions: set[TopicPartition]) -> None:
        held = sorted(tp.partition for tp in partitions)
        if self.joined:
            self.log.info(
                "partitions assigned", topic=self.topic, group=self.group, partitions=held
            )
        else:
            waited = time.monotonic() - (self._join_started or time.monotonic())
            self.log.info(
                "group joined",
                topic=self.topic,
                group=self.group,
                partitions=held,
                seconds=round(waited, 1),
            )
        self.joined = self._in_group = True
        if self._consumer is not None:
            self.stuck.assigned(self._consumer, partitions)

    def _revoked(self, partitions: set[TopicPartition]) -> None:
        self._in_group = False
        self.stuck.revoked(partitions)
        self._forget(partitions)
        if partitions:
            self.log.info(
                "partitions revoked",
                topic=self.topic,
                group=self.group,
                partitions=sorted(tp.partition for tp in partitions),
            )

    def _forget(self, partitions: Collection[TopicPartition]) -> None:
        """Commit none of the offsets of `partitions` that wait for their batches: whoever reads
        the partitions next starts at the committed offsets and commits its own; committing these
        later would move a partition back below what that reader committed."""
        for _, offsets in self._awaiting:
            for tp in partitions:
                offsets.pop(tp, None)
        for tp in partitions:
            self._uncommitted.pop(tp, None)

    def _polled(self, consumer: Consumer) -> None:
        """After each poll: notice the first assignment of a consumer without a rebalance
        listener (the in-memory one), and update the lag gauge when due."""
        if not self.joined and (assigned := consumer.assignment()):
            self._assigned(assigned)
        now = time.monotonic()
        if now >= self._lag_due:
            self._lag_due = now + LAG_SECONDS
            self._report_lag(consumer)

    def _report_lag(self, consumer: Consumer) -> None:
        """The lag of each partition held whose end offset the last fetch reported: no request of
        its own to the broker."""
        shown = set()
        for tp in consumer.assignment():
            try:
                end = consumer.highwater(tp)
                position = None if end is None else consumer.position(tp, timeout_ms=0)
            except KafkaError:  # revoked meanwhile
                continue
            if end is not None and position is not None:
                self.metrics.consumer_lag.labels(
                    role=self.role, topic=tp.topic, partition=str(tp.partition)
                ).set(max(0, end - position))
                shown.add(tp)
        for tp in self._lag_shown - shown:  # no longer ours: another member reports it
            self.metrics.consumer_lag.remove(self.role, tp.topic, str(tp.partition))
        self._lag_shown = shown

    def _commit_completed(self, consumer: Consumer) -> None:
        """Commit, in order, the offsets of the batches whose `ticket` is complete. Without
        waiting: their effects are durable already, so a commit that is lost only means reading
        the batch again. The last ones are committed synchronously on close."""
        if not self._awaiting:
            return
        done = self.completed()
        while self._awaiting and self._awaiting[0][0] <= done:
            _, offsets = self._awaiting.popleft()
            if offsets:  # none when its partitions were revoked meanwhile
                self._uncommitted.update(offsets)
                consumer.commit_async(offsets, callback=self._committed)

    def _committed(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        result: Mapping[TopicPartition, OffsetAndMetadata] | Exception,
    ) -> None:
        if isinstance(result, Exception):
            # e.g. the partitions moved to another member, which reads the batch again: its
            # effects are idempotent, so this costs duplicates, not losses
            self.repeats.warning(
                self.log,
                "offsets not committed",
                error=repr(result),
                partitions=sorted(tp.partition for tp in offsets),
            )
        else:
            for tp, offset in offsets.items():
                if self._uncommitted.get(tp) == offset:
                    del self._uncommitted[tp]

    def _close(self, consumer: Consumer) -> None:
        """Commit what is done and leave the group, within CLOSE_SECONDS: what is not committed
        by then is read again by whoever gets the partitions."""
        deadline = time.monotonic() + CLOSE_SECONDS
        self.repeats.flush(everything=True)
        self.on_stop()
        self._commit_completed(consumer)
        try:
            self.publisher.close()
        except KafkaError as error:
            self.log.warning("producer did not close cleanly", error=repr(error))
        assigned = consumer.assignment()
        pending = {tp: offset for tp, offset in self._uncommitted.items() if tp in assigned}
        if pending:
            try:
                consumer.commit(pending, timeout_ms=_ms_until(deadline))
            except KafkaError as error:
                self.log.warning(
                    "last offsets not committed: their records will be read again",
                    error=repr(error),
                    partitions=sorted(tp.partition for tp in pending),
                )
        joining = not self._in_group
        consumer.close(
            autocommit=False, timeout_ms=LEAVE_WHILE_JOINING_MS if joining else _ms_until(deadline)
        )
        if joining and self._join_started is not None:
            self.log.info(
                "stopped during a group join: "
                "the broker drops this member after its session timeout"
            )
        self.log.info("stopped", batches=self.batches)

    def dead_letter(self, record: ConsumedRecord, reason: str, error: str) -> DeadLetter:
        """Send `record` to the dead-letter topic (delivered at the next flush)."""
        letter = dead_letter_of(record, reason, error, self.payload_limit)
        self.publisher.send(self.dead_letter_topic, None, encode(letter))
        self.metrics.dead_letters.labels(reason=reason, topic=record.topic).inc()
        self.repeats.warning(
            self.log,
            "dead-lettered",
            {"reason": reason, "topic": record.topic},
            error=error[:300],
            partition=record.partition,
            offset=record.offset,
        )
        return letter

    def flush(self) -> None:
        try:
            self.publisher.flush()
        except PublishError as error:
            raise Retry(str(error)) from None

    def _summarize(self, counts: dict[str, int], every: float = 10.0) -> None:
        """One log line per `every` seconds at most, with the counts since the last one."""
        self.batches += 1
        for key, value in counts.items():
            self._summary[key] = self._summary.get(key, 0) + value
        now = time.monotonic()
        if now - self._last_summary >= every:
            self.log.info("batches", batches=self.batches, **self._summary)
            self._last_summary, self._summary = now, {}


def _ms_until(deadline: float) -> int:
    return max(0, int((deadline - time.monotonic()) * 1000))


def _position(batch: Batch) -> dict[str, Any]:
    first = batch.records[0]
    return {
        "topic": first.topic,
        "partition": first.partition,
        "offset": first.offset,
        "records": len(batch),
    }
