"""The dead-letter rate guard: stop loudly rather than drain a topic into the dead-letter queue.

After a bad deploy (a producer writing a new format, a wrong topic) every record fails; a
daemon that dead-letters them all "succeeds" while losing the stream's meaning. The guard
trips when, over the last `window` records, the share dead-lettered exceeds `max_ratio`, or
when `max_consecutive` records in a row were (0: no limit on runs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from filterd.service.config import DEFAULTS


class DeadLetterFlood(RuntimeError):
    """Too many records dead-lettered: the daemon stops before committing the batch."""


class DeadLetterGuard:
    def __init__(
        self,
        max_ratio: float = DEFAULTS.dead_letter.max_ratio,
        window: int = DEFAULTS.dead_letter.window,
        max_consecutive: int = DEFAULTS.dead_letter.max_consecutive,
    ) -> None:
        self.max_ratio, self.window, self.max_consecutive = max_ratio, window, max_consecutive
        self._recent: deque[bool] = deque(maxlen=window)
        self._dead_in_window = 0
        self.consecutive = 0

    def check(self, dead: Sequence[bool]) -> None:
        """Account for one batch (True: dead-lettered, in order); raise DeadLetterFlood if it
        trips."""
        for is_dead in dead:
            if len(self._recent) == self.window:
                self._dead_in_window -= self._recent[0]
            self._recent.append(is_dead)
            self._dead_in_window += is_dead
            self.consecutive = self.consecutive + 1 if is_dead else 0
        if self.max_consecutive and self.consecutive >= self.max_consecutive:
            raise DeadLetterFlood(
                f"{self.consecutive} records in a row dead-lettered "
                f"(limit dead_letter.max_consecutive = {self.max_consecutive})"
            )
        ratio = self._dead_in_window / len(self._recent) if self._recent else 0.0
        if len(self._recent) == self.window and ratio > self.max_ratio:
            raise DeadLetterFlood(
                f"{self._dead_in_window} of the last {self.window} records dead-lettered "
                f"(limit dead_letter.max_ratio = {self.max_ratio})"
            )
