"""The allow, block and review lists in the store (`filterd.store.lists`), on SQLite and
PostgreSQL: one entry per entity, replaced by a new one, removed, and every change logged."""

from datetime import UTC, datetime, timedelta

from filterd.bayes.model import ModelSpec
from filterd.entities.lists import EntityLists, ListEntry
from filterd.store.handle import Store

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def test_an_entity_has_one_entry_and_every_change_is_on_the_log(store: Store) -> None:
    model = store.create_model("default", ModelSpec("mnb"))
    other = store.create_model("other", ModelSpec("mnb"))
    snooze = ListEntry("customer", "c596", "allow", T0 + timedelta(days=7), "travelling", "dana")
    model.put_on_list(ListEntry("customer", "c596", "block", None, "stolen card", "erin"), T0)
    model.put_on_list(snooze, T0 + timedelta(hours=1))  # replaces the block
    model.put_on_list(ListEntry("terminal", "t9", "review"), T0 + timedelta(hours=2))
    assert model.list_entries() == [snooze, ListEntry("terminal", "t9", "review")]
    assert model.list_entries("customer", "c596") == [snooze] and other.list_entries() == []

    removed = model.remove_from_list("terminal", "t9", "erin", T0 + timedelta(hours=3))
    assert removed == ListEntry("terminal", "t9", "review")
    assert model.remove_from_list("terminal", "t9", "erin") is None  # nothing to remove
    log = [(c.action, c.outcome, c.key, c.value, c.analyst) for c in model.list_changes()]
    assert log == [
        ("removed", "review", "terminal", "t9", "erin"),
        ("added", "review", "terminal", "t9", None),
        ("added", "allow", "customer", "c596", "dana"),
        ("added", "block", "customer", "c596", "erin"),
    ]
    # the snooze applies until it expires
    lists = EntityLists(model.list_entries())
    payment = {"attributes": {"customer": "c596"}}
    assert lists.match(payment, T0 + timedelta(days=6)) == snooze
    assert lists.match(payment, T0 + timedelta(days=8)) is None
