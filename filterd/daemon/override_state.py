"""The allow, block and review lists and the rules the scorer decides with before the model
(`filterd.entities.overrides`), read from the store (`filterd.store.lists`,
`filterd.store.rules`) every RELOAD_SECONDS, so that an entity an analyst puts on a list
(`filterd lists add`) or a rule they add (`filterd rules add`) decides within seconds on every
scorer. A store that fails leaves them as last read (logged; tried again at the next reload);
so does a stored rule this filterd cannot parse (logged, and left out)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from structlog.typing import FilteringBoundLogger

from filterd.daemon.entity_state import entity_fields
from filterd.entities.lists import EntityLists
from filterd.entities.memory import EntitySpec
from filterd.entities.overrides import Override, Overrides
from filterd.entities.rules import RuleSet
from filterd.observe.logs import Repeats
from filterd.service.decide import EntityEvidence
from filterd.service.records import Message
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore

RELOAD_SECONDS = 5.0


class OverrideState:
    def __init__(
        self,
        model: ModelStore,
        spec: EntitySpec,
        log: FilteringBoundLogger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.spec, self.log, self.clock = model, spec, log, clock
        self.overrides = Overrides(spec=spec)
        self.repeats = Repeats()
        self._next = -float("inf")

    def refresh(self, force: bool = False) -> None:
        """Read the lists and the rules again when due; never raises for store errors."""
        now = self.clock()
        if not force and now < self._next:
            return
        self._next = now + RELOAD_SECONDS
        try:
            lists = EntityLists(self.model.list_entries())
            rules = RuleSet(self.model.rules(on_error=self._unparsed))
            self.overrides = Overrides(lists, rules, self.spec)
        except StoreError as error:
            self.repeats.warning(self.log, "lists and rules not reloaded", error=str(error))
        self.repeats.flush()

    def _unparsed(self, name: str, error: str) -> None:
        self.repeats.warning(self.log, "rule left out", rule=name, error=error)

    def overridden(
        self, messages: Sequence[Message], evidence: Sequence[EntityEvidence] | None
    ) -> list[Override | None]:
        """The list entry or rule that decides each message, if any."""
        overrides = self.overrides  # read once: a reload may replace it meanwhile
        if not overrides:
            return [None] * len(messages)
        now = datetime.now(UTC)
        features = [()] * len(messages) if evidence is None else [e.features for e in evidence]
        return [overrides.match(entity_fields(m), f, now) for m, f in zip(messages, features)]
