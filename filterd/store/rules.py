"""The declarative rules beside the model (`filterd.entities.rules`): the rules in force
(`rules`, one per name) and every change to them (`rule_changes`, append-only: who added,
replaced or removed which rule, when, with what condition and why).

`put` adds a rule, or replaces the one of its name, and records the change in the same
transaction; `remove` deletes it and records that. A rule is stored as the analyst wrote it and
parsed again when read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, insert, select

from filterd.entities.lists import ListOutcome, outcome_of
from filterd.entities.rules import Rule
from filterd.store.bulk import insert_columns
from filterd.store.schema import Rule as RuleRow
from filterd.store.schema import RuleChange as ChangeRow
from filterd.store.sql import as_utc


@dataclass(frozen=True)
class RuleChange:
    """One change to the rules: `added` (or replaced) or `removed`."""

    action: str
    name: str
    when: str
    outcome: ListOutcome
    reason: str | None
    analyst: str | None
    changed_at: datetime


def put(conn: Connection, model_id: int, rule: Rule, now: datetime) -> None:
    """Add `rule` (replacing the rule of its name, if any), recorded as `added`."""
    columns: dict[str, list[object]] = {
        "model_id": [model_id],
        "name": [rule.name],
        "expression": [rule.when],
        "outcome": [rule.outcome],
        "reason": [rule.reason],
        "created_by": [rule.created_by],
        "created_at": [as_utc(now)],
    }
    insert_columns(
        conn,
        RuleRow.__table__,
        columns,
        conflict=("model_id", "name"),
        update=("expression", "outcome", "reason", "created_by", "created_at"),
    )
    change = RuleChange(
        "added", rule.name, rule.when, rule.outcome, rule.reason, rule.created_by, now
    )
    _record(conn, model_id, change)


def remove(
    conn: Connection, model_id: int, name: str, analyst: str | None, now: datetime
) -> RuleChange | None:
    """Remove the rule `name` (even one that no longer parses), recorded as `removed`; the
    change, None if there is no such rule."""
    found = conn.execute(
        select(RuleRow.expression, RuleRow.outcome, RuleRow.reason).where(
            RuleRow.model_id == model_id, RuleRow.name == name
        )
    ).one_or_none()
    if found is None:
        return None
    when, outcome, reason = found
    conn.execute(delete(RuleRow).where(RuleRow.model_id == model_id, RuleRow.name == name))
    change = RuleChange("removed", name, when, outcome_of(outcome), reason, analyst, now)
    _record(conn, model_id, change)
    return change


def rules(
    conn: Connection, model_id: int, on_error: Callable[[str, str], None] | None = None
) -> list[Rule]:
    """The model's rules, by name. A rule that no longer parses (a store another filterd
    wrote) raises RuleError, or, given `on_error`, is left out and told to it (name, error)."""
    query = (
        select(
            RuleRow.name, RuleRow.expression, RuleRow.outcome, RuleRow.reason, RuleRow.created_by
        )
        .where(RuleRow.model_id == model_id)
        .order_by(RuleRow.name)
    )
    out = []
    for name, when, outcome, reason, by in conn.execute(query):
        try:
            out.append(Rule(name, when, outcome_of(outcome), reason, by))
        except ValueError as error:  # RuleError, or an outcome this filterd does not know
            if on_error is None:
                raise
            on_error(name, str(error))
    return out


def changes(engine: Engine, model_id: int, limit: int | None = 100) -> list[RuleChange]:
    """The changes to the model's rules, newest first, at most `limit` (None: all)."""
    query = (
        select(
            ChangeRow.action,
            ChangeRow.name,
            ChangeRow.expression,
            ChangeRow.outcome,
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
            RuleChange(action, name, when, outcome_of(outcome), reason, analyst, as_utc(at))
            for action, name, when, outcome, reason, analyst, at in conn.execute(query)
        ]


def _record(conn: Connection, model_id: int, change: RuleChange) -> None:
    conn.execute(
        insert(ChangeRow).values(
            model_id=model_id,
            action=change.action,
            name=change.name,
            expression=change.when,
            outcome=change.outcome,
            reason=change.reason,
            analyst=change.analyst,
            changed_at=as_utc(change.changed_at),
        )
    )
