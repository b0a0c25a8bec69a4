"""`filterd run` on card payments, a real broker and a real store: each payment is decided with
what the entity memory knows of its customer and terminal, an entity on a list and a rule decide
before the model (even one not ready yet), the events reach the store with their message ids,
and the decisions are counted by what decided them."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from filterd.bayes.model import ModelSpec
from filterd.entities.lists import ListEntry
from filterd.entities.rules import Rule
from filterd.store.handle import Store
from filterd.store.schema import EntityEvent
from tests.daemon.conftest import StartDaemon, produce, read_all, valid

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def payment(i: int, customer: str, minutes: float, amount: float = 20.0) -> dict[str, Any]:
    return {
        "id": f"p{i}",
        "text": "card payment",
        "attributes": {"customer": customer, "terminal": f"t{i % 3}", "amount": amount},
        "ts": (T0 + timedelta(minutes=minutes)).isoformat(),
    }


def test_payments_are_decided_with_entity_memory_lists_and_rules(
    start_daemon: StartDaemon, kafka_config: dict[str, Any], topics: dict[str, str], sqlite_url: str
) -> None:
    store = Store.open(sqlite_url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    model.put_rule(Rule("huge", "amount >= 5000", "block", "over the limit"))
    model.put_rule(Rule("burst", "customer:count_1h >= 2", "review"))
    model.put_on_list(ListEntry("customer", "c-vip", "allow", None, "known"))
    payments = [
        payment(1, "c1", 0),
        payment(2, "c1", 1),
        payment(3, "c1", 2),  # two of c1 within the hour before it
        payment(4, "c2", 3, amount=9000),
        payment(5, "c-vip", 4, amount=9000),
    ]
    # one customer's payments on one partition: the scorer reads them in their order
    keys = [p["attributes"]["customer"] for p in payments]
    produce(kafka_config, topics["messages"], [json.dumps(p).encode() for p in payments], keys)
    daemon = start_daemon(
        sqlite_url, create_store=False, entities={"keys": ["customer", "terminal"]}
    )
    records = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 5)
    decided = {d["message_id"]: d for d in (valid("decision", r.value) for r in records)}
    assert sorted(decided) == ["p1", "p2", "p3", "p4", "p5"]
    # the model has learned nothing yet: only a list entry or a rule decides a label
    assert [decided[p]["label"] for p in ("p1", "p2")] == ["unknown", "unknown"]
    assert decided["p3"]["review"] is True
    assert decided["p3"]["evidence"][:2] == [
        "review rule burst: customer:count_1h >= 2",
        "2 messages of customer c1 in the last 1h",
    ]
    assert (decided["p4"]["label"], decided["p4"]["decided_by"]) == ("spam", "rule")
    assert (decided["p5"]["label"], decided["p5"]["decided_by"]) == ("ham", "list")

    def stored() -> set[tuple[str | None, str, str]]:
        with store.engine.connect() as conn:
            rows = conn.execute(select(EntityEvent.message_id, EntityEvent.key, EntityEvent.value))
            return {(m, k, v) for m, k, v in rows}

    daemon.wait_for(lambda: len(stored()) == 10, what="the entity events in the store")
    assert ("p3", "customer", "c1") in stored() and ("p3", "terminal", "t0") in stored()
    assert [m.message_id for m in model.entity_messages("customer", "c1")] == ["p3", "p2", "p1"]
    # each with the decision it was given, as the entity page shows it
    (blocked,) = model.entity_messages("customer", "c2")
    assert (blocked.label, blocked.decided_by) == ("spam", "rule")
    assert blocked.score == decided["p4"]["score"]
    (allowed,) = model.entity_messages("customer", "c-vip")
    assert (allowed.label, allowed.decided_by) == ("ham", "list")
    assert daemon.metric("filterd_decisions_total", label="spam", decided_by="rule") == 1
    assert daemon.metric("filterd_decisions_total", label="ham", decided_by="list") == 1
    (item,) = [i for i in model.review_items(limit=None) if i.reason == "rule"]
    assert item.message_id == "p3"
