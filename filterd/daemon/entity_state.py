"""The scorer's entity memory (`filterd.entities`), in step with every other scorer's through the
store (`filterd.store.entities`).

For each batch the scorer decides, `evidence` gives each message its entities' tokens and words
from the memory, then remembers the message (so that a later message of the batch, and of the
next, counts it). What it remembered goes to the store with the batch's decided messages (the
scorer's `Recorder` writes `take()`): the entity events, for the other scorers and the next
start, and each message's `EntityRecord`, for its learner: a label learns the evidence the
message was decided on, however late it comes. A message the memory fails on (a bug) is
decided on its own tokens, its evidence saying so, and the failure is logged: no message can
stop the scorer.

Every SYNC_SECONDS `refresh` reads what the other scorers wrote since (by `written_at`, with an
overlap; of each scorer only the rows after the newest read, and none of this scorer's own:
`marks`, whose `writer` names the events this scorer's recorder writes; a row applied already,
such as a message another scorer decided again, is skipped by (message, entity)) and the target
labels the learners wrote, so that a velocity counts the messages of every scorer within
seconds. A scorer starting (`load`) reads the events of the longest window and the labels of
the label window back from the newest event. A store that fails leaves the memory as it is,
decisions go on, and the next refresh tries again (what it missed is read then: the read starts
where the last one that succeeded did).

Messages are placed in time by their `ts`, else by this machine's clock when decided; a `ts`
more than MAX_AHEAD_SECONDS ahead of that clock counts as the clock. The HTTP API's checks,
which are not part of the stream, read the memory without being remembered (`peek`); the
memory's lock keeps them and the scorer's thread apart.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from structlog.typing import FilteringBoundLogger

from filterd.entities.memory import EntityEvent, EntityMemory, EntitySpec, entity_words
from filterd.entities.record import EntityRecord
from filterd.observe.logs import Repeats
from filterd.service.decide import EntityEvidence
from filterd.service.records import Message
from filterd.store.decided import id_hash
from filterd.store.entities import EntityLabelled, ReadMarks
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore

SYNC_SECONDS = 1.0
# how far ahead of this machine's clock a message's `ts` may place it: the memory's clock never
# turns back, so one message dated years ahead would empty every window for good
MAX_AHEAD_SECONDS = 300.0
MAX_SEEN = 1_000_000  # (message, entity) pairs remembered as applied, to skip rows read again
# the evidence of a message the memory failed on (a bug: the log says which)
MEMORY_FAILED = "entity memory unavailable for this message (see the scorer's log)"


class _Seen:
    """A bounded set of what was applied, in two generations: when the newer holds limit / 2
    items it becomes the older, and the older is forgotten. So at most `limit` items are held
    and the newest limit / 2 always.

    An item is kept as its hash (about 75 bytes an item in a set of ints, against some 155 for
    a tuple in an ordered dict): two items of one hash, one chance in 2**64 a pair, make the
    second look applied, and its event is skipped — a velocity one short, nothing else.

    >>> seen = _Seen(limit=4)
    >>> [seen.add(x) for x in ("a", "b", "a")]
    [True, True, False]
    >>> [seen.add(x) for x in ("c", "d", "e")]  # "a" and "b" are the generation forgotten
    [True, True, True]
    >>> seen.add("d"), seen.add("a")
    (False, True)
    """

    def __init__(self, limit: int = MAX_SEEN) -> None:
        self.half = max(1, limit // 2)
        self._newer: set[int] = set()
        self._older: set[int] = set()

    def add(self, item: Hashable) -> bool:
        """Remember `item`; False if it was remembered already."""
        key = hash(item)
        if key in self._newer or key in self._older:
            return False
        self._newer.add(key)
        if len(self._newer) >= self.half:
            self._older, self._newer = self._newer, set()
        return True


class EntityState:
    def __init__(
        self,
        model: ModelStore,
        spec: EntitySpec,
        log: FilteringBoundLogger,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.model, self.spec, self.log, self.clock = model, spec, log, clock
        self.memory = EntityMemory(spec)
        self.repeats = Repeats()
        self._events_seen, self._labels_seen = _Seen(), _Seen()
        self.marks = ReadMarks(writer=secrets.randbits(63))
        self._events_read: datetime | None = None
        self._labels_read: datetime | None = None
        self._next_sync = -float("inf")
        self._records: dict[str, str] = {}
        self._events: list[tuple[str, EntityEvent]] = []
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._events_read is not None

    def load(self) -> None:
        """Read the longest window of events and the label window of labels back from the
        newest event (StoreError if the store fails)."""
        started = datetime.now(UTC)
        newest = self.model.latest_entity_event()
        if newest is not None:
            self._apply(self.model.entity_events_since(newest - self.spec.windows[-1]))
            self._label(self.model.entity_labels_since(newest - self.spec.label_window))
        self._events_read = self._labels_read = started
        self.log.info("entity memory loaded", entities=len(self.memory))

    def refresh(self, force: bool = False) -> None:
        """Load, or read what others wrote since the last read, when due; never raises for
        store errors (they are logged, and tried again at the next refresh)."""
        now = time.monotonic()
        if not force and now < self._next_sync:
            return
        self._next_sync = now + SYNC_SECONDS
        try:
            if self._events_read is None or self._labels_read is None:
                self.load()
                return
            started = datetime.now(UTC)
            self._apply(self.model.entity_events_written_since(self._events_read, self.marks))
            self._events_read = started
            self._label(self.model.entity_labels_written_since(self._labels_read))
            self._labels_read = started
        except StoreError as error:
            self.repeats.warning(self.log, "entity memory not synced", error=str(error))
        self.repeats.flush()

    def evidence(self, messages: Sequence[Message]) -> list[EntityEvidence]:
        """Each message's entity tokens and words, from the messages before it; then it is
        remembered (and kept for `take`)."""
        out = []
        with self._lock:
            for message in messages:
                try:
                    out.append(self._remember(message))
                except Exception as error:  # noqa: BLE001 - a bug must not stop the stream
                    # decided on its own tokens, and the decision says why it has no more
                    self.repeats.warning(
                        self.log,
                        "entity memory failed",
                        {"error": type(error).__name__},
                        message_id=message.id,
                        detail=str(error)[:200],
                    )
                    out.append(EntityEvidence([], [MEMORY_FAILED]))
        return out

    def _remember(self, message: Message) -> EntityEvidence:
        fields, ts = entity_fields(message), self._time(message)
        features, events = self.memory.remember(fields, ts)
        key = id_hash(message.id)
        for event in events:
            self._events_seen.add((key, event.key))
            self._events.append((message.id, event))
        record = EntityRecord(self.memory.clock, tuple(features))
        self._records[message.id] = record.dumps()
        return self._said(record)

    def peek(self, messages: Sequence[Message]) -> list[EntityEvidence]:
        """Each message's entity tokens and words as of now, none of them remembered."""
        with self._lock:
            return [
                self._said(
                    EntityRecord(self.memory.clock, tuple(self.memory.peek(entity_fields(m))))
                )
                for m in messages
            ]

    def _said(self, record: EntityRecord) -> EntityEvidence:
        words = [w for f in record.features for w in entity_words(f, self.spec)]
        return EntityEvidence(record.tokens(self.spec), words, record.features)

    def _time(self, message: Message) -> float:
        now = self.clock()
        if message.ts is None:
            return now
        return min(message.ts.timestamp(), now + MAX_AHEAD_SECONDS)

    def take(self) -> tuple[dict[str, str], list[tuple[str, EntityEvent]]]:
        """The entity records (by message id) and events of the messages since the last take."""
        records, events = self._records, self._events
        self._records, self._events = {}, []
        return records, events

    def _apply(self, rows: Iterable[tuple[int, EntityEvent]]) -> None:
        with self._lock:
            self.memory.apply(e for h, e in rows if self._events_seen.add((h, e.key)))

    def _label(self, rows: Iterable[EntityLabelled]) -> None:
        with self._lock:
            self.memory.label_entities(
                (x.key, x.value, x.at) for x in rows if self._labels_seen.add((x.id_hash, x.key))
            )


def entity_fields(message: Message) -> dict[str, Any]:
    """The fields of a message that may name an entity (`filterd.entities.memory.FIELDS`, and
    its attributes), as the entity memory and the lists read them."""
    return {"attributes": message.attributes, "sender": message.sender, "tenant": message.tenant}
