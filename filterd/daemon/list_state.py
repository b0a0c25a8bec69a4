"""The allow, block and review lists the scorer decides with (`filterd.entities.lists`), read
from the store (`filterd.store.lists`) every RELOAD_SECONDS, so that an entity an analyst puts
on a list (`filterd lists add`) is decided by it within seconds on every scorer. A store that
fails leaves the lists as last read (logged; tried again at the next reload)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from structlog.typing import FilteringBoundLogger

from filterd.daemon.entity_state import entity_fields
from filterd.entities.lists import EntityLists, ListEntry
from filterd.observe.logs import Repeats
from filterd.service.records import Message
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore

RELOAD_SECONDS = 5.0


class ListState:
    def __init__(
        self,
        model: ModelStore,
        log: FilteringBoundLogger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.log, self.clock = model, log, clock
        self.lists = EntityLists()
        self.repeats = Repeats()
        self._next = -float("inf")

    def refresh(self, force: bool = False) -> None:
        """Read the lists again when due; never raises for store errors."""
        now = self.clock()
        if not force and now < self._next:
            return
        self._next = now + RELOAD_SECONDS
        try:
            self.lists = EntityLists(self.model.list_entries())
        except StoreError as error:
            self.repeats.warning(self.log, "lists not reloaded", error=str(error))
        self.repeats.flush()

    def listed(self, messages: Sequence[Message]) -> list[ListEntry | None]:
        """The entry in force for each message (None: none)."""
        lists = self.lists  # read once: a reload may replace it meanwhile
        if not len(lists):
            return [None] * len(messages)
        now = datetime.now(UTC)
        return [lists.match(entity_fields(m), now) for m in messages]
