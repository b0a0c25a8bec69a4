"""What the past says about a message's entities (its card, customer, terminal, sender), as
tokens: pure, bounded, from earlier messages only (`filterd.entities.memory`)."""

from filterd.entities.memory import (
    EntityFeatures,
    EntityMemory,
    EntitySpec,
    entity_tokens,
    entity_words,
)

__all__ = ["EntityFeatures", "EntityMemory", "EntitySpec", "entity_tokens", "entity_words"]
