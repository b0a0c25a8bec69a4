"""Real databases for the store tests: a SQLite file, and PostgreSQL (tests/conftest.py)."""

import pytest

from filterd.store.handle import Store
from tests.conftest import fresh_postgres


@pytest.fixture
def new_postgres_database(postgres_server):
    """Makes empty PostgreSQL databases on the session's server; returns their URLs."""
    return lambda: fresh_postgres(postgres_server)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path):
    """The URL of an empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'filterd.db'}"
    return fresh_postgres(request.getfixturevalue("postgres_server"))


@pytest.fixture
def store(empty_url):
    """A migrated store."""
    opened = Store.open(empty_url)
    opened.upgrade()
    yield opened
    opened.close()


@pytest.fixture
def engine(store):
    """The migrated store's engine, for tests that look at its tables."""
    return store.engine
