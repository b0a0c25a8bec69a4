"""Real databases for the store tests: a SQLite file, and PostgreSQL (tests/conftest.py)."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from filterd.store.database import connect, upgrade
from filterd.store.thresholds import ThresholdVersion, latest_threshold
from tests.conftest import fresh_postgres


def threshold_in_force(
    engine: Engine, model: str = "default", target_class: str = "spam"
) -> ThresholdVersion:
    """`latest_threshold`, which must find a version."""
    version = latest_threshold(engine, model, target_class)
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
def engine(empty_url: str) -> Iterator[Engine]:
    """A migrated store."""
    upgrade(empty_url)
    engine = connect(empty_url)
    yield engine
    engine.dispose()
