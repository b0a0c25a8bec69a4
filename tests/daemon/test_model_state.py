"""The scorer's model state: the first full load is logged, and settles the process for a long
stream."""

import gc
from pathlib import Path

import pytest
import structlog

from filterd.bayes.model import ModelSpec
from filterd.bayes.statistics import Statistics
from filterd.daemon.model_state import GC_THRESHOLD, SYNC_SHARE, ModelState
from filterd.observe.health import Health
from filterd.observe.metrics import Metrics
from filterd.service.config import load as load_config
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens


def test_the_first_load_freezes_the_loaded_objects_and_collects_less_often(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    model.learn(
        [LabelledTokens("m1", "spam", ["win", "cash"]), LabelledTokens("m2", "ham", ["lunch"])]
    )
    config = load_config(None, environ={}, overrides={"database.url": url})
    before = gc.get_threshold()
    try:
        with structlog.testing.capture_logs() as logged:
            state = ModelState(model, config, Metrics(), Health(), structlog.get_logger())
            state.refresh(force=True)
        assert state.decider is not None and state.decider.model_version == 1
        assert gc.get_threshold() == GC_THRESHOLD and gc.get_freeze_count() > 0
        assert [e["event"] for e in logged] == ["loading the model", "model loaded"]
        assert logged[1]["tokens"] == 3 and logged[1]["classes"] == {"spam": 1, "ham": 1}
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
        store.close()


@pytest.mark.parametrize(
    ("min_docs", "expected"),
    [
        (1, [1.0, 21.0, 22.0]),
        (5, [1.0, 5.0, 20.9, 22.0]),  # not ready yet: syncs as configured, to be ready sooner
    ],
)
def test_a_slow_sync_comes_no_more_often_than_its_share_of_the_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_docs: int, expected: list[float]
) -> None:
    """A delta sync of 2 CPU seconds (6 s on a busy machine): with SYNC_SHARE = 0.1 the next
    comes 20 s after it began, not `sync_seconds` (1 s) after; a quick one restores the
    interval."""
    url = f"sqlite:///{tmp_path / 'filterd.db'}"
    store = Store.open(url)
    store.upgrade()
    model = store.create_model("default", ModelSpec("mnb"))
    model.learn([LabelledTokens("m1", "spam", ["win"]), LabelledTokens("m2", "ham", ["lunch"])])
    config = load_config(
        None,
        environ={},
        overrides={"database.url": url, "intervals.sync_seconds": 1.0, "model.min_docs": min_docs},
    )
    now, cpu = [0.0], [0.0]
    before = gc.get_threshold()
    try:
        state = ModelState(
            model,
            config,
            Metrics(),
            Health(),
            structlog.get_logger(),
            clock=lambda: now[0],
            cpu_clock=lambda: cpu[0],
        )
        state.refresh(force=True)  # the full load: not a delta sync, its time does not count
        costs, began = [2.0, 0.0, 0.0, 0.0], []
        sync = model.sync

        def timed_sync(stats: Statistics, since: int | None) -> int:
            began.append(now[0])
            cpu[0] += costs[len(began) - 1]
            now[0] += 3 * costs[len(began) - 1]  # a busy machine: waiting for a core too
            return sync(stats, since)

        monkeypatch.setattr(model, "sync", timed_sync)
        for at in (1.0, 5.0, 20.9, 21.0, 21.5, 22.0):
            now[0] = at
            state.refresh()
        assert began == expected
        assert 2.0 / SYNC_SHARE == 20.0
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
        store.close()
