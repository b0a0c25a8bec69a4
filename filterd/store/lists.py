"""The allow, block and review lists per entity (`filterd.entities.lists`): the entries in force
(`list_entries`, one per entity) and every change to them (`list_changes`, append-only: who put
or took an entity on a list, when, and why).

`put` adds an entry, or replaces the entity's entry, and records the change in the same
transaction; `remove` deletes it and records that. Expired entries stay until removed (they
no longer apply: `EntityLists.match`) and are shown as expired.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, insert, select

from filterd.entities.lists import ListEntry, ListOutcome, outcome_of
from filterd.store.bulk import insert_columns
from filterd.store.schema import ListChange as ChangeRow
from filterd.store.schema import ListEntry as EntryRow
from filterd.store.sql import as_utc


@dataclass(frozen=True)
class ListChange:
    """One change to the lists: `added` (or replaced) or `removed`."""

    action: str
    key: str
    value: str
    outcome: ListOutcome | None
    expires_at: datetime | None
    reason: str | None
    analyst: str | None
    changed_at: datetime


def put(conn: Connection, model_id: int, entry: ListEntry, now: datetime) -> None:
    """Put `entry` on its list (replacing the entity's entry, if any), recorded as `added`."""
    columns: dict[str, list[object]] = {
        "model_id": [model_id],
        "key": [entry.key],
        "value": [entry.value],
        "outcome": [entry.outcome],
        "expires_at": [as_utc(entry.expires_at)],
        "reason": [entry.reason],
        "created_by": [entry.created_by],
        "created_at": [as_utc(now)],
    }
    insert_columns(
        conn,
        EntryRow.__table__,
        columns,
        conflict=("model_id", "key", "value"),
        update=("outcome", "expires_at", "reason", "created_by", "created_at"),
    )
    _record(conn, model_id, "added", entry, entry.created_by, now)


def remove(
    conn: Connection, model_id: int, key: str, value: str, analyst: str | None, now: datetime
) -> ListEntry | None:
    """Take the entity off its list, recorded as `removed`; the entry removed, None if none."""
    (found,) = entries(conn, model_id, key, value) or (None,)
    if found is None:
        return None
    conn.execute(
        delete(EntryRow).where(
            EntryRow.model_id == model_id, EntryRow.key == key, EntryRow.value == value
        )
    )
    _record(conn, model_id, "removed", found, analyst, now)
    return found


def entries(
    conn: Connection, model_id: int, key: str | None = None, value: str | None = None
) -> list[ListEntry]:
    """The model's entries (of `key`, and `value`, if given), by key and value."""
    query = select(
        EntryRow.key,
        EntryRow.value,
        EntryRow.outcome,
        EntryRow.expires_at,
        EntryRow.reason,
        EntryRow.created_by,
    ).where(EntryRow.model_id == model_id)
    if key is not None:
        query = query.where(EntryRow.key == key)
    if value is not None:
        query = query.where(EntryRow.value == value)
    rows = conn.execute(query.order_by(EntryRow.key, EntryRow.value))
    return [
        ListEntry(k, v, outcome_of(outcome), as_utc(expires), reason, by)
        for k, v, outcome, expires, reason, by in rows
    ]


def changes(engine: Engine, model_id: int, limit: int | None = 100) -> list[ListChange]:
    """The changes to the model's lists, newest first, at most `limit` (None: all)."""
    query = (
        select(
            ChangeRow.action,
            ChangeRow.key,
            ChangeRow.value,
            ChangeRow.outcome,
            ChangeRow.expires_at,
            ChangeRow.reason,
            ChangeRow.analyst,
            ChangeRow.changed_at,
        )
        .where(ChangeRow.model_id == model_id)
        .order_by(ChangeRow.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return [
            ListChange(
                action,
                k,
                v,
                None if outcome is None else outcome_of(outcome),
                as_utc(expires),
                reason,
                analyst,
                as_utc(at),
            )
            for action, k, v, outcome, expires, reason, analyst, at in conn.execute(query)
        ]


def _record(
    conn: Connection,
    model_id: int,
    action: str,
    entry: ListEntry,
    analyst: str | None,
    now: datetime,
) -> None:
    conn.execute(
        insert(ChangeRow).values(
            model_id=model_id,
            action=action,
            key=entry.key,
            value=entry.value,
            outcome=entry.outcome,
            expires_at=as_utc(entry.expires_at),
            reason=entry.reason,
            analyst=analyst,
            changed_at=as_utc(now),
        )
    )
