"""Messages scored recently, by id, so that feedback may name a message without repeating it.

Bounded three ways: number of messages, bytes of tokens, and age. Tokens are kept joined by
NUL (which no token holds): one string per message takes far less memory than a list of
strings.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from filterd.service.config import DEFAULTS

SEPARATOR = "\x00"


class RecentMessages:
    """id → tokens of the messages scored in the last `ttl_seconds` (oldest evicted first)."""

    def __init__(
        self,
        max_messages: int = DEFAULTS.recent.max_messages,
        max_bytes: int = DEFAULTS.recent.max_bytes,
        ttl_seconds: float = DEFAULTS.recent.ttl_seconds,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_messages, self.max_bytes, self.ttl = max_messages, max_bytes, ttl_seconds
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, ids: Sequence[str], tokens: Sequence[Sequence[str]]) -> None:
        now = self._clock()
        with self._lock:
            for message_id, message_tokens in zip(ids, tokens):
                joined = SEPARATOR.join(message_tokens)
                old = self._items.pop(message_id, None)
                if old is not None:
                    self._bytes -= len(old[1])
                self._items[message_id] = (now, joined)
                self._bytes += len(joined)
            self._evict(now)

    def get(self, message_id: str) -> list[str] | None:
        """The tokens of a message scored within the bounds, else None."""
        with self._lock:
            self._evict(self._clock())
            found = self._items.get(message_id)
        if found is None:
            return None
        return found[1].split(SEPARATOR) if found[1] else []

    def _evict(self, now: float) -> None:
        items = self._items
        while items and (
            len(items) > self.max_messages
            or self._bytes > self.max_bytes
            or now - next(iter(items.values()))[0] > self.ttl
        ):
            _, (_, joined) = items.popitem(last=False)
            self._bytes -= len(joined)
