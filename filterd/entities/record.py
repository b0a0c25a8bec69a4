"""What the entity memory knew of a decided message's entities, kept with the decision so that
its label, however late, learns the evidence it was decided on (`EntityRecord`), in a compact
JSON text: the stream's time and per entity its key, value and numbers (`EntityFeatures`).

>>> from filterd.entities.memory import EntityFeatures
>>> record = EntityRecord(1.5e9, (EntityFeatures("customer", "c5", (7, 20), 5.1, (), 1),))
>>> text = record.dumps()
>>> text
'{"at":1500000000.0,"entities":[["customer","c5",[7,20],5.1,[],1]]}'
>>> EntityRecord.loads(text) == record
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from filterd.entities.memory import EntityFeatures, EntitySpec, entity_tokens

# one encoder for every record: json.dumps with separators makes a new one each call
_COMPACT = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class EntityRecord:
    """The stream's time a message was decided at and its entities' features then."""

    at: float
    features: tuple[EntityFeatures, ...]

    def tokens(self, spec: EntitySpec) -> list[str]:
        return [t for f in self.features for t in entity_tokens(f, spec)]

    def dumps(self) -> str:
        rows = [
            [f.key, f.value, f.counts, f.amount_vs, f.parties, f.labelled] for f in self.features
        ]
        return _COMPACT.encode({"at": self.at, "entities": rows})

    @classmethod
    def loads(cls, text: str) -> EntityRecord:
        """The record of `dumps`'s text (ValueError for any other)."""
        try:
            stored: Any = json.loads(text)
            features = tuple(
                EntityFeatures(
                    str(key),
                    str(value),
                    tuple(int(n) for n in counts),
                    None if amount_vs is None else float(amount_vs),
                    tuple(int(n) for n in parties),
                    int(labelled),
                )
                for key, value, counts, amount_vs, parties, labelled in stored["entities"]
            )
            return cls(float(stored["at"]), features)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not an entity record: {text[:80]!r}") from error
