"""The scorer's model: statistics loaded from the store, delta-synced every `sync_seconds`,
and the newest threshold version, looked up every `threshold_reload_seconds`.

A delta sync stops the loop while it reads the changed rows and rebuilds the model, and a
model whose every batch of labels changes many rows (the fusion's character 4-grams and word
pairs: most of their buckets, on e-mail) takes a good part of a second. So that syncing never
takes more than `SYNC_SHARE` of the process's CPU, once the model is ready the next sync comes
no sooner than the CPU seconds the last one took / `SYNC_SHARE`, when that is longer than
`sync_seconds` (CPU, not wall time: on a busy machine a sync waits for a core, which costs the
process nothing; before the model is ready, syncing as often as configured brings it sooner).

When the store cannot be reached the scorer keeps deciding with what it has; the staleness
gauge says for how long, and readiness turns false until a sync succeeds again.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

from structlog.typing import FilteringBoundLogger

from filterd.bayes.statistics import Statistics
from filterd.observe.health import Health
from filterd.observe.logs import Repeats, progress
from filterd.observe.metrics import Metrics
from filterd.service.config import Config
from filterd.service.decide import Decider, ThresholdSetting, tokenizer_of
from filterd.store.errors import StoreError
from filterd.store.handle import ModelStore

LOAD_PROGRESS_SECONDS = 5.0  # between "loading the model" lines while a large model loads
SYNC_SHARE = 0.1  # of the time, at most, spent in delta syncs


class ModelState:
    def __init__(
        self,
        model: ModelStore,
        config: Config,
        metrics: Metrics,
        health: Health,
        log: FilteringBoundLogger,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.model, self.config, self.metrics, self.health, self.log = (
            model,
            config,
            metrics,
            health,
            log,
        )
        self.clock, self.cpu_clock = clock, cpu_clock
        self.decider: Decider | None = None
        self.threshold = ThresholdSetting(target_recall=config.decision.target_recall)
        self._stats: Statistics | None = None
        self._since: int | None = None
        self._last_attempt = self._last_threshold = -float("inf")
        self._synced_at = clock()
        self._sync_cost = 0.0  # CPU seconds the last delta sync took
        self._lock = threading.Lock()
        self.repeats = Repeats()

    @property
    def loaded(self) -> bool:
        return self.decider is not None

    def refresh(self, force: bool = False) -> None:
        """Load or sync the statistics and reload the threshold when due; never raises for
        store errors (they turn readiness false and are retried at the next interval)."""
        now = self.clock()
        intervals = self.config.intervals
        with self._lock:
            if force or now - self._last_attempt >= (
                self._sync_interval(intervals.sync_seconds) if self.loaded else 1.0
            ):
                self._last_attempt = now
                self._guarded("sync", self._sync)
            if self.loaded and (
                force or now - self._last_threshold >= intervals.threshold_reload_seconds
            ):
                self._last_threshold = now
                self._guarded("threshold", self._reload_threshold)
            self.metrics.model_staleness.set(max(0.0, self.clock() - self._synced_at))
            self.repeats.flush()

    def _sync_interval(self, configured: float) -> float:
        """Seconds between two syncs: `configured`, or for a ready model whose last sync took
        more than SYNC_SHARE of that in CPU, that CPU time / SYNC_SHARE."""
        if self.decider is None or self.decider.not_ready is not None:
            return configured
        return max(configured, self._sync_cost / SYNC_SHARE)

    def _guarded(self, what: str, step: Callable[[], None]) -> None:
        try:
            step()
        except StoreError as error:
            detail = str(error)
            self.health.set_ready("model store", False, detail)
            self.metrics.store_errors.labels(role="scorer").inc()
            self.repeats.warning(
                self.log,
                "store unreachable, deciding with the last model",
                {"step": what},
                error=detail,
                stale_seconds=round(self.clock() - self._synced_at, 1),
            )

    def _sync(self) -> None:
        started = time.perf_counter()
        if self._stats is None:
            with progress(self.log, "loading the model", LOAD_PROGRESS_SECONDS) as so_far:
                stats, seq = self.model.load(on_rows=lambda n: so_far.update(token_rows=n))
                self._decider().update(stats, seq)
            _settle_after_load()
            self.log.info(
                "model loaded",
                model_version=seq,
                tokens=len(stats.vocab),
                seconds=round(time.perf_counter() - started, 1),
                **_classes(stats, self._decider()),
            )
        else:
            cpu = self.cpu_clock()
            stats, seq = self._stats, self.model.sync(self._stats, self._since)
            if seq != self._since:
                self._decider().update(stats, seq)
                self.log.info(
                    "model updated",
                    model_version=seq,
                    seconds=round(time.perf_counter() - started, 3),
                    cpu_seconds=round(self.cpu_clock() - cpu, 3),
                    **_classes(stats, self._decider()),
                )
            self._sync_cost = self.cpu_clock() - cpu
        self._stats, self._since = stats, seq
        self._synced_at = self.clock()
        not_ready = self._decider().not_ready
        self.health.set_ready("model store", True)
        self.health.set_ready("model", not_ready is None, not_ready or "")
        self.metrics.not_ready.set(0 if not_ready is None else 1)
        self.metrics.model_version.set(seq)

    def _decider(self) -> Decider:
        """The decider, made at the first load (after it: `loaded` says the load succeeded)."""
        if self.decider is None:
            self.decider = Decider(
                self.model.spec,
                self.config.decision.target_class,
                self.config.model.min_docs,
                tokenizer_of(self.config),
                labels=self.config.model.labels,
            )
        return self.decider

    def _reload_threshold(self) -> None:
        found = self.model.latest_threshold(self.config.decision.target_class)
        if found is None or found.version == self.threshold.version:
            return
        self.threshold = ThresholdSetting(
            found.tau, found.version, found.target_recall, found.weights
        )
        self.metrics.threshold_version.set(found.version)
        self.metrics.target_recall.set(found.target_recall)
        self.log.info(
            "threshold reloaded",
            threshold_version=found.version,
            tau=found.tau,
            target_recall=found.target_recall,
        )


def _classes(stats: Statistics, decider: Decider) -> dict[str, Any]:
    """What a model log line says of the classes: documents per class, and why it cannot decide."""
    return {"classes": dict(zip(stats.labels, stats.D.tolist())), "not_ready": decider.not_ready}


# The scorer allocates many objects a message and keeps few: with CPython's default young
# threshold (700) the collector runs often, finds little to free, and its collections take a
# noticeable share of the scorer's CPU; with these thresholds it runs far less often.
GC_THRESHOLD = (10_000, 20, 20)


def _settle_after_load() -> None:
    """After the first full load: move the objects alive now (clients, modules, the model) out
    of the garbage collector's sight — a full collection over them pauses scoring, and sets the
    tail of the decision latency — collect less often (GC_THRESHOLD), and give the heap freed by
    the load back to the system (glibc keeps it otherwise, much of it for a large model; no-op
    without glibc)."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
