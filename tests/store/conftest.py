"""Real databases for the store tests: a SQLite file, and PostgreSQL (tests/conftest.py)."""

from pathlib import Path

import pytest

from filterd.store.database import connect, upgrade
from tests.conftest import fresh_postgres


@pytest.fixture
def new_postgres_database(postgres_server: str):
    """Makes empty PostgreSQL databases on the session's server; returns their URLs."""
    return lambda: fresh_postgres(postgres_server)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path):
    """The URL of an empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'filterd.db'}"
    return fresh_postgres(request.getfixturevalue("postgres_server"))


@pytest.fixture
def engine(empty_url: str):
    """A migrated store."""
    upgrade(empty_url)
    engine = connect(empty_url)
    yield engine
    engine.dispose()
