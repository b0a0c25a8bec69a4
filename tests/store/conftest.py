"""Real databases for the store tests: a SQLite file, and PostgreSQL (tests/conftest.py)."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from filterd.store.handle import ModelStore, Store
from filterd.store.thresholds import ThresholdVersion
from tests.conftest import fresh_postgres


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
