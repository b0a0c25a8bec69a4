"""Seeded card-transaction streams, for tests and demos (pure: no I/O).

A small simulator in the manner of the Fraud Detection Handbook's (Le Borgne et al.), whose
output is ../shared/corpora/card-transactions: customers pay at terminals near them, each
customer's amounts about their own mean, and three kinds of fraud make the labels:

1. any payment above `big_amount`;
2. a compromised terminal: every payment there for `terminal_days` days;
3. a compromised customer: a third of their payments for `customer_days` days, at 5× their
   usual amount.

A record is a corpus line (`filterd.evaluation.corpus`): `ts`, `attributes` {customer,
terminal, amount}, an empty text, the label "fraud" or "legit", and `scenario` (0–3, which
kind of fraud), which is for evaluation only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

DAY = 86400.0


@dataclass(frozen=True)
class TransactionConfig:
    """Parameters of a synthetic transaction stream."""

    customers: int = 200
    terminals: int = 400
    days: int = 30
    payments_per_day: float = 2.0  # a customer's mean; each customer's own is drawn about it
    big_amount: float = 220.0
    compromised_terminals_per_day: int = 1
    terminal_days: int = 14
    compromised_customers_per_day: int = 2
    customer_days: int = 7
    start: datetime = datetime(2018, 4, 1, tzinfo=UTC)
    seed: int = 0

    def __post_init__(self) -> None:
        if min(self.customers, self.terminals, self.days) < 1:
            raise ValueError("a stream needs customers, terminals and days (1 or more each)")


def generate_transactions(config: TransactionConfig = TransactionConfig()) -> list[dict[str, Any]]:
    """Every payment of the stream, by time, as corpus-format dicts (ids "tx-1", … in order).

    >>> records = generate_transactions(TransactionConfig(customers=20, terminals=30, days=3))
    >>> sorted(records[0]["attributes"]), {r["label"] for r in records} <= {"fraud", "legit"}
    (['amount', 'customer', 'terminal'], True)
    >>> records == generate_transactions(TransactionConfig(customers=20, terminals=30, days=3))
    True
    """
    rng = np.random.default_rng(config.seed)
    mean_amount = rng.uniform(5, 100, config.customers)
    rate = rng.uniform(0, 2 * config.payments_per_day, config.customers)
    near = [
        rng.choice(config.terminals, size=min(20, config.terminals), replace=False)
        for _ in range(config.customers)
    ]
    bad_terminal = np.full(config.terminals, -1.0)  # compromised until that day (-1: never)
    bad_customer = np.full(config.customers, -1.0)
    payments: list[tuple[float, int, int, float, int]] = []
    for day in range(config.days):
        for t in rng.choice(config.terminals, config.compromised_terminals_per_day):
            bad_terminal[t] = day + config.terminal_days
        for c in rng.choice(config.customers, config.compromised_customers_per_day):
            bad_customer[c] = day + config.customer_days
        for c in range(config.customers):
            for when in np.sort(rng.uniform(0, DAY, rng.poisson(rate[c]))):
                terminal = int(rng.choice(near[c]))
                amount = max(0.01, rng.normal(mean_amount[c], mean_amount[c] / 2))
                scenario = 0
                if day < bad_customer[c] and rng.random() < 1 / 3:
                    amount, scenario = amount * 5, 3
                if day < bad_terminal[terminal]:
                    scenario = 2
                if amount > config.big_amount:
                    scenario = 1
                payments.append((day * DAY + when, c, terminal, round(amount, 2), scenario))
    payments.sort()
    return [
        {
            "id": f"tx-{i}",
            "label": "fraud" if scenario else "legit",
            "text": "",
            "format": "text",
            "order": i,
            "ts": (config.start + timedelta(seconds=seconds)).isoformat(),
            "attributes": {"customer": f"c{c}", "terminal": f"t{t}", "amount": amount},
            "scenario": scenario,
        }
        for i, (seconds, c, t, amount, scenario) in enumerate(payments, start=1)
    ]
