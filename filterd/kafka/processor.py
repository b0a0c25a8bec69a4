"""The consume loop, in one place: poll a batch → process it → commit only what is durable.

    processor = Processor(strategy, kafka, topic, group, max_records, hooks, log)
    processor.run(stop)  # until `stop` is set; then finishes the batch in hand, within bounds

The rule it keeps (docs/architecture.md, "Reliability contract"): a batch's offsets are
committed only after everything the batch caused is in a topic or the store. The `Strategy`'s
`process` publishes or stores all of it before returning, or hands it to something that
completes it beside the processor (the scorer's recorder): it then returns that `Pending` work
with the batch's counts (`Processed`), and the offsets are held, in the order the batches were
read, until it is done. A `Retry` from `process` (store or broker unavailable), or a
`PublishError` (the broker did not take what the batch published), rewinds the consumer to the
batch's first offsets and backs off, so the batch is read and processed again — its effects are
idempotent. Offsets held for partitions a rebalance revokes, or for a consumer that
is replaced, are dropped, never committed: the next reader starts at the committed offsets,
and committing old ones later would move a partition back.

A stop request is honoured between batches: the in-flight batch is finished, flushed and
committed first — within bounds, so that a stop takes seconds whatever the broker's state: a
publish gives up `STOP_PUBLISH_SECONDS` after the request (the publisher's own bound), the last
commit and the consumer's close share `CLOSE_SECONDS`, and what is not committed by then is read
again at the next start.

What the processor needs from around it comes through two small protocols: `Hooks` (health
beats, broker readiness, the lag gauge, batch timings, warnings that repeat) and
`HeldPartitions` (the partitions held at a record batch the consumer cannot decode, and the
skips operators ask for); the daemon implements both (`filterd.daemon.loop`).

Logged along the way: "joining group", "group joined" (the partitions, the seconds it took),
then "partitions assigned" / "partitions revoked" at each rebalance, "batches" (counts, every
10 s at most), "smaller batches" (a batch took more than a quarter of max_poll_interval_ms: the
next polls ask for fewer records, `BatchSize`) and "stopped".
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from filterd.kafka.batches import DECODING_ERRORS, UNDECODABLE_ERRORS
from filterd.kafka.consumer import Batch, Consumer, subscribed_consumer
from filterd.kafka.producer import PublishError
from filterd.kafka.settings import CONSUMER_DEFAULTS

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
# A batch must be processed well within the consumer's max_poll_interval_ms: past it, the group
# drops this member and hands its partitions, the batch's records included, to a reader that
# processes them again. Polls ask for fewer records after a batch that took longer than this
# share of the interval (`BatchSize`).
BATCH_TIME_SHARE = 0.25
MAX_POLL_INTERVAL_MS = 300_000  # kafka-python's default, and librdkafka's
LAG_SECONDS = 5.0  # between updates of the consumer lag gauge
# between two asynchronous commits: each is a request to the group coordinator, and kafka-python
# fails at once those beyond its in-flight limit, which batches of a few records a few
# milliseconds apart reached ("offsets not committed", Node paused: max_in_flight)
COMMIT_SECONDS = 0.5
SUMMARY_SECONDS = 10.0  # between "batches" log lines


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


class Pending(Protocol):
    """What a processed batch's effects still wait for beside the processor (the scorer's rows,
    until its recorder has written them)."""

    def done(self) -> bool:
        """Complete: the batch's offsets may be committed. Once true, true for ever; and the
        work of an earlier batch is done before a later one's."""


@dataclass(frozen=True)
class Processed:
    """What `Strategy.process` returns: the batch's counts for the "batches" log line, and
    what must be done before its offsets may be committed (None: nothing beyond `process`)."""

    counts: Mapping[str, int]
    pending: Pending | None = None


class Strategy(Protocol):
    """What a consumer group member does with its batches (the scorer, the learner)."""

    def process(self, batch: Batch) -> Processed:
        """Handle one batch completely, or hand what is left to something that completes it
        (`Processed.pending`), or raise Retry (or PublishError)."""

    def on_idle(self) -> None:
        """Called between polls (the scorer's model sync, the learner's parked feedback)."""

    def on_stop(self) -> None:
        """Called once, when the processor stops, before its last commit and its consumer's
        close: release what it holds."""


