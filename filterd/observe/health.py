"""Liveness (loops that must beat in time) and readiness (named conditions), thread-safe,
behind /healthz and /readyz."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Required, TypedDict


class StatusBody(TypedDict, total=False):
    """The JSON body of /healthz and /readyz."""

    status: Required[str]  # ok | stalled | not ready
    stalled: dict[str, str]  # loop → why it counts as stalled
    failing: dict[str, str]  # readiness condition → its detail
    detail: str


class Health:
    """Thread-safe state behind /healthz and /readyz.

    Liveness: every registered loop calls beat(name) at least once per its `stall_seconds`;
    registering counts as a beat. Readiness: named conditions set with set_ready; ready when
    every condition is ok and at least one is set.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._loops: dict[str, tuple[float, float]] = {}  # name → (stall_seconds, last beat)
        self._conditions: dict[str, tuple[bool, str]] = {}

    def register_loop(self, name: str, stall_seconds: float) -> None:
        """Watch loop `name`: it is stalled once `stall_seconds` pass without a beat."""
        if stall_seconds <= 0:
            raise ValueError(f"stall_seconds must be positive, not {stall_seconds}")
        with self._lock:
            self._loops[name] = (stall_seconds, self._clock())

    def beat(self, name: str) -> None:
        """Record that loop `name` is making progress (a no-op once it is unregistered)."""
        with self._lock:
            # No error for an unknown loop: a beat racing unregister at shutdown is harmless.
            if name in self._loops:
                self._loops[name] = (self._loops[name][0], self._clock())

    def unregister_loop(self, name: str) -> None:
        """Stop watching loop `name` (it is no longer expected to beat)."""
        with self._lock:
            self._loops.pop(name, None)

    def set_ready(self, name: str, ok: bool, detail: str = "") -> None:
        """Set readiness condition `name`; `detail` says why when it is not ok."""
        with self._lock:
            self._conditions[name] = (bool(ok), detail)

    def live(self) -> tuple[bool, StatusBody]:
        """(alive, body): alive unless a registered loop missed its beat."""
        now = self._clock()
        with self._lock:
            stalled = {
                name: f"no beat for {now - last:.1f} s (limit {limit:g} s)"
                for name, (limit, last) in self._loops.items()
                if now - last > limit
            }
        if stalled:
            return False, {"status": "stalled", "stalled": stalled}
        return True, {"status": "ok"}

    def ready(self) -> tuple[bool, StatusBody]:
        """(ready, body): ready when every condition is ok and at least one is set."""
        with self._lock:
            conditions = dict(self._conditions)
        if not conditions:
            return False, {
                "status": "not ready",
                "failing": {},
                "detail": "no readiness condition set yet",
            }
        failing = {name: detail for name, (ok, detail) in conditions.items() if not ok}
        if failing:
            return False, {"status": "not ready", "failing": failing}
        return True, {"status": "ok"}
