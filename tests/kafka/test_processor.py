"""The consume loop (`filterd.kafka.processor.Processor`), one suite run twice: on the in-memory
broker (`filterd.kafka.memory`) and on the session's real broker through kafka-python. What must
hold whatever the client: at least once (a batch whose `process` raises Retry is read again, its
offsets are committed only once its ticket is complete, and a member that stops or loses its
commits before leaves the batch to be read again), no committed offset ever moves back (offsets
held for partitions a rebalance revokes are dropped), a stop finishes the in-flight batch and
commits it within bounds, and the join, the lag and the close as the hooks and the log hear
them."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import structlog
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError
from structlog.testing import CapturingLogger
from structlog.typing import FilteringBoundLogger

from filterd.kafka import processor as processor_module
from filterd.kafka.consumer import Batch, CommitCallback, Consumer
from filterd.kafka.memory import MemoryBroker, MemoryConsumer
from filterd.kafka.processor import CLOSE_SECONDS, COMMIT_SECONDS, Processed, Processor, Retry
from filterd.kafka.producer import PublishError

PARTITIONS = 4  # as the session broker's topics (tests/conftest.py)


class Log:
    """A structlog logger (`logger`) that keeps what it is told: `lines`, each (level, event,
    fields)."""

    def __init__(self) -> None:
        self.captured = CapturingLogger()
        self.logger: FilteringBoundLogger = structlog.wrap_logger(
            self.captured,
            wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
            processors=[],
        )

    @property
    def lines(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [
            (
                c.method_name,
                c.kwargs["event"],
                {k: v for k, v in c.kwargs.items() if k != "event"},
            )
            for c in list(self.captured.calls)
        ]

    def events(self) -> list[str]:
        return [event for _, event, _ in self.lines]

    def last(self, event: str) -> dict[str, Any]:
        return [fields for _, e, fields in self.lines if e == event][-1]


class Hooks:
    """`filterd.kafka.processor.Hooks` that keep what they are told."""

    def __init__(self) -> None:
        self.running, self.beats = False, 0
        self.reachability: list[Exception | None] = []
        self.warnings: list[str] = []
        self.lags: dict[TopicPartition, int] = {}
        self.timings: list[float] = []

    def started(self) -> None:
        self.running = True

    def beat(self) -> None:
        self.beats += 1

    def stopped(self) -> None:
        self.running = False

    def reachable(self, error: Exception | None) -> None:
        self.reachability.append(error)

    def warning(self, event: str, **fields: Any) -> None:
        self.warnings.append(event)

    def flush_warnings(self, everything: bool = False) -> None:
        pass

    def lag(self, lags: Mapping[TopicPartition, int]) -> None:
        self.lags = dict(lags)

    def processed(self, seconds: float) -> None:
        self.timings.append(seconds)


class Recording:
    """A strategy that keeps where each record it processed was read, raises `error` (Retry) for
    its first `failures` batches, completes its tickets at once unless `hold`, and sets `stop_after`
    (when given) once it has read `enough` records."""

    def __init__(
        self,
        failures: int = 0,
        hold: bool = False,
        enough: int | None = None,
        stop_after: threading.Event | None = None,
        error: type[Exception] = Retry,
    ) -> None:
        self.failures, self.hold, self.enough, self.stop_after = failures, hold, enough, stop_after
        self.error = error
        self.read: list[tuple[int, int]] = []  # (partition, offset)
        self.tickets = self.done = 0
        self.retried: list[list[tuple[int, int, int]]] = []  # the commits seen at each Retry
        self.commits: list[tuple[int, int, int]] | None = None  # the member's, when watched
        self.stops = 0
        self.stop_set_at = 0.0  # time.monotonic() when it set `stop_after`

    def process(self, batch: Batch) -> Processed:
        if self.failures:
            self.failures -= 1
            self.retried.append(list(self.commits or []))
            raise self.error("not now")
        self.read += [(r.partition, r.offset) for r in batch.records]
        self.tickets += 1
        if not self.hold:
            self.done = self.tickets
        if (
            self.stop_after is not None
            and self.enough is not None
            and len(self.read) >= self.enough
        ):
            self.stop_after.set()
            self.stop_set_at = time.monotonic()
        return Processed({"read": len(batch)}, Ticket(self, self.tickets))

    def complete(self) -> None:
        """Complete every ticket given so far, and the next ones at once."""
        self.hold, self.done = False, self.tickets

    def on_idle(self) -> None:
        pass

    def on_stop(self) -> None:
        self.stops += 1


class Ticket:
    """A batch's pending work: done once its strategy's `done` reaches `number`."""

    def __init__(self, strategy: Recording, number: int) -> None:
        self.strategy, self.number = strategy, number

    def done(self) -> bool:
        return self.strategy.done >= self.number


class Watched:
    """A consumer whose commits are kept, in the order they are asked for: (ticket order,
    partition, offset); with `lose`, every commit fails as an outage would make it."""

    def __init__(self, consumer: Consumer, commits: list[tuple[int, int, int]], lose: bool):
        self.consumer, self.commits, self.lose = consumer, commits, lose

    def _keep(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        n = len(self.commits)
        self.commits += [(n, tp.partition, o.offset) for tp, o in sorted(offsets.items())]

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int | None = None
    ) -> None:
        self._keep(offsets)
        if self.lose:
            raise KafkaError("commit lost (the test)")
        self.consumer.commit(offsets, timeout_ms=timeout_ms)

    def commit_async(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], callback: CommitCallback
    ) -> object:
        self._keep(offsets)
        if self.lose:
            callback(offsets, KafkaError("commit lost (the test)"))
            return None
        return self.consumer.commit_async(offsets, callback=callback)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)


class Backend:
    """A topic of PARTITIONS partitions, and the processors of one group on it."""

    name = ""
    topic = group = ""

    def produce(self, per_partition: Mapping[int, int]) -> None:
        raise NotImplementedError

    def connect(self, processor: Processor) -> Consumer:
        raise NotImplementedError

    def committed(self) -> dict[int, int]:
        """The group's committed offset of each partition that has one."""
        raise NotImplementedError

    def rebalance(self, stack: contextlib.ExitStack) -> Processor | None:
        """Make the group rebalance (returns the other member it started, if any)."""
        raise NotImplementedError

    def processor(
        self,
        strategy: Recording,
        max_records: int = 3,
        lose_commits: bool = False,
        hooks: Hooks | None = None,
        log: Log | None = None,
    ) -> Processor:
        processor = Processor(
            strategy,
            self.kafka,
            self.topic,
            self.group,
            max_records,
            hooks or Hooks(),
            (log or Log()).logger,
        )
        commits: list[tuple[int, int, int]] = []
        strategy.commits = commits
        processor.connect = lambda: Watched(self.connect(processor), commits, lose_commits)
        return processor

    kafka: Mapping[str, Any] = {}


