"""What the past says about a message's entities (its card, customer, terminal, sender), as
tokens: pure, bounded, from earlier messages only (`filterd.entities.memory`)."""

from filterd.entities.memory import EntityMemory, EntitySpec

__all__ = ["EntityMemory", "EntitySpec"]
