"""Real databases for the store tests: a SQLite file, and PostgreSQL (tests/conftest.py)."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from filterd.bayes.statistics import Canonical, Statistics
from filterd.store.handle import ModelStore, Store
from filterd.store.thresholds import ThresholdVersion
from tests.conftest import fresh_postgres

SEED = 7
# Short messages to learn (h3 and h4 fall in a 30 % holdout share)
DOCS = {
    "m1": "free cash now",
    "m2": "meet at noon",
    "m3": "win a free prize now",
    "m4": "lunch with bob at noon",
    "h3": "claim your free prize",
    "h4": "see you at lunch",
}


def learned_directly(pairs: list[tuple[str, str]]) -> Canonical:
    """The statistics of DOCS' messages learned in memory with these labels."""
    stats = Statistics(seed=SEED)
    for message_id, label in pairs:
        stats.learn(DOCS[message_id].split(), label)
    return nonempty(stats.canonical())


def nonempty(canonical: Canonical) -> Canonical:
    return {label: v for label, v in canonical.items() if v[0] or v[1]}


def store_statistics(model: ModelStore) -> Canonical:
    return nonempty(model.load()[0].canonical())


def threshold_in_force(model: ModelStore, target_class: str = "spam") -> ThresholdVersion:
    """`model.latest_threshold(target_class)`, which must find a version."""
    version = model.latest_threshold(target_class)
    assert version is not None, f"no threshold for {target_class}"
    return version


@pytest.fixture
def new_postgres_database(postgres_server: str) -> Callable[[], str]:
    """Makes empty PostgreSQL databases on the session's server; returns their URLs."""
    return lambda: fresh_postgres(postgres_server)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'filterd.db'}"
    return fresh_postgres(request.getfixturevalue("postgres_server"))


@pytest.fixture
def store(empty_url: str) -> Iterator[Store]:
    """A migrated store."""
    opened = Store.open(empty_url)
    opened.upgrade()
    yield opened
    opened.close()


@pytest.fixture
def engine(store: Store) -> Engine:
    """The migrated store's engine, for tests that look at its tables."""
    return store.engine
