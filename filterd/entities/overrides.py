"""What decides a message before the model does: a list entry for one of its entities, else a
rule over its attributes and entity features (pure: no I/O).

An analyst's entry names one entity ("snooze this card for 7 days", "block this terminal") and
is the more specific: it comes first, whatever the rules say. Among entries, and among rules,
the most cautious wins (block, then review, then allow): `EntityLists.match`, `RuleSet.match`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from filterd.entities.lists import EntityLists, ListEntry
from filterd.entities.memory import EntityFeatures, EntitySpec
from filterd.entities.rules import Rule, RuleSet, message_facts

Override = ListEntry | Rule


class Overrides:
    """The list entries and the rules in force, and the entity spec the rules' features are
    named by."""

    def __init__(
        self,
        lists: EntityLists | None = None,
        rules: RuleSet | None = None,
        spec: EntitySpec | None = None,
    ) -> None:
        self.lists = lists or EntityLists()
        self.rules = rules or RuleSet()
        self.spec = spec or EntitySpec()

    def __bool__(self) -> bool:
        return bool(len(self.lists) or len(self.rules))

    def match(
        self, message: Mapping[str, Any], features: Iterable[EntityFeatures], now: datetime
    ) -> Override | None:
        """The entry, else the rule, that decides `message` (its fields as
        `filterd.entities.memory.field_value` reads them; `features`: what the entity memory
        knew of its entities), or None.

        >>> from datetime import UTC
        >>> overrides = Overrides(EntityLists([ListEntry("customer", "c1", "allow")]),
        ...                       RuleSet([Rule("big", "amount > 1000", "block")]))
        >>> now = datetime(2026, 12, 1, tzinfo=UTC)
        >>> overrides.match({"attributes": {"customer": "c1", "amount": 5000}}, [], now)
        ListEntry(key='customer', value='c1', outcome='allow', expires_at=None, reason=None, \
created_by=None)
        >>> overrides.match({"attributes": {"customer": "c2", "amount": 5000}}, [], now).name
        'big'
        """
        entry = self.lists.match(message, now)
        if entry is not None or not len(self.rules):
            return entry
        return self.rules.match(message_facts(message, features, self.spec, self.rules.names))
