"""Review items as the scorer queues them, of facts a test chooses (tests/store, tests/cli):
`queued("m-1", score=0.47, subject="Win")`. The store's facts (`id`, `queued_at`, `labelled`)
are empty, `token_count` and `distance` as `queued_item` gives them; the rest have defaults."""

from typing import Any

from filterd.service.review import ReviewItem, distance_to_tau

DEFAULTS: dict[str, Any] = {
    "reason": "band",
    "label": "spam",
    "model_version": 3,
    "threshold_version": 1,
    "subject": None,
    "excerpt": None,
    "sender": None,
    "attributes": None,
    "explanation": [("win", 1.25)],
    "truncated": False,
}


def queued(
    message_id: str,
    score: float = 0.5,
    threshold: float = 0.5,
    tokens: tuple[str, ...] | list[str] = ("win", "cash"),
    **fields: Any,
) -> ReviewItem:
    return ReviewItem(
        **(DEFAULTS | fields),
        id=None,
        message_id=message_id,
        score=score,
        threshold=threshold,
        distance=distance_to_tau(score, threshold),
        queued_at=None,
        token_count=len(tokens),
        labelled=None,
        tokens=list(tokens),
    )