class Hooks(Protocol):
    """What the processor reports as it goes (the daemon's health check, metrics and log)."""

    def started(self) -> None:
        """The processor runs: its beats are expected from now on."""

    def beat(self) -> None:
        """It is making progress (between polls)."""

    def stopped(self) -> None:
        """It no longer runs: no more beats."""

    def reachable(self, error: Exception | None) -> None:
        """The brokers answered when a consumer was made (None), or not (`error`)."""

    def warning(self, event: str, **fields: Any) -> None:
        """A warning that may repeat at every poll or retry: log it once a while, counted."""

    def flush_warnings(self, everything: bool = False) -> None:
        """Log the counts of the repeated warnings whose time is due (all, with `everything`)."""

    def lag(self, lags: Mapping[TopicPartition, int]) -> None:
        """The records past the position of each partition held whose end offset is known;
        the partitions not named have no lag of this member's to show."""

    def processed(self, seconds: float) -> None:
        """A batch took `seconds` to process."""


class HeldPartitions(Protocol):
    """The partitions of the consumer held at a record batch it cannot decode
    (`filterd.daemon.stuck.StuckPartitions`)."""

    def found(self, consumer: Consumer, error: BaseException) -> int:
        """After poll() raised `error` reading records: pause the partitions whose batch cannot
        be decoded. Returns how many; 0: the consumer must not be polled again."""

    def due(self, consumer: Consumer) -> tuple[dict[TopicPartition, int], bool]:
        """The skips operators asked for (each held partition's offset past its batch), and
        whether the consumer must be replaced."""

    def skipped(self, partitions: Collection[TopicPartition]) -> None:
        """The offsets past the batches of `partitions` were committed."""

    def forget(self) -> None:
        """The consumer was replaced: its successor starts with a clean fetch state."""

    def assigned(self, consumer: Consumer, partitions: Collection[TopicPartition]) -> None: ...
    def revoked(self, partitions: Collection[TopicPartition]) -> None: ...


class NoneHeld:
    """`HeldPartitions` that holds none: a batch that cannot be decoded makes a new consumer."""

    def found(self, consumer: Consumer, error: BaseException) -> int:
        return 0

    def due(self, consumer: Consumer) -> tuple[dict[TopicPartition, int], bool]:
        return {}, False

    def skipped(self, partitions: Collection[TopicPartition]) -> None:
        pass

    def forget(self) -> None:
        pass

    def assigned(self, consumer: Consumer, partitions: Collection[TopicPartition]) -> None:
        pass

    def revoked(self, partitions: Collection[TopicPartition]) -> None:
        pass


class BatchSize:
    """How many records the next poll asks for: `most` at first; after a batch of n records that
    took t > `budget` seconds, n · budget / t (at least 1); after a batch of as many as asked
    for that took less than half the budget, twice as many (at most `most`).

    >>> size = BatchSize(most=1000, budget=2.0)
    >>> size.after(1000, 8.0), size.after(250, 0.5), size.after(500, 0.9), size.after(7, 0.01)
    (250, 500, 1000, 1000)
    """

    def __init__(self, most: int, budget: float) -> None:
        self.most, self.budget = most, budget
        self.records = most

    def after(self, records: int, seconds: float) -> int:
        if seconds > self.budget:
            self.records = max(1, int(records * self.budget / seconds))
        elif records >= self.records and seconds < self.budget / 2:
            self.records = min(self.most, 2 * self.records)
        return self.records


