"""What the scorer keeps of its decisions in the store, written beside it rather than in its way.

For each decided message, where it was read (`filterd.store.decided`: any learner can read it back
for feedback by id) and, with an entity memory, what it knew of the message's entities and the
events it remembered (`filterd.store.entities`); for each decision queued for review, the review
item (`filterd.store.review`). A `Recorder` takes them from the scorer (`put`, which never waits on
the store) and writes them from a thread of its own, everything pending in one transaction at most
every GATHER_SECONDS (fewer, bigger transactions cost the store less a row), so that
a store that is slow or locked (a learner's transaction holding SQLite's write lock, a PostgreSQL
round trip) never delays a decision. The scorer's batch waits on what `put` returns (`Written`, a
`filterd.kafka.processor.Pending`): its offsets are committed once its rows are written, so a crash
loses none: the batch is read and decided again. A label that arrives before its message's row is
written is parked by the learner and applied at its next retry.

While the store is unavailable, what is pending waits in memory, at most MAX_PENDING_ROWS
decided messages and MAX_PENDING_ITEMS review items (the oldest are dropped first, with a
warning), and is written once the store is back; readiness says `decisions store` meanwhile.
At a stop, what is pending is written if the store takes it within `stop` seconds. Every
TRIM_SECONDS it also trims the review queue to `review.max_items`.

The entity events name their scorer (`writer`), and each write is at a time after the last one's,
whatever the wall clock does: another scorer reads each writer's rows after the newest it read
(`filterd.store.entities.ReadMarks`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from structlog.typing import FilteringBoundLogger

from filterd.kafka.processor import Backoff
from filterd.observe.health import Health
from filterd.observe.logs import Repeats
from filterd.observe.metrics import Metrics
from filterd.service.review import ReviewItem
from filterd.store.entities import DecidedEvent
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore

Decided = tuple[str, int, int]  # (message id, partition, offset)

WRITE_ROWS = 50_000  # decided messages per statement
MAX_PENDING_ROWS = 1_000_000  # ≈150 bytes of memory each
MAX_PENDING_ITEMS = 20_000  # review items, each with its message's tokens
MAX_PENDING_EVENTS = 4 * MAX_PENDING_ROWS  # entity events, one per entity of a message
TRIM_SECONDS = 60.0
GATHER_SECONDS = 0.25
READINESS = "decisions store"


@dataclass(frozen=True)
class Written:
    """A batch's rows handed to `recorder` (its `ticket`): done once they are written."""

    recorder: Recorder
    ticket: int

    def done(self) -> bool:
        return self.recorder.recorded >= self.ticket


