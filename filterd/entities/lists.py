"""Allow, block and review lists per entity, beside the model (pure: no I/O).

An entry names an entity by key and value, as the entity memory does (`customer` = "c596", an
attribute, dotted if nested, or the field `sender` or `tenant`), with an outcome and, if it has
one, an expiry ("snooze this card for 7 days": allow until then):

    block    the message is decided the target class, whatever its score
    allow    the message is decided not the target class, whatever its score
    review   the model decides it, and it is queued for an analyst

When several entries apply to one message (its card is snoozed, its terminal blocked), the
most cautious wins: block, then review, then allow. An entry past its expiry applies no more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, get_args

from filterd.entities.memory import entity_value

ListOutcome = Literal["block", "review", "allow"]
LIST_OUTCOMES: tuple[ListOutcome, ...] = get_args(ListOutcome)  # most cautious first


def outcome_of(text: str) -> ListOutcome:
    """The outcome `text` names (ValueError for another text).

    >>> outcome_of("block")
    'block'
    """
    for outcome in LIST_OUTCOMES:
        if text == outcome:
            return outcome
    raise ValueError(f"no outcome {text!r}: one of {', '.join(LIST_OUTCOMES)}")


@dataclass(frozen=True)
class ListEntry:
    """An entity on a list: `outcome` for its messages until `expires_at` (None: until removed)."""

    key: str
    value: str
    outcome: ListOutcome
    expires_at: datetime | None = None
    reason: str | None = None
    created_by: str | None = None

    decided_by: ClassVar[Literal["list"]] = "list"  # a decision's `decided_by` when it decides

    def active(self, now: datetime) -> bool:
        return self.expires_at is None or now < self.expires_at

    def describe(self) -> str:
        """The entry as a decision's evidence says it.

        >>> ListEntry("customer", "c596", "allow", datetime(2026, 12, 5, tzinfo=UTC),
        ...           "travelling").describe()
        'allow list: customer c596 until 2026-12-05 00:00Z (travelling)'
        """
        until = (
            f" until {self.expires_at.astimezone(UTC):%Y-%m-%d %H:%MZ}" if self.expires_at else ""
        )
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.outcome} list: {self.key} {self.value}{until}{why}"


class EntityLists:
    """The entries in force, by key and value; `match` finds the one that decides a message."""

    def __init__(self, entries: Iterable[ListEntry] = ()) -> None:
        self._by_key: dict[str, dict[str, list[ListEntry]]] = {}
        for entry in entries:
            self._by_key.setdefault(entry.key, {}).setdefault(entry.value, []).append(entry)

    def __len__(self) -> int:
        return sum(len(v) for values in self._by_key.values() for v in values.values())

    def match(self, message: Mapping[str, Any], now: datetime) -> ListEntry | None:
        """The most cautious entry in force for any of the message's entities, else None.

        >>> lists = EntityLists([ListEntry("customer", "c1", "allow"),
        ...                      ListEntry("terminal", "t9", "block")])
        >>> now = datetime(2026, 12, 1, tzinfo=UTC)
        >>> lists.match({"attributes": {"customer": "c1", "terminal": "t9"}}, now).outcome
        'block'
        >>> lists.match({"attributes": {"customer": "c1", "terminal": "t2"}}, now).outcome
        'allow'
        >>> lists.match({"attributes": {"customer": "c2"}}, now) is None
        True
        """
        found = [
            entry
            for key, values in self._by_key.items()
            for entry in values.get(entity_value(message, key) or "", ())
            if entry.active(now)
        ]
        return min(found, key=lambda e: LIST_OUTCOMES.index(e.outcome), default=None)
