"""The scorer's model state: the first full load is logged, and settles the process for a long
stream."""

import gc
from pathlib import Path

import structlog

from filterd.bayes.model import ModelSpec
from filterd.daemon.model_state import GC_THRESHOLD, ModelState
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
