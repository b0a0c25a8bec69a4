"""The labels of HTTP requests (the API's and the workbench's), published to the feedback topic
within a bounded time, on a thread of their own: `LabelSender`.

A stalled broker must not take the server with it. Each request's labels are published in one
flush by the sender's one publishing thread, never by the thread pool the pages, reads and logins
use; a request waits for its turn and the broker `seconds` in all. What the caller learns:

- success: the broker acknowledged every record;
- `Busy`: `WAITING` requests already wait for the broker; refused at once, nothing sent;
- `NotSent`: nothing reached a broker (its turn came too late, or the leader did not answer a
  metadata request first: `BatchProducer.publish`'s probe). The labels will not be recorded;
  sending them again is safe;
- any other `PublishError`: sent, not acknowledged in time. A broker that stalled after the
  probe may still append them when it recovers; sending them again is harmless (the learner
  counts the same label twice as a duplicate).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from filterd.kafka.producer import NotSent
from filterd.kafka.publisher import Publisher

WAITING = 16  # requests waiting for the broker or being published, at most


class Busy(NotSent):
    """Too many requests already wait for the broker: refused without waiting."""


class LabelSender:
    """Publishes each request's (key, value) records in one flush, within `seconds` of the
    request (the wait for the requests before it included), or raises (see the module)."""

    def __init__(self, publisher: Publisher, seconds: float, waiting: int = WAITING) -> None:
        self.publisher, self.seconds, self.waiting = publisher, seconds, waiting
        self._slots = threading.BoundedSemaphore(waiting)
        # one thread: the publisher is not shared between threads, and it is the one
        # thread a stalled broker can hold
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="filterd-labels")

    async def publish(self, topic: str, records: Sequence[tuple[str, bytes]]) -> None:
        """Publish `records` to `topic`, acknowledged, or raise Busy, NotSent or PublishError."""
        if not self._slots.acquire(blocking=False):
            raise Busy(f"{self.waiting} requests are already waiting for the brokers")
        deadline = time.monotonic() + self.seconds
        try:
            future = self._thread.submit(self._send, topic, records, deadline)
        except RuntimeError:  # shut down: the server is stopping
            self._slots.release()
            raise NotSent("the server is stopping") from None
        # released when the publishing ends, not when the request does: a client that hangs
        # up does not free a slot its labels still hold
        future.add_done_callback(lambda _: self._slots.release())
        await asyncio.wrap_future(future)

    def _send(self, topic: str, records: Sequence[tuple[str, bytes]], deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:  # their time is up: published now, they would be published too late
            raise NotSent(f"it waited {self.seconds:g} s for the labels before it")
        self.publisher.send_keyed(topic, records)
        self.publisher.flush(left, probe=True)

    def close(self) -> None:
        """Drop the requests still waiting (never published), wait for the one being
        published, and close the publisher."""
        self._thread.shutdown(wait=True, cancel_futures=True)
        self.publisher.close()