class InMemory(Backend):
    name = "memory"

    def __init__(self) -> None:
        self.topic, self.group = "messages", "processor-group"
        self.broker = MemoryBroker({self.topic: PARTITIONS})
        self.consumers: list[MemoryConsumer] = []

    def produce(self, per_partition: Mapping[int, int]) -> None:
        for partition, n in per_partition.items():
            for i in range(n):
                self.broker.produce(self.topic, None, b"%d" % i, partition=partition)

    def connect(self, processor: Processor) -> Consumer:
        consumer = MemoryConsumer(
            self.broker, self.topic, self.group, processor.assigned, processor.revoked
        )
        self.consumers.append(consumer)
        return consumer

    def committed(self) -> dict[int, int]:
        return {tp.partition: o for (g, tp), o in self.broker.committed.items() if g == self.group}

    def rebalance(self, stack: contextlib.ExitStack) -> Processor | None:
        self.consumers[-1].rebalances = 1  # the next poll revokes every partition, then assigns
        return None


class OnKafka(Backend):
    name = "kafka"

    def __init__(self, kafka_config: dict[str, Any], topics: dict[str, str]) -> None:
        self.kafka, self.topic = kafka_config, topics["messages"]
        self.group = f"processor-{self.topic}"

    def produce(self, per_partition: Mapping[int, int]) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.kafka["bootstrap_servers"], enable_idempotence=False
        )
        for partition, n in per_partition.items():
            for i in range(n):
                producer.send(self.topic, value=b"%d" % i, partition=partition)
        producer.flush()
        producer.close()

    def connect(self, processor: Processor) -> Consumer:
        return processor.subscribe()

    def committed(self) -> dict[int, int]:
        consumer = KafkaConsumer(
            bootstrap_servers=self.kafka["bootstrap_servers"],
            group_id=self.group,
            enable_auto_commit=False,
        )
        try:
            found = {p: consumer.committed(TopicPartition(self.topic, p)) for p in range(4)}
        finally:
            consumer.close()
        return {p: o for p, o in found.items() if o is not None}

    def rebalance(self, stack: contextlib.ExitStack) -> Processor | None:
        other = self.processor(Recording())
        stack.enter_context(running(other))
        return other