class Recorder:
    def __init__(
        self,
        model: ModelStore,
        max_items: int,
        health: Health,
        metrics: Metrics,
        log: FilteringBoundLogger,
        writer: int | None = None,
    ) -> None:
        self.model, self.max_items, self.writer = model, max_items, writer
        self._written_at = datetime.min.replace(tzinfo=UTC)
        self.health, self.metrics, self.log = health, metrics, log
        self.repeats = Repeats()
        self._rows: list[Decided] = []
        self._entity_records: dict[str, str] = {}
        self._tokens: dict[str, Sequence[str]] = {}
        self._entity_events: list[DecidedEvent] = []
        self.tickets = 0  # batches taken (`put`)
        self.recorded = 0  # the last ticket whose batch is written
        self._items: list[ReviewItem] = []
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._trim_due = time.monotonic() + TRIM_SECONDS

    def put(
        self,
        rows: Sequence[Decided],
        items: Sequence[ReviewItem],
        entity_records: Mapping[str, str] | None = None,
        entity_events: Sequence[DecidedEvent] = (),
        tokens: Mapping[str, Sequence[str]] | None = None,
    ) -> Written:
        """Take a batch's decided messages and review items (and what the entity memory
        remembered of them: `filterd.daemon.entity_state`, and the tokens kept of the small
        ones), to be written soon; returns the batch's ticket, done once `recorded` reaches it
        (they are written)."""
        with self._wake:
            self._rows += rows
            self._items += items
            self._entity_records.update(entity_records or {})
            self._tokens.update(tokens or {})
            self._entity_events += entity_events
            self._bound()
            self.tickets += 1
            self._wake.notify()
            return Written(self, self.tickets)

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="filterd-recorder", daemon=True)
            self._thread.start()

    def stop(self, seconds: float) -> None:
        """Stop the thread; write what is pending if the store takes it within `seconds`."""
        self._stop.set()
        with self._wake:
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(seconds)
            self._thread = None
        else:
            self.write()
        with self._wake:
            left = len(self._rows)
        if left:
            self.log.warning(
                "decided messages not recorded at the stop: feedback by id for them waits "
                "until it expires",
                messages=left,
            )

    def write(self) -> bool:
        """Write what is pending (False: the store failed, and it waits for the next try)."""
        with self._wake:
            rows, items, ticket = self._rows, self._items, self.tickets
            records, events, tokens = self._entity_records, self._entity_events, self._tokens
            self._rows, self._items, self._entity_records, self._entity_events = [], [], {}, []
            self._tokens = {}
        if not rows and not items and not events:
            self.recorded = ticket
            return True
        try:
            with self.model.transaction() as writing:
                now = self._written_at = max(
                    datetime.now(UTC), self._written_at + timedelta(microseconds=1)
                )
                for start in range(0, len(rows), WRITE_ROWS):
                    writing.record_decided(rows[start : start + WRITE_ROWS], now, records, tokens)
                for start in range(0, len(events), WRITE_ROWS):
                    writing.record_entity_events(
                        events[start : start + WRITE_ROWS], now, self.writer
                    )
                writing.queue_review(items, now)
        except StoreError as error:
            with self._wake:  # back in front, in order
                self._rows, self._items = rows + self._rows, items + self._items
                self._entity_records = records | self._entity_records
                self._tokens = tokens | self._tokens
                self._entity_events = events + self._entity_events
                self._bound()
            self._failing = True
            self.health.set_ready(READINESS, False, str(error))
            self.metrics.store_errors.labels(role="scorer").inc()
            self.repeats.warning(
                self.log,
                "decisions not recorded in the store: feedback by id for them waits until they are",
                error=str(error),
            )
            return False
        self.recorded = ticket
        if self._failing:
            self._failing = False
            self.log.info("decisions recorded again")
        self.health.set_ready(READINESS, True)
        return True

    def _run(self) -> None:
        backoff = Backoff()
        written = 0.0
        while True:
            with self._wake:
                if not self._rows and not self._items and not self._stop.is_set():
                    self._wake.wait(1.0)
            # gather the batches of a short while into one transaction
            self._stop.wait(written + GATHER_SECONDS - time.monotonic())
            written = time.monotonic()
            if self.write():
                backoff.reset()
            elif self._stop.wait(backoff.next()):
                return
            with self._wake:
                drained = not self._rows and not self._items
            if self._stop.is_set() and drained:
                return
            self._trim()

    def _trim(self) -> None:
        if time.monotonic() < self._trim_due:
            return
        self._trim_due = time.monotonic() + TRIM_SECONDS
        try:
            self.model.trim_review(self.max_items)
        except StoreError as error:
            self.repeats.warning(self.log, "review queue not trimmed", error=str(error))

    def _bound(self) -> None:
        """Drop the oldest pending rows and items beyond the bounds (the lock is held)."""
        extra_rows = len(self._rows) - MAX_PENDING_ROWS
        extra_items = len(self._items) - MAX_PENDING_ITEMS
        if extra_rows > 0:
            for message_id, _, _ in self._rows[:extra_rows]:
                self._entity_records.pop(message_id, None)
                self._tokens.pop(message_id, None)
            del self._rows[:extra_rows]
        extra_events = len(self._entity_events) - MAX_PENDING_EVENTS
        if extra_events > 0:
            del self._entity_events[:extra_events]
        if extra_items > 0:
            del self._items[:extra_items]
        if extra_rows > 0 or extra_items > 0:
            self.repeats.warning(
                self.log,
                "the store is unavailable for too long: decided messages dropped, "
                "feedback by id for them will not resolve",
                messages=max(0, extra_rows),
                review_items=max(0, extra_items),
            )
