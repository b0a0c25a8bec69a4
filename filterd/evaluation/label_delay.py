"""When a label reaches the online replay: at once (TREC immediate feedback), a number of
messages later, or a time later by the messages' `ts` (fraud: a chargeback weeks after the
payment).

The replay scores message j of the stream with the labels of messages 0 … v_j − 1 learned:

    immediate        v_j = j
    N messages late  v_j = max(0, j − N)
    a time d late    v_j = min(j, #{i : clock_i + d ≤ clock_j}),   clock_i = max(ts_0, …, ts_i)

The clock is the stream's time as the replay reaches each message (one sent out of time order
does not move it back), so v never decreases: the labels learned are always a prefix of the
stream, and the replay's history as of before message v_j serves message j
(`filterd.bayes.replay`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from filterd.bayes.arrays import Int64Array


@dataclass(frozen=True)
class LabelDelay:
    """How late labels arrive: `messages` later in the stream, or `after` later by `ts`."""

    messages: int = 0
    after: timedelta | None = None

    def __post_init__(self) -> None:
        if self.messages < 0:
            raise ValueError(f"a label delay of {self.messages} messages: give 0 or more")
        if self.after is not None and (self.messages or self.after <= timedelta(0)):
            raise ValueError("a label delay is a number of messages or a positive time, not both")

    @property
    def immediate(self) -> bool:
        return self.after is None and self.messages == 0

    def __str__(self) -> str:
        if self.after is not None:
            return f"{self.after.total_seconds():g}s"
        return f"{self.messages} messages"

    def visible(self, ts: Sequence[datetime | None]) -> Int64Array:
        """(n,) v_j for a stream of n messages sent at `ts` (in stream order; needed only for a
        time delay, which refuses a message without one).

        >>> LabelDelay(messages=2).visible([None] * 5).tolist()
        [0, 0, 0, 1, 2]
        >>> from datetime import UTC
        >>> times = [datetime(2018, 4, d, tzinfo=UTC) for d in (1, 2, 2, 5, 3, 9)]
        >>> LabelDelay(after=timedelta(days=2)).visible(times).tolist()
        [0, 0, 0, 3, 3, 5]
        """
        n = len(ts)
        position = np.arange(n, dtype=np.int64)
        if self.after is None:
            return np.maximum(position - self.messages, 0)
        missing = next((j for j, t in enumerate(ts) if t is None), None)
        if missing is not None:
            raise ValueError(
                f"a label delay in time needs every message's ts: message {missing + 1} of the "
                "stream has none"
            )
        seconds = np.array([t.timestamp() for t in ts if t is not None], dtype=np.float64)
        clock = np.maximum.accumulate(seconds) if n else seconds
        arrived = np.searchsorted(clock + self.after.total_seconds(), clock, side="right")
        return np.minimum(arrived.astype(np.int64), position)