@pytest.fixture(params=["memory", "kafka"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "memory":
        return InMemory()
    return OnKafka(request.getfixturevalue("kafka_config"), request.getfixturevalue("topics"))


@contextlib.contextmanager
def running(processor: Processor) -> Iterator[threading.Event]:
    """`processor` running in a thread until the block ends; its errors raised then."""
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        ran = pool.submit(processor.run, stop)
        try:
            yield stop
        finally:
            stop.set()
        ran.result(timeout=30)  # and its error, if it failed


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def asked(commits: list[tuple[int, int, int]] | None) -> dict[int, int]:
    """The last offset a member asked to commit for each partition."""
    return {partition: offset for _, partition, offset in commits or []}


def moved_back(commits: list[tuple[int, int, int]]) -> dict[int, list[int]]:
    """The partitions whose committed offset went down in `commits`, with their offsets."""
    by_partition: dict[int, list[int]] = {}
    for _, partition, offset in commits:
        by_partition.setdefault(partition, []).append(offset)
    return {p: offsets for p, offsets in by_partition.items() if offsets != sorted(offsets)}


@pytest.mark.parametrize("error", [Retry, PublishError])
def test_a_batch_whose_process_raises_retry_is_read_again_and_committed_after(
    backend: Backend, error: type[Exception]
) -> None:
    """Retry (the store, or no model yet), or PublishError (the broker did not take the
    batch's records)."""
    backend.produce({0: 10, 2: 10})
    strategy, hooks = Recording(failures=3, error=error), Hooks()
    with running(backend.processor(strategy, hooks=hooks)):
        wait_until(lambda: asked(strategy.commits) == {0: 10, 2: 10}, "the commits")
    # (kafka-python may confirm the last asynchronous commits only at the close's commit)
    assert backend.committed() == {0: 10, 2: 10}
    # every record processed once, in order: a retried batch is read again from its start
    for partition in (0, 2):
        assert [o for p, o in strategy.read if p == partition] == list(range(10))
    assert len(strategy.retried) == 3 and all(seen == [] for seen in strategy.retried)
    assert hooks.warnings.count("batch not completed, will read it again") == 3
    assert len(hooks.timings) == strategy.tickets  # a retried batch is not a processed one
    assert strategy.stops == 1 and not hooks.running and hooks.reachability[-1] is None


def test_offsets_wait_for_the_ticket_and_a_stop_before_it_completes_reads_the_batch_again(
    backend: Backend,
) -> None:
    backend.produce(dict.fromkeys(range(PARTITIONS), 5))
    everything = [(p, o) for p in range(PARTITIONS) for o in range(5)]
    first = Recording(hold=True)
    with running(backend.processor(first)):
        wait_until(lambda: sorted(first.read) == everything, "every record read")
        time.sleep(1.0)  # many turns of the loop: still nothing complete, nothing committed
        assert first.commits == []
    # stopped (as a crash would) before the tickets completed: nothing committed at the close
    assert first.commits == [] and backend.committed() == {}

    second = Recording(hold=True)
    with running(backend.processor(second)):
        wait_until(lambda: sorted(second.read) == everything, "every record read again")
        time.sleep(1.0)
        assert second.commits == [] and backend.committed() == {}
        second.complete()
        wait_until(
            lambda: asked(second.commits) == dict.fromkeys(range(PARTITIONS), 5), "the commits"
        )
    assert moved_back(second.commits or []) == {}
    assert backend.committed() == dict.fromkeys(range(PARTITIONS), 5)


def test_lost_commits_cost_duplicates_not_losses(backend: Backend) -> None:
    backend.produce({1: 8, 3: 8})
    everything = [(p, o) for p in (1, 3) for o in range(8)]
    first, log = Recording(), Log()
    with running(backend.processor(first, lose_commits=True, log=log)):
        wait_until(lambda: sorted(first.read) == everything, "every record read")
    assert first.commits and backend.committed() == {}  # asked for, and every one lost
    assert "last offsets not committed: their records will be read again" in log.events()
    # the next member reads everything again: each record processed once more, none skipped
    second = Recording()
    with running(backend.processor(second)):
        wait_until(lambda: asked(second.commits) == {1: 8, 3: 8}, "the commits")
    assert backend.committed() == {1: 8, 3: 8}
    assert sorted(first.read + second.read) == sorted(everything * 2)


def test_offsets_held_for_revoked_partitions_are_dropped_and_no_offset_moves_back(
    backend: Backend,
) -> None:
    """Every batch is read and held (its ticket incomplete) when a rebalance revokes the
    partitions and gives some back (the in-memory consumer reads those again from the committed
    offsets; kafka-python keeps its positions in them). Once the tickets complete, only what was
    read after the rebalance is committed: each partition's offset only goes forward, and none
    of a partition the member no longer holds."""
    backend.produce(dict.fromkeys(range(PARTITIONS), 5))
    everything = [(p, o) for p in range(PARTITIONS) for o in range(5)]
    held, log = Recording(hold=True), Log()
    member = backend.processor(held, log=log)
    with contextlib.ExitStack() as stack:
        stack.enter_context(running(member))
        wait_until(lambda: sorted(held.read) == everything, "every record read and held")
        before = len(held.read)
        other = backend.rebalance(stack)
        wait_until(lambda: "partitions revoked" in log.events(), "the revocation")

        def settled() -> bool:
            # the other member may join a generation after this one's first rejoin: the
            # partitions that are this member's are those of the generation it joined too
            events = log.events()
            last = {event: i for i, event in enumerate(events)}
            assigned, revoked = last.get("partitions assigned", -1), last.get("partitions revoked")
            return (other is None or other.joined) and assigned > (revoked or -1)

        wait_until(settled, "the partitions assigned again, in the generation of both members")
        mine = set(log.last("partitions assigned")["partitions"])
        backend.produce(dict.fromkeys(range(PARTITIONS), 2))  # records to read after it
        wait_until(
            lambda: {(p, 6) for p in mine} <= set(held.read[before:]), "its partitions read on"
        )
        held.complete()
        wait_until(lambda: asked(held.commits) == dict.fromkeys(mine, 7), "its commits")
        assert other is None or other.joined
    assert held.commits and moved_back(held.commits) == {}
    assert {p for _, p, _ in held.commits} <= mine
    # what was committed was read after the rebalance: the offsets held before it were dropped
    assert {(p, o) for _, p, o in held.commits} <= {(p, o + 1) for p, o in held.read[before:]}


def test_quick_batches_are_committed_together_once_per_commit_interval(backend: Backend) -> None:
    """A commit is a request to the group coordinator: batches a few milliseconds apart do not
    each send one (kafka-python fails those beyond its in-flight limit at once), and the newest
    offsets still go out."""
    backend.produce(dict.fromkeys(range(PARTITIONS), 30))  # 40 batches of 3
    strategy = Recording()
    started = time.monotonic()
    with running(backend.processor(strategy, max_records=3)):
        wait_until(lambda: len(strategy.read) == 30 * PARTITIONS, "every record read")
        reading = time.monotonic() - started
        wait_until(
            lambda: asked(strategy.commits) == dict.fromkeys(range(PARTITIONS), 30), "the commits"
        )
        requests = {n for n, _, _ in strategy.commits or []}
    # the first batch's commit goes at once, then one per interval
    assert len(requests) <= 2 + reading / COMMIT_SECONDS
    assert backend.committed() == dict.fromkeys(range(PARTITIONS), 30)


def test_a_rebalance_right_after_quick_batches_commits_them_before_the_partitions_go(
    backend: Backend,
) -> None:
    """Offsets waiting for the next commit interval are sent when their partitions are revoked:
    whoever holds the partitions next (here this member again, on the in-memory consumer) does
    not read the completed batches again."""
    backend.produce({0: 6, 1: 6})
    everything = [(p, o) for p in (0, 1) for o in range(6)]
    strategy, log = Recording(), Log()
    with contextlib.ExitStack() as stack:
        stack.enter_context(running(backend.processor(strategy, max_records=3, log=log)))
        wait_until(lambda: sorted(strategy.read) == everything, "every record read")
        backend.rebalance(stack)
        wait_until(lambda: "partitions revoked" in log.events(), "the revocation")
        wait_until(lambda: backend.committed() == {0: 6, 1: 6}, "the commits")
    assert sorted(strategy.read) == everything  # none read twice


def test_a_stop_finishes_the_batch_in_flight_and_commits_it_within_bounds(
    backend: Backend,
) -> None:
    backend.produce({0: 9})
    stop = threading.Event()
    strategy = Recording(enough=1, stop_after=stop)  # the stop comes while a batch is in flight
    backend.processor(strategy).run(stop)
    took = time.monotonic() - strategy.stop_set_at
    assert strategy.read == [(0, 0), (0, 1), (0, 2)]  # the batch, and no poll after the stop
    assert backend.committed() == {0: 3} and strategy.stops == 1
    # the last commit and the close share CLOSE_SECONDS (the rest is the machine's load)
    assert took < CLOSE_SECONDS + 1.5


def test_the_join_the_lag_and_a_quiet_close(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(processor_module, "LAG_SECONDS", 0.0)  # after every poll
    backend.produce({1: 100})
    stop, hooks, log = threading.Event(), Hooks(), Log()
    strategy = Recording(enough=60, stop_after=stop)
    caplog.set_level(logging.WARNING, logger="kafka")
    processor = backend.processor(strategy, max_records=25, hooks=hooks, log=log)
    processor.run(stop)
    events = log.events()
    assert events[:2] == ["joining group", "group joined"] and events[-1] == "stopped"
    joined = log.last("group joined")
    assert joined["partitions"] == [0, 1, 2, 3] and joined["group"] == backend.group
    assert log.last("stopped")["batches"] == strategy.tickets and processor.joined
    # the records' partition lags by what was not read; the empty ones (those fetched yet) by 0
    read = len(strategy.read)
    assert 60 <= read < 100
    assert sorted(hooks.lags.values())[-1] == sum(hooks.lags.values()) == 100 - read
    assert hooks.lags[TopicPartition(backend.topic, 1)] == 100 - read
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert [line for line in log.lines if line[0] != "info"] == [] and hooks.warnings == []


class Slow(Recording):
    """A strategy that takes `seconds_per_record` for each record of a batch."""

    def __init__(self, seconds_per_record: float) -> None:
        super().__init__()
        self.seconds_per_record = seconds_per_record
        self.sizes: list[int] = []

    def process(self, batch: Batch) -> Processed:
        self.sizes.append(len(batch))
        time.sleep(self.seconds_per_record * len(batch))
        return super().process(batch)


def test_a_batch_that_takes_too_long_makes_the_next_polls_ask_for_fewer_records() -> None:
    # past max_poll_interval_ms the group would drop the member and its batch be read again
    backend = InMemory()
    backend.kafka = {"max_poll_interval_ms": 800}  # a batch should take at most 0.2 s
    backend.produce(dict.fromkeys(range(PARTITIONS), 10))
    strategy, log = Slow(seconds_per_record=0.05), Log()
    with running(backend.processor(strategy, max_records=20, log=log)):
        wait_until(lambda: len(strategy.read) == 4 * 10, "every record read")
    slow = next(i for i, n in enumerate(strategy.sizes) if n * 0.05 > 0.2)
    assert strategy.sizes[slow + 1 :] and max(strategy.sizes[slow + 1 :]) <= 4, strategy.sizes
    assert log.last("smaller batches")["next_poll_records"] <= 4
    assert sorted(strategy.read) == [(p, o) for p in range(PARTITIONS) for o in range(10)]
