"""Review items as the scorer queues them, of facts a test chooses (tests/store, tests/cli):
`queued("m-1", score=0.47, subject="Win")`. The store's facts (`id`, `queued_at`, `labelled`)
are empty, `token_count` and `distance` as `queued_item` gives them; the rest have defaults."""

from collections.abc import Sequence
from typing import Any

from filterd.service.review import Reason, ReviewItem, distance_to_tau


def queued(
    message_id: str,
    score: float = 0.5,
    threshold: float = 0.5,
    tokens: Sequence[str] = ("win", "cash"),
    *,
    reason: Reason = "band",
    label: str = "spam",
    model_version: int = 3,
    threshold_version: int | None = 1,
    subject: str | None = None,
    excerpt: str | None = None,
    sender: str | None = None,
    attributes: dict[str, Any] | None = None,
    explanation: Sequence[tuple[str, float]] = (("win", 1.25),),
    truncated: bool = False,
) -> ReviewItem:
    return ReviewItem(
        id=None,
        message_id=message_id,
        reason=reason,
        label=label,
        score=score,
        threshold=threshold,
        distance=distance_to_tau(score, threshold),
        model_version=model_version,
        threshold_version=threshold_version,
        subject=subject,
        excerpt=excerpt,
        sender=sender,
        attributes=attributes,
        explanation=list(explanation),
        truncated=truncated,
        queued_at=None,
        token_count=len(tokens),
        labelled=None,
        tokens=list(tokens),
    )


def stored_id(item: ReviewItem) -> int:
    """The id the store gave `item`, which it must have: every item read back has one."""
    assert item.id is not None, f"{item.message_id} was not read back from the store"
    return item.id
