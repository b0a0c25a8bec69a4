"""The model store, in SQL through SQLAlchemy (the one package that holds SQL): the schema
(`schema`) and its migrations (`database`, `downgrades`), statistics learned from feedback
(`learning`, `sync`), the audit trail (`audit`), thresholds and their windows (`thresholds`),
drift (`drift`), the review queue (`review`), decided and parked messages (`decided`,
`parking`), undecodable batches (`undecodable`), expiry (`expiry`), backups (`backup`) and a
model's summary (`report`). `__all__` names these modules rather than re-exporting their names:
each loads SQLAlchemy, and `drift` SciPy, which a user should load only with what it needs."""

__all__ = [
    "audit",
    "backup",
    "database",
    "decided",
    "downgrades",
    "drift",
    "expiry",
    "learning",
    "parking",
    "report",
    "review",
    "schema",
    "sync",
    "thresholds",
    "undecodable",
]