class Processor:
    """One consumer group member running `strategy` on the batches of `topic`."""

    def __init__(
        self,
        strategy: Strategy,
        kafka: Mapping[str, Any],
        topic: str,
        group: str,
        max_records: int,
        hooks: Hooks,
        log: FilteringBoundLogger,
        held: HeldPartitions | None = None,
        connect: Callable[[], Consumer] | None = None,
        consumer_defaults: Mapping[str, Any] = CONSUMER_DEFAULTS,
    ) -> None:
        """`connect` makes the consumer (default: `subscribe`, one subscribed to `topic` in
        `group` through the `kafka` settings); KafkaError from it is an unreachable broker,
        retried. `held`: how undecodable batches are held (default: not at all)."""
        self.strategy, self.kafka, self.topic, self.group = strategy, kafka, topic, group
        self.max_records, self.hooks, self.log = max_records, hooks, log
        self.held = held or NoneHeld()
        self.connect = connect or self.subscribe
        self.consumer_defaults = consumer_defaults
        self._consumer: Consumer | None = None  # the one `run` polls, for the rebalance callbacks
        self.batches = 0
        self.joined = False  # the group gave this member its first assignment
        self._in_group = False  # assigned, and no rebalance begun since
        self._join_started: float | None = None
        self._lag_due = 0.0
        self._last_summary = 0.0
        self._summary: dict[str, int] = {}
        # partition → offset of the completed batches, not confirmed committed yet
        self._uncommitted: dict[TopicPartition, OffsetAndMetadata] = {}
        # those of them not sent in a commit yet, and when the next commit may be sent
        self._unsent: dict[TopicPartition, OffsetAndMetadata] = {}
        self._commit_due = 0.0
        # (pending, offsets) of the batches processed but not complete yet, in order
        self._awaiting: deque[tuple[Pending | None, dict[TopicPartition, OffsetAndMetadata]]]
        self._awaiting = deque()

    def run(self, stop: threading.Event) -> None:
        self.hooks.started()
        consumer = self._connect(stop)
        if consumer is None:
            self.hooks.stopped()
            return
        retry, unreachable = Backoff(), Backoff()
        interval = self.kafka.get("max_poll_interval_ms", MAX_POLL_INTERVAL_MS) / 1000
        size = BatchSize(self.max_records, BATCH_TIME_SHARE * interval)
        try:
            while not stop.is_set():
                self.hooks.beat()
                # the scorer's first loads the model, before the group assigns it work
                self.strategy.on_idle()
                self._commit_completed(consumer)
                skips, renew = self.held.due(consumer)
                if skips or renew:
                    consumer = self._skip(consumer, skips, stop)
                self.hooks.flush_warnings()
                if self._join_started is None:
                    self._join_started = time.monotonic()
                    self.log.info("joining group", topic=self.topic, group=self.group)
                try:
                    batch = Batch.poll(consumer, POLL_TIMEOUT_MS, size.records)
                except DECODING_ERRORS as error:
                    if isinstance(error, KafkaError) and not isinstance(error, UNDECODABLE_ERRORS):
                        # kafka-python lets some errors of an outage out of poll() (a coordinator
                        # lookup whose connection is refused); a later poll recovers
                        self._broker_unreachable(error, unreachable.next(), stop)
                    elif not self.held.found(consumer, error):
                        consumer = self._reconnect(consumer, error, unreachable.next(), stop)
                    continue
                unreachable.reset()
                self._polled(consumer)
                if not batch:
                    continue
                started = time.perf_counter()
                try:
                    processed = self.strategy.process(batch)
                except (Retry, PublishError) as error:
                    batch.rewind(consumer)
                    delay = retry.next()
                    self.hooks.warning(
                        "batch not completed, will read it again",
                        error=str(error),
                        backoff_seconds=delay,
                        **_position(batch),
                    )
                    stop.wait(delay)
                    continue
                retry.reset()
                self._awaiting.append((processed.pending, batch.offsets()))
                self._commit_completed(consumer)
                seconds = time.perf_counter() - started
                self.hooks.processed(seconds)
                self._summarize(processed.counts)
                asked = size.records
                if size.after(len(batch), seconds) < asked:
                    self.log.info(
                        "smaller batches",
                        records=len(batch),
                        seconds=round(seconds, 2),
                        next_poll_records=size.records,
                        max_poll_interval_ms=int(interval * 1000),
                    )
        finally:
            self.hooks.stopped()
            self._close(consumer)

    def _connect(self, stop: threading.Event) -> Consumer | None:
        """The consumer, once the brokers answer (None if stopped before): an unreachable broker at
        start-up is an outage like any other, retried with back-off."""
        backoff = Backoff()
        while not stop.is_set():
            self.hooks.beat()
            try:
                consumer = self.connect()
            except KafkaError as error:
                self.hooks.reachable(error)
                self._broker_unreachable(error, backoff.next(), stop)
                continue
            self.hooks.reachable(None)
            # it reads on from the committed offsets: the batches the last consumer read and did
            # not commit are read again, and committed by this one (committing the old ones too
            # would move a partition back, to where this one has read)
            self._awaiting.clear()
            self._unsent.clear()
            self._consumer = consumer
            return consumer
        return None

    def _skip(
        self, consumer: Consumer, skips: Mapping[TopicPartition, int], stop: threading.Event
    ) -> Consumer:
        """Commit the offsets `skips` (past undecodable batches) and read on with a new consumer
        (the only one that fetches those partitions again), once the batches before are
        complete; until then (a store that is slow to record them), the skips wait for a later
        check."""
        if self._awaiting:
            return consumer
        past = {tp: OffsetAndMetadata(offset, "", -1) for tp, offset in skips.items()}
        offsets = {**self._uncommitted, **past}
        try:
            if offsets:
                consumer.commit(offsets, timeout_ms=int(CLOSE_SECONDS * 1000))
        except KafkaError as error:
            self.hooks.warning(
                "undecodable batch not skipped yet: offsets not committed", error=repr(error)
            )
            return consumer
        self._uncommitted.clear()
        self._unsent.clear()
        self.held.skipped(skips)
        consumer.close(autocommit=False, timeout_ms=LEAVE_WHILE_JOINING_MS)
        self.held.forget()
        self._in_group, self._join_started = False, None
        return self._connect(stop) or consumer

    def _reconnect(
        self, consumer: Consumer, error: Exception, delay: float, stop: threading.Event
    ) -> Consumer:
        """A new consumer in place of one whose poll() failed reading records where no batch was
        found undecodable (the broker sent it corrupt, or the client failed otherwise): after
        such a failure kafka-python's consumer must not be polled again. What it did not commit
        is read again."""
        self.hooks.warning(
            "reading records failed, and no undecodable batch was found: making a new consumer",
            error=repr(error),
            retry_seconds=delay,
        )
        self._commit_completed(consumer, at_once=True)
        consumer.close(autocommit=False, timeout_ms=LEAVE_WHILE_JOINING_MS)
        self.held.forget()
        self._in_group, self._join_started = False, None
        stop.wait(delay)
        return self._connect(stop) or consumer

    def _broker_unreachable(self, error: KafkaError, delay: float, stop: threading.Event) -> None:
        self.hooks.warning(
            "broker unreachable, retrying",
            bootstrap_servers=self.kafka.get("bootstrap_servers"),
            error=str(error),
            retry_seconds=delay,
        )
        stop.wait(delay)

    def subscribe(self) -> Consumer:
        """A consumer subscribed to `topic` in `group`, whose rebalances this processor hears."""
        return subscribed_consumer(
            self.kafka,
            self.topic,
            self.group,
            self.max_records,
            self.assigned,
            self.revoked,
            self.consumer_defaults,
        )

    def assigned(self, partitions: set[TopicPartition]) -> None:
        """A rebalance gave this member `partitions` (in the poll that is running)."""
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
            self.held.assigned(self._consumer, partitions)

    def revoked(self, partitions: set[TopicPartition]) -> None:
        """A rebalance took `partitions` from this member: the completed batches' offsets not
        sent yet are sent now (before this member rejoins, so before the next holder reads), and
        none of their held offsets is committed after."""
        self._in_group = False
        self.held.revoked(partitions)
        if self._consumer is not None:
            self._commit_completed(self._consumer, at_once=True)
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
            self._unsent.pop(tp, None)

    def _polled(self, consumer: Consumer) -> None:
        """After each poll: notice the first assignment of a consumer without a rebalance
        listener (the in-memory one), and report the lag when due."""
        if not self.joined and (assigned := consumer.assignment()):
            self.assigned(assigned)
        now = time.monotonic()
        if now >= self._lag_due:
            self._lag_due = now + LAG_SECONDS
            self.report_lag(consumer)

    def report_lag(self, consumer: Consumer) -> None:
        """The lag of each partition held whose end offset the last fetch reported: no request of
        its own to the broker."""
        lags = {}
        for tp in consumer.assignment():
            try:
                end = consumer.highwater(tp)
                position = None if end is None else consumer.position(tp, timeout_ms=0)
            except KafkaError:  # revoked meanwhile
                continue
            if end is not None and position is not None:
                lags[tp] = max(0, end - position)
        self.hooks.lag(lags)

    def _commit_completed(self, consumer: Consumer, at_once: bool = False) -> None:
        """Commit the offsets of the batches whose pending work is done, in order, at most one
        commit every COMMIT_SECONDS (unless `at_once`): the newest offset of each partition.
        Without waiting: their effects are durable already, so a commit that is lost or late
        only means reading the batch again. The last ones are committed synchronously on
        close."""
        while self._awaiting and _done(self._awaiting[0][0]):
            _, offsets = self._awaiting.popleft()  # {} if its partitions were revoked meanwhile
            self._uncommitted.update(offsets)
            self._unsent.update(offsets)
        now = time.monotonic()
        if self._unsent and (at_once or now >= self._commit_due):
            self._commit_due = now + COMMIT_SECONDS
            offsets, self._unsent = self._unsent, {}
            consumer.commit_async(offsets, callback=self._committed)

    def _committed(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        result: Mapping[TopicPartition, OffsetAndMetadata] | Exception,
    ) -> None:
        if isinstance(result, Exception):
            # e.g. the partitions moved to another member, which reads the batch again: its
            # effects are idempotent, so this costs duplicates, not losses
            self.hooks.warning(
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
        self.hooks.flush_warnings(everything=True)
        self.strategy.on_stop()
        self._commit_completed(consumer)
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

    def _summarize(self, counts: Mapping[str, int]) -> None:
        """One log line per SUMMARY_SECONDS at most, with the counts since the last one."""
        self.batches += 1
        for key, value in counts.items():
            self._summary[key] = self._summary.get(key, 0) + value
        now = time.monotonic()
        if now - self._last_summary >= SUMMARY_SECONDS:
            self.log.info("batches", batches=self.batches, **self._summary)
            self._last_summary, self._summary = now, {}


def _done(pending: Pending | None) -> bool:
    return pending is None or pending.done()


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
