"""The rules in the store (`filterd.store.rules`): one per name, every change on their log, and a
stored rule this filterd cannot parse left out by the scorer, not a crash."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from filterd.bayes.model import ModelSpec
from filterd.entities.memory import EntityEvent
from filterd.entities.rules import Rule, RuleError
from filterd.store.entities import DecidedEvent
from filterd.store.handle import ModelStore, Store
from filterd.store.schema import Rule as RuleRow

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def store_unparsed_rule(model: ModelStore) -> None:
    """The rule "odd", `amount ~= 1` (block), as another filterd's grammar might have written
    it: this one's does not parse it."""
    with model.store.engine.begin() as conn:
        conn.execute(
            insert(RuleRow).values(
                model_id=model.id,
                name="odd",
                expression="amount ~= 1",
                outcome="block",
                created_at=T0,
            )
        )


def test_a_rule_is_added_replaced_and_removed_and_every_change_logged(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"))
    other = store.create_model("other", ModelSpec("mnb"))
    model.put_rule(Rule("big", "amount > 1000", "review", "large", "erin"), T0)
    model.put_rule(Rule("big", "amount > 5000", "block", "larger", "dana"), T0)
    model.put_rule(Rule("a-night", "hour in [1, 2, 3]", "review"), T0)
    assert [(r.name, r.when, r.outcome, r.created_by) for r in model.rules()] == [
        ("a-night", "hour in [1, 2, 3]", "review", None),
        ("big", "amount > 5000", "block", "dana"),
    ]
    assert other.rules() == []
    removed = model.remove_rule("big", "sam", T0)
    assert removed is not None and (removed.when, removed.analyst) == ("amount > 5000", "sam")
    assert model.remove_rule("big", "sam", T0) is None
    assert [(c.action, c.name, c.when, c.outcome, c.analyst) for c in model.rule_changes()] == [
        ("removed", "big", "amount > 5000", "block", "sam"),
        ("added", "a-night", "hour in [1, 2, 3]", "review", None),
        ("added", "big", "amount > 5000", "block", "dana"),
        ("added", "big", "amount > 1000", "review", "erin"),
    ]
    assert model.rule_changes(limit=1)[0].changed_at == T0


def test_a_stored_rule_that_no_longer_parses_is_left_out_told_and_removable(
    store: Store,
) -> None:
    model = store.create_model("default", ModelSpec("mnb"))
    model.put_rule(Rule("fine", "amount > 1", "review"), T0)
    store_unparsed_rule(model)
    with pytest.raises(RuleError):
        model.rules()
    told: list[tuple[str, str]] = []
    assert [r.name for r in model.rules(on_error=lambda *said: told.append(said))] == ["fine"]
    assert told == [("odd", "column 8: unexpected '~'")]
    removed = model.remove_rule("odd", None)
    assert removed is not None and removed.when == "amount ~= 1"
    assert [r.name for r in model.rules()] == ["fine"]


def test_an_entitys_messages_and_counts_are_read_by_entity(store: Store) -> None:
    """The workbench's entity page reads (`filterd.store.entities`), with the decisions of the
    messages, on both databases."""
    model = store.create_model("default", ModelSpec("mnb"))
    t = 1.8e9
    with model.transaction() as writing:
        writing.record_entity_events(
            [
                DecidedEvent(
                    "m1", EntityEvent("customer", "c1", t - 7200, 20.0, "t9"), "fraud", -2.5, "list"
                ),
                DecidedEvent("m2", EntityEvent("customer", "c1", t - 60, None, None)),
                DecidedEvent("m3", EntityEvent("customer", "c2", t, 5.0, None)),
            ],
            T0,
        )
    found = model.entity_messages("customer", "c1")
    assert [m.message_id for m in found] == ["m2", "m1"]
    # with the decision their rows keep (none told for m2)
    assert [(m.label, m.score, m.decided_by) for m in found] == [
        (None, None, None),
        ("fraud", -2.5, "list"),
    ]
    assert model.entity_counts("customer", "c1", t, [3600, 86400]) == [1, 2]
    assert model.entity_counts("customer", "none", t, [3600]) == [0]
